// Every SPMD rule's forward and reverse on small cases with known answers. The
// numerical check (sharded run == unsharded run) is tests/python/distributed/
// test_spmd_rules.py.
#include <gtest/gtest.h>

#include "distributed/spmd_rules/spmd_rule.h"
#include "paddle_core/base/errors.h"
#include "pir/ir/ir_context.h"
#include "pir/ir/op_info.h"

namespace oar::dist {
namespace {

using DM = std::vector<int64_t>;
using Partial = std::map<int64_t, ReduceType>;
constexpr ReduceType kSum = ReduceType::kRedSum;

ProcessMesh mesh1() { return ProcessMesh({2}, {0, 1}); }
ProcessMesh mesh2() { return ProcessMesh({2, 2}, {0, 1, 2, 3}); }

DistMetaTensor T(std::vector<int64_t> shape, DM dm, Partial p = {}, const ProcessMesh& m = mesh2()) {
  return {std::move(shape), TensorDistAttr(m, std::move(dm), std::move(p))};
}
DistMetaTensor absent() { return {{}, TensorDistAttr(mesh2(), {}), false}; }

SpmdContext ctx(std::string op, std::vector<DistMetaTensor> in, std::map<std::string, SpmdAttr> attrs = {},
                int nout = 1) {
  SpmdContext c;
  c.op = std::move(op);
  c.inputs = std::move(in);
  c.attrs = std::move(attrs);
  c.num_outputs = nout;
  return c;
}

SpmdInfo fwd(const std::string& rule, const SpmdContext& c) { return infer_forward(*find_spmd_rule(rule), c); }
SpmdInfo rev(const std::string& rule, const SpmdContext& c, std::vector<DistMetaTensor> outs) {
  return infer_reverse(*find_spmd_rule(rule), c, outs);
}

TEST(SpmdElementwise, BroadcastMergesAndReplicatesBroadcastDims) {
  // x [4, 6] split (0, 1); y [6] split on mesh axis 0 (conflicts with x's dim 0).
  SpmdInfo f = fwd("elementwise", ctx("multiply", {T({4, 6}, {0, 1}), T({6}, {0})}));
  EXPECT_EQ(f.inputs[0].dims_mapping, (DM{0, 1}));
  EXPECT_EQ(f.inputs[1].dims_mapping, (DM{1}));
  EXPECT_EQ(f.outputs[0].dims_mapping, (DM{0, 1}));
  EXPECT_FALSE(f.outputs[0].is_partial());
  // A size-1 dim under a larger one is a broadcast: never split.
  f = fwd("elementwise", ctx("add", {T({4, 1}, {-1, 0}), T({4, 6}, {1, -1})}));
  EXPECT_EQ(f.inputs[0].dims_mapping, (DM{1, -1}));
  EXPECT_EQ(f.outputs[0].dims_mapping, (DM{1, -1}));
  SpmdInfo r = rev("elementwise", ctx("add", {T({4, 1}, {-1, -1}), T({4, 6}, {-1, -1})}), {T({4, 6}, {0, 1})});
  EXPECT_EQ(r.inputs[0].dims_mapping, (DM{0, -1}));
  EXPECT_EQ(r.inputs[1].dims_mapping, (DM{0, 1}));
}

TEST(SpmdElementwise, PartialSumsStayPartialOnlyForLinearOps) {
  SpmdInfo f = fwd("elementwise", ctx("add", {T({4}, {-1}, {{0, kSum}}), T({4}, {-1}, {{0, kSum}})}));
  EXPECT_EQ(f.outputs[0].partial, (Partial{{0, kSum}}));
  EXPECT_EQ(f.inputs[0].partial, (Partial{{0, kSum}}));
  f = fwd("elementwise", ctx("multiply", {T({4}, {-1}, {{0, kSum}}), T({4}, {-1}, {{0, kSum}})}));
  EXPECT_TRUE(f.inputs[0].is_replicated());
  EXPECT_FALSE(f.outputs[0].is_partial());
  f = fwd("elementwise",
          ctx("add", {T({4}, {-1}, {{0, ReduceType::kRedMax}}), T({4}, {-1}, {{0, ReduceType::kRedMax}})}));
  EXPECT_FALSE(f.outputs[0].is_partial());
}

TEST(SpmdUnary, FollowsTheInput) {
  SpmdInfo f = fwd("unary", ctx("exp", {T({3, 5}, {1, 0})}));
  EXPECT_EQ(f.outputs[0].dims_mapping, (DM{1, 0}));
  f = fwd("unary", ctx("neg", {T({3}, {0}, {{1, kSum}})}));
  EXPECT_EQ(f.outputs[0].partial, (Partial{{1, kSum}}));
  f = fwd("unary", ctx("scale", {T({3}, {0}, {{1, kSum}})}, {{"bias", 1.0}}));
  EXPECT_FALSE(f.outputs[0].is_partial());  // x*s + b over a sum adds b once per process
  EXPECT_EQ(fwd("cast", ctx("cast", {T({3}, {1})})).outputs[0].dims_mapping, (DM{1}));
  EXPECT_EQ(fwd("dropout", ctx("dropout", {T({3, 2}, {-1, 0})})).outputs[0].dims_mapping, (DM{-1, 0}));
  SpmdInfo r = rev("unary", ctx("exp", {T({3, 5}, {-1, -1})}), {T({3, 5}, {-1, 1})});
  EXPECT_EQ(r.inputs[0].dims_mapping, (DM{-1, 1}));
}

TEST(SpmdWhereAndOptimizer, AreBroadcastingRules) {
  SpmdInfo f = fwd("where", ctx("where", {T({4, 6}, {0, -1}), T({4, 6}, {-1, 1}), T({6}, {-1})}));
  EXPECT_EQ(f.outputs[0].dims_mapping, (DM{0, 1}));
  EXPECT_EQ(f.inputs[2].dims_mapping, (DM{1}));
  // sgd-like: param, grad, lr (a scalar) -> param_out, master.
  f = fwd("optimizer", ctx("adam_", {T({8, 4}, {0, -1}), T({8, 4}, {-1, -1}), T({}, {})}, {}, 2));
  EXPECT_EQ(f.inputs[1].dims_mapping, (DM{0, -1}));
  EXPECT_EQ(f.outputs[1].dims_mapping, (DM{0, -1}));
  SpmdInfo r = rev("optimizer", ctx("adam_", {T({8, 4}, {-1, -1}), T({}, {})}), {T({8, 4}, {-1, 1})});
  EXPECT_EQ(r.inputs[0].dims_mapping, (DM{-1, 1}));
}

TEST(SpmdReduction, SplitReducedAxesGivePartials) {
  SpmdInfo f = fwd("reduction", ctx("sum", {T({4, 6}, {0, 1})}, {{"axis", DM{1}}, {"keepdim", false}}));
  EXPECT_EQ(f.outputs[0].dims_mapping, (DM{0}));
  EXPECT_EQ(f.outputs[0].partial, (Partial{{1, kSum}}));
  f = fwd("reduction", ctx("max", {T({4, 6}, {0, 1})}, {{"axis", DM{}}, {"keepdim", true}}));
  EXPECT_EQ(f.outputs[0].dims_mapping, (DM{-1, -1}));
  EXPECT_EQ(f.outputs[0].partial, (Partial{{0, ReduceType::kRedMax}, {1, ReduceType::kRedMax}}));
  f = fwd("reduction", ctx("mean", {T({5, 6}, {0, -1})}, {{"axis", DM{0}}}));
  EXPECT_TRUE(f.inputs[0].is_replicated());  // a mean of uneven shards' means is wrong
  f = fwd("reduction", ctx("var", {T({4, 6}, {0, 1})}, {{"axis", DM{1}}}));
  EXPECT_EQ(f.inputs[0].dims_mapping, (DM{0, -1}));  // var has no Partial form
  EXPECT_FALSE(f.outputs[0].is_partial());
  SpmdInfo r = rev("reduction", ctx("sum", {T({4, 6}, {-1, -1})}, {{"axis", DM{1}}}), {T({4}, {1})});
  EXPECT_EQ(r.inputs[0].dims_mapping, (DM{1, -1}));
}

TEST(SpmdArgReductionAndAlongAxis, KeepTheAxisWhole) {
  SpmdInfo f = fwd("arg_reduction", ctx("argmax", {T({4, 6}, {0, 1})}, {{"axis", int64_t{1}}, {"keepdim", true}}));
  EXPECT_EQ(f.inputs[0].dims_mapping, (DM{0, -1}));
  EXPECT_EQ(f.outputs[0].dims_mapping, (DM{0, -1}));
  EXPECT_FALSE(f.outputs[0].is_partial());
  f = fwd("along_axis", ctx("cumsum", {T({4, 6}, {0, 1})}, {{"axis", int64_t{0}}}));
  EXPECT_EQ(f.outputs[0].dims_mapping, (DM{-1, 1}));
  f = fwd("along_axis", ctx("topk", {T({4, 6}, {0, 1})}, {{"k", int64_t{2}}}, 2));
  EXPECT_EQ(f.outputs[1].dims_mapping, (DM{0, -1}));
  f = fwd("along_axis", ctx("cumsum", {T({4, 6}, {0, 1})}, {{"flatten", true}}));
  EXPECT_EQ(f.outputs[0].dims_mapping, (DM{-1}));
  SpmdInfo r = rev("along_axis", ctx("flip", {T({4, 6}, {-1, -1})}, {{"axis", DM{1}}}), {T({4, 6}, {0, 1})});
  EXPECT_EQ(r.inputs[0].dims_mapping, (DM{0, -1}));
  r = rev("arg_reduction", ctx("argmin", {T({4, 6}, {-1, -1})}, {{"axis", int64_t{0}}}), {T({6}, {0})});
  EXPECT_EQ(r.inputs[0].dims_mapping, (DM{-1, 0}));
}

TEST(SpmdSoftmaxFamily, AxisStaysWhole) {
  SpmdInfo f = fwd("softmax", ctx("softmax", {T({4, 6}, {0, 1})}, {{"axis", int64_t{-1}}}));
  EXPECT_EQ(f.outputs[0].dims_mapping, (DM{0, -1}));
  f = fwd("softmax", ctx("softmax_grad", {T({4, 6}, {-1, 1}), T({4, 6}, {0, -1})}, {{"axis", int64_t{0}}}));
  EXPECT_EQ(f.inputs[0].dims_mapping, (DM{-1, 1}));
  EXPECT_EQ(f.outputs[0].dims_mapping, (DM{-1, 1}));
  SpmdInfo r = rev("softmax", ctx("log_softmax", {T({4, 6}, {-1, -1})}, {{"axis", int64_t{1}}}), {T({4, 6}, {0, 1})});
  EXPECT_EQ(r.inputs[0].dims_mapping, (DM{0, -1}));
}

TEST(SpmdCrossEntropy, BatchSplitsClassesDoNot) {
  auto c =
      ctx("cross_entropy", {T({8, 5}, {0, 1}), T({8, 1}, {-1, -1}), absent()}, {{"reduction", std::string("none")}});
  SpmdInfo f = fwd("cross_entropy", c);
  EXPECT_EQ(f.inputs[0].dims_mapping, (DM{0, -1}));
  EXPECT_EQ(f.inputs[1].dims_mapping, (DM{0, -1}));
  EXPECT_EQ(f.outputs[0].dims_mapping, (DM{0, -1}));
  c.attrs["reduction"] = std::string("sum");
  f = fwd("cross_entropy", c);
  EXPECT_EQ(f.outputs[0].partial, (Partial{{0, kSum}}));
  c.attrs["reduction"] = std::string("mean");
  EXPECT_TRUE(fwd("cross_entropy", c).inputs[0].is_replicated());
  SpmdInfo r =
      rev("cross_entropy",
          ctx("cross_entropy", {T({8, 5}, {-1, -1}), T({8}, {-1}), absent()}, {{"reduction", std::string("none")}}),
          {T({8}, {1})});
  EXPECT_EQ(r.inputs[0].dims_mapping, (DM{1, -1}));
  EXPECT_EQ(r.inputs[1].dims_mapping, (DM{1}));
}

TEST(SpmdNorms, NormalizedDimsStayWhole) {
  SpmdInfo f = fwd("layer_norm", ctx("layer_norm", {T({4, 3, 8}, {0, -1, 1}), T({8}, {1}), absent()},
                                     {{"begin_norm_axis", int64_t{2}}}, 3));
  EXPECT_EQ(f.inputs[0].dims_mapping, (DM{0, -1, -1}));
  EXPECT_EQ(f.inputs[1].dims_mapping, (DM{-1}));
  EXPECT_EQ(f.outputs[0].dims_mapping, (DM{0, -1, -1}));
  EXPECT_EQ(f.outputs[1].dims_mapping, (DM{0, -1}));
  SpmdInfo r = rev("layer_norm", ctx("layer_norm", {T({4, 8}, {-1, -1}), absent(), absent()}),
                   {T({4, 8}, {1, 0}), T({4}, {1}), T({4}, {1})});
  EXPECT_EQ(r.inputs[0].dims_mapping, (DM{1, -1}));
  f = fwd("layer_norm_grad",
          ctx("layer_norm_grad", {T({4, 8}, {0, -1}), T({8}, {-1}), T({4}, {0}), T({4}, {0}), T({4, 8}, {0, -1})},
              {{"begin_norm_axis", int64_t{1}}}, 3));
  EXPECT_EQ(f.outputs[0].dims_mapping, (DM{0, -1}));
  EXPECT_EQ(f.outputs[1].partial, (Partial{{0, kSum}}));  // scale_grad sums over the batch
  EXPECT_EQ(f.outputs[2].partial, (Partial{{0, kSum}}));
  r = rev("layer_norm_grad",
          ctx("layer_norm_grad", {T({4, 8}, {-1, -1}), absent(), T({4}, {-1}), T({4}, {-1}), T({4, 8}, {-1, -1})}),
          {T({4, 8}, {0, -1}), T({8}, {-1}), T({8}, {-1})});
  EXPECT_EQ(r.inputs[4].dims_mapping, (DM{0, -1}));
  f = fwd("rms_norm", ctx("rms_norm", {T({4, 8}, {0, 1}), T({8}, {-1})}, {}, 2));
  EXPECT_EQ(f.outputs[0].dims_mapping, (DM{0, -1}));
  EXPECT_EQ(f.outputs[1].dims_mapping, (DM{0}));
  r = rev("rms_norm", ctx("rms_norm", {T({4, 8}, {-1, -1}), T({8}, {-1})}, {}, 2), {T({4, 8}, {1, -1}), T({4}, {1})});
  EXPECT_EQ(r.inputs[0].dims_mapping, (DM{1, -1}));
}

TEST(SpmdMatmul, ColumnRowAndBatchSplits) {
  // Column parallel: y split on n.
  SpmdInfo f = fwd("matmul", ctx("matmul", {T({4, 6}, {0, -1}), T({6, 8}, {-1, 1})}));
  EXPECT_EQ(f.outputs[0].dims_mapping, (DM{0, 1}));
  EXPECT_FALSE(f.outputs[0].is_partial());
  // Row parallel: k split -> Partial sum.
  f = fwd("matmul", ctx("matmul", {T({4, 6}, {-1, 1}), T({6, 8}, {-1, -1})}));
  EXPECT_EQ(f.inputs[1].dims_mapping, (DM{1, -1}));
  EXPECT_EQ(f.outputs[0].partial, (Partial{{1, kSum}}));
  // transpose_y and broadcast batch dims.
  f = fwd("matmul",
          ctx("matmul", {T({2, 3, 4, 6}, {0, -1, -1, -1}), T({3, 8, 6}, {-1, 1, -1})}, {{"transpose_y", true}}));
  EXPECT_EQ(f.outputs[0].dims_mapping, (DM{0, -1, -1, 1}));
  // vector @ matrix
  f = fwd("matmul", ctx("matmul", {T({6}, {0}), T({6, 8}, {-1, 1})}));
  EXPECT_EQ(f.outputs[0].dims_mapping, (DM{1}));
  EXPECT_EQ(f.outputs[0].partial, (Partial{{0, kSum}}));
  SpmdInfo r = rev("matmul", ctx("matmul", {T({4, 6}, {-1, -1}), T({6, 8}, {-1, -1})}, {{"transpose_x", true}}),
                   {T({6, 8}, {0, 1})});
  EXPECT_EQ(r.inputs[0].dims_mapping, (DM{-1, 0}));
  EXPECT_EQ(r.inputs[1].dims_mapping, (DM{-1, 1}));
}

TEST(SpmdEmbedding, VocabSplitIsPartial) {
  SpmdInfo f = fwd("embedding", ctx("embedding", {T({2, 5}, {0, -1}), T({10, 4}, {1, -1})}));
  EXPECT_EQ(f.outputs[0].dims_mapping, (DM{0, -1, -1}));
  EXPECT_EQ(f.outputs[0].partial, (Partial{{1, kSum}}));
  SpmdInfo r =
      rev("embedding", ctx("embedding", {T({2, 5}, {-1, -1}), T({10, 4}, {-1, -1})}), {T({2, 5, 4}, {-1, 0, 1})});
  EXPECT_EQ(r.inputs[0].dims_mapping, (DM{-1, 0}));
  EXPECT_EQ(r.inputs[1].dims_mapping, (DM{-1, 1}));
}

TEST(SpmdAttention, BatchHeadsAndQueryRows) {
  auto q = T({2, 8, 4, 16}, {0, -1, 1, -1});
  auto kv = T({2, 8, 4, 16}, {-1, 0, -1, -1});
  SpmdInfo f = fwd("scaled_dot_product_attention", ctx("scaled_dot_product_attention", {q, kv, kv, absent()}, {}, 2));
  EXPECT_EQ(f.inputs[1].dims_mapping, (DM{0, -1, 1, -1}));  // key sequence whole
  EXPECT_EQ(f.outputs[0].dims_mapping, (DM{0, -1, 1, -1}));
  EXPECT_EQ(f.outputs[1].dims_mapping, (DM{0, 1, -1}));
  auto c = ctx("scaled_dot_product_attention", {T({2, 8, 4, 16}, {-1, 0, -1, -1}), kv, kv, T({8, 8}, {0, -1})},
               {{"is_causal", false}}, 2);
  f = fwd("scaled_dot_product_attention", c);
  EXPECT_EQ(f.outputs[0].dims_mapping, (DM{-1, 0, -1, -1}));
  EXPECT_EQ(f.inputs[3].dims_mapping, (DM{0, -1}));
  c.attrs["is_causal"] = true;
  EXPECT_EQ(fwd("scaled_dot_product_attention", c).outputs[0].dims_mapping, (DM{-1, -1, -1, -1}));
  SpmdInfo r = rev("scaled_dot_product_attention", c, {T({2, 8, 4, 16}, {1, -1, 0, -1}), T({2, 4, 8}, {1, 0, -1})});
  EXPECT_EQ(r.inputs[2].dims_mapping, (DM{1, -1, 0, -1}));
}

TEST(SpmdConv2d, BatchAndChannels) {
  SpmdInfo f = fwd("conv2d", ctx("conv2d", {T({4, 3, 8, 8}, {0, -1, 1, -1}), T({6, 3, 3, 3}, {-1, -1, -1, -1})}));
  EXPECT_EQ(f.inputs[0].dims_mapping, (DM{0, -1, -1, -1}));
  EXPECT_EQ(f.outputs[0].dims_mapping, (DM{0, -1, -1, -1}));
  f = fwd("conv2d", ctx("conv2d", {T({4, 6, 8, 8}, {-1, 1, -1, -1}), T({6, 6, 3, 3}, {0, -1, -1, -1})}));
  EXPECT_EQ(f.outputs[0].dims_mapping, (DM{-1, 0, -1, -1}));
  EXPECT_EQ(f.outputs[0].partial, (Partial{{1, kSum}}));
  SpmdInfo r = rev("conv2d", ctx("conv2d", {T({4, 3, 8, 8}, {-1, -1, -1, -1}), T({6, 3, 3, 3}, {-1, -1, -1, -1})}),
                   {T({4, 6, 6, 6}, {0, 1, -1, -1})});
  EXPECT_EQ(r.inputs[1].dims_mapping, (DM{1, -1, -1, -1}));
}

TEST(SpmdReshapeFamily, LeadingDimOfEachGroupCarries) {
  SpmdInfo f = fwd("reshape", ctx("reshape", {T({4, 6}, {0, 1})}, {{"shape", DM{24}}}));
  EXPECT_EQ(f.inputs[0].dims_mapping, (DM{0, -1}));
  EXPECT_EQ(f.outputs[0].dims_mapping, (DM{0}));
  f = fwd("reshape", ctx("reshape", {T({8, 6}, {0, 1})}, {{"shape", DM{2, 4, 2, 3}}}));
  EXPECT_EQ(f.outputs[0].dims_mapping, (DM{0, -1, 1, -1}));
  // 6 -> [3, 2]: a half of 6 (3 elements) is not whole rows of 2.
  f = fwd("reshape", ctx("reshape", {T({8, 6}, {0, 1})}, {{"shape", DM{2, 4, 3, 2}}}));
  EXPECT_EQ(f.inputs[0].dims_mapping, (DM{0, -1}));
  EXPECT_EQ(f.outputs[0].dims_mapping, (DM{0, -1, -1, -1}));
  f = fwd("reshape", ctx("reshape", {T({6, 4}, {0, -1})}, {{"shape", DM{3, -1}}}));
  EXPECT_EQ(f.outputs[0].dims_mapping, (DM{-1, -1}));  // 3 rows cannot be cut in 2 like 6
  f = fwd("reshape", ctx("reshape", {T({4, 6}, {-1, 0}, {{1, kSum}})}, {{"shape", DM{0, 2, 3}}}));
  EXPECT_EQ(f.outputs[0].dims_mapping, (DM{-1, 0, -1}));
  EXPECT_EQ(f.outputs[0].partial, (Partial{{1, kSum}}));
  SpmdInfo r = rev("reshape", ctx("reshape", {T({4, 6}, {-1, -1})}, {{"shape", DM{24}}}), {T({24}, {1})});
  EXPECT_EQ(r.inputs[0].dims_mapping, (DM{1, -1}));
  f = fwd("flatten",
          ctx("flatten", {T({2, 3, 4}, {-1, 0, 1})}, {{"start_axis", int64_t{1}}, {"stop_axis", int64_t{2}}}));
  EXPECT_EQ(f.outputs[0].dims_mapping, (DM{-1, -1}));  // 3 is not cut evenly in 2
  f = fwd("flatten", ctx("flatten", {T({2, 4, 3}, {-1, 0, 1})}, {{"start_axis", int64_t{1}}}));
  EXPECT_EQ(f.outputs[0].dims_mapping, (DM{-1, 0}));
  r = rev("flatten", ctx("flatten", {T({2, 4, 3}, {-1, -1, -1})}, {{"start_axis", int64_t{1}}}), {T({2, 12}, {1, 0})});
  EXPECT_EQ(r.inputs[0].dims_mapping, (DM{1, 0, -1}));
  f = fwd("squeeze", ctx("squeeze", {T({1, 4, 1, 3}, {-1, 0, -1, 1})}, {{"axis", DM{}}}));
  EXPECT_EQ(f.outputs[0].dims_mapping, (DM{0, 1}));
  r = rev("squeeze", ctx("squeeze", {T({1, 4, 1, 3}, {-1, -1, -1, -1})}, {{"axis", DM{0}}}),
          {T({4, 1, 3}, {1, -1, 0})});
  EXPECT_EQ(r.inputs[0].dims_mapping, (DM{-1, 1, -1, 0}));
  f = fwd("unsqueeze", ctx("unsqueeze", {T({4, 3}, {0, 1})}, {{"axis", DM{0, -1}}}));
  EXPECT_EQ(f.outputs[0].dims_mapping, (DM{-1, 0, 1, -1}));
  r = rev("unsqueeze", ctx("unsqueeze", {T({4, 3}, {-1, -1})}, {{"axis", DM{1}}}), {T({4, 1, 3}, {1, -1, 0})});
  EXPECT_EQ(r.inputs[0].dims_mapping, (DM{1, 0}));
}

TEST(SpmdTranspose, Permutes) {
  SpmdInfo f = fwd("transpose", ctx("transpose", {T({2, 3, 4}, {0, -1, 1})}, {{"perm", DM{2, 0, 1}}}));
  EXPECT_EQ(f.outputs[0].dims_mapping, (DM{1, 0, -1}));
  SpmdInfo r = rev("transpose", ctx("transpose", {T({2, 3, 4}, {-1, -1, -1})}, {{"perm", DM{2, 0, 1}}}),
                   {T({4, 2, 3}, {-1, 1, 0})});
  EXPECT_EQ(r.inputs[0].dims_mapping, (DM{1, 0, -1}));
}

TEST(SpmdJoinAndSelect, AxisStaysWhole) {
  SpmdInfo f = fwd("concat", ctx("concat", {T({4, 6}, {0, 1}), T({2, 6}, {-1, -1})}, {{"axis", int64_t{0}}}));
  EXPECT_EQ(f.inputs[1].dims_mapping, (DM{-1, 1}));
  EXPECT_EQ(f.outputs[0].dims_mapping, (DM{-1, 1}));
  SpmdInfo r = rev("concat", ctx("concat", {T({4, 6}, {-1, -1}), T({2, 6}, {-1, -1})}, {{"axis", int64_t{1}}}),
                   {T({6, 6}, {0, 1})});
  EXPECT_EQ(r.inputs[1].dims_mapping, (DM{0, -1}));
  f = fwd("stack", ctx("stack", {T({4, 6}, {0, 1}), T({4, 6}, {0, -1})}, {{"axis", int64_t{1}}}));
  EXPECT_EQ(f.outputs[0].dims_mapping, (DM{0, -1, 1}));
  r = rev("stack", ctx("stack", {T({4}, {-1}), T({4}, {-1})}, {{"axis", int64_t{0}}}), {T({2, 4}, {-1, 1})});
  EXPECT_EQ(r.inputs[0].dims_mapping, (DM{1}));
  f = fwd("split", ctx("split", {T({4, 6}, {0, 1})}, {{"num_or_sections", DM{2, 4}}, {"axis", int64_t{1}}}));
  ASSERT_EQ(f.outputs.size(), 2u);
  EXPECT_EQ(f.outputs[1].dims_mapping, (DM{0, -1}));
  f = fwd("split", ctx("split_with_num", {T({4, 6}, {0, 1})}, {{"num", int64_t{3}}, {"axis", int64_t{0}}}));
  ASSERT_EQ(f.outputs.size(), 3u);
  EXPECT_EQ(f.outputs[2].dims_mapping, (DM{-1, 1}));
  r = rev("split", ctx("split_with_num", {T({4, 6}, {-1, -1})}, {{"num", int64_t{2}}, {"axis", int64_t{0}}}),
          {T({2, 6}, {-1, 0}), T({2, 6}, {-1, -1})});
  EXPECT_EQ(r.inputs[0].dims_mapping, (DM{-1, 0}));
  f = fwd("slice", ctx("slice", {T({4, 6}, {0, 1})}, {{"axes", DM{1}}, {"starts", DM{1}}, {"ends", DM{3}}}));
  EXPECT_EQ(f.outputs[0].dims_mapping, (DM{0, -1}));
  r = rev("slice", ctx("slice", {T({4, 6}, {-1, -1})}, {{"axes", DM{0}}}), {T({2, 6}, {0, 1})});
  EXPECT_EQ(r.inputs[0].dims_mapping, (DM{-1, 1}));
}

TEST(SpmdGather, IndexDimsReplaceTheAxis) {
  SpmdInfo f = fwd("gather", ctx("gather", {T({10, 4}, {0, 1}), T({6}, {0})}, {{"axis", int64_t{0}}}));
  EXPECT_EQ(f.inputs[0].dims_mapping, (DM{-1, 1}));
  EXPECT_EQ(f.inputs[1].dims_mapping, (DM{0}));
  EXPECT_EQ(f.outputs[0].dims_mapping, (DM{0, 1}));
  f = fwd("index_select", ctx("index_select", {T({10, 4}, {0, 1}), T({3}, {-1})}, {{"axis", int64_t{1}}}));
  EXPECT_EQ(f.outputs[0].dims_mapping, (DM{0, -1}));
  SpmdInfo r =
      rev("gather", ctx("gather", {T({10, 4}, {-1, -1}), T({6}, {-1})}, {{"axis", int64_t{0}}}), {T({6, 4}, {1, 0})});
  EXPECT_EQ(r.inputs[0].dims_mapping, (DM{-1, 0}));
  EXPECT_EQ(r.inputs[1].dims_mapping, (DM{1}));
}

TEST(SpmdExpandTileSumTo, BroadcastDims) {
  SpmdInfo f = fwd("expand", ctx("expand", {T({4, 1}, {0, 1})}, {{"shape", DM{3, 4, 5}}}));
  EXPECT_EQ(f.inputs[0].dims_mapping, (DM{0, -1}));
  EXPECT_EQ(f.outputs[0].dims_mapping, (DM{-1, 0, -1}));
  SpmdInfo r =
      rev("expand", ctx("expand", {T({4, 1}, {-1, -1})}, {{"shape", DM{3, 4, 5}}}), {T({3, 4, 5}, {1, 0, -1})});
  EXPECT_EQ(r.inputs[0].dims_mapping, (DM{0, -1}));
  f = fwd("tile", ctx("tile", {T({4, 6}, {0, 1})}, {{"repeat_times", DM{1, 2}}}));
  EXPECT_EQ(f.outputs[0].dims_mapping, (DM{0, -1}));
  r = rev("tile", ctx("tile", {T({4, 6}, {-1, -1})}, {{"repeat_times", DM{2, 1, 1}}}), {T({2, 4, 6}, {0, -1, 1})});
  EXPECT_EQ(r.inputs[0].dims_mapping, (DM{-1, 1}));
  f = fwd("sum_to", ctx("sum_to", {T({3, 4, 6}, {0, -1, 1})}, {{"shape", DM{1, 6}}}));
  EXPECT_EQ(f.outputs[0].dims_mapping, (DM{-1, 1}));
  EXPECT_EQ(f.outputs[0].partial, (Partial{{0, kSum}}));
  r = rev("sum_to", ctx("sum_to", {T({3, 4, 6}, {-1, -1, -1})}, {{"shape", DM{4, 6}}}), {T({4, 6}, {0, 1})});
  EXPECT_EQ(r.inputs[0].dims_mapping, (DM{-1, 0, 1}));
}

TEST(SpmdReplicatedFallback, ReplicatesAndReportsOnce) {
  auto c = ctx("svd", {T({4, 4}, {0, 1})}, {}, 3);
  c.output_ranks = {2, 1, 2};
  const SpmdRule& rule = spmd_rule_or_fallback("svd", "");
  SpmdInfo f = infer_forward(rule, c);
  EXPECT_TRUE(f.inputs[0].is_replicated());
  ASSERT_EQ(f.outputs.size(), 3u);
  EXPECT_EQ(f.outputs[1].dims_mapping, (DM{-1}));
  SpmdInfo r = infer_reverse(rule, c, {T({4, 4}, {0, -1}), T({4}, {0}), T({4, 4}, {0, -1})});
  EXPECT_TRUE(r.outputs[0].is_replicated());
  spmd_rule_or_fallback("svd", "");
  auto ops = replicated_fallback_ops();
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "svd"), 1);
}

