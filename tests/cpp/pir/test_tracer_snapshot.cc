// ProgramTracer::snapshot (static mode's running copy of a program still being
// recorded): outputs per copy, tracing goes on, and prune's inference program.
#include <cmath>

#include "oar_generated/ops_api.h"
#include "paddle_core/dispatch/trace.h"
#include "pir/executor/executor.h"
#include "pir/trace/program_tracer.h"
#include "tests/cpp/pir/pir_test_util.h"

namespace oar::pir {
namespace {

Tensor full_of(const std::vector<int64_t>& shape, double v) { return ops::full(shape, Scalar(v), DataType::FLOAT32); }

float first(const Tensor& t) { return contiguous(t.dense()).data<float>()[0]; }

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(TracerSnapshot, CopiesWithOutputsWhileTracingGoesOn) {
  ProgramTracer tracer;
  Tensor x = full_of({2, 3}, 1.0), w = full_of({3}, 2.0);
  tracer.add_input(x, "x", {-1, 3});
  tracer.add_parameter(w, "w");
  Tensor y, z;
  {
    trace::TracerGuard active(&tracer);
    y = ops::multiply(x, w);
  }
  auto first_copy = tracer.snapshot({y}, {"y"});
  {
    trace::TracerGuard active(&tracer);
    z = ops::exp(y);
  }
  auto second_copy = tracer.snapshot({y, z}, {"y", "z"});
  // The first copy has no exp and one output; the tracer holds no outputs of either.
  EXPECT_EQ(count(first_copy->str(), "pd_op.exp"), 0u) << first_copy->str();
  EXPECT_EQ(count(first_copy->str(), "builtin.output"), 1u);
  EXPECT_EQ(count(second_copy->str(), "builtin.output"), 2u) << second_copy->str();
  Executor ex(*second_copy);
  std::vector<Tensor> out = ex.run({full_of({4, 3}, 0.5)});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].dims(), (Dims{4, 3}));
  EXPECT_NEAR(first(out[0]), 1.0, 1e-6);
  EXPECT_NEAR(first(out[1]), std::exp(1.0), 1e-5);
  auto done = tracer.finish({z});
  EXPECT_EQ(count(done->str(), "builtin.output"), 1u) << done->str();
}

TEST(TracerSnapshot, PruneDropsWritesAndWhatTheOutputsDoNotRead) {
  ProgramTracer tracer;
  Tensor x = full_of({2}, 1.0), label = full_of({2}, 0.0), w = full_of({2}, 3.0), unused = full_of({2}, 4.0);
  tracer.add_input(x, "x", {2});
  tracer.add_input(label, "label", {2});
  tracer.add_parameter(w, "w");
  tracer.add_parameter(unused, "unused");
  Tensor y;
  {
    trace::TracerGuard active(&tracer);
    y = ops::multiply(x, w);
    Tensor loss = ops::subtract(y, label);
    Tensor updated = ops::subtract(w, loss);
    tracer.record_write(w, updated);  // an optimizer's write: builtin.set_parameter
  }
  auto full = tracer.snapshot({y}, {"y"});
  EXPECT_EQ(count(full->str(), "builtin.set_parameter"), 1u) << full->str();
  auto pruned = tracer.snapshot({y}, {"y"}, /*prune=*/true, /*keep_inputs=*/{});
  const std::string text = pruned->str();
  EXPECT_EQ(count(text, "builtin.set_parameter"), 0u) << text;
  EXPECT_EQ(count(text, "pd_op.subtract"), 0u) << text;
  EXPECT_EQ(count(text, "\"label\""), 0u) << text;
  EXPECT_EQ(pruned->parameter_names(), (std::vector<std::string>{"w"}));  // its table lists what it reads
  auto kept = tracer.snapshot({y}, {"y"}, true, {"label"});
  EXPECT_EQ(count(kept->str(), "\"label\""), 1u) << kept->str();
  // A replay applies the writes itself: each becomes an output with what it would write.
  auto replay = tracer.snapshot({y}, {"y"}, true, {}, /*writes_as_outputs=*/true);
  EXPECT_EQ(count(replay->str(), "builtin.set_parameter"), 0u) << replay->str();
  EXPECT_EQ(count(replay->str(), "write:w"), 1u) << replay->str();
  Executor ex(*replay);
  std::vector<Tensor> out = ex.run({full_of({2}, 1.0), full_of({2}, 0.0)});
  ASSERT_EQ(out.size(), 2u);  // the write (w - (x * w - label) = 0) first, then y
  EXPECT_NEAR(first(out[0]), 0.0, 1e-6);
  EXPECT_NEAR(first(out[1]), 3.0, 1e-6);
}

}  // namespace
}  // namespace oar::pir
