// What the op dialect stores from the op definition files' newer keys: the SPMD rule
// name (`spmd:`), the decomposition text (`decomp:`) and multi-gradient backward rules.
#include <gtest/gtest.h>

#include <string>

#include "pir/ir/ir_context.h"
#include "pir/ir/op_info.h"

namespace oar::pir {
namespace {

const OpInfo* info(const std::string& name) {
  static IrContext* c = [] {
    auto* ctx = new IrContext();  // lives for the test binary: OpInfos point into it
    ctx->load_all_dialects();
    return ctx;
  }();
  const OpInfo* i = c->op_info(name);
  EXPECT_NE(i, nullptr) << name;
  return i;
}

TEST(PirOpDefinitions, SpmdRuleNames) {
  EXPECT_EQ(info("pd_op.add")->spmd_rule, "elementwise");
  EXPECT_EQ(info("pd_op.less_than")->spmd_rule, "elementwise");
  EXPECT_EQ(info("pd_op.exp")->spmd_rule, "unary");
  EXPECT_EQ(info("pd_op.gelu")->spmd_rule, "unary");
  EXPECT_EQ(info("pd_op.sum")->spmd_rule, "reduction");
  EXPECT_EQ(info("pd_op.mean")->spmd_rule, "reduction");
  EXPECT_EQ(info("pd_op.matmul")->spmd_rule, "matmul");
  EXPECT_EQ(info("pd_op.softmax")->spmd_rule, "softmax");
  EXPECT_EQ(info("pd_op.log_softmax")->spmd_rule, "softmax");
  EXPECT_EQ(info("pd_op.cross_entropy")->spmd_rule, "cross_entropy");
  EXPECT_EQ(info("pd_op.layer_norm")->spmd_rule, "layer_norm");
  EXPECT_EQ(info("pd_op.reshape")->spmd_rule, "reshape");
  EXPECT_EQ(info("pd_op.transpose")->spmd_rule, "transpose");
  EXPECT_EQ(info("pd_op.split_with_num")->spmd_rule, "split");
  EXPECT_EQ(info("pd_op.conv2d")->spmd_rule, "conv2d");
  EXPECT_EQ(info("pd_op.scaled_dot_product_attention")->spmd_rule, "scaled_dot_product_attention");
  // An op without a declared rule stores none (auto-parallel falls back to replication).
  EXPECT_EQ(info("pd_op.unique")->spmd_rule, "");
}

TEST(PirOpDefinitions, DecompositionText) {
  EXPECT_EQ(info("pd_op.square")->decomp, "x * x");
  EXPECT_NE(info("pd_op.gelu")->decomp.find("erf("), std::string::npos);
  EXPECT_NE(info("pd_op.gelu")->decomp.find("tanh("), std::string::npos);
  EXPECT_NE(info("pd_op.layer_norm")->decomp.find("layer_norm_affine"), std::string::npos);
  EXPECT_EQ(info("pd_op.matmul")->decomp, "");  // a primitive
}

TEST(PirOpDefinitions, MultiGradientBackwardKeepsItsInputList) {
  const std::string& bw = info("pd_op.layer_norm")->backward;
  EXPECT_EQ(bw.rfind("x, scale, bias: layer_norm_grad(", 0), 0u) << bw;
  EXPECT_EQ(bw.find(';'), std::string::npos) << "one rule, not one per input: " << bw;
  EXPECT_EQ(info("pd_op.batch_norm")->backward.rfind("x, scale, bias: batch_norm_grad(", 0), 0u);
}

}  // namespace
}  // namespace oar::pir
