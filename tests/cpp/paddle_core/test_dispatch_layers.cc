// The dispatch layers (Note [Dispatch layers] in docs/notes/dispatch.md): a layer
// registered in the distributed slot sees every op in eager mode, and the fallback
// layer runs an op with no kernel for a device type on the CPU with copies.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "backends/include/oar/device_ext.h"
#include "backends/runtime/device_manager.h"
#include "oar_generated/kernel_signatures.h"
#include "oar_generated/ops_api.h"
#include "paddle_core/autograd/engine.h"
#include "paddle_core/dispatch/dispatch.h"

namespace oar {
namespace {

std::vector<std::string>& seen() {
  static std::vector<std::string> s;
  return s;
}

// A stand-in for the distributed layer: notes the op and lets it run below.
void dummy_dist_layer(dispatch::OpCall& call) {
  seen().push_back(call.op->name);
  dispatch::call_next(call, dispatch::Layer::kDist);
}

struct DistSlot {
  DistSlot() { dispatch::set_layer(dispatch::Layer::kDist, dummy_dist_layer, nullptr, /*everywhere=*/true); }
  ~DistSlot() { dispatch::set_layer(dispatch::Layer::kDist, nullptr); }
};

std::vector<float> host_values(const Tensor& t) {
  const DenseTensor c = contiguous(t.dense());
  std::vector<float> v(static_cast<size_t>(c.numel()));
  if (!v.empty()) {
    backends::DeviceManager::instance().memcpy_d2h(c.place(), v.data(), c.raw_data(), v.size() * sizeof(float));
  }
  return v;
}

TEST(DispatchLayers, DistSlotSeesEveryEagerOp) {
  seen().clear();
  Tensor x, y, z;
  {
    DistSlot slot;
    EXPECT_TRUE(dispatch::active(dispatch::Layer::kDist));
    x = ops::full({2, 3}, Scalar(2.0), DataType::FLOAT32);
    x.set_stop_gradient(false);
    y = ops::multiply(x, x);
    z = ops::sum(ops::reshape(y, {3, 2}), {}, DataType::UNDEFINED, false);
    autograd::backward({z}, {}, false);
  }
  EXPECT_FALSE(dispatch::active(dispatch::Layer::kDist));
  for (const char* op : {"full", "multiply", "reshape", "sum"}) {
    EXPECT_NE(std::find(seen().begin(), seen().end(), op), seen().end()) << op << " did not pass the dist slot";
  }
  // The backward's ops (the grad formulas call ops too) pass through it as well.
  EXPECT_GT(seen().size(), 4u);
  // Autograd ran below the layer: d(sum(x*x))/dx = 2x.
  for (float g : host_values(x.grad())) EXPECT_FLOAT_EQ(g, 4.0f);
  // Removed, the slot sees nothing.
  const size_t n = seen().size();
  ops::add(x, x);
  EXPECT_EQ(seen().size(), n);
}

TEST(DispatchLayers, DistSlotMayChangeInputs) {
  // A layer may rewrite the call before it goes on: here it doubles every float input.
  struct Doubler {
    static void layer(dispatch::OpCall& call) {
      if (std::string(call.op->name) == "add") {
        for (dispatch::Value& v : call.inputs) v.tensor = ops::scale(v.tensor, 2.0, 0.0, true);
      }
      dispatch::call_next(call, dispatch::Layer::kDist);
    }
  };
  Tensor a = ops::full({3}, Scalar(1.5), DataType::FLOAT32);
  dispatch::set_layer(dispatch::Layer::kDist, Doubler::layer, nullptr, true);
  Tensor r = ops::add(a, a);
  dispatch::set_layer(dispatch::Layer::kDist, nullptr);
  for (float v : host_values(r)) EXPECT_FLOAT_EQ(v, 6.0f);
}

// A device type whose table is the CPU's (its memory is host memory) and which has no
// kernel of its own: every op on it falls back to the CPU kernel.
struct FakeDevice {
  explicit FakeDevice(std::string type)
      : name(std::move(type)), table(backends::DeviceManager::instance().interface("cpu")) {
    reg.struct_size = sizeof(reg);
    reg.version = {sizeof(OAR_DeviceAbiVersion), OAR_DEVICE_ABI_VERSION_MAJOR, OAR_DEVICE_ABI_VERSION_MINOR};
    reg.device_type = name.c_str();
    reg.interface = &table;
    backends::DeviceManager::instance().register_device(reg);
  }
  std::string name;
  OAR_DeviceInterface table;
  OAR_DeviceRegistration reg{};
};

TEST(DispatchLayers, FallbackRunsTheCpuKernelWithCopies) {
  static FakeDevice dev("fallback_dev");
  const Place place = CustomPlace("fallback_dev", 0);
  testing::internal::CaptureStderr();
  Tensor x = ops::full({2, 2}, Scalar(3.0), DataType::FLOAT32, place);  // creation: output copied over
  Tensor y = ops::add(x, x);
  Tensor z = ops::exp(ops::full({2}, Scalar(0.0), DataType::FLOAT32, place));
  const std::string warnings = testing::internal::GetCapturedStderr();
  EXPECT_EQ(x.place(), place);
  EXPECT_EQ(y.place(), place);
  EXPECT_EQ(z.place(), place);
  for (float v : host_values(y)) EXPECT_FLOAT_EQ(v, 6.0f);
  for (float v : host_values(z)) EXPECT_FLOAT_EQ(v, 1.0f);
  EXPECT_NE(warnings.find("add has no fallback_dev kernel for float32"), std::string::npos) << warnings;
  // Once per (op, device type, dtype).
  testing::internal::CaptureStderr();
  ops::add(x, x);
  EXPECT_EQ(testing::internal::GetCapturedStderr().find("add has no"), std::string::npos);
}

// A device's own kernel, registered at run time for its type only: exp that writes -1
// everywhere, so a test can tell it ran.
void marker_exp(const DeviceContext& ctx, const DenseTensor& x, DenseTensor* out) {
  float* o = out->alloc<float>();  // the device's memory is host memory here
  for (int64_t i = 0; i < x.numel(); ++i) o[i] = -1.0f;
}

TEST(DispatchLayers, ADeviceKernelIsUsedAndOnlyForItsType) {
  static FakeDevice with_kernel("kernel_dev");
  static FakeDevice without("plain_dev");
  KernelRegistry::instance().register_kernel("exp", "kernel_dev", DataType::FLOAT32,
                                             reinterpret_cast<void*>(static_cast<kernel_sig::exp>(&marker_exp)));
  const Place a = CustomPlace("kernel_dev", 0), b = CustomPlace("plain_dev", 0);
  testing::internal::CaptureStderr();
  Tensor ea = ops::exp(ops::full({3}, Scalar(0.0), DataType::FLOAT32, a));
  Tensor eb = ops::exp(ops::full({3}, Scalar(0.0), DataType::FLOAT32, b));
  const std::string warnings = testing::internal::GetCapturedStderr();
  for (float v : host_values(ea)) EXPECT_FLOAT_EQ(v, -1.0f);  // its own kernel
  for (float v : host_values(eb)) EXPECT_FLOAT_EQ(v, 1.0f);   // the CPU kernel, through the fallback
  EXPECT_EQ(warnings.find("exp has no kernel_dev kernel"), std::string::npos) << warnings;
  EXPECT_NE(warnings.find("exp has no plain_dev kernel for float32"), std::string::npos) << warnings;
}

}  // namespace
}  // namespace oar
