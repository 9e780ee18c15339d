// Channel reductions (Note [Channel reductions] in docs/notes/cinn.md): sums and means over
// the last axis and others that keep a middle axis (batch_norm's statistics over N, H, W
// of [N, C, H, W]) join their elementwise producers' group; per-channel inputs
// [1, C, 1, 1] are class brow; an op reading a channel sum stays out of its group. The
// fuse pass (IR in, IR out), the loop IR and the row map's terms.
#include "cinn/schedule/loop_ir.h"
#include "tests/cpp/cinn/cinn_test_util.h"

namespace oar::cinn {
namespace {
using namespace pir;  // NOLINT

// batch_norm's backward sums: sum(dy) and sum(dy * x_hat) per channel with
// x_hat = (x - mean) * rstd; `gs * 2` reads a channel sum and stays outside.
const char* kBnGrad = R"IR(
module {
  %dy = "builtin.input"() {name = "dy"} : () -> (tensor<2x3x5x7xf32>)
  %x = "builtin.input"() {name = "x"} : () -> (tensor<2x3x5x7xf32>)
  %m = "builtin.input"() {name = "m"} : () -> (tensor<1x3x1x1xf32>)
  %r = "builtin.input"() {name = "r"} : () -> (tensor<3x1x1xf32>)
  %d = "pd_op.subtract"(%x, %m) : (tensor<2x3x5x7xf32>, tensor<1x3x1x1xf32>) -> (tensor<2x3x5x7xf32>)
  %h = "pd_op.multiply"(%d, %r) : (tensor<2x3x5x7xf32>, tensor<3x1x1xf32>) -> (tensor<2x3x5x7xf32>)
  %g = "pd_op.multiply"(%dy, %h) : (tensor<2x3x5x7xf32>, tensor<2x3x5x7xf32>) -> (tensor<2x3x5x7xf32>)
  %gs = "pd_op.sum"(%g) {axis = #shape[0, 2, 3], dtype = #dtype<undefined>, keepdim = true} : (tensor<2x3x5x7xf32>) -> (tensor<1x3x1x1xf32>)
  %bs = "pd_op.sum_to"(%dy) {shape = #shape[1, 3, 1, 1]} : (tensor<2x3x5x7xf32>) -> (tensor<1x3x1x1xf32>)
  %t = "pd_op.scale"(%gs) {bias = 0.0, bias_after_scale = true, scale = 2.0} : (tensor<1x3x1x1xf32>) -> (tensor<1x3x1x1xf32>)
  "builtin.output"(%t) {name = "t"} : (tensor<1x3x1x1xf32>) -> ()
  "builtin.output"(%bs) {name = "bs"} : (tensor<1x3x1x1xf32>) -> ()
}
)IR";

using test_util::fused;
using test_util::fusions;

TEST(CinnPasses, FuseBatchNormGradSums) {
  const char* expected = R"IR(
module {
  %0 = "builtin.input"() {name = "dy"} : () -> (tensor<2x3x5x7xf32>)
  %1 = "builtin.input"() {name = "x"} : () -> (tensor<2x3x5x7xf32>)
  %2 = "builtin.input"() {name = "m"} : () -> (tensor<1x3x1x1xf32>)
  %3 = "builtin.input"() {name = "r"} : () -> (tensor<3x1x1xf32>)
  %4, %5 = "cinn.fusion"(%1, %2, %3, %0) ({
    ^bb0(%6: tensor<2x3x5x7xf32>, %7: tensor<1x3x1x1xf32>, %8: tensor<3x1x1xf32>, %9: tensor<2x3x5x7xf32>):
      %10 = "pd_op.subtract"(%6, %7) : (tensor<2x3x5x7xf32>, tensor<1x3x1x1xf32>) -> (tensor<2x3x5x7xf32>)
      %11 = "pd_op.multiply"(%10, %8) : (tensor<2x3x5x7xf32>, tensor<3x1x1xf32>) -> (tensor<2x3x5x7xf32>)
      %12 = "pd_op.multiply"(%9, %11) : (tensor<2x3x5x7xf32>, tensor<2x3x5x7xf32>) -> (tensor<2x3x5x7xf32>)
      %13 = "pd_op.sum"(%12) {axis = #shape[0, 2, 3], dtype = #dtype<undefined>, keepdim = true} : (tensor<2x3x5x7xf32>) -> (tensor<1x3x1x1xf32>)
      %14 = "pd_op.sum_to"(%9) {shape = #shape[1, 3, 1, 1]} : (tensor<2x3x5x7xf32>) -> (tensor<1x3x1x1xf32>)
      "cinn.yield"(%13, %14) : (tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>) -> ()
  }) : (tensor<2x3x5x7xf32>, tensor<1x3x1x1xf32>, tensor<3x1x1xf32>, tensor<2x3x5x7xf32>) -> (tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>)
  %15 = "pd_op.scale"(%4) {bias = 0.0, bias_after_scale = true, scale = 2.0} : (tensor<1x3x1x1xf32>) -> (tensor<1x3x1x1xf32>)
  "builtin.output"(%15) {name = "t"} : (tensor<1x3x1x1xf32>) -> ()
  "builtin.output"(%5) {name = "bs"} : (tensor<1x3x1x1xf32>) -> ()
}
)IR";
  EXPECT_EQ(fused(kBnGrad + 1)->str(), expected + 1);
}

TEST(CinnLoopIr, ChannelReductions) {
  auto p = fused(kBnGrad + 1);
  ASSERT_EQ(fusions(*p).size(), 1u) << p->str();
  const Operation* f = fusions(*p)[0];
  const LoopKernel k = lower_fusion(f);
  // H and W merge into the column axis: the rows are (n, c), 35 columns each.
  EXPECT_EQ(k.text(), R"(float32 space=[2,3,35] ref=0 col_axes=2
n0:full = in0
n1:brow = in1 [1,3,1]
n2:brow = in2 [1,3,1]
n3:full = in3
n4:full = sub(n0, n1)
n5:full = mul(n4, n2)
n6:full = mul(n3, n5)
n7:row = reduce_sum(n6)
n8:row = reduce_sum(n3)
out n7/chan_sum[1,3,1->1,3,1,1] n8/chan_sum[1,3,1->1,3,1,1])");
  // Loop row r = n * 3 + c: channel r % 3.
  const std::vector<BcastTerm> t = row_terms(k.space, {1, 3, 1});
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].div, 1);
  EXPECT_EQ(t[0].mod, 3);
  EXPECT_EQ(t[0].stride, 1);
  // Without the merge (a row reduction keeps H): rows (n, c, h), channel (r / 5) % 3.
  const std::vector<BcastTerm> t4 = row_terms({2, 3, 5, 7}, {1, 3, 1, 1});
  ASSERT_EQ(t4.size(), 1u);
  EXPECT_EQ(t4[0].div, 5);
  EXPECT_EQ(t4[0].mod, 3);
  EXPECT_EQ(merge_cols({3, 1, 1}, 4, 2), (std::vector<int64_t>{1, 3, 1}));
  EXPECT_EQ(merge_cols({-1, 3, 5, 7}, 4, 3), (std::vector<int64_t>{-1, 105}));
  EXPECT_EQ(merge_cols({2, 3, -1, 7}, 4, 2), (std::vector<int64_t>{2, 3, -1}));
  // Per-channel values: static from the first kept axis on; a dynamic batch is fine.
  EXPECT_EQ(classify({1, 3, 1, 1}, {-1, 3, 5, 7}), VClass::kBrow);
  EXPECT_EQ(classify({3, 1, 1}, {2, 3, 5, 7}), VClass::kBrow);
  EXPECT_EQ(classify({1, 3, 1, 1}, {2, -1, 5, 7}), VClass::kNone);
  EXPECT_EQ(classify({1, 3, 1, 1}, {2, 3, -1, 7}), VClass::kNone);
  EXPECT_EQ(classify({1, 4, 1, 1}, {2, 3, 5, 7}), VClass::kNone);
}

// The forward statistics: mean over (0, 2) of [N, C, L] without keepdim, and x - mean
// cannot join the mean's group (it reads a channel reduction); the variance's group reads
// the mean as a brow input.
TEST(CinnLoopIr, ChannelMeanOfNclAndItsConsumerOutside) {
  const char* text = R"IR(
module {
  %x = "builtin.input"() {name = "x"} : () -> (tensor<4x3x9xf64>)
  %e = "pd_op.exp"(%x) : (tensor<4x3x9xf64>) -> (tensor<4x3x9xf64>)
  %m = "pd_op.mean"(%e) {axis = #shape[0, 2], keepdim = true} : (tensor<4x3x9xf64>) -> (tensor<1x3x1xf64>)
  %d = "pd_op.subtract"(%e, %m) : (tensor<4x3x9xf64>, tensor<1x3x1xf64>) -> (tensor<4x3x9xf64>)
  %q = "pd_op.multiply"(%d, %d) : (tensor<4x3x9xf64>, tensor<4x3x9xf64>) -> (tensor<4x3x9xf64>)
  %v = "pd_op.mean"(%q) {axis = #shape[0, 2], keepdim = false} : (tensor<4x3x9xf64>) -> (tensor<3xf64>)
  "builtin.output"(%v) {name = "v"} : (tensor<3xf64>) -> ()
}
)IR";
  auto p = fused(text + 1);
  const std::vector<const Operation*> fs = fusions(*p);
  ASSERT_EQ(fs.size(), 2u) << p->str();
  EXPECT_EQ(lower_fusion(fs[0]).text(), R"(float64 space=[4,3,9] ref=0
n0:full = in0
n1:full = exp(n0)
n2:row = reduce_sum(n1)
out n1 n2/chan_mean[1,3,1->1,3,1])");
  EXPECT_EQ(lower_fusion(fs[1]).text(), R"(float64 space=[4,3,9] ref=0
n0:full = in0
n1:brow = in1 [1,3,1]
n2:full = sub(n0, n1)
n3:full = mul(n2, n2)
n4:row = reduce_sum(n3)
out n4/chan_mean[1,3,1->3])");
}

// batch_norm's forward-only normalization: `d = x - mean` feeds the variance's group and
// the output's; the output's group computes it again from x (recompute_producers), so the
// variance's group writes no d.
TEST(CinnPasses, RecomputesTheCenteredInputInTheConsumerGroup) {
  const char* text = R"IR(
module {
  %x = "builtin.input"() {name = "x"} : () -> (tensor<2x3x5x7xf32>)
  %m = "builtin.input"() {name = "m"} : () -> (tensor<1x3x1x1xf32>)
  %d = "pd_op.subtract"(%x, %m) : (tensor<2x3x5x7xf32>, tensor<1x3x1x1xf32>) -> (tensor<2x3x5x7xf32>)
  %q = "pd_op.multiply"(%d, %d) : (tensor<2x3x5x7xf32>, tensor<2x3x5x7xf32>) -> (tensor<2x3x5x7xf32>)
  %v = "pd_op.sum"(%q) {axis = #shape[0, 2, 3], dtype = #dtype<undefined>, keepdim = true} : (tensor<2x3x5x7xf32>) -> (tensor<1x3x1x1xf32>)
  %r = "pd_op.rsqrt"(%v) : (tensor<1x3x1x1xf32>) -> (tensor<1x3x1x1xf32>)
  %y = "pd_op.multiply"(%d, %r) : (tensor<2x3x5x7xf32>, tensor<1x3x1x1xf32>) -> (tensor<2x3x5x7xf32>)
  %z = "pd_op.scale"(%y) {bias = 1.0, bias_after_scale = true, scale = 2.0} : (tensor<2x3x5x7xf32>) -> (tensor<2x3x5x7xf32>)
  "builtin.output"(%z) {name = "z"} : (tensor<2x3x5x7xf32>) -> ()
}
)IR";
  auto p = fused(text + 1);
  const std::vector<const Operation*> fs = fusions(*p);
  ASSERT_EQ(fs.size(), 2u) << p->str();
  EXPECT_EQ(fs[0]->num_results(), 1u) << p->str();  // the variance only: no d
  // Only full and per-channel values: H and W merge into 35 columns.
  EXPECT_EQ(lower_fusion(fs[1]).text(), R"(float32 space=[2,3,35] ref=0 col_axes=2
n0:full = in0
n1:brow = in1 [1,3,1]
n2:brow = in2 [1,3,1]
n3:full = sub(n0, n1)
n4:full = mul(n3, n2)
n5:scalar = const 0x1p+1
n6:full = mul(n4, n5)
n7:scalar = const 0x1p+0
n8:full = add(n6, n7)
out n8)");
}

// The backward's first group computes t = dy * w * r (two cheap ops) and u = dy * x for
// its channel sums; the next kernel reads t and u. It computes t again (one more full
// read, dy, against the t it no longer reads), then u (x is one more, dy it reads now):
// the first group writes only its sums and the next reads dy and x instead of t and u.
TEST(CinnPasses, RecomputesCheapConesThatReadNoMore) {
  const char* text = R"IR(
module {
  %dy = "builtin.input"() {name = "dy"} : () -> (tensor<2x3x5x7xf32>)
  %x = "builtin.input"() {name = "x"} : () -> (tensor<2x3x5x7xf32>)
  %w = "builtin.input"() {name = "w"} : () -> (tensor<1x3x1x1xf32>)
  %r = "builtin.input"() {name = "r"} : () -> (tensor<1x3x1x1xf32>)
  %a = "pd_op.multiply"(%dy, %w) : (tensor<2x3x5x7xf32>, tensor<1x3x1x1xf32>) -> (tensor<2x3x5x7xf32>)
  %t = "pd_op.multiply"(%a, %r) : (tensor<2x3x5x7xf32>, tensor<1x3x1x1xf32>) -> (tensor<2x3x5x7xf32>)
  %u = "pd_op.multiply"(%dy, %x) : (tensor<2x3x5x7xf32>, tensor<2x3x5x7xf32>) -> (tensor<2x3x5x7xf32>)
  %s = "pd_op.sum_to"(%t) {shape = #shape[1, 3, 1, 1]} : (tensor<2x3x5x7xf32>) -> (tensor<1x3x1x1xf32>)
  %v = "pd_op.sum_to"(%u) {shape = #shape[1, 3, 1, 1]} : (tensor<2x3x5x7xf32>) -> (tensor<1x3x1x1xf32>)
  %e = "pd_op.multiply"(%s, %v) : (tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>) -> (tensor<1x3x1x1xf32>)
  %y = "pd_op.multiply"(%t, %e) : (tensor<2x3x5x7xf32>, tensor<1x3x1x1xf32>) -> (tensor<2x3x5x7xf32>)
  %z = "pd_op.add"(%y, %u) : (tensor<2x3x5x7xf32>, tensor<2x3x5x7xf32>) -> (tensor<2x3x5x7xf32>)
  "builtin.output"(%z) {name = "z"} : (tensor<2x3x5x7xf32>) -> ()
}
)IR";
  auto p = fused(text + 1);
  const std::vector<const Operation*> fs = fusions(*p);
  ASSERT_EQ(fs.size(), 2u) << p->str();
  EXPECT_EQ(fs[0]->num_results(), 2u) << p->str();  // the two sums only
  EXPECT_EQ(lower_fusion(fs[1]).text(), R"(float32 space=[2,3,35] ref=0 col_axes=2
n0:full = in0
n1:brow = in1 [1,3,1]
n2:brow = in2 [1,3,1]
n3:full = in3
n4:brow = in4 [1,3,1]
n5:full = mul(n0, n1)
n6:full = mul(n5, n2)
n7:full = mul(n0, n3)
n8:full = mul(n6, n4)
n9:full = add(n8, n7)
out n9)");
}

// Two full values the consumer does not read (and nothing it stops reading in exchange
// beyond one): u = dy * x read by a kernel that reads neither stays an output.
TEST(CinnPasses, KeepsAProducerWhoseConeReadsTwoNewFullValues) {
  const char* text = R"IR(
module {
  %dy = "builtin.input"() {name = "dy"} : () -> (tensor<2x3x5x7xf32>)
  %x = "builtin.input"() {name = "x"} : () -> (tensor<2x3x5x7xf32>)
  %q = "builtin.input"() {name = "q"} : () -> (tensor<2x3x5x7xf32>)
  %u = "pd_op.multiply"(%dy, %x) : (tensor<2x3x5x7xf32>, tensor<2x3x5x7xf32>) -> (tensor<2x3x5x7xf32>)
  %v = "pd_op.sum_to"(%u) {shape = #shape[1, 3, 1, 1]} : (tensor<2x3x5x7xf32>) -> (tensor<1x3x1x1xf32>)
  %y = "pd_op.multiply"(%q, %v) : (tensor<2x3x5x7xf32>, tensor<1x3x1x1xf32>) -> (tensor<2x3x5x7xf32>)
  %z = "pd_op.add"(%y, %u) : (tensor<2x3x5x7xf32>, tensor<2x3x5x7xf32>) -> (tensor<2x3x5x7xf32>)
  "builtin.output"(%z) {name = "z"} : (tensor<2x3x5x7xf32>) -> ()
}
)IR";
  auto p = fused(text + 1);
  const std::vector<const Operation*> fs = fusions(*p);
  ASSERT_EQ(fs.size(), 2u) << p->str();
  EXPECT_EQ(fs[0]->num_results(), 2u) << p->str();  // u and its sum
}

}  // namespace
}  // namespace oar::cinn
