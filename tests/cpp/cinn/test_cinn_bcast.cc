// Broadcast inputs (Note [Broadcast inputs] in docs/notes/cinn.md): an input whose leading
// axes are each 1 or the loop space's joins the group as class bcast; the op computing
// over the smaller space stays outside. The fuse pass (IR in, IR out), the loop IR, and
// the row map's terms.
#include "cinn/schedule/loop_ir.h"
#include "tests/cpp/cinn/cinn_test_util.h"

namespace oar::cinn {
namespace {
using namespace pir;  // NOLINT

// Attention scores [2, 3, 5, 17] plus exp of a mask [2, 1, 5, 17], times a per-head scale
// [3, 1, 17], then a row max and exp: the lone exp of the mask computes over the mask's
// space and stays outside; the add reads its result as a broadcast input.
const char* kMasked = R"IR(
module {
  %s = "builtin.input"() {name = "s"} : () -> (tensor<2x3x5x17xf32>)
  %m = "builtin.input"() {name = "m"} : () -> (tensor<2x1x5x17xf32>)
  %h = "builtin.input"() {name = "h"} : () -> (tensor<3x1x17xf32>)
  %m2 = "pd_op.exp"(%m) : (tensor<2x1x5x17xf32>) -> (tensor<2x1x5x17xf32>)
  %t = "pd_op.add"(%s, %m2) : (tensor<2x3x5x17xf32>, tensor<2x1x5x17xf32>) -> (tensor<2x3x5x17xf32>)
  %u = "pd_op.multiply"(%t, %h) : (tensor<2x3x5x17xf32>, tensor<3x1x17xf32>) -> (tensor<2x3x5x17xf32>)
  %x = "pd_op.max"(%u) {axis = #shape[-1], keepdim = true} : (tensor<2x3x5x17xf32>) -> (tensor<2x3x5x1xf32>)
  %d = "pd_op.subtract"(%u, %x) : (tensor<2x3x5x17xf32>, tensor<2x3x5x1xf32>) -> (tensor<2x3x5x17xf32>)
  %e = "pd_op.exp"(%d) : (tensor<2x3x5x17xf32>) -> (tensor<2x3x5x17xf32>)
  "builtin.output"(%e) {name = "e"} : (tensor<2x3x5x17xf32>) -> ()
}
)IR";

using test_util::fused;

TEST(CinnPasses, FuseReadsABroadcastMask) {
  const char* expected = R"IR(
module {
  %0 = "builtin.input"() {name = "s"} : () -> (tensor<2x3x5x17xf32>)
  %1 = "builtin.input"() {name = "m"} : () -> (tensor<2x1x5x17xf32>)
  %2 = "builtin.input"() {name = "h"} : () -> (tensor<3x1x17xf32>)
  %3 = "pd_op.exp"(%1) : (tensor<2x1x5x17xf32>) -> (tensor<2x1x5x17xf32>)
  %4 = "cinn.fusion"(%0, %3, %2) ({
    ^bb0(%5: tensor<2x3x5x17xf32>, %6: tensor<2x1x5x17xf32>, %7: tensor<3x1x17xf32>):
      %8 = "pd_op.add"(%5, %6) : (tensor<2x3x5x17xf32>, tensor<2x1x5x17xf32>) -> (tensor<2x3x5x17xf32>)
      %9 = "pd_op.multiply"(%8, %7) : (tensor<2x3x5x17xf32>, tensor<3x1x17xf32>) -> (tensor<2x3x5x17xf32>)
      %10 = "pd_op.max"(%9) {axis = #shape[-1], keepdim = true} : (tensor<2x3x5x17xf32>) -> (tensor<2x3x5x1xf32>)
      %11 = "pd_op.subtract"(%9, %10) : (tensor<2x3x5x17xf32>, tensor<2x3x5x1xf32>) -> (tensor<2x3x5x17xf32>)
      %12 = "pd_op.exp"(%11) : (tensor<2x3x5x17xf32>) -> (tensor<2x3x5x17xf32>)
      "cinn.yield"(%12) : (tensor<2x3x5x17xf32>) -> ()
  }) : (tensor<2x3x5x17xf32>, tensor<2x1x5x17xf32>, tensor<3x1x17xf32>) -> (tensor<2x3x5x17xf32>)
  "builtin.output"(%4) {name = "e"} : (tensor<2x3x5x17xf32>) -> ()
}
)IR";
  EXPECT_EQ(fused(kMasked + 1)->str(), expected + 1);
}

TEST(CinnLoopIr, BroadcastInputs) {
  auto p = fused(kMasked + 1);
  const Operation* f = nullptr;
  for (const Operation* op : *p->block())
    if (op->name() == "cinn.fusion") f = op;
  ASSERT_NE(f, nullptr) << p->str();
  const LoopKernel k = lower_fusion(f);
  EXPECT_EQ(k.text(), R"(float32 space=[2,3,5,17] ref=0
n0:full = in0
n1:bcast = in1 [2,1,5,17]
n2:bcast = in2 [1,3,1,17]
n3:full = add(n0, n1)
n4:full = mul(n3, n2)
n5:row = reduce_max(n4)
n6:full = sub(n4, n5)
n7:full = exp(n6)
out n7)");
  // Loop row r = (b * 3 + h) * 5 + q: the mask's row is b * 5 + q, the scale's h.
  const std::vector<BcastTerm> m = bcast_terms(k, 1), h = bcast_terms(k, 2);
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].div, 15);
  EXPECT_EQ(m[0].mod, 2);
  EXPECT_EQ(m[0].stride, 5);
  EXPECT_EQ(m[1].div, 1);
  EXPECT_EQ(m[1].mod, 5);
  EXPECT_EQ(m[1].stride, 1);
  ASSERT_EQ(h.size(), 1u);
  EXPECT_EQ(h[0].div, 5);
  EXPECT_EQ(h[0].mod, 3);
  EXPECT_EQ(h[0].stride, 1);
  // A dynamic dim gives the mask no class: the row map needs constants.
  EXPECT_EQ(classify({-1, 1, 5, 17}, {-1, 3, 5, 17}), VClass::kNone);
  EXPECT_EQ(classify({3, 1, 17}, {2, 3, 5, 17}), VClass::kBcast);
  EXPECT_EQ(classify({2, 1, 5, 16}, {2, 3, 5, 17}), VClass::kNone);
}

}  // namespace
}  // namespace oar::cinn
