// The inference rewrites for CNNs: max_pool2d_with_index without a used mask ->
// max_pool2d (canonicalize), conv2d + bias [+ relu] and conv2d + inference batch_norm
// -> fused_conv2d (fuse), and fold_parameters computing the folded filter and bias once.
// Textual IR in, expected IR out (golden outputs checked by hand when written).
#include <cmath>
#include <cstring>

#include "pir/ir/printer.h"
#include "pir/pass/pass.h"
#include "tests/cpp/pir/pir_test_util.h"

namespace oar::pir {
namespace {

std::string run(const std::string& pipeline, const std::string& input) {
  auto p = parse_program(IrContext::global(), input);
  PassManager pm;
  pm.add_pipeline(pipeline);
  pm.run(*p);
  return p->str();
}

const char* kConvBiasReluPool = R"IR(
module {
  %x = "builtin.input"() {name = "x"} : () -> (tensor<?x3x8x8xf32>)
  %w = "builtin.parameter"() {name = "w"} : () -> (tensor<4x3x3x3xf32>)
  %b = "builtin.parameter"() {name = "b"} : () -> (tensor<4xf32>)
  %c = "pd_op.conv2d"(%x, %w) {data_format = "NCHW", dilations = #shape[1, 1], groups = 1, paddings = #shape[1, 1, 1, 1], strides = #shape[1, 1]} : (tensor<?x3x8x8xf32>, tensor<4x3x3x3xf32>) -> (tensor<?x4x8x8xf32>)
  %rb = "pd_op.reshape"(%b) {shape = #shape[4, 1, 1]} : (tensor<4xf32>) -> (tensor<4x1x1xf32>)
  %a = "pd_op.add"(%c, %rb) : (tensor<?x4x8x8xf32>, tensor<4x1x1xf32>) -> (tensor<?x4x8x8xf32>)
  %r = "pd_op.relu"(%a) : (tensor<?x4x8x8xf32>) -> (tensor<?x4x8x8xf32>)
  %p, %m = "pd_op.max_pool2d_with_index"(%r) {adaptive = false, ceil_mode = false, data_format = "NCHW", kernel_size = #shape[2, 2], paddings = #shape[0, 0, 0, 0], strides = #shape[2, 2]} : (tensor<?x4x8x8xf32>) -> (tensor<?x4x4x4xf32>, tensor<?x4x4x4xi32>)
  "builtin.output"(%p) {name = "y"} : (tensor<?x4x4x4xf32>) -> ()
}
)IR";

TEST(PirConvFusion, MaxPoolWithoutIndexWhenTheMaskIsUnused) {
  const char* expected = R"IR(
module {
  %0 = "builtin.input"() {name = "x"} : () -> (tensor<?x4x8x8xf32>)
  %1 = "pd_op.max_pool2d"(%0) {adaptive = false, ceil_mode = false, data_format = "NCHW", kernel_size = #shape[2, 2], paddings = #shape[0, 0, 0, 0], strides = #shape[2, 2]} : (tensor<?x4x8x8xf32>) -> (tensor<?x4x4x4xf32>)
  "builtin.output"(%1) {name = "y"} : (tensor<?x4x4x4xf32>) -> ()
}
)IR";
  const std::string pool = R"IR(
module {
  %x = "builtin.input"() {name = "x"} : () -> (tensor<?x4x8x8xf32>)
  %p, %m = "pd_op.max_pool2d_with_index"(%x) {adaptive = false, ceil_mode = false, data_format = "NCHW", kernel_size = #shape[2, 2], paddings = #shape[0, 0, 0, 0], strides = #shape[2, 2]} : (tensor<?x4x8x8xf32>) -> (tensor<?x4x4x4xf32>, tensor<?x4x4x4xi32>)
  "builtin.output"(%p) {name = "y"} : (tensor<?x4x4x4xf32>) -> ()
)IR";
  EXPECT_EQ(run("canonicalize", pool.substr(1) + "}\n"), expected + 1);
  // The mask is read: the op stays.
  const std::string used = pool.substr(1) + "  \"builtin.output\"(%m) {name = \"mask\"} : (tensor<?x4x4x4xi32>) -> ()\n}\n";
  EXPECT_NE(run("canonicalize", used).find("max_pool2d_with_index"), std::string::npos);
}

TEST(PirConvFusion, ConvBiasReluPool) {
  const char* expected = R"IR(
module {
  %0 = "builtin.input"() {name = "x"} : () -> (tensor<?x3x8x8xf32>)
  %1 = "builtin.parameter"() {name = "w"} : () -> (tensor<4x3x3x3xf32>)
  %2 = "builtin.parameter"() {name = "b"} : () -> (tensor<4xf32>)
  %3 = "pd_op.fused_conv2d"(%0, %1, %2) {activation = "relu", data_format = "NCHW", dilations = #shape[1, 1], groups = 1, paddings = #shape[1, 1, 1, 1], strides = #shape[1, 1]} : (tensor<?x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> (tensor<?x4x8x8xf32>)
  %4 = "pd_op.max_pool2d"(%3) {adaptive = false, ceil_mode = false, data_format = "NCHW", kernel_size = #shape[2, 2], paddings = #shape[0, 0, 0, 0], strides = #shape[2, 2]} : (tensor<?x4x8x8xf32>) -> (tensor<?x4x4x4xf32>)
  "builtin.output"(%4) {name = "y"} : (tensor<?x4x4x4xf32>) -> ()
}
)IR";
  EXPECT_EQ(run("canonicalize,fuse,dce", kConvBiasReluPool + 1), expected + 1);
}

TEST(PirConvFusion, BiasMustBePerChannel) {
  // A bias over the width ([8]) or a full [4, 8, 8] tensor is not a conv bias.
  for (const char* shape : {"8", "4x8x8"}) {
    std::string text = std::string(R"IR(
module {
  %x = "builtin.input"() {name = "x"} : () -> (tensor<2x3x8x8xf32>)
  %w = "builtin.parameter"() {name = "w"} : () -> (tensor<4x3x3x3xf32>)
  %b = "builtin.parameter"() {name = "b"} : () -> (tensor<SHAPExf32>)
  %c = "pd_op.conv2d"(%x, %w) {data_format = "NCHW", dilations = #shape[1, 1], groups = 1, paddings = #shape[1, 1, 1, 1], strides = #shape[1, 1]} : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) -> (tensor<2x4x8x8xf32>)
  %a = "pd_op.add"(%c, %b) : (tensor<2x4x8x8xf32>, tensor<SHAPExf32>) -> (tensor<2x4x8x8xf32>)
  "builtin.output"(%a) {name = "y"} : (tensor<2x4x8x8xf32>) -> ()
}
)IR").substr(1);
    for (size_t at; (at = text.find("SHAPE")) != std::string::npos;) text.replace(at, 5, shape);
    const std::string out = run("fuse", text);
    EXPECT_EQ(out.find("fused_conv2d"), std::string::npos) << out;
  }
  // NHWC takes a [C] bias.
  const char* nhwc = R"IR(
module {
  %x = "builtin.input"() {name = "x"} : () -> (tensor<2x8x8x3xf32>)
  %w = "builtin.parameter"() {name = "w"} : () -> (tensor<4x3x3x3xf32>)
  %b = "builtin.parameter"() {name = "b"} : () -> (tensor<4xf32>)
  %c = "pd_op.conv2d"(%x, %w) {data_format = "NHWC", dilations = #shape[1, 1], groups = 1, paddings = #shape[1, 1, 1, 1], strides = #shape[1, 1]} : (tensor<2x8x8x3xf32>, tensor<4x3x3x3xf32>) -> (tensor<2x8x8x4xf32>)
  %a = "pd_op.add"(%c, %b) : (tensor<2x8x8x4xf32>, tensor<4xf32>) -> (tensor<2x8x8x4xf32>)
  "builtin.output"(%a) {name = "y"} : (tensor<2x8x8x4xf32>) -> ()
}
)IR";
  EXPECT_NE(run("fuse", nhwc + 1).find("\"pd_op.fused_conv2d\"(%0, %1, %2) {activation = \"\", data_format = \"NHWC\""),
            std::string::npos);
}

const char* kConvBn = R"IR(
module {
  %x = "builtin.input"() {name = "x"} : () -> (tensor<?x3x8x8xf32>)
  %w = "builtin.parameter"() {name = "w"} : () -> (tensor<2x3x1x1xf32>)
  %g = "builtin.parameter"() {name = "g"} : () -> (tensor<2xf32>)
  %be = "builtin.parameter"() {name = "be"} : () -> (tensor<2xf32>)
  %mu = "builtin.parameter"() {name = "mu"} : () -> (tensor<2xf32>)
  %va = "builtin.parameter"() {name = "va"} : () -> (tensor<2xf32>)
  %c = "pd_op.conv2d"(%x, %w) {data_format = "NCHW", dilations = #shape[1, 1], groups = 1, paddings = #shape[0, 0, 0, 0], strides = #shape[1, 1]} : (tensor<?x3x8x8xf32>, tensor<2x3x1x1xf32>) -> (tensor<?x2x8x8xf32>)
  %y, %m1, %v1, %sm, %sr = "pd_op.batch_norm"(%c, %mu, %va, %g, %be) {data_format = "NCHW", epsilon = 1e-05, momentum = 0.9, training = TRAINING, use_global_stats = true} : (tensor<?x2x8x8xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<?x2x8x8xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>)
  %r = "pd_op.relu"(%y) : (tensor<?x2x8x8xf32>) -> (tensor<?x2x8x8xf32>)
  "builtin.output"(%r) {name = "y"} : (tensor<?x2x8x8xf32>) -> ()
}
)IR";

std::string conv_bn(bool training) {
  std::string t = std::string(kConvBn + 1);
  t.replace(t.find("TRAINING"), 8, training ? "true" : "false");
  return t;
}

TEST(PirConvFusion, BatchNormFoldsIntoTheConv) {
  const char* expected = R"IR(
module {
  %0 = "builtin.input"() {name = "x"} : () -> (tensor<?x3x8x8xf32>)
  %1 = "builtin.parameter"() {name = "w"} : () -> (tensor<2x3x1x1xf32>)
  %2 = "builtin.parameter"() {name = "g"} : () -> (tensor<2xf32>)
  %3 = "builtin.parameter"() {name = "be"} : () -> (tensor<2xf32>)
  %4 = "builtin.parameter"() {name = "mu"} : () -> (tensor<2xf32>)
  %5 = "builtin.parameter"() {name = "va"} : () -> (tensor<2xf32>)
  %6 = "pd_op.scale"(%5) {bias = 1e-05, bias_after_scale = true, scale = 1.0} : (tensor<2xf32>) -> (tensor<2xf32>)
  %7 = "pd_op.rsqrt"(%6) : (tensor<2xf32>) -> (tensor<2xf32>)
  %8 = "pd_op.multiply"(%2, %7) : (tensor<2xf32>, tensor<2xf32>) -> (tensor<2xf32>)
  %9 = "pd_op.reshape"(%8) {shape = #shape[2, 1, 1, 1]} : (tensor<2xf32>) -> (tensor<2x1x1x1xf32>)
  %10 = "pd_op.multiply"(%1, %9) : (tensor<2x3x1x1xf32>, tensor<2x1x1x1xf32>) -> (tensor<2x3x1x1xf32>)
  %11 = "pd_op.multiply"(%4, %8) : (tensor<2xf32>, tensor<2xf32>) -> (tensor<2xf32>)
  %12 = "pd_op.subtract"(%3, %11) : (tensor<2xf32>, tensor<2xf32>) -> (tensor<2xf32>)
  %13 = "pd_op.fused_conv2d"(%0, %10, %12) {activation = "relu", data_format = "NCHW", dilations = #shape[1, 1], groups = 1, paddings = #shape[0, 0, 0, 0], strides = #shape[1, 1]} : (tensor<?x3x8x8xf32>, tensor<2x3x1x1xf32>, tensor<2xf32>) -> (tensor<?x2x8x8xf32>)
  "builtin.output"(%13) {name = "y"} : (tensor<?x2x8x8xf32>) -> ()
}
)IR";
  EXPECT_EQ(run("fuse,dce", conv_bn(false)), expected + 1);
  // Training batch norm normalizes with the batch's statistics: nothing folds.
  const std::string t = run("fuse,dce", conv_bn(true));
  EXPECT_NE(t.find("pd_op.batch_norm"), std::string::npos);
  EXPECT_EQ(t.find("fused_conv2d"), std::string::npos);
  // Without parameter data (a bare op), fold_parameters leaves the ops alone.
  EXPECT_EQ(run("fuse,fold_parameters,dce", conv_bn(false)), expected + 1);
}

std::shared_ptr<DenseTensor> data(std::vector<int64_t> dims, std::vector<float> v) {
  auto d = std::make_shared<DenseTensor>(Dims(dims), DataType::FLOAT32);
  d->alloc();
  std::memcpy(d->raw_data(), v.data(), v.size() * sizeof(float));
  return d;
}

TEST(PirConvFusion, FoldParametersComputesTheFoldedFilterAndBias) {
  auto p = parse_program(IrContext::global(), conv_bn(false));
  p->set_parameter("w", data({2, 3, 1, 1}, {1, 2, 3, 4, 5, 6}));
  p->set_parameter("g", data({2}, {2, 0.5f}));
  p->set_parameter("be", data({2}, {1, -1}));
  p->set_parameter("mu", data({2}, {0.5f, 2}));
  p->set_parameter("va", data({2}, {4 - 1e-5f, 0.25f - 1e-5f}));
  PassManager pm;
  pm.add_pipeline("fuse,fold_parameters,dce");
  pm.run(*p);
  const char* expected = R"IR(
module {
  %0 = "builtin.input"() {name = "x"} : () -> (tensor<?x3x8x8xf32>)
  %1 = "builtin.parameter"() {name = "@folded.4"} : () -> (tensor<2x3x1x1xf32>)
  %2 = "builtin.parameter"() {name = "@folded.6"} : () -> (tensor<2xf32>)
  %3 = "pd_op.fused_conv2d"(%0, %1, %2) {activation = "relu", data_format = "NCHW", dilations = #shape[1, 1], groups = 1, paddings = #shape[0, 0, 0, 0], strides = #shape[1, 1]} : (tensor<?x3x8x8xf32>, tensor<2x3x1x1xf32>, tensor<2xf32>) -> (tensor<?x2x8x8xf32>)
  "builtin.output"(%3) {name = "y"} : (tensor<?x2x8x8xf32>) -> ()
}
)IR";
  EXPECT_EQ(p->str(), expected + 1);
  // s = g / sqrt(var + eps) = [1, 1]; w * s; beta - mean * s = [0.5, -3].
  // Every folded op's result is named @folded.<k>, k counting folded results.
  auto w = p->parameter("@folded.4");
  auto b = p->parameter("@folded.6");
  ASSERT_TRUE(w && b);
  const float want_w[] = {1, 2, 3, 4, 5, 6}, want_b[] = {0.5f, -3};
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(w->data<float>()[i], want_w[i], 1e-5);
  for (int i = 0; i < 2; ++i) EXPECT_NEAR(b->data<float>()[i], want_b[i], 1e-5);
  // The original filter is untouched (the folded one is a new buffer).
  EXPECT_EQ(p->parameter("w")->data<float>()[5], 6.0f);
}

}  // namespace
}  // namespace oar::pir
