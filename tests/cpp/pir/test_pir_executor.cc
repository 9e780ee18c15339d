// The executor (pir/executor): straight-line programs, buffer release, cf.while / cf.if,
// kernel-dialect programs after the standard pipeline, the tracer, and bad inputs.
#include <cmath>

#include <gflags/gflags.h>

#include "oar_generated/ops_api.h"
#include "paddle_core/base/flags.h"
#include "paddle_core/dispatch/dispatch.h"
#include "paddle_core/dispatch/trace.h"
#include "pir/executor/executor.h"
#include "pir/ir/builder.h"
#include "pir/ir/verifier.h"
#include "pir/pass/pass.h"
#include "pir/trace/program_tracer.h"
#include "tests/cpp/pir/pir_test_util.h"

namespace oar::pir {
namespace {

using testing::ctx;
using testing::expect_error;

Tensor filled(const std::vector<int64_t>& shape, double v) { return ops::full(shape, Scalar(v), DataType::FLOAT32); }

std::vector<float> values(const Tensor& t) {
  DenseTensor c = contiguous(t.dense());
  const float* p = c.data<float>();
  return std::vector<float>(p, p + c.numel());
}

// y = exp(x) * x + 1, through a chain of ops; returns the program.
std::unique_ptr<Program> chain_program() {
  IrContext* c = ctx();
  auto p = std::make_unique<Program>(c);
  Builder b(c, p->block());
  Type t = c->tensor_type(DataType::FLOAT32, {-1, 3});
  Value x = b.build("builtin.input", {}, {{"name", c->str_attr("x")}}, {t})->result(0);
  Value e = b.op("pd_op.exp", {x});
  Value m = b.op("pd_op.multiply", {e, x});
  Value y = b.op("pd_op.scale", {m}, {{"scale", c->float_attr(1.0)}, {"bias", c->float_attr(1.0)}});
  b.build("builtin.output", {y}, {{"name", c->str_attr("y")}}, {});
  verify_program(*p);
  return p;
}

TEST(PirExecutor, RunsAChainAndDropsDeadBuffers) {
  auto p = chain_program();
  Executor ex(*p);
  EXPECT_EQ(ex.input_names(), std::vector<std::string>{"x"});
  EXPECT_EQ(ex.output_names(), std::vector<std::string>{"y"});
  for (int64_t rows : {1, 4, 0}) {  // the dynamic dim takes any size
    Tensor x = filled({rows, 3}, 0.5);
    std::vector<Tensor> out = ex.run({x});
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].dims(), (Dims{rows, 3}));
    for (float v : values(out[0])) EXPECT_NEAR(v, std::exp(0.5) * 0.5 + 1.0, 1e-6);
  }
  // x, exp, multiply, scale: never more than two intermediates alive at once
  EXPECT_LE(ex.peak_live_slots(), 3u);
}

TEST(PirExecutor, KernelDialectAfterTheStandardPipeline) {
  auto p = chain_program();
  PassManager pm;
  pm.add_pipeline(standard_pipeline());
  pm.run(*p);
  EXPECT_NE(p->str().find("kernel.phi_kernel"), std::string::npos) << p->str();
  Executor ex(*p);
  std::vector<Tensor> out = ex.run({filled({2, 3}, -1.0)});
  for (float v : values(out[0])) EXPECT_NEAR(v, std::exp(-1.0) * -1.0 + 1.0, 1e-6);
}

TEST(PirExecutor, WhileLoopRunsUntilTheConditionFails) {
  IrContext* c = ctx();
  Program p(c);
  Builder b(c, p.block());
  Type t = c->tensor_type(DataType::FLOAT32, {3});
  Value x = b.build("builtin.input", {}, {{"name", c->str_attr("x")}}, {t})->result(0);
  Value limit = b.constant_scalar(100.0, DataType::FLOAT32, {});
  Value s0 = b.op("pd_op.sum", {x});
  Value cond = b.op("pd_op.less_than", {s0, limit});
  Operation* loop = b.build("cf.while", {cond, x}, {}, {t});
  Block* body = loop->region(0).add_block();
  Value carried = body->add_argument(t);
  Builder bb(c, body);
  Value next = bb.op("pd_op.scale", {carried}, {{"scale", c->float_attr(2.0)}});
  Value more = bb.op("pd_op.less_than", {bb.op("pd_op.sum", {next}), limit});
  bb.yield({more, next});
  b.build("builtin.output", {loop->result(0)}, {{"name", c->str_attr("out")}}, {});
  verify_program(p);
  Executor ex(p);
  // sum 3 -> doubles while below 100: 3, 6, ..., 96, 192
  EXPECT_EQ(values(ex.run({filled({3}, 1.0)})[0]), std::vector<float>(3, 64.0f));
  // already above the limit: zero iterations
  EXPECT_EQ(values(ex.run({filled({3}, 50.0)})[0]), std::vector<float>(3, 50.0f));
}

