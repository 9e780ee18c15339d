// Checked size arithmetic: the one place where a shape becomes an element count or a
// byte count. Sizes come from whatever a user's script computed (2**62, a product that
// wraps), and a count that silently overflows int64 turns into a tiny allocation that a
// kernel then writes far past: a segfault instead of an exception. Every product here
// uses __builtin_mul_overflow, so a size that cannot be counted or addressed is a
// ResourceExhausted error (MemoryError in Python) naming the shape and the bytes, before
// any memory is asked for or any kernel runs. The op is named by Error::with_op, which
// the generated op functions apply to every error that leaves them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iomanip>
#include <limits>
#include <sstream>
#include <string>

#include "paddle_core/base/errors.h"

namespace oar::checked {

/// The largest request any device can serve: no allocator addresses more than
/// PTRDIFF_MAX bytes (pointer differences must fit), so anything above is rejected here
/// rather than handed to an allocator that might wrap it.
constexpr uint64_t kMaxBytes = static_cast<uint64_t>(std::numeric_limits<std::ptrdiff_t>::max());

/// a * b for non-negative sizes; false when the product overflows int64.
inline bool mul(int64_t a, int64_t b, int64_t* out) { return !__builtin_mul_overflow(a, b, out); }

// The error paths, out of line and cold: the checks run on every tensor allocation, and
// with the messages inline, product() and bytes() were too big to inline (~60
// instructions per allocation; callgrind of a one-element add).
template <typename Shape>
[[noreturn, gnu::cold, gnu::noinline]] void throw_count_overflow(const Shape& shape) {
  OAR_THROW(ResourceExhausted, "a tensor of shape ", shape,
            " has more elements than can be counted (the product exceeds 2^63 - 1)");
}

/// Product of `n` entries with only the overflow check (ResourceExhausted), for shapes
/// already known non-negative (DenseTensor::set_dims checks them first).
template <typename Shape>
inline int64_t product(const int64_t* d, int n, const Shape& shape) {
  int64_t p = 1;
  bool overflow = false;
  for (int i = 0; i < n; ++i) {
    if (d[i] == 0) return 0;
    overflow |= !mul(p, d[i], &p);
  }
  if (__builtin_expect(overflow, 0)) throw_count_overflow(shape);
  return p;
}

/// Product of `n` sizes (1 for n == 0). A negative size is InvalidArgument naming
/// `what` (the argument); a product that overflows int64 is ResourceExhausted. Any zero
/// size makes the count 0 even when the other factors alone would overflow, since an
/// empty tensor needs no memory.
template <typename Shape>
int64_t numel(const int64_t* d, int n, const Shape& shape, const char* what = "shape") {
  int64_t p = 1;
  bool overflow = false;
  for (int i = 0; i < n; ++i) {
    OAR_ENFORCE(d[i] >= 0, InvalidArgument, what, " ", shape, " has a negative size ", d[i], " at dimension ", i);
    if (d[i] == 0) return 0;
    if (!overflow && !mul(p, d[i], &p)) overflow = true;
  }
  OAR_ENFORCE(!overflow, ResourceExhausted, "a tensor of ", what, " ", shape,
              " has more elements than can be counted (the product exceeds 2^63 - 1)");
  return p;
}

/// The exact byte count numel * itemsize as digits, even past 2^64 (long double holds
/// these products exactly up to 2^64 and to 19 digits beyond).
inline std::string bytes_str(int64_t numel, size_t itemsize) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(0) << static_cast<long double>(numel) * itemsize;
  return os.str();
}

template <typename Shape>
[[noreturn, gnu::cold, gnu::noinline]] void throw_too_many_bytes(int64_t numel, size_t itemsize, const Shape& shape) {
  OAR_THROW(ResourceExhausted, "a tensor of shape ", shape, " (", numel, " elements of ", itemsize, " bytes, ",
            bytes_str(numel, itemsize), " bytes) is larger than any device can hold (at most ", kMaxBytes, " bytes)");
}

/// numel * itemsize, rejected (ResourceExhausted, naming the shape and the bytes) when it
/// overflows or exceeds kMaxBytes.
template <typename Shape>
inline size_t bytes(int64_t numel, size_t itemsize, const Shape& shape) {
  int64_t b = 0;
  bool ok = mul(numel, static_cast<int64_t>(itemsize), &b) && static_cast<uint64_t>(b) <= kMaxBytes;
  if (__builtin_expect(!ok, 0)) throw_too_many_bytes(numel, itemsize, shape);
  return static_cast<size_t>(b);
}

}  // namespace oar::checked