TEST(SpmdRules, OpsReachTheirRuleThroughTheirDefinition) {
  EXPECT_EQ(spmd_rule_name("matmul"), "matmul");
  EXPECT_EQ(spmd_rule_name("log_softmax"), "softmax");
  EXPECT_EQ(spmd_rule_name("svd"), "");
  EXPECT_EQ(&spmd_rule_for_op("add"), find_spmd_rule("elementwise"));
  for (const std::string& name : spmd_rule_names()) EXPECT_NE(find_spmd_rule(name), nullptr);
}

TEST(SpmdRules, EveryDeclaredRuleIsRegistered) {
  pir::IrContext* ir = pir::IrContext::global();
  int covered = 0;
  for (const std::string& name : ir->op_names()) {
    const std::string& rule = ir->find_op(name)->spmd_rule;
    if (rule.empty()) continue;
    EXPECT_NE(find_spmd_rule(rule), nullptr) << name << " names rule '" << rule << "'";
    covered += name.back() != '_';  // in-place variants share their op's rule
  }
  EXPECT_GE(covered, 100);
}

TEST(SpmdRules, BadInputsRaise) {
  // dims_mapping longer than the shape, and inputs on different meshes.
  EXPECT_THROW(fwd("unary", ctx("exp", {T({4}, {0, 1})})), Error);
  EXPECT_THROW(fwd("elementwise", ctx("add", {T({4}, {0}), T({4}, {0}, {}, mesh1())})), Error);
  EXPECT_THROW(fwd("softmax", ctx("softmax", {T({4}, {0})}, {{"axis", int64_t{3}}})), Error);
  EXPECT_THROW(fwd("transpose", ctx("transpose", {T({4, 2}, {0, -1})}, {{"perm", DM{0}}})), Error);
  EXPECT_THROW(fwd("reduction", ctx("sum", {T({4}, {0})}, {{"axis", std::string("x")}})), Error);
  try {
    fwd("matmul", ctx("matmul", {T({4, 6}, {0, -1})}));  // y missing
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("matmul: its SPMD rule needs more inputs than the 1 given"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace oar::dist
