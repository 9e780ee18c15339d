// DRR: custom rules in a few lines, the shipped fusion rules, constraints, and
// matches rejected because an intermediate value escapes the pattern.
#include <cstring>
#include <sstream>

#include "pir/drr/drr.h"
#include "pir/ir/builder.h"
#include "pir/ir/infer.h"
#include "pir/ir/verifier.h"
#include "pir/pass/pass.h"
#include "tests/cpp/pir/pir_test_util.h"

namespace oar::pir {
namespace {
using testing::ctx;

size_t count_ops(const Program& p, const std::string& name) {
  size_t n = 0;
  p.module()->walk([&](Operation* op) { n += op->name() == name; });
  return n;
}

TEST(PirDrr, CustomRuleInAFewLines) {
  auto rule = std::make_shared<drr::DrrRule>("relu_relu");
  rule->source().op("pd_op.relu", {"x"}, {"r1"}).op("pd_op.relu", {"r1"}, {"out"});
  rule->result().op("pd_op.relu", {"x"}, {"out"});
  Program p(ctx());
  Builder b(ctx(), p.block());
  Value x = b.parameter("x", ctx()->tensor_type(DataType::FLOAT32, {3}));
  Value r = b.op("pd_op.relu", {b.op("pd_op.relu", {b.op("pd_op.relu", {x})})});
  b.build("builtin.output", {r}, {{"name", ctx()->str_attr("y")}}, {});
  PassManager pm;
  pm.add_pass(drr::create_drr_pass("relu_relu", {rule}));
  EXPECT_TRUE(pm.run(p));
  EXPECT_EQ(count_ops(p, "pd_op.relu"), 1u);
  verify_program(p);
}

TEST(PirDrr, FusedLinearNeedsABiasOfTheRightShape) {
  for (std::vector<int64_t> bias : {std::vector<int64_t>{16}, {1, 16}, {4, 16}, {8}}) {
    Program p(ctx());
    Builder b(ctx(), p.block());
    Value x = b.parameter("x", ctx()->tensor_type(DataType::FLOAT32, {4, 8}));
    Value w = b.parameter("w", ctx()->tensor_type(DataType::FLOAT32, {8, 16}));
    Value bb = b.parameter("b", ctx()->tensor_type(DataType::FLOAT32, bias));
    Value mm = b.op("pd_op.matmul", {x, w});
    if (bias == std::vector<int64_t>{8}) {
      EXPECT_ANY_THROW(b.op("pd_op.add", {mm, bb}));
      continue;
    }
    Value out = b.op("pd_op.add", {mm, bb});
    b.build("builtin.output", {out}, {{"name", ctx()->str_attr("y")}}, {});
    PassManager pm;
    pm.add_pass("fuse");
    pm.run(p);
    bool fused = bias.size() == 1 || bias[0] == 1;
    EXPECT_EQ(count_ops(p, "pd_op.fused_linear"), fused ? 1u : 0u) << p.str();
    EXPECT_EQ(count_ops(p, "pd_op.matmul"), fused ? 0u : 1u);
  }
}

TEST(PirDrr, FusionKeepsIntermediatesThatEscape) {
  Program p(ctx());
  Builder b(ctx(), p.block());
  Value x = b.parameter("x", ctx()->tensor_type(DataType::FLOAT32, {4, 8}));
  Value w = b.parameter("w", ctx()->tensor_type(DataType::FLOAT32, {8, 16}));
  Value bias = b.parameter("b", ctx()->tensor_type(DataType::FLOAT32, {16}));
  Value lin = b.op("pd_op.add", {b.op("pd_op.matmul", {x, w}), bias});
  Value act = b.op("pd_op.relu", {lin});
  b.build("builtin.output", {act}, {{"name", ctx()->str_attr("y")}}, {});
  b.build("builtin.output", {lin}, {{"name", ctx()->str_attr("pre")}}, {});
  PassManager pm;
  pm.add_pass("fuse");
  pm.run(p);
  // lin escapes, so matmul+add+relu cannot fuse; matmul+add can.
  EXPECT_EQ(count_ops(p, "pd_op.fused_linear"), 1u) << p.str();
  EXPECT_EQ(count_ops(p, "pd_op.fused_linear_activation"), 0u);
  EXPECT_EQ(count_ops(p, "pd_op.relu"), 1u);
}

/// A context with pd_op.layer_norm: the op dialect's own when the op definitions
/// declare it, else a stand-in with Paddle's signature (x, scale?, bias?, epsilon,
/// begin_norm_axis) -> (out, mean, rstd).
IrContext* layer_norm_ctx() {
  static IrContext* c = [] {
    auto* c = new IrContext();
    c->load_all_dialects();
    if (!c->find_op("pd_op.layer_norm")) {
      OpInfo i;
      i.name = "pd_op.layer_norm";
      i.dialect = "pd_op";
      i.traits = kTraitPure;
      i.has_schema = true;
      i.inputs = {{"x", InputSpec::kTensor}, {"scale", InputSpec::kOptional}, {"bias", InputSpec::kOptional}};
      i.attrs = {{"epsilon", "float", c->float_attr(1e-5)}, {"begin_norm_axis", "int", c->int_attr(1)}};
      i.outputs = {{"out"}, {"mean"}, {"rstd"}};
      i.infer = [](InferContext& ic) {
        Type x = ic.inputs[0];
        int64_t begin = ic.attr(1).as_int();
        std::vector<int64_t> lead(x.dims().begin(), x.dims().begin() + begin);
        ic.outputs = {x, ic.ctx->tensor_type(x.dtype(), lead), ic.ctx->tensor_type(x.dtype(), lead)};
      };
      c->register_op(std::move(i));
    }
    return c;
  }();
  return c;
}

void build_layer_norm(Program& p, bool square_by_multiply, std::vector<int64_t> axis, double eps) {
  IrContext* c = p.context();
  Builder b(c, p.block());
  Value x = b.parameter("x", c->tensor_type(DataType::FLOAT32, {2, 4, 8}));
  Value gamma = b.parameter("gamma", c->tensor_type(DataType::FLOAT32, {8}));
  Value beta = b.parameter("beta", c->tensor_type(DataType::FLOAT32, {8}));
  auto mean = [&](Value v) {
    return b.op("pd_op.mean", {v}, {{"axis", c->shape_attr(axis)}, {"keepdim", c->bool_attr(true)}});
  };
  Value mu = mean(x);
  Value diff = b.op("pd_op.subtract", {x, mu});
  Value sq = square_by_multiply ? b.op("pd_op.multiply", {diff, diff})
                                : b.op("pd_op.pow", {diff}, {{"y", c->float_attr(2.0)}});
  Value var = mean(sq);
  Value eps_c = b.constant_scalar(eps, DataType::FLOAT32, {});
  Value rstd = b.op("pd_op.rsqrt", {b.op("pd_op.add", {eps_c, var})});
  Value norm = b.op("pd_op.multiply", {rstd, diff});
  Value out = b.op("pd_op.add", {b.op("pd_op.multiply", {gamma, norm}), beta});
  b.build("builtin.output", {out}, {{"name", c->str_attr("y")}}, {});
  verify_program(p);
}

TEST(PirDrr, LayerNormFromPrimitives) {
  for (bool mul : {false, true}) {
    Program p(layer_norm_ctx());
    build_layer_norm(p, mul, {-1}, 1e-5);
    PassManager pm;
    pm.add_pass(drr::create_drr_pass("fuse", drr::fusion_rules()));
    pm.run(p);
    ASSERT_EQ(count_ops(p, "pd_op.layer_norm"), 1u) << p.str();
    EXPECT_EQ(count_ops(p, "pd_op.mean"), 0u);
    EXPECT_EQ(count_ops(p, "pd_op.rsqrt"), 0u);
    Operation* ln = nullptr;
    p.module()->walk([&](Operation* op) { if (op->name() == "pd_op.layer_norm") ln = op; });
    EXPECT_EQ(ln->attr("begin_norm_axis").as_int(), 2);
    EXPECT_NEAR(ln->attr("epsilon").as_float(), 1e-5, 1e-12);
    EXPECT_EQ(ln->operand(1).defining_op()->attr("name").as_string(), "gamma");
  }
  {  // normalizing a leading axis is not layer_norm
    Program p(layer_norm_ctx());
    IrContext* c = p.context();
    Builder b(c, p.block());
    Value x = b.parameter("x", c->tensor_type(DataType::FLOAT32, {8, 8}));
    Value mu = b.op("pd_op.mean", {x}, {{"axis", c->shape_attr({0})}, {"keepdim", c->bool_attr(true)}});
    Value diff = b.op("pd_op.subtract", {x, mu});
    Value var = b.op("pd_op.mean", {b.op("pd_op.multiply", {diff, diff})},
                     {{"axis", c->shape_attr({0})}, {"keepdim", c->bool_attr(true)}});
    Value rstd = b.op("pd_op.rsqrt", {b.op("pd_op.add", {var, b.constant_scalar(1e-5, DataType::FLOAT32)})});
    Value g = b.parameter("g", c->tensor_type(DataType::FLOAT32, {8}));
    Value out = b.op("pd_op.add", {b.op("pd_op.multiply", {b.op("pd_op.multiply", {diff, rstd}), g}), g});
    b.build("builtin.output", {out}, {{"name", c->str_attr("y")}}, {});
    PassManager pm;
    pm.add_pass(drr::create_drr_pass("fuse", drr::fusion_rules()));
    pm.run(p);
    EXPECT_EQ(count_ops(p, "pd_op.layer_norm"), 0u);
    EXPECT_EQ(count_ops(p, "pd_op.rsqrt"), 1u);
  }
}

TEST(PirPassManager, InstrumentationAndPipelines) {
  const char* text = R"IR(module {
  %0 = "builtin.parameter"() {name = "x"} : () -> (tensor<4xf32>)
  %1 = "pd_op.exp"(%0) : (tensor<4xf32>) -> (tensor<4xf32>)
  %2 = "pd_op.exp"(%0) : (tensor<4xf32>) -> (tensor<4xf32>)
  "builtin.output"(%2) {name = "y"} : (tensor<4xf32>) -> ()
}
)IR";
  auto p = parse_program(ctx(), text);
  PassManager pm;
  pm.add_pipeline("cse, dce");
  EXPECT_EQ(pm.str(), "cse,dce");
  std::ostringstream log;
  pm.add_instrumentation(make_ir_printer(log, true, true, "dce"));
  auto timing = std::make_shared<PassTiming>();
  pm.add_instrumentation(timing);
  EXPECT_TRUE(pm.run(*p));
  EXPECT_NE(log.str().find("IR before dce"), std::string::npos);
  EXPECT_NE(log.str().find("IR after dce"), std::string::npos);
  EXPECT_EQ(log.str().find("IR before cse"), std::string::npos);
  ASSERT_EQ(timing->entries().size(), 2u);
  EXPECT_EQ(timing->entries()[0].name, "cse");
  EXPECT_NE(timing->report().find("total"), std::string::npos);
  EXPECT_EQ(p->num_ops(), 3u);

