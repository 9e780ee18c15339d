// The decompose pass on every op whose decomposition the fusion compiler uses: the
// program with the op against the decomposed program, both run by the executor on
// random inputs, float32 and float64 (tests/cpp/paddle_core/test_decomp.cc checks the
// compiled expressions themselves against the kernels).
#include <random>

#include "cinn/pipeline.h"
#include "pir/executor/executor.h"
#include "pir/ir/builder.h"
#include "pir/pass/pass.h"
#include "pir/pass/pipelines.h"
#include "tests/cpp/pir/pir_test_util.h"

namespace oar::cinn {
namespace {
using namespace pir;  // NOLINT
using pir::testing::ctx;

struct Case {
  const char* op;
  std::vector<int64_t> dims;
  std::vector<NamedAttribute> attrs;
  int extra_inputs = 0;  // layer_norm: scale and bias of the last dim
  int full_inputs = 0;   // gelu_grad: grad_out, of the input's dims
};

Tensor random(const std::vector<int64_t>& dims, DataType dt, uint32_t seed) {
  DenseTensor d(Dims(dims), dt);
  std::mt19937 g(seed);
  std::normal_distribution<double> n(0.0, 1.5);
  if (dt == DataType::FLOAT32) {
    float* p = d.alloc<float>();
    for (int64_t i = 0; i < d.numel(); ++i) p[i] = static_cast<float>(n(g));
  } else {
    double* p = d.alloc<double>();
    for (int64_t i = 0; i < d.numel(); ++i) p[i] = n(g);
  }
  return Tensor(std::move(d));
}

double at(const Tensor& t, int64_t i) {
  return t.dtype() == DataType::FLOAT32 ? t.dense().data<float>()[i] : t.dense().data<double>()[i];
}

class DecomposeTest : public ::testing::TestWithParam<DataType> {};

TEST_P(DecomposeTest, EqualsTheOpOnRandomInputs) {
  const DataType dt = GetParam();
  IrContext* c = ctx();
  const std::vector<Case> cases = {
      {"pd_op.softmax", {6, 19}, {{"axis", c->int_attr(-1)}}},
      {"pd_op.softmax", {5, 4, 3}, {{"axis", c->int_attr(1)}}},
      {"pd_op.log_softmax", {6, 19}, {{"axis", c->int_attr(-1)}}},
      {"pd_op.gelu", {7, 9}, {{"approximate", c->bool_attr(false)}}},
      {"pd_op.gelu", {7, 9}, {{"approximate", c->bool_attr(true)}}},
      {"pd_op.silu", {3, 17}, {}},
      {"pd_op.sigmoid", {3, 17}, {}},
      {"pd_op.mean", {4, 33}, {{"axis", c->shape_attr({-1})}, {"keepdim", c->bool_attr(true)}}},
      {"pd_op.var", {4, 33}, {{"axis", c->shape_attr({1})}, {"keepdim", c->bool_attr(false)}}},
      {"pd_op.layer_norm", {4, 6, 10}, {{"begin_norm_axis", c->int_attr(2)}, {"epsilon", c->float_attr(1e-5)}}, 2},
      {"pd_op.gelu_grad", {7, 9}, {{"approximate", c->bool_attr(false)}}, 0, 1},
      {"pd_op.gelu_grad", {7, 9}, {{"approximate", c->bool_attr(true)}}, 0, 1},
      {"pd_op.sigmoid_grad", {5, 11}, {}, 0, 1},
      {"pd_op.silu_grad", {5, 11}, {}, 0, 1},
      {"pd_op.softmax_grad", {6, 19}, {{"axis", c->int_attr(-1)}}, 0, 1},
      {"pd_op.softmax_grad", {5, 4, 3}, {{"axis", c->int_attr(1)}}, 0, 1},
      {"pd_op.log_softmax_grad", {6, 19}, {{"axis", c->int_attr(-1)}}, 0, 1},
  };
  const double tol = dt == DataType::FLOAT32 ? 2e-5 : 1e-11;
  FLAGS_prim_all = true;
  for (const Case& k : cases) {
    SCOPED_TRACE(k.op);
    Program p(c);
    Builder b(c, p.block());
    std::vector<Value> ins;
    std::vector<Tensor> feeds;
    ins.push_back(b.build("builtin.input", {}, {{"name", c->str_attr("x")}}, {c->tensor_type(dt, k.dims)})->result(0));
    feeds.push_back(random(k.dims, dt, 1));
    for (int e = 0; e < k.full_inputs; ++e) {
      ins.push_back(
          b.build("builtin.input", {}, {{"name", c->str_attr("g" + std::to_string(e))}}, {c->tensor_type(dt, k.dims)})
              ->result(0));
      feeds.push_back(random(k.dims, dt, 9 + e));
    }
    for (int e = 0; e < k.extra_inputs; ++e) {
      const std::vector<int64_t> last = {k.dims.back()};
      ins.push_back(
          b.build("builtin.input", {}, {{"name", c->str_attr("p" + std::to_string(e))}}, {c->tensor_type(dt, last)})
              ->result(0));
      feeds.push_back(random(last, dt, 2 + e));
    }
    Operation* op = b.build(k.op, ins, k.attrs);
    b.build("builtin.output", {op->result(0)}, {{"name", c->str_attr("y")}}, {});
    auto dec = clone_program(p);
    PassManager pm;
    pm.add_pipeline("decompose,dce");
    pm.run(*dec);
    EXPECT_EQ(dec->str().find(k.op + std::string("\"")), std::string::npos) << dec->str();
    Executor e1(p), e2(*dec);
    Tensor want = e1.run(feeds)[0], got = e2.run(feeds)[0];
    ASSERT_EQ(want.numel(), got.numel());
    for (int64_t i = 0; i < want.numel(); ++i) ASSERT_NEAR(at(got, i), at(want, i), tol * (1 + std::abs(at(want, i))));
  }
  FLAGS_prim_all = false;
}

// Multi-result rules (a map `decomp:`): every result of the op replaced, each against
// the op's. The forward's statistics (layer_norm's mean, rstd; attention's lse) come
// from running the forward op on the same inputs.
TEST_P(DecomposeTest, MultiResultRulesReplaceEveryResult) {
  const DataType dt = GetParam();
  IrContext* c = ctx();
  const double tol = dt == DataType::FLOAT32 ? 5e-5 : 1e-11;
  FLAGS_prim_all = true;
  struct Multi {
    const char* fwd;
    const char* grad;
    std::vector<std::vector<int64_t>> in_dims;  // the forward's inputs
    std::vector<NamedAttribute> fwd_attrs, grad_attrs;
  };
  const std::vector<Multi> cases = {
      {"pd_op.layer_norm",
       "pd_op.layer_norm_grad",
       {{4, 6, 10}, {10}},
       {{"epsilon", c->float_attr(1e-5)}, {"begin_norm_axis", c->int_attr(2)}},
       {{"begin_norm_axis", c->int_attr(2)}}},
      {"pd_op.scaled_dot_product_attention",
       "pd_op.scaled_dot_product_attention_grad",
       {{2, 7, 3, 8}, {2, 9, 3, 8}, {2, 9, 3, 8}},
       {{"is_causal", c->bool_attr(false)}, {"scale", c->float_attr(0.0)}},
       {{"is_causal", c->bool_attr(false)}, {"scale", c->float_attr(0.0)}}},
  };
  for (const Multi& k : cases) {
    SCOPED_TRACE(k.grad);
    Program p(c);
    Builder b(c, p.block());
    std::vector<Value> ins;
    std::vector<Tensor> feeds;
    for (size_t i = 0; i < k.in_dims.size(); ++i) {
      ins.push_back(b.build("builtin.input", {}, {{"name", c->str_attr("x" + std::to_string(i))}},
                            {c->tensor_type(dt, k.in_dims[i])})
                        ->result(0));
      feeds.push_back(random(k.in_dims[i], dt, 3 + i));
    }
    Value g = b.build("builtin.input", {}, {{"name", c->str_attr("g")}}, {c->tensor_type(dt, k.in_dims[0])})->result(0);
    feeds.push_back(random(k.in_dims[0], dt, 17));
    Operation* grad;
    if (std::string(k.fwd) == "pd_op.layer_norm") {
      Operation* f = b.build(k.fwd, {ins[0], ins[1], Value()}, k.fwd_attrs);
      grad = b.build(k.grad, {ins[0], ins[1], f->result(1), f->result(2), g}, k.grad_attrs);
    } else {
      Operation* f = b.build(k.fwd, {ins[0], ins[1], ins[2], Value()}, k.fwd_attrs);
      grad = b.build(k.grad, {ins[0], ins[1], ins[2], Value(), f->result(0), f->result(1), g}, k.grad_attrs);
    }
    for (size_t i = 0; i < grad->num_results(); ++i)
      b.build("builtin.output", {grad->result(i)}, {{"name", c->str_attr("y" + std::to_string(i))}}, {});
    auto dec = clone_program(p);
    PassManager pm;
    pm.add_pipeline("decompose,cse,dce");
    pm.run(*dec);
    EXPECT_EQ(dec->str().find(k.grad + std::string("\"")), std::string::npos) << dec->str();
    Executor e1(p), e2(*dec);
    const std::vector<Tensor> want_v = e1.run(feeds), got_v = e2.run(feeds);
    ASSERT_EQ(want_v.size(), grad->num_results());
    ASSERT_EQ(got_v.size(), want_v.size());
    for (size_t r = 0; r < want_v.size(); ++r) {
      // The decomposition's results may be views (a transpose): read them contiguous.
      const Tensor want(contiguous(want_v[r].dense())), got(contiguous(got_v[r].dense()));
      ASSERT_EQ(want.dims().vec(), got.dims().vec()) << "result " << r;
      for (int64_t i = 0; i < want.numel(); ++i)
        ASSERT_NEAR(at(got, i), at(want, i), tol * (1 + std::abs(at(want, i)))) << "result " << r;
    }
  }
  FLAGS_prim_all = false;
}

INSTANTIATE_TEST_SUITE_P(Dtypes, DecomposeTest, ::testing::Values(DataType::FLOAT32, DataType::FLOAT64));

TEST(CinnDecompose, OffWithoutPrimAll) {
  FLAGS_prim_all = false;
  auto p = parse_program(ctx(), R"IR(
module {
  %x = "builtin.input"() {name = "x"} : () -> (tensor<4x8xf32>)
  %y = "pd_op.softmax"(%x) {axis = -1} : (tensor<4x8xf32>) -> (tensor<4x8xf32>)
  "builtin.output"(%y) {name = "y"} : (tensor<4x8xf32>) -> ()
}
)IR");
  const std::string before = p->str();
  PassManager pm;
  pm.add_pass("decompose");
  pm.run(*p);
  EXPECT_EQ(p->str(), before);
}

// A decomposition that reads a dynamic size (mean over a `?` axis divides by it) keeps
// the op; over a static axis it decomposes and the batch stays dynamic.
TEST(CinnDecompose, DynamicDims) {
  FLAGS_prim_all = true;
  auto p = parse_program(ctx(), R"IR(
module {
  %x = "builtin.input"() {name = "x"} : () -> (tensor<?x8xf32>)
  %a = "pd_op.mean"(%x) {axis = #shape[-1], keepdim = true} : (tensor<?x8xf32>) -> (tensor<?x1xf32>)
  %b = "pd_op.mean"(%x) {axis = #shape[0], keepdim = true} : (tensor<?x8xf32>) -> (tensor<1x8xf32>)
  "builtin.output"(%a) {name = "a"} : (tensor<?x1xf32>) -> ()
  "builtin.output"(%b) {name = "b"} : (tensor<1x8xf32>) -> ()
}
)IR");
  PassManager pm;
  pm.add_pass("decompose");
  pm.run(*p);
  FLAGS_prim_all = false;
  const std::string s = p->str();
  EXPECT_NE(s.find("\"pd_op.mean\"(%0) {axis = #shape[0]"), std::string::npos) << s;
  EXPECT_EQ(s.find("axis = #shape[-1], keepdim = true} : (tensor<?x8xf32>)"), std::string::npos) << s;
  EXPECT_NE(s.find("pd_op.sum"), std::string::npos) << s;
}

// batch_norm in training and its grad (Note [batch_norm decomposition]): every result
// becomes primitives; the statistics are sum(y) and sum(y * y) of y = x - x[0, c, 0, 0]
// (one sweep once fused), the grad's two channel sums read x and grad_out.
TEST(CinnDecompose, BatchNormTrainingAndGrad) {
  FLAGS_prim_all = true;
  auto p = parse_program(ctx(), R"IR(
module {
  %x = "builtin.input"() {name = "x"} : () -> (tensor<2x3x4x5xf32>)
  %rm = "builtin.input"() {name = "rm"} : () -> (tensor<3xf32>)
  %rv = "builtin.input"() {name = "rv"} : () -> (tensor<3xf32>)
  %w = "builtin.input"() {name = "w"} : () -> (tensor<3xf32>)
  %g = "builtin.input"() {name = "g"} : () -> (tensor<2x3x4x5xf32>)
  %y, %mo, %vo, %sm, %sr = "pd_op.batch_norm"(%x, %rm, %rv, %w, %null) {training = true, momentum = 0.9, epsilon = 1e-5, data_format = "NCHW", use_global_stats = false} : (tensor<2x3x4x5xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, none) -> (tensor<2x3x4x5xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>)
  %dx, %dw, %db = "pd_op.batch_norm_grad"(%x, %w, %sm, %sr, %g) {use_global_stats = false, data_format = "NCHW"} : (tensor<2x3x4x5xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<2x3x4x5xf32>) -> (tensor<2x3x4x5xf32>, tensor<3xf32>, tensor<3xf32>)
  "builtin.output"(%y) {name = "y"} : (tensor<2x3x4x5xf32>) -> ()
  "builtin.output"(%mo) {name = "mo"} : (tensor<3xf32>) -> ()
  "builtin.output"(%vo) {name = "vo"} : (tensor<3xf32>) -> ()
  "builtin.output"(%dx) {name = "dx"} : (tensor<2x3x4x5xf32>) -> ()
  "builtin.output"(%dw) {name = "dw"} : (tensor<3xf32>) -> ()
  "builtin.output"(%db) {name = "db"} : (tensor<3xf32>) -> ()
}
)IR");
  PassManager pm;
  pm.add_pass("decompose");
  pm.add_pass("cse");
  pm.add_pass("dce");
  pm.run(*p);
  FLAGS_prim_all = false;
  EXPECT_EQ(p->str(), R"IR(module {
  %0 = "builtin.input"() {name = "x"} : () -> (tensor<2x3x4x5xf32>)
  %1 = "builtin.input"() {name = "rm"} : () -> (tensor<3xf32>)
  %2 = "builtin.input"() {name = "rv"} : () -> (tensor<3xf32>)
  %3 = "builtin.input"() {name = "w"} : () -> (tensor<3xf32>)
  %4 = "builtin.input"() {name = "g"} : () -> (tensor<2x3x4x5xf32>)
  %5 = "pd_op.slice"(%0) {axes = #shape[0, 2, 3], ends = #shape[1, 1, 1], starts = #shape[0, 0, 0], strides = #shape[]} : (tensor<2x3x4x5xf32>) -> (tensor<1x3x1x1xf32>)
  %6 = "pd_op.subtract"(%0, %5) : (tensor<2x3x4x5xf32>, tensor<1x3x1x1xf32>) -> (tensor<2x3x4x5xf32>)
  %7 = "pd_op.sum"(%6) {axis = #shape[0, 2, 3], dtype = #dtype<undefined>, keepdim = true} : (tensor<2x3x4x5xf32>) -> (tensor<1x3x1x1xf32>)
  %8 = "pd_op.scale"(%7) {bias = 0.0, bias_after_scale = true, scale = 0.025} : (tensor<1x3x1x1xf32>) -> (tensor<1x3x1x1xf32>)
  %9 = "pd_op.add"(%8, %5) : (tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>) -> (tensor<1x3x1x1xf32>)
  %10 = "pd_op.full"() {dtype = #dtype<float32>, fill_value = 0.0, place = #place<cpu>, shape = #shape[]} : () -> (tensor<f32>)
  %11 = "pd_op.multiply"(%8, %8) : (tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>) -> (tensor<1x3x1x1xf32>)
  %12 = "pd_op.multiply"(%6, %6) : (tensor<2x3x4x5xf32>, tensor<2x3x4x5xf32>) -> (tensor<2x3x4x5xf32>)
  %13 = "pd_op.sum"(%12) {axis = #shape[0, 2, 3], dtype = #dtype<undefined>, keepdim = true} : (tensor<2x3x4x5xf32>) -> (tensor<1x3x1x1xf32>)
  %14 = "pd_op.scale"(%13) {bias = 0.0, bias_after_scale = true, scale = 0.025} : (tensor<1x3x1x1xf32>) -> (tensor<1x3x1x1xf32>)
  %15 = "pd_op.subtract"(%14, %11) : (tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>) -> (tensor<1x3x1x1xf32>)
  %16 = "pd_op.maximum"(%15, %10) : (tensor<1x3x1x1xf32>, tensor<f32>) -> (tensor<1x3x1x1xf32>)
  %17 = "pd_op.scale"(%16) {bias = 1e-05, bias_after_scale = true, scale = 1.0} : (tensor<1x3x1x1xf32>) -> (tensor<1x3x1x1xf32>)
  %18 = "pd_op.sqrt"(%17) : (tensor<1x3x1x1xf32>) -> (tensor<1x3x1x1xf32>)
  %19 = "pd_op.reciprocal"(%18) : (tensor<1x3x1x1xf32>) -> (tensor<1x3x1x1xf32>)
  %20 = "pd_op.reshape"(%19) {shape = #shape[3]} : (tensor<1x3x1x1xf32>) -> (tensor<3xf32>)
  %21 = "pd_op.reshape"(%9) {shape = #shape[3]} : (tensor<1x3x1x1xf32>) -> (tensor<3xf32>)
  %22 = "pd_op.scale"(%16) {bias = 0.0, bias_after_scale = true, scale = 0.09999999999999998} : (tensor<1x3x1x1xf32>) -> (tensor<1x3x1x1xf32>)
  %23 = "pd_op.reshape"(%2) {shape = #shape[1, 3, 1, 1]} : (tensor<3xf32>) -> (tensor<1x3x1x1xf32>)
  %24 = "pd_op.scale"(%23) {bias = 0.0, bias_after_scale = true, scale = 0.9} : (tensor<1x3x1x1xf32>) -> (tensor<1x3x1x1xf32>)
  %25 = "pd_op.add"(%24, %22) : (tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>) -> (tensor<1x3x1x1xf32>)
  %26 = "pd_op.reshape"(%25) {shape = #shape[3]} : (tensor<1x3x1x1xf32>) -> (tensor<3xf32>)
  %27 = "pd_op.scale"(%9) {bias = 0.0, bias_after_scale = true, scale = 0.09999999999999998} : (tensor<1x3x1x1xf32>) -> (tensor<1x3x1x1xf32>)
  %28 = "pd_op.reshape"(%1) {shape = #shape[1, 3, 1, 1]} : (tensor<3xf32>) -> (tensor<1x3x1x1xf32>)
  %29 = "pd_op.scale"(%28) {bias = 0.0, bias_after_scale = true, scale = 0.9} : (tensor<1x3x1x1xf32>) -> (tensor<1x3x1x1xf32>)
  %30 = "pd_op.add"(%29, %27) : (tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>) -> (tensor<1x3x1x1xf32>)
  %31 = "pd_op.reshape"(%30) {shape = #shape[3]} : (tensor<1x3x1x1xf32>) -> (tensor<3xf32>)
  %32 = "pd_op.reshape"(%3) {shape = #shape[1, 3, 1, 1]} : (tensor<3xf32>) -> (tensor<1x3x1x1xf32>)
  %33 = "pd_op.multiply"(%19, %32) : (tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>) -> (tensor<1x3x1x1xf32>)
  %34 = "pd_op.subtract"(%0, %9) : (tensor<2x3x4x5xf32>, tensor<1x3x1x1xf32>) -> (tensor<2x3x4x5xf32>)
  %35 = "pd_op.multiply"(%34, %33) : (tensor<2x3x4x5xf32>, tensor<1x3x1x1xf32>) -> (tensor<2x3x4x5xf32>)
  %36 = "pd_op.reshape"(%20) {shape = #shape[1, 3, 1, 1]} : (tensor<3xf32>) -> (tensor<1x3x1x1xf32>)
  %37 = "pd_op.reshape"(%21) {shape = #shape[1, 3, 1, 1]} : (tensor<3xf32>) -> (tensor<1x3x1x1xf32>)
  %38 = "pd_op.subtract"(%0, %37) : (tensor<2x3x4x5xf32>, tensor<1x3x1x1xf32>) -> (tensor<2x3x4x5xf32>)
  %39 = "pd_op.sum"(%4) {axis = #shape[0, 2, 3], dtype = #dtype<undefined>, keepdim = true} : (tensor<2x3x4x5xf32>) -> (tensor<1x3x1x1xf32>)
  %40 = "pd_op.reshape"(%39) {shape = #shape[3]} : (tensor<1x3x1x1xf32>) -> (tensor<3xf32>)
  %41 = "pd_op.multiply"(%4, %38) : (tensor<2x3x4x5xf32>, tensor<2x3x4x5xf32>) -> (tensor<2x3x4x5xf32>)
  %42 = "pd_op.sum"(%41) {axis = #shape[0, 2, 3], dtype = #dtype<undefined>, keepdim = true} : (tensor<2x3x4x5xf32>) -> (tensor<1x3x1x1xf32>)
  %43 = "pd_op.multiply"(%42, %36) : (tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>) -> (tensor<1x3x1x1xf32>)
  %44 = "pd_op.reshape"(%43) {shape = #shape[3]} : (tensor<1x3x1x1xf32>) -> (tensor<3xf32>)
  %45 = "pd_op.multiply"(%36, %32) : (tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>) -> (tensor<1x3x1x1xf32>)
  %46 = "pd_op.multiply"(%36, %36) : (tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>) -> (tensor<1x3x1x1xf32>)
  %47 = "pd_op.scale"(%46) {bias = 0.0, bias_after_scale = true, scale = 0.025} : (tensor<1x3x1x1xf32>) -> (tensor<1x3x1x1xf32>)
  %48 = "pd_op.multiply"(%42, %47) : (tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>) -> (tensor<1x3x1x1xf32>)
  %49 = "pd_op.multiply"(%38, %48) : (tensor<2x3x4x5xf32>, tensor<1x3x1x1xf32>) -> (tensor<2x3x4x5xf32>)
  %50 = "pd_op.scale"(%39) {bias = 0.0, bias_after_scale = true, scale = 0.025} : (tensor<1x3x1x1xf32>) -> (tensor<1x3x1x1xf32>)
  %51 = "pd_op.subtract"(%4, %50) : (tensor<2x3x4x5xf32>, tensor<1x3x1x1xf32>) -> (tensor<2x3x4x5xf32>)
  %52 = "pd_op.subtract"(%51, %49) : (tensor<2x3x4x5xf32>, tensor<2x3x4x5xf32>) -> (tensor<2x3x4x5xf32>)
  %53 = "pd_op.multiply"(%52, %45) : (tensor<2x3x4x5xf32>, tensor<1x3x1x1xf32>) -> (tensor<2x3x4x5xf32>)
  "builtin.output"(%35) {name = "y"} : (tensor<2x3x4x5xf32>) -> ()
  "builtin.output"(%31) {name = "mo"} : (tensor<3xf32>) -> ()
  "builtin.output"(%26) {name = "vo"} : (tensor<3xf32>) -> ()
  "builtin.output"(%53) {name = "dx"} : (tensor<2x3x4x5xf32>) -> ()
  "builtin.output"(%44) {name = "dw"} : (tensor<3xf32>) -> ()
  "builtin.output"(%40) {name = "db"} : (tensor<3xf32>) -> ()
}
)IR");
}

}  // namespace
}  // namespace oar::cinn
