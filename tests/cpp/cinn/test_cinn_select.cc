// Selects and masks in groups (Note [Select and masks] in docs/notes/cinn.md): compares,
// `where`, `cast` of a mask and `full_like` join their elementwise and reduction
// neighbours; a bool mask input is read as bytes (here a row mask [4, 1]); a compare of
// another float dtype stays out of a float32 group. The fuse pass (IR in, IR out) and the
// loop IR.
#include "cinn/schedule/loop_ir.h"
#include "tests/cpp/cinn/cinn_test_util.h"

namespace oar::cinn {
namespace {
using namespace pir;  // NOLINT

// leaky_relu as decomposed (a compare with full_like's 0, a select), a row mask selecting
// between it and -x, a row max and a subtract; the float64 compare stays outside.
const char* kSelect = R"IR(
module {
  %x = "builtin.input"() {name = "x"} : () -> (tensor<4x8xf32>)
  %m = "builtin.input"() {name = "m"} : () -> (tensor<4x1xbool>)
  %d = "builtin.input"() {name = "d"} : () -> (tensor<4x8xf64>)
  %z = "pd_op.full_like"(%x) {dtype = #dtype<float32>, fill_value = 0.0} : (tensor<4x8xf32>) -> (tensor<4x8xf32>)
  %g = "pd_op.greater_than"(%x, %z) : (tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8xbool>)
  %s = "pd_op.scale"(%x) {bias = 0.0, bias_after_scale = true, scale = 0.02} : (tensor<4x8xf32>) -> (tensor<4x8xf32>)
  %l = "pd_op.where"(%g, %x, %s) : (tensor<4x8xbool>, tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>)
  %n = "pd_op.neg"(%x) : (tensor<4x8xf32>) -> (tensor<4x8xf32>)
  %w = "pd_op.where"(%m, %l, %n) : (tensor<4x1xbool>, tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>)
  %r = "pd_op.max"(%w) {axis = #shape[-1], keepdim = true} : (tensor<4x8xf32>) -> (tensor<4x1xf32>)
  %y = "pd_op.subtract"(%w, %r) : (tensor<4x8xf32>, tensor<4x1xf32>) -> (tensor<4x8xf32>)
  %e = "pd_op.equal"(%d, %d) : (tensor<4x8xf64>, tensor<4x8xf64>) -> (tensor<4x8xbool>)
  %c = "pd_op.cast"(%e) {dtype = #dtype<float32>} : (tensor<4x8xbool>) -> (tensor<4x8xf32>)
  %o = "pd_op.multiply"(%y, %c) : (tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>)
  "builtin.output"(%o) {name = "o"} : (tensor<4x8xf32>) -> ()
  "builtin.output"(%g) {name = "g"} : (tensor<4x8xbool>) -> ()
}
)IR";

using test_util::fused;
using test_util::fusions;

TEST(CinnPasses, FuseSelectsComparesAndMasks) {
  const char* expected = R"IR(EXPECTED)IR";
  EXPECT_EQ(fused(kSelect + 1)->str(), expected + 1);
}

TEST(CinnLoopIr, SelectsComparesAndMasks) {
  auto p = fused(kSelect + 1);
  const std::vector<const Operation*> fs = fusions(*p);
  ASSERT_EQ(fs.size(), 1u) << p->str();
  const LoopKernel k = lower_fusion(fs[0]);
  EXPECT_EQ(k.text(), R"(LOOPIR)");
}

}  // namespace
}  // namespace oar::cinn