  PassManager nested;
  nested.add_pipeline("canonicalize,cf.while(cse,cf.if(dce)),dce");
  EXPECT_EQ(nested.str(), "canonicalize,cf.while(cse,cf.if(dce)),dce");
  testing::expect_error([] { PassManager().add_pipeline("cse,nope"); }, "unknown pass 'nope'");
  testing::expect_error([] { PassManager().add_pipeline("cf.while(cse"); }, "unbalanced parentheses");
  EXPECT_GE(registered_passes().size(), 7u);
}

TEST(PirPassManager, VerifiesAfterEachPass) {
  class Breaker : public Pass {
   public:
    Breaker() : Pass("breaker") {}
    bool run(Operation* anchor) override {  // gives a relu the wrong result type
      Operation* op = anchor->region(0).front()->back();
      op->result(0).set_type(op->info()->ctx->tensor_type(DataType::FLOAT64, {4}));
      return true;
    }
  };
  auto p = parse_program(ctx(), R"IR(module {
  %0 = "builtin.parameter"() {name = "x"} : () -> (tensor<4xf32>)
  %1 = "pd_op.relu"(%0) : (tensor<4xf32>) -> (tensor<4xf32>)
}
)IR");
  PassManager pm;
  pm.add_pass(std::make_unique<Breaker>());
  testing::expect_error([&] { pm.run(*p); }, "IR is invalid after pass 'breaker'");
}

}  // namespace
}  // namespace oar::pir
