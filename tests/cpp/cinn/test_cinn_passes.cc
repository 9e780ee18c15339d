// One test per pass of the fusion compiler: input program text -> expected output text
// (golden outputs checked by hand when written; regenerate with
// build/<dir>/pir/pir_opt --pipeline=P file).
#include "cinn/pipeline.h"
#include "pir/pass/pass.h"
#include "tests/cpp/pir/pir_test_util.h"

namespace oar::cinn {
namespace {
using namespace pir;  // NOLINT

std::string run(const std::string& pipeline, const std::string& input) {
  auto p = parse_program(IrContext::global(), input);
  PassManager pm;
  pm.add_pipeline(pipeline);
  pm.run(*p);
  return p->str();
}

// RMSNorm from primitives: the reduction, its elementwise producer and consumers, the
// row-level (rsqrt of the mean) and column (weight) values form one group; the matmul
// stays outside.
const char* kRmsNorm = R"IR(
module {
  %x = "builtin.input"() {name = "x"} : () -> (tensor<4x8xf32>)
  %w = "builtin.input"() {name = "w"} : () -> (tensor<8xf32>)
  %m = "builtin.input"() {name = "m"} : () -> (tensor<8x3xf32>)
  %sq = "pd_op.multiply"(%x, %x) : (tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>)
  %s = "pd_op.mean"(%sq) {axis = #shape[-1], keepdim = true} : (tensor<4x8xf32>) -> (tensor<4x1xf32>)
  %e = "pd_op.scale"(%s) {bias = 1e-06, bias_after_scale = true, scale = 1.0} : (tensor<4x1xf32>) -> (tensor<4x1xf32>)
  %r = "pd_op.rsqrt"(%e) : (tensor<4x1xf32>) -> (tensor<4x1xf32>)
  %y = "pd_op.multiply"(%x, %r) : (tensor<4x8xf32>, tensor<4x1xf32>) -> (tensor<4x8xf32>)
  %z = "pd_op.multiply"(%y, %w) : (tensor<4x8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>)
  %t = "pd_op.matmul"(%z, %m) : (tensor<4x8xf32>, tensor<8x3xf32>) -> (tensor<4x3xf32>)
  "builtin.output"(%t) {name = "t"} : (tensor<4x3xf32>) -> ()
}
)IR";

TEST(CinnPasses, FuseGroupsAReductionWithItsProducersAndConsumers) {
  const char* expected = R"IR(
module {
  %0 = "builtin.input"() {name = "x"} : () -> (tensor<4x8xf32>)
  %1 = "builtin.input"() {name = "w"} : () -> (tensor<8xf32>)
  %2 = "builtin.input"() {name = "m"} : () -> (tensor<8x3xf32>)
  %3 = "cinn.fusion"(%0, %1) ({
    ^bb0(%4: tensor<4x8xf32>, %5: tensor<8xf32>):
      %6 = "pd_op.multiply"(%4, %4) : (tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>)
      %7 = "pd_op.mean"(%6) {axis = #shape[-1], keepdim = true} : (tensor<4x8xf32>) -> (tensor<4x1xf32>)
      %8 = "pd_op.scale"(%7) {bias = 1e-06, bias_after_scale = true, scale = 1.0} : (tensor<4x1xf32>) -> (tensor<4x1xf32>)
      %9 = "pd_op.rsqrt"(%8) : (tensor<4x1xf32>) -> (tensor<4x1xf32>)
      %10 = "pd_op.multiply"(%4, %9) : (tensor<4x8xf32>, tensor<4x1xf32>) -> (tensor<4x8xf32>)
      %11 = "pd_op.multiply"(%10, %5) : (tensor<4x8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>)
      "cinn.yield"(%11) : (tensor<4x8xf32>) -> ()
  }) : (tensor<4x8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>)
  %12 = "pd_op.matmul"(%3, %2) : (tensor<4x8xf32>, tensor<8x3xf32>) -> (tensor<4x3xf32>)
  "builtin.output"(%12) {name = "t"} : (tensor<4x3xf32>) -> ()
}
)IR";
  EXPECT_EQ(run("cinn_fuse", kRmsNorm + 1), expected + 1);
}

// exp -> scale feeds a matmul whose result meets the scale again: merging the add into
// the first group would make a cycle through the matmul, so the add starts a second
// group. Integer ops stay out.
TEST(CinnPasses, FuseNeverMakesACycleAndKeepsUnsupportedDtypesOut) {
  const char* input = R"IR(
module {
  %x = "builtin.input"() {name = "x"} : () -> (tensor<4x8xf32>)
  %m = "builtin.input"() {name = "m"} : () -> (tensor<8x8xf32>)
  %i = "builtin.input"() {name = "i"} : () -> (tensor<4x8xi32>)
  %a = "pd_op.exp"(%x) : (tensor<4x8xf32>) -> (tensor<4x8xf32>)
  %a2 = "pd_op.scale"(%a) {bias = 0.0, bias_after_scale = true, scale = 2.0} : (tensor<4x8xf32>) -> (tensor<4x8xf32>)
  %b = "pd_op.matmul"(%a2, %m) : (tensor<4x8xf32>, tensor<8x8xf32>) -> (tensor<4x8xf32>)
  %c = "pd_op.add"(%a2, %b) : (tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>)
  %d = "pd_op.multiply"(%c, %c) : (tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>)
  %j = "pd_op.add"(%i, %i) : (tensor<4x8xi32>, tensor<4x8xi32>) -> (tensor<4x8xi32>)
  %k = "pd_op.multiply"(%j, %j) : (tensor<4x8xi32>, tensor<4x8xi32>) -> (tensor<4x8xi32>)
  "builtin.output"(%d) {name = "d"} : (tensor<4x8xf32>) -> ()
  "builtin.output"(%k) {name = "k"} : (tensor<4x8xi32>) -> ()
}
)IR";
  const char* expected = R"IR(
module {
  %0 = "builtin.input"() {name = "x"} : () -> (tensor<4x8xf32>)
  %1 = "builtin.input"() {name = "m"} : () -> (tensor<8x8xf32>)
  %2 = "builtin.input"() {name = "i"} : () -> (tensor<4x8xi32>)
  %3 = "cinn.fusion"(%0) ({
    ^bb0(%4: tensor<4x8xf32>):
      %5 = "pd_op.exp"(%4) : (tensor<4x8xf32>) -> (tensor<4x8xf32>)
      %6 = "pd_op.scale"(%5) {bias = 0.0, bias_after_scale = true, scale = 2.0} : (tensor<4x8xf32>) -> (tensor<4x8xf32>)
      "cinn.yield"(%6) : (tensor<4x8xf32>) -> ()
  }) : (tensor<4x8xf32>) -> (tensor<4x8xf32>)
  %7 = "pd_op.matmul"(%3, %1) : (tensor<4x8xf32>, tensor<8x8xf32>) -> (tensor<4x8xf32>)
  %8 = "cinn.fusion"(%3, %7) ({
    ^bb0(%9: tensor<4x8xf32>, %10: tensor<4x8xf32>):
      %11 = "pd_op.add"(%9, %10) : (tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>)
      %12 = "pd_op.multiply"(%11, %11) : (tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>)
      "cinn.yield"(%12) : (tensor<4x8xf32>) -> ()
  }) : (tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>)
  %13 = "pd_op.add"(%2, %2) : (tensor<4x8xi32>, tensor<4x8xi32>) -> (tensor<4x8xi32>)
  %14 = "pd_op.multiply"(%13, %13) : (tensor<4x8xi32>, tensor<4x8xi32>) -> (tensor<4x8xi32>)
  "builtin.output"(%8) {name = "d"} : (tensor<4x8xf32>) -> ()
  "builtin.output"(%14) {name = "k"} : (tensor<4x8xi32>) -> ()
}
)IR";
  EXPECT_EQ(run("cinn_fuse", input + 1), expected + 1);
}