// Note [Bounded loops]: the doubling loop above, with its body's yield chosen by `next_of`
// (carried, the doubled value) -> (next condition, next carried value).
enum class LoopYield { kDoubled, kOuterCondition, kCarriedUnchanged };
std::unique_ptr<Program> doubling_loop(LoopYield how, const std::string& name = "") {
  IrContext* c = ctx();
  auto p = std::make_unique<Program>(c);
  Builder b(c, p->block());
  Type t = c->tensor_type(DataType::FLOAT32, {3});
  Value x = b.build("builtin.input", {}, {{"name", c->str_attr("x")}}, {t})->result(0);
  Value limit = b.constant_scalar(100.0, DataType::FLOAT32, {});
  Value cond = b.op("pd_op.less_than", {b.op("pd_op.sum", {x}), limit});
  std::vector<NamedAttribute> attrs;
  if (!name.empty()) attrs.push_back({"name", c->str_attr(name)});
  Operation* loop = b.build("cf.while", {cond, x}, attrs, {t});
  Block* body = loop->region(0).add_block();
  Value carried = body->add_argument(t);
  Builder bb(c, body);
  Value next = bb.op("pd_op.scale", {carried}, {{"scale", c->float_attr(2.0)}});
  Value more = bb.op("pd_op.less_than", {bb.op("pd_op.sum", {next}), limit});
  if (how == LoopYield::kDoubled) bb.yield({more, next});
  if (how == LoopYield::kOuterCondition) bb.yield({cond, next});
  if (how == LoopYield::kCarriedUnchanged)  // the condition reads only a value that never changes
    bb.yield({bb.op("pd_op.less_than", {bb.op("pd_op.sum", {carried}), limit}), carried});
  b.build("builtin.output", {loop->result(0)}, {{"name", c->str_attr("out")}}, {});
  verify_program(*p);
  return p;
}

TEST(PirExecutor, WhileWhoseConditionNeverChangesIsAnError) {
  for (LoopYield how : {LoopYield::kOuterCondition, LoopYield::kCarriedUnchanged}) {
    auto p = doubling_loop(how);
    Executor ex(*p);
    expect_error([&] { ex.run({filled({3}, 1.0)}); }, "cf.while #0 would never end");
    // A false condition runs no iteration: not an error.
    EXPECT_EQ(values(ex.run({filled({3}, 50.0)})[0]), std::vector<float>(3, 50.0f));
  }
  auto named = doubling_loop(LoopYield::kOuterCondition, "model.py:7: while s < 100:");
  Executor ex(*named);
  expect_error([&] { ex.run({filled({3}, 1.0)}); }, "cf.while 'model.py:7: while s < 100:' would never end");
}

TEST(PirExecutor, WhileIterationsAreBoundedByTheFlag) {
  gflags::FlagSaver restore_flags;
  auto p = doubling_loop(LoopYield::kDoubled, "doubling");
  Executor ex(*p);
  ASSERT_TRUE(flags::set_flag("oar_max_while_iterations", "6"));  // 1 -> 64 takes 6 doublings
  EXPECT_EQ(values(ex.run({filled({3}, 1.0)})[0]), std::vector<float>(3, 64.0f));
  ASSERT_TRUE(flags::set_flag("oar_max_while_iterations", "5"));
  try {
    ex.run({filled({3}, 1.0)});
    ADD_FAILURE() << "expected the iteration limit";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kPreconditionNotMet);
    EXPECT_NE(e.message().find("cf.while 'doubling' ran 5 iterations, the limit FLAGS_oar_max_while_iterations=5"),
              std::string::npos)
        << e.message();
  }
  ASSERT_TRUE(flags::set_flag("oar_max_while_iterations", "0"));  // no limit
  EXPECT_EQ(values(ex.run({filled({3}, 1.0)})[0]), std::vector<float>(3, 64.0f));
}

TEST(PirExecutor, IfPicksTheBranchAtRunTime) {
  IrContext* c = ctx();
  Program p(c);
  Builder b(c, p.block());
  Type t = c->tensor_type(DataType::FLOAT32, {2});
  Value x = b.build("builtin.input", {}, {{"name", c->str_attr("x")}}, {t})->result(0);
  Value cond = b.op("pd_op.less_than", {b.op("pd_op.sum", {x}), b.constant_scalar(0.0, DataType::FLOAT32, {})});
  Operation* iff = b.build("cf.if", {cond}, {}, {t}, 2);
  Builder then_b(c, iff->region(0).add_block());
  then_b.yield({then_b.op("pd_op.scale", {x}, {{"scale", c->float_attr(-1.0)}})});
  Builder else_b(c, iff->region(1).add_block());
  else_b.yield({x});
  b.build("builtin.output", {iff->result(0)}, {{"name", c->str_attr("abs")}}, {});
  verify_program(p);
  Executor ex(p);
  EXPECT_EQ(values(ex.run({filled({2}, -3.0)})[0]), std::vector<float>(2, 3.0f));
  EXPECT_EQ(values(ex.run({filled({2}, 2.0)})[0]), std::vector<float>(2, 2.0f));
}

