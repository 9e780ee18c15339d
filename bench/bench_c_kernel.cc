// The cost of the C kernel API: the test plugin's C `add` kernel (through its adapter,
// backends/runtime/kernel_ext.cc) against the same loop written as a C++ kernel, both on
// host-memory devices with the same caching allocator, on one-element tensors so the
// per-call overhead dominates. Prints ns per call for the bare kernel call and for the
// whole op (oar::ops::add); bench/bench_device.py runs it and reports the difference.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "backends/runtime/device_manager.h"
#include "oar_generated/kernel_signatures.h"
#include "oar_generated/ops_api.h"
#include "paddle_core/dispatch/kernel_registry.h"

namespace oar {
namespace {

int64_t broadcast_offset(const DenseTensor& t, const Dims& dims, int64_t linear) {
  int64_t off = 0;
  for (int k = dims.size() - 1; k >= 0; --k) {
    const int64_t idx = linear % dims[k];
    linear /= dims[k];
    const int tk = k - (dims.size() - t.rank());
    if (tk >= 0 && t.dims()[tk] != 1) off += idx * t.strides()[tk];
  }
  return off;
}

// testdev_plugin.c's add_f32, as a C++ kernel.
void cpp_add(const DeviceContext&, const DenseTensor& x, const DenseTensor& y, DenseTensor* out) {
  const float* xp = x.data<float>();
  const float* yp = y.data<float>();
  float* op = out->alloc<float>();
  const Dims& d = out->dims();
  for (int64_t i = 0; i < out->numel(); ++i) op[i] = xp[broadcast_offset(x, d, i)] + yp[broadcast_offset(y, d, i)];
}

// The best of many short runs: on a shared machine most runs are preempted, and a short
// one that was not shows the cost itself.
template <typename F>
double ns_per_call(F&& f, int iters) {
  double best = 1e30;
  for (int rep = 0; rep < 50; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) f();
    const auto t1 = std::chrono::steady_clock::now();
    best = std::min(best, std::chrono::duration<double, std::nano>(t1 - t0).count() / iters);
  }
  return best;
}

Tensor one(const Place& place) {
  DenseTensor d(Dims({1}), DataType::FLOAT32, place);
  const float v = 1.5f;
  backends::DeviceManager::instance().memcpy(place, d.alloc(), CPUPlace(), &v, sizeof(v));
  return Tensor(std::move(d));
}

}  // namespace
}  // namespace oar

int main(int argc, char** argv) {
  using namespace oar;
  const int iters = argc > 1 ? std::stoi(argv[1]) : 5000;
  auto& dm = backends::DeviceManager::instance();
  dm.load_plugin(std::string(OAR_TEST_PLUGIN_DIR) + "/libtestdev.so");
  // A second host-memory device whose add is the C++ kernel.
  OAR_DeviceInterface table = dm.interface("cpu");
  OAR_DeviceRegistration reg{};
  reg.struct_size = sizeof(reg);
  reg.version = {sizeof(OAR_DeviceAbiVersion), OAR_DEVICE_ABI_VERSION_MAJOR, OAR_DEVICE_ABI_VERSION_MINOR};
  reg.device_type = "bench_cpp";
  reg.interface = &table;
  dm.register_device(reg);
  KernelRegistry::instance().register_kernel("add", "bench_cpp", DataType::FLOAT32,
                                             reinterpret_cast<void*>(static_cast<kernel_sig::add>(&cpp_add)));

  std::printf("%-10s %14s %14s\n", "device", "kernel ns", "op ns");
  for (const char* type : {"bench_cpp", "testdev"}) {
    const Place place = CustomPlace(type, 0);
    Tensor a = one(place), b = one(place);
    auto fn =
        reinterpret_cast<kernel_sig::add>(KernelRegistry::instance().find("add", place.type(), DataType::FLOAT32));
    const DeviceContext& ctx = device_context(place);
    DenseTensor out(Dims({1}), DataType::FLOAT32, place);
    const double kernel = ns_per_call([&] { fn(ctx, a.dense(), b.dense(), &out); }, iters);
    const double op = ns_per_call([&] { Tensor r = ops::add(a, b); }, iters);
    std::printf("%-10s %14.1f %14.1f\n", type, kernel, op);
  }
  return 0;
}