TEST(CinnPasses, FuseHonoursTheDenyList) {
  FLAGS_deny_cinn_ops = "mean;pd_op.rsqrt";
  const std::string out = run("cinn_fuse", kRmsNorm + 1);
  FLAGS_deny_cinn_ops = "";
  // The ops denied stay outside; the x-wide multiplies after them still form a group.
  const size_t region = out.find("cinn.fusion"), end = out.find("cinn.yield");
  ASSERT_NE(region, std::string::npos) << out;
  for (const char* op : {"\"pd_op.mean\"", "\"pd_op.rsqrt\""}) {
    const size_t at = out.find(op);
    ASSERT_NE(at, std::string::npos) << out;
    EXPECT_TRUE(at < region || at > end) << op << " joined a group:\n" << out;
  }
  EXPECT_EQ(out.find("cinn.fusion", region + 1), std::string::npos) << out;
}

// The stages up to grouping on a dynamic batch: softmax decomposes (over the static last
// axis), and max, exp, sum and divide become one group.
TEST(CinnPasses, DecomposeThenFuseSoftmax) {
  const char* input = R"IR(
module {
  %x = "builtin.input"() {name = "x"} : () -> (tensor<?x16xf32>)
  %y = "pd_op.softmax"(%x) {axis = -1} : (tensor<?x16xf32>) -> (tensor<?x16xf32>)
  "builtin.output"(%y) {name = "y"} : (tensor<?x16xf32>) -> ()
}
)IR";
  const char* expected = R"IR(
