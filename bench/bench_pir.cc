// Microbenchmark of the IR: build, verify, print, parse, serialize and run the
// standard pass pipeline on a program of ~100k ops, on one core.
//   build/dev/pir/bench_pir [num_ops]
// Each block of 12 ops exercises every pass: an identity scale (canonicalize), two
// constants multiplied (constant_fold), a duplicated exp (cse), matmul+add+relu
// (fuse), an unused tanh (dce), single-use temporaries (inplace), and lowering.
#include <omp.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "pir/ir/builder.h"
#include "pir/ir/parser.h"
#include "pir/ir/program.h"
#include "pir/ir/verifier.h"
#include "pir/pass/pass.h"
#include "pir/serialize/serialize.h"

using namespace oar;       // NOLINT
using namespace oar::pir;  // NOLINT

namespace {
double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

std::unique_ptr<Program> build(IrContext* c, int64_t target_ops) {
  auto p = std::make_unique<Program>(c);
  Builder b(c, p->block());
  Type act = c->tensor_type(DataType::FLOAT32, {64, 64});
  Value h = b.parameter("x", act);
  Value w = b.parameter("w", act);
  Value bias = b.parameter("b", c->tensor_type(DataType::FLOAT32, {64}));
  const OpInfo* matmul = c->op_info("pd_op.matmul");
  const OpInfo* add = c->op_info("pd_op.add");
  const OpInfo* relu = c->op_info("pd_op.relu");
  const OpInfo* scale = c->op_info("pd_op.scale");
  const OpInfo* exp = c->op_info("pd_op.exp");
  const OpInfo* mul = c->op_info("pd_op.multiply");
  const OpInfo* tanh = c->op_info("pd_op.tanh");
  std::vector<NamedAttribute> unit_scale = {{"scale", c->float_attr(1.0)}, {"bias", c->float_attr(0.0)}};
  for (int64_t i = 0; p->block()->size() + 12 <= static_cast<size_t>(target_ops); ++i) {
    Value mm = b.build(matmul, {h, w})->result(0);
    Value a = b.build(add, {mm, bias})->result(0);
    Value r = b.build(relu, {a})->result(0);
    Value s = b.build(scale, {r}, unit_scale)->result(0);
    Value e1 = b.build(exp, {s})->result(0);
    Value e2 = b.build(exp, {s})->result(0);
    Value t = b.build(add, {e1, e2})->result(0);
    Value c1 = b.constant_scalar(0.5, DataType::FLOAT32, {});
    Value c2 = b.constant_scalar(static_cast<double>(i % 7), DataType::FLOAT32, {});
    Value k = b.build(mul, {c1, c2})->result(0);
    Value m = b.build(mul, {t, k})->result(0);
    b.build(tanh, {m});
    h = m;
  }
  b.build("builtin.output", {h}, {{"name", c->str_attr("out")}}, {});
  return p;
}
}  // namespace

int main(int argc, char** argv) {
  omp_set_num_threads(1);
  const int64_t target = argc > 1 ? std::atoll(argv[1]) : 100000;
  IrContext* c = IrContext::global();
  build(c, 1000);  // warm up (op registry, kernels, allocator)

  double t0 = now();
  auto p = build(c, target);
  double t_build = now() - t0;
  const double n = static_cast<double>(p->num_ops());

  t0 = now();
  verify_program(*p);
  double t_verify = now() - t0;

  t0 = now();
  std::string text = p->str();
  double t_print = now() - t0;

  t0 = now();
  auto parsed = parse_program(c, text, /*verify=*/false);
  double t_parse = now() - t0;

  t0 = now();
  std::string bytes = serialize_program(*p);
  double t_ser = now() - t0;
  t0 = now();
  auto loaded = deserialize_program(c, bytes, /*verify=*/false);
  double t_deser = now() - t0;

  PassManager pm;
  pm.set_verify_each(false);
  pm.add_pipeline(standard_pipeline());
  auto timing = std::make_shared<PassTiming>();
  pm.add_instrumentation(timing);
  t0 = now();
  pm.run(*p);
  double t_pipeline = now() - t0;
  t0 = now();
  verify_program(*p);
  double t_verify_after = now() - t0;

  auto row = [&](const char* what, double secs, double ops) {
    std::printf("  %-28s %9.3f ms  %12.0f ops/s\n", what, secs * 1e3, ops / secs);
  };
  std::printf("bench_pir: %.0f ops (%zu bytes of text, %zu bytes serialized), one thread\n", n, text.size(),
              bytes.size());
  row("build (with shape inference)", t_build, n);
  row("verify", t_verify, n);
  row("print", t_print, n);
  row("parse", t_parse, n);
  row("serialize", t_ser, n);
  row("deserialize", t_deser, n);
  row("standard pipeline", t_pipeline, n);
  row("verify (after pipeline)", t_verify_after, static_cast<double>(p->num_ops()));
  std::printf("%s", timing->report().c_str());
  const double total = t_build + t_verify + t_print + t_pipeline;
  std::printf("build+verify+print+pipeline: %.3f s (%s 1 s target); pipeline leaves %zu ops\n", total,
              total < 1.0 ? "under the" : "OVER the", p->num_ops());
  return 0;
}
