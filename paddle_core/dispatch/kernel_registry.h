// Kernel registry: (op name, device type, dtype) -> kernel function. Kernels register
// next to their code with OAR_REGISTER_KERNEL (built-in device types) or at run time with
// KernelRegistry::register_kernel (plugins, tests, compiled kernels); generated op
// functions look them up through a per-op KernelSlot that caches the pointer after the
// first call. Kernel signatures are generated from the op definitions (kernel_signatures.h),
// and the registration macro static_casts to that signature, so a mismatch is a compile
// error. Device types: Note [Device types] (docs/notes/devices.md).
#pragma once

#include <atomic>
#include <string>
#include <string_view>
#include <vector>

#include "paddle_core/tensor/dense_tensor.h"

namespace oar {

/// What a kernel runs on: its place, and the stream to queue its work on: the calling
/// thread's current stream for the place (backends/runtime/streams.h; an OAR_Stream),
/// null on the CPU, which runs kernels synchronously.
struct DeviceContext {
  Place place;
  void* stream = nullptr;
};
/// The calling thread's context for a place (valid until the thread's next call for
/// the same place; the CPU's is one shared constant).
const DeviceContext& device_context(const Place& place);

/// "CPU", "GPU", or a plugin's device type name: how errors name a kernel's device.
std::string kernel_device_label(DeviceType type);

struct KernelKey {
  DeviceType device_type;
  DataType dtype;
};

class KernelRegistry {
 public:
  static KernelRegistry& instance();
  /// Throws AlreadyExists when (op, device type, dtype) already has a kernel.
  void register_kernel(std::string_view op, DeviceType device_type, DataType dtype, void* fn);
  /// The same, naming the device type ("npu"); interns a name not seen before.
  void register_kernel(std::string_view op, std::string_view device_type, DataType dtype, void* fn);
  /// A kernel written only over device-generic calls (copy_into), found for every device
  /// type that has no kernel of its own for (op, dtype): the copy op's kernel.
  void register_generic_kernel(std::string_view op, DataType dtype, void* fn);
  /// nullptr when missing.
  void* find(std::string_view op, DeviceType device_type, DataType dtype) const;
  std::vector<DataType> dtypes(std::string_view op, DeviceType device_type) const;
  std::vector<std::string> ops() const;

 private:
  KernelRegistry() = default;
  struct Impl;
  Impl* impl();
  const Impl* impl() const;
};

/// A per-op cache of kernel pointers, indexed by device type and dtype. Lock-free on
/// hits: one acquire load from a fixed array. Only found kernels are cached, so a kernel
/// registered later (a plugin loaded after the first call) is still found.
class KernelSlot {
 public:
  explicit KernelSlot(const char* op) : op_(op) {}
  /// The kernel for (place, dtype); throws InvalidType naming the op, the device and the
  /// dtypes it has.
  void* get(const Place& place, DataType dtype) {
    void* fn = get_or_null(place, dtype);
    return fn != nullptr ? fn : resolve(place, dtype);
  }
  /// The kernel for (place, dtype), or nullptr when there is none.
  void* find(const Place& place, DataType dtype);
  /// The cached kernel, else find()'s answer (the dispatch entry: a miss may fall back).
  void* get_or_null(const Place& place, DataType dtype) {
    const int d = static_cast<int>(dtype);
    if (d >= 0 && d < kNumDataTypes) {
      void* fn = cache_[place.type_id()][d].load(std::memory_order_acquire);
      if (fn != nullptr) return fn;
    }
    return find(place, dtype);
  }
  const char* op() const { return op_; }

 private:
  void* resolve(const Place& place, DataType dtype);
  const char* op_;
  std::atomic<void*> cache_[kMaxDeviceTypes][kNumDataTypes] = {};
};

namespace kernel_sig {
/// The `copy` kernel every device type provides (or copy_into falls back to the device
/// table): src -> dst on one place, same shape, any strides, dtype conversion allowed;
/// registered per source dtype. Not an op of the op definitions: copy_into calls it.
using copy = void (*)(const DeviceContext& ctx, const DenseTensor& src, DenseTensor* dst);
}  // namespace kernel_sig

namespace detail {
/// Throws InvalidArgument: `op`'s argument `arg` is on `got`, its first tensor on `expected`.
[[noreturn]] void throw_place_mismatch(const char* op, const char* arg, const Place& expected, const Place& got);
struct KernelRegistrar {
  KernelRegistrar(const char* op, DeviceType type, DataType t, void* fn) {
    KernelRegistry::instance().register_kernel(op, type, t, fn);
  }
};
}  // namespace detail

}  // namespace oar

