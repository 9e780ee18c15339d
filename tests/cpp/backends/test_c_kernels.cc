// The C kernel API (backends/include/oar/kernel_ext.h): the test plugin's C kernels
// (add, relu, matmul, split for float32 on `testdev`) run through the generated op functions
// like any kernel and match the CPU's; a call a kernel declines runs the CPU kernel, and
// their failures carry the plugin's message.
#include <gflags/gflags.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "backends/include/oar/kernel_ext.h"
#include "backends/runtime/device_manager.h"
#include "oar_generated/ops_api.h"
#include "paddle_core/base/errors.h"
#include "paddle_core/dispatch/dispatch.h"
#include "paddle_core/dispatch/kernel_registry.h"

DECLARE_bool(enable_api_kernel_fallback);

namespace oar {
namespace {

const Place kDev = CustomPlace("testdev", 0);

void load_testdev() {
  auto& dm = backends::DeviceManager::instance();
  if (!dm.has_device_type("testdev")) dm.load_plugin(std::string(OAR_TEST_PLUGIN_DIR) + "/libtestdev.so");
}

std::vector<float> random_values(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

Tensor on(const Place& place, const std::vector<float>& values, const std::vector<int64_t>& dims) {
  DenseTensor d(Dims(dims), DataType::FLOAT32, place);
  backends::DeviceManager::instance().memcpy(place, d.alloc(), CPUPlace(), values.data(),
                                             values.size() * sizeof(float));
  return Tensor(std::move(d));
}

std::vector<float> host_values(const Tensor& t) {
  const DenseTensor c = contiguous(t.dense());
  std::vector<float> v(static_cast<size_t>(c.numel()));
  backends::DeviceManager::instance().memcpy(CPUPlace(), v.data(), c.place(), c.raw_data(), v.size() * sizeof(float));
  return v;
}

void expect_near(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5f * (1 + std::abs(want[i]))) << i;
}

TEST(CKernels, RegisteredUnderTheCpuKernelsNames) {
  load_testdev();
  for (const char* op : {"add", "relu", "matmul", "unstack"}) {
    EXPECT_NE(KernelRegistry::instance().find(op, kDev.type(), DataType::FLOAT32), nullptr) << op;
    EXPECT_EQ(KernelRegistry::instance().find(op, kDev.type(), DataType::FLOAT64), nullptr) << op;
  }
}

TEST(CKernels, AddMatchesCpuWithBroadcasting) {
  load_testdev();
  const auto a = random_values(12, 1), b = random_values(4, 2);
  Tensor out = ops::add(on(kDev, a, {3, 4}), on(kDev, b, {4}));
  EXPECT_EQ(out.place(), kDev);
  EXPECT_EQ(out.dense().dims(), Dims({3, 4}));
  expect_near(host_values(out), host_values(ops::add(on(CPUPlace(), a, {3, 4}), on(CPUPlace(), b, {4}))));
}

TEST(CKernels, ReluMatchesCpuOnAStridedView) {
  load_testdev();
  const auto a = random_values(12, 3);
  // A transposed view: the kernel must follow the strides it is given.
  Tensor dev_t = ops::transpose(on(kDev, a, {3, 4}), {1, 0});
  Tensor cpu_t = ops::transpose(on(CPUPlace(), a, {3, 4}), {1, 0});
  EXPECT_FALSE(dev_t.dense().is_contiguous());
  expect_near(host_values(ops::relu(dev_t)), host_values(ops::relu(cpu_t)));
}

TEST(CKernels, MatmulMatchesCpuWithTransposeAttributes) {
  load_testdev();
  const auto a = random_values(6, 4), bb = random_values(12, 5);
  for (bool tx : {false, true}) {
    for (bool ty : {false, true}) {
      const std::vector<int64_t> da = tx ? std::vector<int64_t>{3, 2} : std::vector<int64_t>{2, 3};
      const std::vector<int64_t> db = ty ? std::vector<int64_t>{4, 3} : std::vector<int64_t>{3, 4};
      Tensor dev = ops::matmul(on(kDev, a, da), on(kDev, bb, db), tx, ty);
      Tensor cpu = ops::matmul(on(CPUPlace(), a, da), on(CPUPlace(), bb, db), tx, ty);
      EXPECT_EQ(dev.dense().dims(), Dims({2, 4}));
      expect_near(host_values(dev), host_values(cpu));
    }
  }
}

TEST(CKernels, UnstackFillsATensorListOutput) {
  load_testdev();
  const auto a = random_values(24, 8);
  for (int64_t axis : {0, 1, -1}) {
    const std::vector<Tensor> dev = ops::unstack(on(kDev, a, {2, 3, 4}), axis);
    const std::vector<Tensor> cpu = ops::unstack(on(CPUPlace(), a, {2, 3, 4}), axis);
    ASSERT_EQ(dev.size(), cpu.size());
    for (size_t i = 0; i < dev.size(); ++i) {
      EXPECT_EQ(dev[i].place(), kDev);
      EXPECT_EQ(dev[i].dense().dims(), cpu[i].dense().dims());
      expect_near(host_values(dev[i]), host_values(cpu[i]));
    }
  }
}

TEST(CKernels, SplitOnTheDeviceIsAViewAndNeedsNoKernel) {
  // split's parts share x's device memory: no kernel runs, on any device
  load_testdev();
  const auto a = random_values(24, 8);
  const Tensor x = on(kDev, a, {2, 3, 4});
  const std::vector<Tensor> dev = ops::split(x, {1, 3}, -1);
  const std::vector<Tensor> cpu = ops::split(on(CPUPlace(), a, {2, 3, 4}), {1, 3}, -1);
  ASSERT_EQ(dev.size(), 2u);
  for (size_t i = 0; i < dev.size(); ++i) {
    EXPECT_EQ(dev[i].place(), kDev);
    EXPECT_EQ(dev[i].dense().storage(), x.dense().storage());
    expect_near(host_values(ops::contiguous(dev[i])), host_values(ops::contiguous(cpu[i])));
  }
}

TEST(CKernels, TheExecutorsKernelStepRunsTheCKernel) {
  // The executor resolves a kernel when it plans a program and runs it through the op's
  // kernel step (Note [Kernel-level programs]); a C kernel is just another pointer there.
  load_testdev();
  const auto a = random_values(6, 9), b = random_values(12, 10);
  dispatch::KernelStepInfo step = dispatch::kernel_step("matmul");
  ASSERT_NE(step.fn, nullptr);
  std::vector<Tensor> x{on(kDev, a, {2, 3})}, y{on(kDev, b, {4, 3})};
  const std::vector<Tensor>* inputs[] = {&x, &y};
  const std::vector<dispatch::AttrValue> attrs = {false, true};
  dispatch::KernelCall call;
  call.ctx = &device_context(kDev);
  call.fn = KernelRegistry::instance().find("matmul", kDev.type(), DataType::FLOAT32);
  call.inputs = inputs;
  call.attrs = &attrs;
  step.fn(call);
  ASSERT_EQ(call.outputs.size(), 1u);
  EXPECT_EQ(call.outputs[0].place(), kDev);
  Tensor cpu = ops::matmul(on(CPUPlace(), a, {2, 3}), on(CPUPlace(), b, {4, 3}), false, true);
  expect_near(host_values(Tensor(std::move(call.outputs[0]))), host_values(cpu));
}

// Note [Declined plugin kernels]: the test plugin's matmul declines 1-D inputs.
TEST(CKernels, ADeclinedCallRunsTheCpuKernel) {
  load_testdev();
  const auto a = random_values(3, 6), b = random_values(3, 7);
  const Tensor got = ops::matmul(on(kDev, a, {3}), on(kDev, b, {3}), false, false);
  EXPECT_EQ(got.place(), kDev);
  EXPECT_EQ(got.dims(), Dims({}));
  expect_near(host_values(got), host_values(ops::matmul(on(CPUPlace(), a, {3}), on(CPUPlace(), b, {3}), false, false)));
}

TEST(CKernels, ADeclinedCallFailsWithThePluginsMessageWithoutTheFallback) {
  load_testdev();
  const auto a = random_values(3, 6);
  struct NoFallback {
    NoFallback() { FLAGS_enable_api_kernel_fallback = false; }
    ~NoFallback() { FLAGS_enable_api_kernel_fallback = true; }
  } no_fallback;
  try {
    ops::matmul(on(kDev, a, {3}), on(kDev, a, {3}), false, false);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUnimplemented);
    EXPECT_NE(e.message().find("matmul: the 'testdev' kernel for float32 failed with OAR_ERROR_UNIMPLEMENTED: "
                               "testdev matmul: only 2-D inputs"),
              std::string::npos)
        << e.message();
  }
}

// A device whose table is the CPU's and whose matmul kernel misreads its attributes.
const OAR_KernelApi* register_probe_device() {
  static const OAR_KernelApi* saved = nullptr;
  if (saved != nullptr) return saved;
  OAR_DeviceRegistration reg{};
  reg.struct_size = sizeof(reg);
  reg.version = {sizeof(OAR_DeviceAbiVersion), OAR_DEVICE_ABI_VERSION_MAJOR, OAR_DEVICE_ABI_VERSION_MINOR};
  reg.device_type = "c_kernel_probe";
  static OAR_DeviceInterface table = backends::DeviceManager::instance().interface("cpu");
  reg.interface = &table;
  reg.register_kernels = [](const OAR_KernelApi* api) {
    saved = api;
    return api->register_kernel("matmul", "c_kernel_probe", OAR_DTYPE_FLOAT32, "Tensor, Tensor, bool, bool -> Tensor",
                                [](const OAR_KernelApi* a, OAR_KernelContext ctx) {
      int64_t wrong = 0;
      return a->attr_int(ctx, 0, &wrong);  // transpose_x is a bool
    });
  };
  backends::DeviceManager::instance().register_device(reg);
  return saved;
}

TEST(CKernels, WrongAttributeGetterFailsTheCallWithAReason) {
  register_probe_device();
  const Place probe = CustomPlace("c_kernel_probe", 0);
  const auto a = random_values(4, 7);
  try {
    ops::matmul(on(probe, a, {2, 2}), on(probe, a, {2, 2}), false, false);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    EXPECT_NE(e.message().find("attribute 0 of kernel 'matmul' is bool, not int (it has 2 attributes)"),
              std::string::npos)
        << e.message();
  }
}

TEST(CKernels, RegisterKernelOutsideLoadingIsRefused) {
  // The api is only for register_kernels; a plugin that keeps the pointer and registers
  // later is refused with a reason instead of registering behind the loader's checks.
  const OAR_KernelApi* api = register_probe_device();
  ASSERT_NE(api, nullptr);
  EXPECT_GE(api->struct_size, sizeof(OAR_KernelApi));
  auto relu = [](const OAR_KernelApi*, OAR_KernelContext) { return OAR_SUCCESS; };
  EXPECT_EQ(api->register_kernel("relu", "c_kernel_probe", OAR_DTYPE_FLOAT32, "Tensor -> Tensor", relu),
            OAR_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(api->last_registration_error()).find("only be called from a plugin's register_kernels"),
            std::string::npos)
      << api->last_registration_error();
  EXPECT_EQ(KernelRegistry::instance().find("relu", device_type_from_name("c_kernel_probe"), DataType::FLOAT32),
            nullptr);
}

}  // namespace
}  // namespace oar
