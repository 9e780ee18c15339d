// Kernel registry: (op name, backend, dtype) -> kernel function. Kernels register
// next to their code with OAR_REGISTER_KERNEL; generated op functions look them up
// through a per-op KernelSlot that caches the pointer after the first call.
// Kernel signatures are generated from the op definitions (kernel_signatures.h), and
// the registration macro static_casts to that signature, so a mismatch is a compile error.
#pragma once

#include <atomic>
#include <string>
#include <string_view>
#include <vector>

#include "paddle_core/tensor/dense_tensor.h"

namespace oar {

enum class Backend : int8_t { kCPU = 0, kGPU = 1, kCustom = 2, kNumBackends = 3 };
constexpr int kNumBackends = 3;
const char* backend_name(Backend b);
inline Backend backend_of(const Place& p) { return static_cast<Backend>(p.type()); }

/// What a kernel runs on: its place (and, for devices, the stream; added with CUDA).
struct DeviceContext {
  Place place;
};
/// The context for a place (one per place, owned by the registry).
const DeviceContext& device_context(const Place& place);

struct KernelKey {
  Backend backend;
  DataType dtype;
};

class KernelRegistry {
 public:
  static KernelRegistry& instance();
  void register_kernel(std::string_view op, Backend backend, DataType dtype, void* fn);
  /// nullptr when missing.
  void* find(std::string_view op, Backend backend, DataType dtype) const;
  std::vector<DataType> dtypes(std::string_view op, Backend backend) const;
  std::vector<std::string> ops() const;

 private:
  KernelRegistry() = default;
  struct Impl;
  Impl* impl();
  const Impl* impl() const;
};

/// A per-op cache of kernel pointers, indexed by backend and dtype.
class KernelSlot {
 public:
  explicit KernelSlot(const char* op) : op_(op) {}
  /// The kernel for (place, dtype); throws NotFound naming the op and the dtypes it has.
  void* get(const Place& place, DataType dtype) {
    const int b = static_cast<int>(place.type()), d = static_cast<int>(dtype);
    if (d >= 0 && d < kNumDataTypes) {
      void* fn = cache_[b][d].load(std::memory_order_acquire);
      if (fn != nullptr) return fn;
    }
    return resolve(place, dtype);
  }
  const char* op() const { return op_; }

 private:
  void* resolve(const Place& place, DataType dtype);
  const char* op_;
  std::atomic<void*> cache_[kNumBackends][kNumDataTypes] = {};
};

namespace detail {
struct KernelRegistrar {
  KernelRegistrar(const char* op, Backend b, DataType t, void* fn) {
    KernelRegistry::instance().register_kernel(op, b, t, fn);
  }
};
}  // namespace detail

}  // namespace oar

#define OAR_KCAT_(a, b) a##b
#define OAR_KCAT(a, b) OAR_KCAT_(a, b)

/// Registers one instantiation `fn<T>` of a kernel template for op `op` on `backend` (CPU/GPU/Custom).
#define OAR_REGISTER_KERNEL_ONE(op, backend, fn, T)                                          \
  static ::oar::detail::KernelRegistrar OAR_KCAT(oar_kreg_##op##_, __COUNTER__)(           \
      #op, ::oar::Backend::k##backend, ::oar::dtype_of<T>,                                  \
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
#define OAR_REG_NARGS_(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, N, ...) N
#define OAR_REG_NARGS(...) OAR_REG_NARGS_(__VA_ARGS__, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1)

/// OAR_REGISTER_KERNEL(add, CPU, AddKernel, float, double, int64_t) registers AddKernel<T>
/// for each listed type.
#define OAR_REGISTER_KERNEL(op, backend, fn, ...) \
  OAR_KCAT(OAR_REG_EACH_, OAR_REG_NARGS(__VA_ARGS__))(op, backend, fn, __VA_ARGS__)

/// Type lists for the common cases.
#define OAR_FLOAT_TYPES float, double, ::oar::float16, ::oar::bfloat16
#define OAR_NUMERIC_TYPES OAR_FLOAT_TYPES, int8_t, uint8_t, int16_t, int32_t, int64_t
#define OAR_ALL_TYPES OAR_NUMERIC_TYPES, bool
