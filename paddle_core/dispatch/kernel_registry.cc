#include "paddle_core/dispatch/kernel_registry.h"

#include <pthread.h>

#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <utility>

#include "backends/runtime/streams.h"

namespace oar {

std::string kernel_device_label(DeviceType type) {
  switch (type) {
    case DeviceType::kCPU:
      return "CPU";
    case DeviceType::kGPU:
      return "GPU";
    default:
      return device_type_name(type);
  }
}

const DeviceContext& device_context(const Place& place) {
  if (place.is_cpu()) {
    static const DeviceContext cpu{CPUPlace()};
    return cpu;
  }
  // Per thread, because the current stream is (paddle.device.stream_guard); one per
  // place, so a kernel's context stays put while it runs a copy on another place.
  constexpr int kFastIds = 16;
  thread_local DeviceContext fast[kMaxDeviceTypes][kFastIds];
  thread_local std::map<std::pair<int, int>, DeviceContext> far;
  const int id = place.device_id();
  DeviceContext& ctx = id < kFastIds ? fast[place.type_id()][id] : far[{place.type_id(), id}];
  ctx.place = place;
  ctx.stream = backends::current_stream(place);
  return ctx;
}

namespace detail {
void throw_place_mismatch(const char* op, const char* arg, const Place& expected, const Place& got) {
  OAR_THROW(InvalidArgument, op, ": argument '", arg, "' is on ", got.str(), " but the op runs on ", expected.str(),
            " (its first tensor's place); move it with .to('", expected.str(), "')");
}
}  // namespace detail

struct KernelRegistry::Impl {
  mutable std::mutex mu;
  // op -> (device type id, dtype) -> kernel
  std::map<std::string, std::map<std::pair<int, int>, void*>, std::less<>> kernels;
  // op -> dtype -> device-generic kernel
  std::map<std::string, std::map<int, void*>, std::less<>> generic;
};

KernelRegistry& KernelRegistry::instance() {
  static KernelRegistry r;
  return r;
}

KernelRegistry::Impl* KernelRegistry::impl() {
  static Impl i;
  // Note [Fork safety]: held across fork(), so a lookup in another thread at that moment
  // (an executor running without the GIL) cannot leave the child's copy locked.
  static const bool fork_handlers = [] {
    pthread_atfork([] { instance().impl()->mu.lock(); }, [] { instance().impl()->mu.unlock(); },
                   [] { instance().impl()->mu.unlock(); });
    return true;
  }();
  (void)fork_handlers;
  return &i;
}
const KernelRegistry::Impl* KernelRegistry::impl() const {
  return const_cast<KernelRegistry*>(this)->impl();
}

void KernelRegistry::register_kernel(std::string_view op, DeviceType device_type, DataType dtype, void* fn) {
  const int t = static_cast<int>(device_type), d = static_cast<int>(dtype);
  OAR_ENFORCE(t >= 0 && t < kMaxDeviceTypes, OutOfRange, "register_kernel(", op, "): device type id ", t,
              " is out of range [0, ", kMaxDeviceTypes, ")");
  OAR_ENFORCE(d >= 0 && d < kNumDataTypes, InvalidType, "register_kernel(", op, "): invalid dtype ", d);
  OAR_ENFORCE(fn != nullptr, InvalidArgument, "register_kernel(", op, "): kernel for ",
              kernel_device_label(device_type), "/", dtype_name(dtype), " is null");
  std::lock_guard<std::mutex> lock(impl()->mu);
  auto& m = impl()->kernels[std::string(op)];
  auto key = std::make_pair(t, d);
  OAR_ENFORCE(m.find(key) == m.end(), AlreadyExists, "kernel ", op, " for ", kernel_device_label(device_type), "/",
              dtype_name(dtype), " is registered twice");
  m[key] = fn;
}

void KernelRegistry::register_kernel(std::string_view op, std::string_view device_type, DataType dtype, void* fn) {
  register_kernel(op, device_type_from_name(device_type), dtype, fn);
}

void KernelRegistry::register_generic_kernel(std::string_view op, DataType dtype, void* fn) {
  OAR_ENFORCE(fn != nullptr, InvalidArgument, "register_generic_kernel(", op, "): kernel is null");
  std::lock_guard<std::mutex> lock(impl()->mu);
  auto& m = impl()->generic[std::string(op)];
  OAR_ENFORCE(m.count(static_cast<int>(dtype)) == 0, AlreadyExists, "generic kernel ", op, " for ", dtype_name(dtype),
              " is registered twice");
  m[static_cast<int>(dtype)] = fn;
}

void* KernelRegistry::find(std::string_view op, DeviceType device_type, DataType dtype) const {
  std::lock_guard<std::mutex> lock(impl()->mu);
  auto it = impl()->kernels.find(op);
  if (it != impl()->kernels.end()) {
    auto jt = it->second.find({static_cast<int>(device_type), static_cast<int>(dtype)});
    if (jt != it->second.end()) return jt->second;
  }
  auto gt = impl()->generic.find(op);
  if (gt == impl()->generic.end()) return nullptr;
  auto kt = gt->second.find(static_cast<int>(dtype));
  return kt == gt->second.end() ? nullptr : kt->second;
}

std::vector<DataType> KernelRegistry::dtypes(std::string_view op, DeviceType device_type) const {
  std::lock_guard<std::mutex> lock(impl()->mu);
  std::vector<DataType> out;
  auto it = impl()->kernels.find(op);
  if (it == impl()->kernels.end()) return out;
  for (const auto& [key, fn] : it->second) {
    if (key.first == static_cast<int>(device_type)) out.push_back(static_cast<DataType>(key.second));
  }
  return out;
}

std::vector<std::string> KernelRegistry::ops() const {
  std::lock_guard<std::mutex> lock(impl()->mu);
  std::vector<std::string> out;
  for (const auto& [name, m] : impl()->kernels) out.push_back(name);
  return out;
}

void* KernelSlot::find(const Place& place, DataType dtype) {
  const int d = static_cast<int>(dtype);
  if (d < 0 || d >= kNumDataTypes) return nullptr;
  std::atomic<void*>& cached = cache_[place.type_id()][d];
  void* fn = cached.load(std::memory_order_acquire);
  if (fn != nullptr) return fn;
  fn = KernelRegistry::instance().find(op_, place.type(), dtype);
  if (fn != nullptr) cached.store(fn, std::memory_order_release);
  return fn;
}

void* KernelSlot::resolve(const Place& place, DataType dtype) {
  void* fn = find(place, dtype);
  if (fn == nullptr) {
    std::ostringstream have;
    for (DataType t : KernelRegistry::instance().dtypes(op_, place.type())) have << dtype_name(t) << " ";
    const int d = static_cast<int>(dtype);
    OAR_THROW(InvalidType, op_, ": no ", kernel_device_label(place.type()), " kernel for dtype ",
              d >= 0 && d < kNumDataTypes ? dtype_name(dtype) : "undefined", " (supported: ", have.str(), ")");
  }
  return fn;
}

namespace {
// copy_into (paddle_core/tensor) reaches the `copy` kernels through these slots.
KernelSlot& copy_slot() {
  static KernelSlot slot("copy");
  return slot;
}
bool has_copy_kernel(const Place& place, DataType dtype) { return copy_slot().find(place, dtype) != nullptr; }
void run_copy_kernel(const DenseTensor& src, DenseTensor* dst) {
  auto fn = reinterpret_cast<kernel_sig::copy>(copy_slot().get(src.place(), src.dtype()));
  fn(device_context(src.place()), src, dst);
}
const bool g_copy_hooks_installed = [] {
  copy_hooks().has_kernel = has_copy_kernel;
  copy_hooks().run_kernel = run_copy_kernel;
  return true;
}();
}  // namespace

}  // namespace oar
