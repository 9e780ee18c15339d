// The optimizers' fused updates dispatch by place (paddle_core/api/fused_update.h): a
// device's "<rule>_update" kernel when it registers one, else the CPU's on host copies,
// or an error with the fallback turned off.
#include <gflags/gflags.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <string>
#include <vector>

#include "backends/include/oar/device_ext.h"
#include "backends/runtime/device_manager.h"
#include "paddle_core/api/fused_update.h"
#include "paddle_core/base/errors.h"

namespace oar {
namespace {

std::atomic<int> g_device_sgd{0};

// "upd_dev": the CPU's table underneath (host memory), with its own sgd_update for
// float32 only: it counts its calls and runs the CPU's.
void device_sgd(const DeviceContext& ctx, const phi::UpdateArgs& a) {
  EXPECT_EQ(backends::DeviceManager::device_type_of(ctx.place), "upd_dev");
  ++g_device_sgd;
  auto cpu = reinterpret_cast<phi::UpdateKernel>(
      KernelRegistry::instance().find("sgd_update", DeviceType::kCPU, DataType::FLOAT32));
  cpu(device_context(CPUPlace()), a);
}

Place upd_dev() {
  static const Place place = [] {
    OAR_DeviceInterface table = backends::DeviceManager::instance().interface("cpu");
    OAR_DeviceRegistration reg{};
    reg.struct_size = sizeof(reg);
    reg.version = {sizeof(OAR_DeviceAbiVersion), OAR_DEVICE_ABI_VERSION_MAJOR, OAR_DEVICE_ABI_VERSION_MINOR};
    reg.device_type = "upd_dev";
    reg.interface = &table;
    backends::DeviceManager::instance().register_device(reg);
    KernelRegistry::instance().register_kernel("sgd_update", "upd_dev", DataType::FLOAT32,
                                               reinterpret_cast<void*>(&device_sgd));
    return CustomPlace("upd_dev", 0);
  }();
  return place;
}

DenseTensor filled(const Place& place, DataType dtype, std::vector<double> v) {
  DenseTensor h(Dims{static_cast<int64_t>(v.size())}, dtype, CPUPlace());
  h.alloc();
  for (size_t i = 0; i < v.size(); ++i) {
    if (dtype == DataType::FLOAT32)
      h.data<float>()[i] = static_cast<float>(v[i]);
    else
      h.data<double>()[i] = v[i];
  }
  if (place.is_cpu()) return h;
  DenseTensor d(h.dims(), dtype, place);
  d.alloc();
  copy_into(h, &d);
  return d;
}

std::vector<double> host(const DenseTensor& t) {
  DenseTensor h(t.dims(), t.dtype(), CPUPlace());
  h.alloc();
  copy_into(t, &h);
  std::vector<double> out;
  for (int64_t i = 0; i < h.numel(); ++i)
    out.push_back(t.dtype() == DataType::FLOAT32 ? h.data<float>()[i] : h.data<double>()[i]);
  return out;
}

// p -= lr * (g + wd * p), once, on `place` in `dtype`; returns p.
std::vector<double> sgd_once(const Place& place, DataType dtype) {
  DenseTensor p = filled(place, dtype, {1.0, -2.0, 0.5}), g = filled(place, dtype, {0.5, 0.25, -1.0});
  phi::UpdateArgs a;
  a.params = {&p};
  a.grads = {&g};
  a.lrs = {0.1};
  a.wds = {0.2};
  api::fused_update("sgd", a);
  return host(p);
}

void expect_sgd(const std::vector<double>& got) {
  const double p0[] = {1.0, -2.0, 0.5}, g[] = {0.5, 0.25, -1.0};
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(got[i], p0[i] - 0.1 * (g[i] + 0.2 * p0[i]), 1e-6);
}

struct NoFallback {
  NoFallback() { gflags::SetCommandLineOption("enable_api_kernel_fallback", "false"); }
  ~NoFallback() { gflags::SetCommandLineOption("enable_api_kernel_fallback", "true"); }
};

TEST(FusedUpdate, TheDevicesKernelWhenItHasOne) {
  const int before = g_device_sgd.load();
  expect_sgd(sgd_once(upd_dev(), DataType::FLOAT32));
  EXPECT_EQ(g_device_sgd.load(), before + 1);
}

TEST(FusedUpdate, TheCpusKernelOnHostCopiesOtherwise) {
  const int before = g_device_sgd.load();
  expect_sgd(sgd_once(upd_dev(), DataType::FLOAT64));  // no float64 kernel on upd_dev
  expect_sgd(sgd_once(CPUPlace(), DataType::FLOAT64));
  expect_sgd(sgd_once(CPUPlace(), DataType::FLOAT32));
  EXPECT_EQ(g_device_sgd.load(), before);
}

TEST(FusedUpdate, StatesAreWrittenBackFromTheHost) {
  // Momentum on upd_dev (no kernel there): the velocity is a written state.
  DenseTensor p = filled(upd_dev(), DataType::FLOAT32, {1.0, 2.0});
  DenseTensor g = filled(upd_dev(), DataType::FLOAT32, {0.5, -0.5});
  DenseTensor v = filled(upd_dev(), DataType::FLOAT32, {0.1, 0.2});
  phi::UpdateArgs a;
  a.params = {&p};
  a.grads = {&g};
  a.states = {{&v}};
  a.lrs = {0.1};
  a.wds = {0.0};
  a.scalars = {0.9};
  api::fused_update("momentum", a);
  const std::vector<double> vv = host(v), pv = host(p);
  EXPECT_NEAR(vv[0], 0.9 * 0.1 + 0.5, 1e-6);
  EXPECT_NEAR(vv[1], 0.9 * 0.2 - 0.5, 1e-6);
  EXPECT_NEAR(pv[0], 1.0 - 0.1 * vv[0], 1e-6);
  EXPECT_NEAR(pv[1], 2.0 - 0.1 * vv[1], 1e-6);
}

TEST(FusedUpdate, FallbackOffIsAnErrorNamingTheDtypesThere) {
  NoFallback off;
  try {
    sgd_once(upd_dev(), DataType::FLOAT64);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidType);
    EXPECT_NE(e.message().find("sgd_update: no kernel on upd_dev:0 for dtype float64 (its kernels there: float32) "
                               "and FLAGS_enable_api_kernel_fallback is off"),
              std::string::npos)
        << e.message();
  }
  expect_sgd(sgd_once(upd_dev(), DataType::FLOAT32));  // its own kernel needs no fallback
}

TEST(FusedUpdate, BadArgumentsNameWhatIsWrong) {
  DenseTensor p = filled(upd_dev(), DataType::FLOAT32, {1.0}), g = filled(CPUPlace(), DataType::FLOAT32, {1.0});
  phi::UpdateArgs a;
  a.params = {&p};
  a.grads = {&g};
  a.lrs = {0.1};
  a.wds = {0.0};
  try {
    api::fused_update("sgd", a);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("sgd_update: gradients[0] is on cpu but the update runs on upd_dev:0"),
              std::string::npos)
        << e.message();
  }
  a.grads = {&p};
  a.scalars = {0.9};
  try {
    api::fused_update("sgd", a);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("sgd_update: expected 0 state lists and 0 scalars, got 0 and 1"), std::string::npos)
        << e.message();
  }
  try {
    api::fused_update("lbfgs", a);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("no optimizer rule 'lbfgs'"), std::string::npos) << e.message();
  }
  try {  // a rule with a kernel (optimizer_kernels_more.cc), given the wrong counts
    api::fused_update("nadam", a);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("nadam_update: expected 3 state lists and 4 scalars, got 0 and 1"), std::string::npos)
        << e.message();
  }
}

}  // namespace
}  // namespace oar
