#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "oar_generated/ops_api.h"
#include "paddle_core/dispatch/kernel_registry.h"

namespace oar {
namespace {

void fake_kernel() {}
void* fake_fn() { return reinterpret_cast<void*>(&fake_kernel); }

bool contains(const std::vector<DataType>& v, DataType t) {
  return std::find(v.begin(), v.end(), t) != v.end();
}

TEST(KernelRegistry, LooksUpRegisteredKernels) {
  auto& reg = KernelRegistry::instance();
  EXPECT_NE(reg.find("add", DeviceType::kCPU, DataType::FLOAT32), nullptr);
  EXPECT_NE(reg.find("matmul", DeviceType::kCPU, DataType::FLOAT64), nullptr);
  EXPECT_EQ(reg.find("add", DeviceType::kGPU, DataType::FLOAT32), nullptr);
  EXPECT_EQ(reg.find("no_such_op", DeviceType::kCPU, DataType::FLOAT32), nullptr);
  EXPECT_EQ(reg.find("exp", DeviceType::kCPU, DataType::INT64), nullptr);
  auto dts = reg.dtypes("exp", DeviceType::kCPU);
  EXPECT_TRUE(contains(dts, DataType::FLOAT32) && contains(dts, DataType::BFLOAT16));
  EXPECT_FALSE(contains(dts, DataType::INT32));
  auto ops = reg.ops();
  EXPECT_NE(std::find(ops.begin(), ops.end(), "sum"), ops.end());
}

TEST(KernelRegistry, RegistersAndRejectsDoubleRegistration) {
  auto& reg = KernelRegistry::instance();
  reg.register_kernel("test_only_op", DeviceType::kCPU, DataType::INT16, fake_fn());
  EXPECT_EQ(reg.find("test_only_op", DeviceType::kCPU, DataType::INT16), fake_fn());
  try {
    reg.register_kernel("test_only_op", DeviceType::kCPU, DataType::INT16, fake_fn());
    FAIL() << "double registration accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kAlreadyExists);
    EXPECT_EQ(e.message(), "kernel test_only_op for CPU/int16 is registered twice");
  }
  EXPECT_THROW(reg.register_kernel("add", DeviceType::kCPU, DataType::FLOAT32, fake_fn()), Error);
  // Another backend or dtype of the same op is a different key.
  EXPECT_NO_THROW(reg.register_kernel("test_only_op", DeviceType::kGPU, DataType::INT16, fake_fn()));
  EXPECT_EQ(reg.dtypes("test_only_op", DeviceType::kCPU), std::vector<DataType>{DataType::INT16});
}

TEST(KernelRegistry, SlotCachesAndReportsMissingKernels) {
  KernelSlot slot("test_slot_op");
  auto& reg = KernelRegistry::instance();
  reg.register_kernel("test_slot_op", DeviceType::kCPU, DataType::FLOAT32, fake_fn());
  reg.register_kernel("test_slot_op", DeviceType::kCPU, DataType::INT64, fake_fn());
  EXPECT_EQ(slot.get(CPUPlace(), DataType::FLOAT32), fake_fn());
  EXPECT_EQ(slot.get(CPUPlace(), DataType::FLOAT32), fake_fn());  // cached
  try {
    slot.get(CPUPlace(), DataType::BOOL);
    FAIL() << "missing kernel not reported";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidType);
    EXPECT_EQ(e.message(),
              "test_slot_op: no CPU kernel for dtype bool (supported: int64 float32 )");
  }
  KernelSlot unknown("never_registered");
  try {
    unknown.get(CPUPlace(), DataType::FLOAT32);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("never_registered: no CPU kernel for dtype float32"),
              std::string::npos);
  }
}

TEST(KernelRegistry, OpsDispatchThroughRegistry) {
  Tensor x = ops::full({2}, Scalar(true), DataType::BOOL);
  try {
    ops::exp(ops::cast(x, DataType::INT8));  // exp promotes ints to float: no error
  } catch (const Error& e) {
    FAIL() << e.what();
  }
  try {
    ops::sign(x);
    FAIL() << "sign has no bool kernel";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidType);
    EXPECT_NE(e.message().find("sign: no CPU kernel for dtype bool (supported: "),
              std::string::npos);
    EXPECT_NE(e.message().find("float32"), std::string::npos);
  }
}

}  // namespace
}  // namespace oar