module {
  %0 = "builtin.input"() {name = "x"} : () -> (tensor<?x16xf32>)
  %1 = "cinn.fusion"(%0) ({
    ^bb0(%2: tensor<?x16xf32>):
      %3 = "pd_op.max"(%2) {axis = #shape[-1], keepdim = true} : (tensor<?x16xf32>) -> (tensor<?x1xf32>)
      %4 = "pd_op.subtract"(%2, %3) : (tensor<?x16xf32>, tensor<?x1xf32>) -> (tensor<?x16xf32>)
      %5 = "pd_op.exp"(%4) : (tensor<?x16xf32>) -> (tensor<?x16xf32>)
      %6 = "pd_op.sum"(%5) {axis = #shape[-1], dtype = #dtype<undefined>, keepdim = true} : (tensor<?x16xf32>) -> (tensor<?x1xf32>)
      %7 = "pd_op.divide"(%5, %6) : (tensor<?x16xf32>, tensor<?x1xf32>) -> (tensor<?x16xf32>)
      "cinn.yield"(%7) : (tensor<?x16xf32>) -> ()
  }) : (tensor<?x16xf32>) -> (tensor<?x16xf32>)
  "builtin.output"(%1) {name = "y"} : (tensor<?x16xf32>) -> ()
}
)IR";
  FLAGS_prim_all = true;
  const std::string out = run("canonicalize,decompose,cse,dce,cinn_fuse", input + 1);
  FLAGS_prim_all = false;
  EXPECT_EQ(out, expected + 1);
}

// Horizontal fusion (Note [Fusion legality]): two groups over [4, 8] that read x and
// share no path merge into one kernel (one pass over x, both reductions in one sweep);
// the group over the matmul's result shares no input and stays apart.
TEST(CinnPasses, FuseMergesIndependentGroupsThatShareAnInput) {
  const char* input = R"IR(
module {
  %x = "builtin.input"() {name = "x"} : () -> (tensor<4x8xf32>)
  %w = "builtin.input"() {name = "w"} : () -> (tensor<8x8xf32>)
  %e = "pd_op.exp"(%x) : (tensor<4x8xf32>) -> (tensor<4x8xf32>)
  %s = "pd_op.sum"(%e) {axis = #shape[-1], dtype = #dtype<undefined>, keepdim = true} : (tensor<4x8xf32>) -> (tensor<4x1xf32>)
  %t = "pd_op.matmul"(%x, %w) : (tensor<4x8xf32>, tensor<8x8xf32>) -> (tensor<4x8xf32>)
  %d = "pd_op.multiply"(%x, %x) : (tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>)
  %m = "pd_op.max"(%d) {axis = #shape[-1], keepdim = true} : (tensor<4x8xf32>) -> (tensor<4x1xf32>)
  %u = "pd_op.tanh"(%t) : (tensor<4x8xf32>) -> (tensor<4x8xf32>)
  %v = "pd_op.min"(%u) {axis = #shape[-1], keepdim = true} : (tensor<4x8xf32>) -> (tensor<4x1xf32>)
  "builtin.output"(%s) {name = "s"} : (tensor<4x1xf32>) -> ()
  "builtin.output"(%m) {name = "m"} : (tensor<4x1xf32>) -> ()
  "builtin.output"(%v) {name = "v"} : (tensor<4x1xf32>) -> ()
}
)IR";
  const char* expected = R"IR(
module {
  %0 = "builtin.input"() {name = "x"} : () -> (tensor<4x8xf32>)
  %1 = "builtin.input"() {name = "w"} : () -> (tensor<8x8xf32>)
  %2 = "pd_op.matmul"(%0, %1) : (tensor<4x8xf32>, tensor<8x8xf32>) -> (tensor<4x8xf32>)
  %3, %4 = "cinn.fusion"(%0) ({
    ^bb0(%5: tensor<4x8xf32>):
      %6 = "pd_op.exp"(%5) : (tensor<4x8xf32>) -> (tensor<4x8xf32>)
      %7 = "pd_op.sum"(%6) {axis = #shape[-1], dtype = #dtype<undefined>, keepdim = true} : (tensor<4x8xf32>) -> (tensor<4x1xf32>)
      %8 = "pd_op.multiply"(%5, %5) : (tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>)
      %9 = "pd_op.max"(%8) {axis = #shape[-1], keepdim = true} : (tensor<4x8xf32>) -> (tensor<4x1xf32>)
      "cinn.yield"(%7, %9) : (tensor<4x1xf32>, tensor<4x1xf32>) -> ()
  }) : (tensor<4x8xf32>) -> (tensor<4x1xf32>, tensor<4x1xf32>)
  %10 = "cinn.fusion"(%2) ({
    ^bb0(%11: tensor<4x8xf32>):
      %12 = "pd_op.tanh"(%11) : (tensor<4x8xf32>) -> (tensor<4x8xf32>)
      %13 = "pd_op.min"(%12) {axis = #shape[-1], keepdim = true} : (tensor<4x8xf32>) -> (tensor<4x1xf32>)
      "cinn.yield"(%13) : (tensor<4x1xf32>) -> ()
  }) : (tensor<4x8xf32>) -> (tensor<4x1xf32>)
  "builtin.output"(%3) {name = "s"} : (tensor<4x1xf32>) -> ()
  "builtin.output"(%4) {name = "m"} : (tensor<4x1xf32>) -> ()
  "builtin.output"(%10) {name = "v"} : (tensor<4x1xf32>) -> ()
}
)IR";
  EXPECT_EQ(run("cinn_fuse", input + 1), expected + 1);
}

}  // namespace
}  // namespace oar::cinn
