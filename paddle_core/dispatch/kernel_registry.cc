#include "paddle_core/dispatch/kernel_registry.h"

#include <map>
#include <mutex>
#include <sstream>

namespace oar {

const char* backend_name(Backend b) {
  switch (b) {
    case Backend::kCPU: return "CPU";
    case Backend::kGPU: return "GPU";
    case Backend::kCustom: return "Custom";
    default: return "Unknown";
  }
}

const DeviceContext& device_context(const Place& place) {
  static std::mutex mu;
  static std::map<std::tuple<int, int, int>, std::unique_ptr<DeviceContext>> contexts;
  if (place.is_cpu()) {
    static DeviceContext cpu{CPUPlace()};
    return cpu;
  }
  std::lock_guard<std::mutex> lock(mu);
  auto key = std::make_tuple(static_cast<int>(place.type()), place.device_id(),
                             place.custom_type_id());
  auto& slot = contexts[key];
  if (!slot) slot = std::make_unique<DeviceContext>(DeviceContext{place});
  return *slot;
}

struct KernelRegistry::Impl {
  mutable std::mutex mu;
  std::map<std::string, std::map<std::pair<int, int>, void*>, std::less<>> kernels;
};

KernelRegistry& KernelRegistry::instance() {
  static KernelRegistry r;
  return r;
}

KernelRegistry::Impl* KernelRegistry::impl() {
  static Impl i;
  return &i;
}
const KernelRegistry::Impl* KernelRegistry::impl() const {
  return const_cast<KernelRegistry*>(this)->impl();
}

void KernelRegistry::register_kernel(std::string_view op, Backend backend, DataType dtype,
                                     void* fn) {
  std::lock_guard<std::mutex> lock(impl()->mu);
  auto& m = impl()->kernels[std::string(op)];
  auto key = std::make_pair(static_cast<int>(backend), static_cast<int>(dtype));
  OAR_ENFORCE(m.find(key) == m.end(), AlreadyExists, "kernel ", op, " for ",
              backend_name(backend), "/", dtype_name(dtype), " is registered twice");
  m[key] = fn;
}

void* KernelRegistry::find(std::string_view op, Backend backend, DataType dtype) const {
  std::lock_guard<std::mutex> lock(impl()->mu);
  auto it = impl()->kernels.find(op);
  if (it == impl()->kernels.end()) return nullptr;
  auto jt = it->second.find({static_cast<int>(backend), static_cast<int>(dtype)});
  return jt == it->second.end() ? nullptr : jt->second;
}

std::vector<DataType> KernelRegistry::dtypes(std::string_view op, Backend backend) const {
  std::lock_guard<std::mutex> lock(impl()->mu);
  std::vector<DataType> out;
  auto it = impl()->kernels.find(op);
  if (it == impl()->kernels.end()) return out;
  for (const auto& [key, fn] : it->second) {
    if (key.first == static_cast<int>(backend)) out.push_back(static_cast<DataType>(key.second));
  }
  return out;
}

std::vector<std::string> KernelRegistry::ops() const {
  std::lock_guard<std::mutex> lock(impl()->mu);
  std::vector<std::string> out;
  for (const auto& [name, m] : impl()->kernels) out.push_back(name);
  return out;
}

void* KernelSlot::resolve(const Place& place, DataType dtype) {
  Backend b = backend_of(place);
  void* fn = KernelRegistry::instance().find(op_, b, dtype);
  if (fn == nullptr) {
    std::ostringstream have;
    for (DataType t : KernelRegistry::instance().dtypes(op_, b)) have << dtype_name(t) << " ";
    OAR_THROW(InvalidType, op_, ": no ", backend_name(b), " kernel for dtype ",
              dtype_name(dtype), " (supported: ", have.str(), ")");
  }
  cache_[static_cast<int>(b)][static_cast<int>(dtype)].store(fn, std::memory_order_release);
  return fn;
}

}  // namespace oar
