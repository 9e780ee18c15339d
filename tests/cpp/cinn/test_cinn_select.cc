// Selects and masks in groups (Note [Select and masks] in docs/notes/cinn.md): compares,
// `where`, `cast` of a mask, `full_like`, logical and/or/xor/not and an expand of a mask
// join their elementwise and reduction neighbours; a bool mask input is read as bytes
// (here a row mask [4, 1]); a compare of another float dtype and a logical op of integers
// stay out of a float32 group. The fuse pass (IR in, IR out) and the loop IR.
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

// Logical ops of masks (Note [Select and masks]): a band of two compares, a row mask
// expanded to the space, not of a bool input, xor, and of two float values (nonzero is
// true) select x; a logical and of integers stays outside and its mask is a bool input;
// the or of the band and the row mask is also a bool output.
const char* kLogical = R"IR(
module {
  %x = "builtin.input"() {name = "x"} : () -> (tensor<4x8xf32>)
  %m = "builtin.input"() {name = "m"} : () -> (tensor<4x1xbool>)
  %k = "builtin.input"() {name = "k"} : () -> (tensor<4x8xbool>)
  %i = "builtin.input"() {name = "i"} : () -> (tensor<4x8xi64>)
  %lo = "pd_op.full_like"(%x) {dtype = #dtype<float32>, fill_value = -1.0} : (tensor<4x8xf32>) -> (tensor<4x8xf32>)
  %hi = "pd_op.full_like"(%x) {dtype = #dtype<float32>, fill_value = 1.0} : (tensor<4x8xf32>) -> (tensor<4x8xf32>)
  %a = "pd_op.greater_than"(%x, %lo) : (tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8xbool>)
  %b = "pd_op.less_than"(%x, %hi) : (tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8xbool>)
  %band = "pd_op.logical_and"(%a, %b) : (tensor<4x8xbool>, tensor<4x8xbool>) -> (tensor<4x8xbool>)
  %e = "pd_op.expand"(%m) {shape = #shape[4, 8]} : (tensor<4x1xbool>) -> (tensor<4x8xbool>)
  %o = "pd_op.logical_or"(%band, %e) : (tensor<4x8xbool>, tensor<4x8xbool>) -> (tensor<4x8xbool>)
  %n = "pd_op.logical_not"(%k) : (tensor<4x8xbool>) -> (tensor<4x8xbool>)
  %v = "pd_op.logical_xor"(%o, %n) : (tensor<4x8xbool>, tensor<4x8xbool>) -> (tensor<4x8xbool>)
  %f = "pd_op.logical_and"(%x, %lo) : (tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8xbool>)
  %c = "pd_op.logical_or"(%v, %f) : (tensor<4x8xbool>, tensor<4x8xbool>) -> (tensor<4x8xbool>)
  %y = "pd_op.where"(%c, %x, %lo) : (tensor<4x8xbool>, tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>)
  %ib = "pd_op.logical_and"(%i, %i) : (tensor<4x8xi64>, tensor<4x8xi64>) -> (tensor<4x8xbool>)
  %w = "pd_op.where"(%ib, %y, %hi) : (tensor<4x8xbool>, tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>)
  "builtin.output"(%w) {name = "w"} : (tensor<4x8xf32>) -> ()
  "builtin.output"(%o) {name = "o"} : (tensor<4x8xbool>) -> ()
}
)IR";

TEST(CinnPasses, FuseLogicalOpsAndExpandedMasks) {
  const char* expected = R"IR(
module {
  %0 = "builtin.input"() {name = "x"} : () -> (tensor<4x8xf32>)
  %1 = "builtin.input"() {name = "m"} : () -> (tensor<4x1xbool>)
  %2 = "builtin.input"() {name = "k"} : () -> (tensor<4x8xbool>)
  %3 = "builtin.input"() {name = "i"} : () -> (tensor<4x8xi64>)
  %4 = "pd_op.logical_and"(%3, %3) : (tensor<4x8xi64>, tensor<4x8xi64>) -> (tensor<4x8xbool>)
  %5, %6 = "cinn.fusion"(%0, %1, %2, %4) ({
    ^bb0(%7: tensor<4x8xf32>, %8: tensor<4x1xbool>, %9: tensor<4x8xbool>, %10: tensor<4x8xbool>):
      %11 = "pd_op.full_like"(%7) {dtype = #dtype<float32>, fill_value = -1.0} : (tensor<4x8xf32>) -> (tensor<4x8xf32>)
      %12 = "pd_op.full_like"(%7) {dtype = #dtype<float32>, fill_value = 1.0} : (tensor<4x8xf32>) -> (tensor<4x8xf32>)
      %13 = "pd_op.greater_than"(%7, %11) : (tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8xbool>)
      %14 = "pd_op.less_than"(%7, %12) : (tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8xbool>)
      %15 = "pd_op.logical_and"(%13, %14) : (tensor<4x8xbool>, tensor<4x8xbool>) -> (tensor<4x8xbool>)
      %16 = "pd_op.expand"(%8) {shape = #shape[4, 8]} : (tensor<4x1xbool>) -> (tensor<4x8xbool>)
      %17 = "pd_op.logical_or"(%15, %16) : (tensor<4x8xbool>, tensor<4x8xbool>) -> (tensor<4x8xbool>)
      %18 = "pd_op.logical_not"(%9) : (tensor<4x8xbool>) -> (tensor<4x8xbool>)
      %19 = "pd_op.logical_xor"(%17, %18) : (tensor<4x8xbool>, tensor<4x8xbool>) -> (tensor<4x8xbool>)
      %20 = "pd_op.logical_and"(%7, %11) : (tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8xbool>)
      %21 = "pd_op.logical_or"(%19, %20) : (tensor<4x8xbool>, tensor<4x8xbool>) -> (tensor<4x8xbool>)
      %22 = "pd_op.where"(%21, %7, %11) : (tensor<4x8xbool>, tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>)
      %23 = "pd_op.where"(%10, %22, %12) : (tensor<4x8xbool>, tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>)
      "cinn.yield"(%17, %23) : (tensor<4x8xbool>, tensor<4x8xf32>) -> ()
  }) : (tensor<4x8xf32>, tensor<4x1xbool>, tensor<4x8xbool>, tensor<4x8xbool>) -> (tensor<4x8xbool>, tensor<4x8xf32>)
  "builtin.output"(%6) {name = "w"} : (tensor<4x8xf32>) -> ()
  "builtin.output"(%5) {name = "o"} : (tensor<4x8xbool>) -> ()
}
)IR";
  EXPECT_EQ(fused(kLogical + 1)->str(), expected + 1);
}

// and = mul, or = max, xor = ne, not = eq(m, 0) on 1/0 masks; a float operand becomes a
// mask first (ne(x, 0)).
TEST(CinnLoopIr, LogicalOpsOfMasks) {
  auto p = fused(kLogical + 1);
  const std::vector<const Operation*> fs = fusions(*p);
  ASSERT_EQ(fs.size(), 1u) << p->str();
  EXPECT_EQ(lower_fusion(fs[0]).text(), R"(float32 space=[4,8] ref=0
n0:full = in0
n1:row = in1 bool
n2:full = in2 bool
n3:full = in3 bool
n4:scalar = const -0x1p+0
n5:full = id(n4)
n6:scalar = const 0x1p+0
n7:full = id(n6)
n8:full = gt(n0, n5)
n9:full = lt(n0, n7)
n10:full = mul(n8, n9)
n11:full = id(n1)
n12:full = max(n10, n11)
n13:scalar = const 0x0p+0
n14:full = eq(n2, n13)
n15:full = ne(n12, n14)
n16:scalar = const 0x0p+0
n17:full = ne(n0, n16)
n18:scalar = const 0x0p+0
n19:full = ne(n5, n18)
n20:full = mul(n17, n19)
n21:full = max(n15, n20)
n22:full = select(n21, n0, n5)
n23:full = select(n3, n22, n7)
out n12/bool n23)");
}

// An attention-style mask: a padding mask [2, 1, 8] and a causal-like [3, 8] mask, each
// expanded to the scores' [2, 3, 8] and combined by logical_and, select the scores before a
// row max. The expands' operands are broadcast inputs (Note [Broadcast inputs]) of bytes.
TEST(CinnLoopIr, ExpandedMasksAreBroadcastInputs) {
  auto p = fused(R"IR(module {
  %s = "builtin.input"() {name = "s"} : () -> (tensor<2x3x8xf32>)
  %p = "builtin.input"() {name = "p"} : () -> (tensor<2x1x8xbool>)
  %q = "builtin.input"() {name = "q"} : () -> (tensor<3x8xbool>)
  %pe = "pd_op.expand"(%p) {shape = #shape[2, 3, 8]} : (tensor<2x1x8xbool>) -> (tensor<2x3x8xbool>)
  %qe = "pd_op.expand"(%q) {shape = #shape[2, 3, 8]} : (tensor<3x8xbool>) -> (tensor<2x3x8xbool>)
  %mm = "pd_op.logical_and"(%pe, %qe) : (tensor<2x3x8xbool>, tensor<2x3x8xbool>) -> (tensor<2x3x8xbool>)
  %z = "pd_op.full_like"(%s) {dtype = #dtype<float32>, fill_value = -10000.0} : (tensor<2x3x8xf32>) -> (tensor<2x3x8xf32>)
  %y = "pd_op.where"(%mm, %s, %z) : (tensor<2x3x8xbool>, tensor<2x3x8xf32>, tensor<2x3x8xf32>) -> (tensor<2x3x8xf32>)
  %r = "pd_op.max"(%y) {axis = #shape[-1], keepdim = true} : (tensor<2x3x8xf32>) -> (tensor<2x3x1xf32>)
  %d = "pd_op.subtract"(%y, %r) : (tensor<2x3x8xf32>, tensor<2x3x1xf32>) -> (tensor<2x3x8xf32>)
  "builtin.output"(%d) {name = "d"} : (tensor<2x3x8xf32>) -> ()
}
)IR");
  const std::vector<const Operation*> fs = fusions(*p);
  ASSERT_EQ(fs.size(), 1u) << p->str();
  EXPECT_EQ(fs[0]->num_operands(), 3u) << p->str();
  EXPECT_EQ(lower_fusion(fs[0]).text(), R"(float32 space=[2,3,8] ref=2
n0:bcast = in0 [2,1,8] bool
n1:bcast = in1 [1,3,8] bool
n2:full = in2
n3:full = id(n0)
n4:full = id(n1)
n5:full = mul(n3, n4)
n6:scalar = const -0x1.388p+13
n7:full = id(n6)
n8:full = select(n5, n2, n7)
n9:row = reduce_max(n8)
n10:full = sub(n8, n9)
out n10)");
}

// A group of masks only (where(a, ~(a | b), b) of two bool inputs) computes in float32:
// bytes in, 1/0 values, bytes out.
TEST(CinnLoopIr, AGroupOfMasksOnly) {
  auto p = fused(R"IR(module {
  %a = "builtin.input"() {name = "a"} : () -> (tensor<4x8xbool>)
  %b = "builtin.input"() {name = "b"} : () -> (tensor<4x8xbool>)
  %u = "pd_op.logical_or"(%a, %b) : (tensor<4x8xbool>, tensor<4x8xbool>) -> (tensor<4x8xbool>)
  %v = "pd_op.logical_not"(%u) : (tensor<4x8xbool>) -> (tensor<4x8xbool>)
  %s = "pd_op.where"(%a, %v, %b) : (tensor<4x8xbool>, tensor<4x8xbool>, tensor<4x8xbool>) -> (tensor<4x8xbool>)
  "builtin.output"(%s) {name = "s"} : (tensor<4x8xbool>) -> ()
}
)IR");
  const std::vector<const Operation*> fs = fusions(*p);
  ASSERT_EQ(fs.size(), 1u) << p->str();
  EXPECT_EQ(lower_fusion(fs[0]).text(), R"(float32 space=[4,8] ref=0
n0:full = in0 bool
n1:full = in1 bool
n2:full = max(n0, n1)
n3:scalar = const 0x0p+0
n4:full = eq(n2, n3)
n5:full = select(n0, n4, n1)
out n5/bool)");
}

// A logical op has no dtype of its own: of a float64 and a float32 mask it joins the
// first operand's group (float64), whose kernel reads the float32 group's mask as a bool
// input.
TEST(CinnPasses, ALogicalOpOfTwoDtypesJoinsItsFirstOperandsGroup) {
  auto p = fused(R"IR(module {
  %x = "builtin.input"() {name = "x"} : () -> (tensor<4x8xf32>)
  %d = "builtin.input"() {name = "d"} : () -> (tensor<4x8xf64>)
  %zx = "pd_op.full_like"(%x) {dtype = #dtype<float32>, fill_value = 0.0} : (tensor<4x8xf32>) -> (tensor<4x8xf32>)
  %zd = "pd_op.full_like"(%d) {dtype = #dtype<float64>, fill_value = 0.0} : (tensor<4x8xf64>) -> (tensor<4x8xf64>)
  %a = "pd_op.greater_than"(%d, %zd) : (tensor<4x8xf64>, tensor<4x8xf64>) -> (tensor<4x8xbool>)
  %b = "pd_op.greater_than"(%x, %zx) : (tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8xbool>)
  %c = "pd_op.logical_and"(%a, %b) : (tensor<4x8xbool>, tensor<4x8xbool>) -> (tensor<4x8xbool>)
  "builtin.output"(%c) {name = "c"} : (tensor<4x8xbool>) -> ()
}
)IR");
  EXPECT_EQ(p->str(), R"IR(module {
  %0 = "builtin.input"() {name = "x"} : () -> (tensor<4x8xf32>)
  %1 = "builtin.input"() {name = "d"} : () -> (tensor<4x8xf64>)
  %2 = "cinn.fusion"(%0) ({
    ^bb0(%3: tensor<4x8xf32>):
      %4 = "pd_op.full_like"(%3) {dtype = #dtype<float32>, fill_value = 0.0} : (tensor<4x8xf32>) -> (tensor<4x8xf32>)
      %5 = "pd_op.greater_than"(%3, %4) : (tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8xbool>)
      "cinn.yield"(%5) : (tensor<4x8xbool>) -> ()
  }) : (tensor<4x8xf32>) -> (tensor<4x8xbool>)
  %6 = "cinn.fusion"(%1, %2) ({
    ^bb0(%7: tensor<4x8xf64>, %8: tensor<4x8xbool>):
      %9 = "pd_op.full_like"(%7) {dtype = #dtype<float64>, fill_value = 0.0} : (tensor<4x8xf64>) -> (tensor<4x8xf64>)
      %10 = "pd_op.greater_than"(%7, %9) : (tensor<4x8xf64>, tensor<4x8xf64>) -> (tensor<4x8xbool>)
      %11 = "pd_op.logical_and"(%10, %8) : (tensor<4x8xbool>, tensor<4x8xbool>) -> (tensor<4x8xbool>)
      "cinn.yield"(%11) : (tensor<4x8xbool>) -> ()
  }) : (tensor<4x8xf64>, tensor<4x8xbool>) -> (tensor<4x8xbool>)
  "builtin.output"(%6) {name = "c"} : (tensor<4x8xbool>) -> ()
}
)IR");
  const std::vector<const Operation*> fs = fusions(*p);
  ASSERT_EQ(fs.size(), 2u) << p->str();
  EXPECT_EQ(lower_fusion(fs[1]).text(), R"(float64 space=[4,8] ref=0
n0:full = in0
n1:full = in1 bool
n2:scalar = const 0x0p+0
n3:full = id(n2)
n4:full = gt(n0, n3)
n5:full = mul(n4, n1)
out n5/bool)");
}

}  // namespace
}  // namespace oar::cinn
