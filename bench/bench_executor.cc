// The executor's own overhead per step against the eager per-op overhead (issue 12):
// a chain of 1,000 adds of [1]-element float32 tensors, one core.
//   build/<tag>/pir/bench_executor [num_ops] [runs]
// Prints the time per kernel call alone (output allocation included), per executor
// step and per eager C++ op call, and each one's overhead over the kernel. The eager op
// from Python costs more (bench/run.sh core: add_1elem_us); compare the executor's
// overhead with that too. OpenBLAS's pool is limited to one thread: its idle threads
// spinning on the second core made the timings vary by 50%.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <unordered_map>

#include "oar_generated/kernel_signatures.h"
#include "oar_generated/ops_api.h"
#include "pir/executor/executor.h"
#include "pir/ir/builder.h"
#include "pir/ir/verifier.h"

using namespace oar;       // NOLINT
using namespace oar::pir;  // NOLINT

extern "C" void openblas_set_num_threads(int) __attribute__((weak));

namespace {
double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// The best of 5 timings of f(), per unit.
template <typename F>
double best(F f, double units) {
  double b = 1e30;
  for (int r = 0; r < 5; ++r) {
    const double t0 = now();
    f();
    b = std::min(b, (now() - t0) / units);
  }
  return b;
}
}  // namespace

int main(int argc, char** argv) {
  omp_set_num_threads(1);
  if (openblas_set_num_threads != nullptr) openblas_set_num_threads(1);
  const int n = argc > 1 ? std::atoi(argv[1]) : 1000;
  const int runs = argc > 2 ? std::atoi(argv[2]) : 200;
  IrContext* c = IrContext::global();
  Program p(c);
  Builder b(c, p.block());
  Type t = c->tensor_type(DataType::FLOAT32, {1});
  Value x = b.build("builtin.input", {}, {{"name", c->str_attr("x")}}, {t})->result(0);
  Value k = b.parameter("k", t);
  for (int i = 0; i < n; ++i) x = b.op("pd_op.add", {x, k});
  b.build("builtin.output", {x}, {{"name", c->str_attr("y")}}, {});
  verify_program(p);
  Executor ex(p);

  Tensor in = ops::full({1}, Scalar(1.0), DataType::FLOAT32);
  Tensor kt = ops::full({1}, Scalar(0.5), DataType::FLOAT32);
  std::unordered_map<std::string, Tensor> params{{"k", kt}};
  ex.run({in}, &params);
  const double t_exec = best(
      [&] {
    for (int r = 0; r < runs; ++r) ex.run({in}, &params);
      },
      double(n) * runs);

  const double t_eager = best(
      [&] {
    for (int r = 0; r < runs; ++r) {
      Tensor y = in;
      for (int i = 0; i < n; ++i) y = ops::add(y, kt);
    }
      },
      double(n) * runs);

  auto fn =
      reinterpret_cast<kernel_sig::add>(KernelRegistry::instance().find("add", DeviceType::kCPU, DataType::FLOAT32));
  const DeviceContext& ctx = device_context(CPUPlace());
  const double t_kernel = best(
      [&] {
    for (int r = 0; r < runs; ++r) {
      DenseTensor y = in.dense();
      for (int i = 0; i < n; ++i) {
        DenseTensor out(y.dims(), DataType::FLOAT32);
        fn(ctx, y, kt.dense(), &out);
        y = std::move(out);
      }
    }
      },
      double(n) * runs);

  std::printf("adds of [1] float32, %d-op chain, 1 thread\n", n);
  std::printf("  kernel alone        %7.3f us\n", t_kernel * 1e6);
  std::printf("  executor step       %7.3f us  (overhead %.3f us)\n", t_exec * 1e6, (t_exec - t_kernel) * 1e6);
  std::printf("  eager op (C++)      %7.3f us  (overhead %.3f us)\n", t_eager * 1e6, (t_eager - t_kernel) * 1e6);
  std::printf("  executor overhead / eager overhead: %.2f\n", (t_exec - t_kernel) / (t_eager - t_kernel));
  return 0;
}