TEST(PirExecutor, TracerRecordsEagerOpsIntoARunnableProgram) {
  ProgramTracer tracer;
  Tensor x = filled({2, 2}, 0.25), w = filled({2, 2}, 2.0);
  tracer.add_input(x, "x", {-1, 2});
  tracer.add_parameter(w, "w");
  Tensor y;
  {
    trace::TracerGuard active(&tracer);
    y = ops::tanh(ops::matmul(x, w, false, false));
  }
  auto p = tracer.finish({y});
  const std::string text = p->str();
  EXPECT_NE(text.find("pd_op.matmul"), std::string::npos) << text;
  EXPECT_NE(text.find("tensor<?x2xf32>"), std::string::npos) << text;
  Executor ex(*p);
  std::vector<Tensor> out = ex.run({filled({3, 2}, 0.25)});
  EXPECT_EQ(out[0].dims(), (Dims{3, 2}));
  for (float v : values(out[0])) EXPECT_NEAR(v, std::tanh(1.0), 1e-6);
}

// Note [Kernel-level programs]: every step the executor runs names its kernel.
bool only_kernels(const Block* block) {
  for (const Operation* op : *block) {
    if (op->info()->dialect == "pd_op") return false;
    for (size_t r = 0; r < op->num_regions(); ++r)
      if (!only_kernels(op->region(r).front())) return false;
  }
  return true;
}

TEST(PirExecutor, LowersOpDialectProgramsToKernels) {
  auto p = chain_program();
  Executor ex(*p);
  EXPECT_NE(p->str().find("pd_op.exp"), std::string::npos);  // the caller's program is left as it was
  const Program& lowered = ex.lowered_program();
  EXPECT_TRUE(only_kernels(lowered.block())) << lowered.str();
  EXPECT_NE(lowered.str().find("kernel.phi_kernel"), std::string::npos);
  EXPECT_NE(lowered.str().find("kernel_name = \"exp\""), std::string::npos) << lowered.str();
}

// A kernel registered at run time (what the fusion compiler will hand the executor):
// out = 2 * x + 1 on float32.
void axpb_step(dispatch::KernelCall& k) {
  const DenseTensor x = contiguous(k.in(0));
  DenseTensor out(x.dims(), x.dtype(), k.ctx->place);
  float* o = out.alloc<float>();
  const float* in = x.data<float>();
  for (int64_t i = 0; i < x.numel(); ++i) o[i] = 2.0f * in[i] + 1.0f;
  k.outputs.push_back(std::move(out));
}

TEST(PirExecutor, RunsAKernelRegisteredAtRunTime) {
  dispatch::register_kernel_step("test.axpb", {axpb_step});
  IrContext* c = ctx();
  Program p(c);
  Builder b(c, p.block());
  Type t = c->tensor_type(DataType::FLOAT32, {-1});
  Value x = b.build("builtin.input", {}, {{"name", c->str_attr("x")}}, {t})->result(0);
  Value y = b.build("kernel.compiled_kernel", {x}, {{"kernel_name", c->str_attr("test.axpb")}}, {t})->result(0);
  Value z = b.op("pd_op.exp", {y});  // lowered around the compiled kernel
  b.build("builtin.output", {z}, {{"name", c->str_attr("z")}}, {});
  verify_program(p);
  Executor ex(p);
  ex.set_profiling(true);
  std::vector<Tensor> out = ex.run({filled({5}, 0.5)});
  for (float v : values(out[0])) EXPECT_NEAR(v, std::exp(2.0), 1e-5);
  bool seen = false;
  for (const OpProfile& e : ex.profile()) seen |= e.name == "kernel.test.axpb" && e.calls == 1;
  EXPECT_TRUE(seen);
  // An unregistered kernel is an error naming it, when the program is planned.
  Program q(c);
  Builder qb(c, q.block());
  Value qx = qb.build("builtin.input", {}, {{"name", c->str_attr("x")}}, {t})->result(0);
  Value qy = qb.build("kernel.compiled_kernel", {qx}, {{"kernel_name", c->str_attr("test.nope")}}, {t})->result(0);
  qb.build("builtin.output", {qy}, {{"name", c->str_attr("y")}}, {});
  expect_error([&] { Executor bad(q); }, "test.nope");
}

TEST(PirExecutor, RejectsBadInputs) {
  auto p = chain_program();
  Executor ex(*p);
  expect_error([&] { ex.run({}); }, "takes 1 inputs, got 0");
  expect_error([&] { ex.run({filled({2, 4}, 1.0)}); }, "expects tensor<?x3xf32>");
  expect_error([&] { ex.run({ops::full({2, 3}, Scalar(1.0), DataType::FLOAT64)}); }, "float64");
}

}  // namespace
}  // namespace oar::pir