#define OAR_KCAT_(a, b) a##b
#define OAR_KCAT(a, b) OAR_KCAT_(a, b)

/// Registers one instantiation `fn<T>` of a kernel template for op `op` on a built-in
/// device type (CPU or GPU; plugins register at run time by name).
#define OAR_REGISTER_KERNEL_ONE(op, backend, fn, T)                              \
  static ::oar::detail::KernelRegistrar OAR_KCAT(oar_kreg_##op##_, __COUNTER__)( \
      #op, ::oar::DeviceType::k##backend, ::oar::dtype_of<T>,                    \
      reinterpret_cast<void*>(static_cast<::oar::kernel_sig::op>(&fn<T>)));

#define OAR_REG_EACH_1(op, b, fn, T) OAR_REGISTER_KERNEL_ONE(op, b, fn, T)
#define OAR_REG_EACH_2(op, b, fn, T, ...) OAR_REGISTER_KERNEL_ONE(op, b, fn, T) OAR_REG_EACH_1(op, b, fn, __VA_ARGS__)
#define OAR_REG_EACH_3(op, b, fn, T, ...) OAR_REGISTER_KERNEL_ONE(op, b, fn, T) OAR_REG_EACH_2(op, b, fn, __VA_ARGS__)
#define OAR_REG_EACH_4(op, b, fn, T, ...) OAR_REGISTER_KERNEL_ONE(op, b, fn, T) OAR_REG_EACH_3(op, b, fn, __VA_ARGS__)
#define OAR_REG_EACH_5(op, b, fn, T, ...) OAR_REGISTER_KERNEL_ONE(op, b, fn, T) OAR_REG_EACH_4(op, b, fn, __VA_ARGS__)
#define OAR_REG_EACH_6(op, b, fn, T, ...) OAR_REGISTER_KERNEL_ONE(op, b, fn, T) OAR_REG_EACH_5(op, b, fn, __VA_ARGS__)
#define OAR_REG_EACH_7(op, b, fn, T, ...) OAR_REGISTER_KERNEL_ONE(op, b, fn, T) OAR_REG_EACH_6(op, b, fn, __VA_ARGS__)
#define OAR_REG_EACH_8(op, b, fn, T, ...) OAR_REGISTER_KERNEL_ONE(op, b, fn, T) OAR_REG_EACH_7(op, b, fn, __VA_ARGS__)
#define OAR_REG_EACH_9(op, b, fn, T, ...) OAR_REGISTER_KERNEL_ONE(op, b, fn, T) OAR_REG_EACH_8(op, b, fn, __VA_ARGS__)
#define OAR_REG_EACH_10(op, b, fn, T, ...) OAR_REGISTER_KERNEL_ONE(op, b, fn, T) OAR_REG_EACH_9(op, b, fn, __VA_ARGS__)
#define OAR_REG_EACH_11(op, b, fn, T, ...) OAR_REGISTER_KERNEL_ONE(op, b, fn, T) OAR_REG_EACH_10(op, b, fn, __VA_ARGS__)
#define OAR_REG_EACH_12(op, b, fn, T, ...) OAR_REGISTER_KERNEL_ONE(op, b, fn, T) OAR_REG_EACH_11(op, b, fn, __VA_ARGS__)
#define OAR_REG_NARGS_(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, N, ...) N
#define OAR_REG_NARGS(...) OAR_REG_NARGS_(__VA_ARGS__, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1)

/// OAR_REGISTER_KERNEL(add, CPU, AddKernel, float, double, int64_t) registers AddKernel<T>
/// for each listed type.
#define OAR_REGISTER_KERNEL(op, backend, fn, ...) \
  OAR_KCAT(OAR_REG_EACH_, OAR_REG_NARGS(__VA_ARGS__))(op, backend, fn, __VA_ARGS__)

/// Type lists for the common cases.
#define OAR_FLOAT_TYPES float, double, ::oar::float16, ::oar::bfloat16
#define OAR_NUMERIC_TYPES OAR_FLOAT_TYPES, int8_t, uint8_t, int16_t, int32_t, int64_t
#define OAR_ALL_TYPES OAR_NUMERIC_TYPES, bool
#define OAR_COMPLEX_TYPES ::std::complex<float>, ::std::complex<double>
