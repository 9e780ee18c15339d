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
  const char* expected = R"IR(
module {
  %0 = "builtin.input"() {name = "x"} : () -> (tensor<4x8xf32>)
  %1 = "builtin.input"() {name = "m"} : () -> (tensor<4x1xbool>)
  %2 = "builtin.input"() {name = "d"} : () -> (tensor<4x8xf64>)
  %3 = "pd_op.equal"(%2, %2) : (tensor<4x8xf64>, tensor<4x8xf64>) -> (tensor<4x8xbool>)
  %4, %5 = "cinn.fusion"(%0, %1, %3) ({
    ^bb0(%6: tensor<4x8xf32>, %7: tensor<4x1xbool>, %8: tensor<4x8xbool>):
      %9 = "pd_op.full_like"(%6) {dtype = #dtype<float32>, fill_value = 0.0} : (tensor<4x8xf32>) -> (tensor<4x8xf32>)
      %10 = "pd_op.greater_than"(%6, %9) : (tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8xbool>)
      %11 = "pd_op.scale"(%6) {bias = 0.0, bias_after_scale = true, scale = 0.02} : (tensor<4x8xf32>) -> (tensor<4x8xf32>)
      %12 = "pd_op.where"(%10, %6, %11) : (tensor<4x8xbool>, tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>)
      %13 = "pd_op.neg"(%6) : (tensor<4x8xf32>) -> (tensor<4x8xf32>)
      %14 = "pd_op.where"(%7, %12, %13) : (tensor<4x1xbool>, tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>)
      %15 = "pd_op.max"(%14) {axis = #shape[-1], keepdim = true} : (tensor<4x8xf32>) -> (tensor<4x1xf32>)
      %16 = "pd_op.subtract"(%14, %15) : (tensor<4x8xf32>, tensor<4x1xf32>) -> (tensor<4x8xf32>)
      %17 = "pd_op.cast"(%8) {dtype = #dtype<float32>} : (tensor<4x8xbool>) -> (tensor<4x8xf32>)
      %18 = "pd_op.multiply"(%16, %17) : (tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>)
      "cinn.yield"(%10, %18) : (tensor<4x8xbool>, tensor<4x8xf32>) -> ()
  }) : (tensor<4x8xf32>, tensor<4x1xbool>, tensor<4x8xbool>) -> (tensor<4x8xbool>, tensor<4x8xf32>)
  "builtin.output"(%5) {name = "o"} : (tensor<4x8xf32>) -> ()
  "builtin.output"(%4) {name = "g"} : (tensor<4x8xbool>) -> ()
}
)IR";
  EXPECT_EQ(fused(kSelect + 1)->str(), expected + 1);
}

TEST(CinnLoopIr, SelectsComparesAndMasks) {
  auto p = fused(kSelect + 1);
  const std::vector<const Operation*> fs = fusions(*p);
  ASSERT_EQ(fs.size(), 1u) << p->str();
  const LoopKernel k = lower_fusion(fs[0]);
  EXPECT_EQ(k.text(), R"(float32 space=[4,8] ref=0
n0:full = in0
n1:row = in1 bool
n2:full = in2 bool
n3:scalar = const 0x0p+0
n4:full = id(n3)
n5:full = gt(n0, n4)
n6:scalar = const 0x1.47ae147ae147bp-6
n7:full = mul(n0, n6)
n8:full = select(n5, n0, n7)
n9:full = neg(n0)
n10:full = select(n1, n8, n9)
n11:row = reduce_max(n10)
n12:full = sub(n10, n11)
n13:full = id(n2)
n14:full = mul(n12, n13)
out n5/bool n14)");
}

// A group whose first op computes over the rows ([4, 1]: the cross_entropy gradient's
// `where(valid, scale, 0)`) lowers over the space every op fits, [4, 8], not the first op's.
TEST(CinnLoopIr, ARowOpFirstStillLowersOverTheFullSpace) {
  auto p = fused(R"IR(module {
  %x = "builtin.input"() {name = "x"} : () -> (tensor<4x8xf32>)
  %r = "builtin.input"() {name = "r"} : () -> (tensor<4x1xf32>)
  %s = "pd_op.scale"(%r) {bias = 1.0, bias_after_scale = true, scale = 2.0} : (tensor<4x1xf32>) -> (tensor<4x1xf32>)
  %y = "pd_op.multiply"(%x, %s) : (tensor<4x8xf32>, tensor<4x1xf32>) -> (tensor<4x8xf32>)
  "builtin.output"(%y) {name = "y"} : (tensor<4x8xf32>) -> ()
}
)IR");
  const std::vector<const Operation*> fs = fusions(*p);
  ASSERT_EQ(fs.size(), 1u) << p->str();
  EXPECT_EQ(lower_fusion(fs[0]).text(), R"(float32 space=[4,8] ref=1
n0:row = in0
n1:full = in1
n2:scalar = const 0x1p+1
n3:row = mul(n0, n2)
n4:scalar = const 0x1p+0
n5:row = add(n3, n4)
n6:full = mul(n1, n5)
out n6)");
}

}  // namespace
}  // namespace oar::cinn
