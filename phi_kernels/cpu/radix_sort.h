// Stable LSD radix sorting of (key, position) pairs on 64-bit keys that order values as the
// sort and unique kernels compare them (Note [Radix keys] in docs/notes/cpu_speed_steps.md):
// argsort / sort rows and unique of scalars. Include only from kernel .cc files.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "phi_kernels/cpu/elementwise.h"

namespace oar::phi {

/// A key that orders v as the kernels' ascending comparison does (NaN last) and is equal
/// exactly where they call two values the same: integers with the sign bit flipped; floats
/// by their bits, negatives flipped whole, -0 as +0 and every NaN one key above +inf.
/// float, float16 and bfloat16 use the low 32 bits (a row sort then takes four passes).
template <typename T>
uint64_t order_key(T v) {
  using M = OpMath<T>;
  if constexpr (std::is_same_v<T, bool>) {
    return v ? 1 : 0;
  } else if constexpr (std::is_integral_v<T>) {
    const uint64_t u = static_cast<uint64_t>(static_cast<int64_t>(v));
    return std::is_signed_v<T> ? u ^ (uint64_t{1} << 63) : u;
  } else if constexpr (std::is_same_v<M, float>) {
    const float f = static_cast<float>(v);
    if (f != f) return 0xFFFFFFFFu;
    const float z = f == 0.0f ? 0.0f : f;
    uint32_t u;
    std::memcpy(&u, &z, 4);
    return (u >> 31) ? ~u : u | 0x80000000u;
  } else {
    const double d = static_cast<double>(v);
    if (d != d) return ~uint64_t{0};
    const double z = d == 0.0 ? 0.0 : d;
    uint64_t u;
    std::memcpy(&u, &z, 8);
    return (u >> 63) ? ~u : u | (uint64_t{1} << 63);
  }
}

/// Sorts keys[0, n) ascending, stably, moving pos alongside; kbuf and pbuf are scratch of n.
/// Byte positions where every key has the same byte are skipped. The result is left in
/// keys / pos.
inline void radix_sort(uint64_t* keys, int64_t* pos, int64_t n, uint64_t* kbuf, int64_t* pbuf) {
  if (n < 2) return;
  std::array<std::array<int64_t, 256>, 8> hist{};
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t k = keys[i];
    for (int b = 0; b < 8; ++b) ++hist[b][(k >> (8 * b)) & 0xFF];
  }
  uint64_t* k0 = keys;
  int64_t* p0 = pos;
  for (int b = 0; b < 8; ++b) {
    auto& h = hist[b];
    if (h[(k0[0] >> (8 * b)) & 0xFF] == n) continue;  // one bucket: nothing moves
    int64_t at = 0;
    for (auto& c : h) at += std::exchange(c, at);
    for (int64_t i = 0; i < n; ++i) {
      const uint64_t k = k0[i];
      const int64_t dst = h[(k >> (8 * b)) & 0xFF]++;
      kbuf[dst] = k;
      pbuf[dst] = p0[i];
    }
    std::swap(k0, kbuf);
    std::swap(p0, pbuf);
  }
  if (k0 != keys) {
    std::memcpy(keys, k0, static_cast<size_t>(n) * sizeof(uint64_t));
    std::memcpy(pos, p0, static_cast<size_t>(n) * sizeof(int64_t));
  }
}

}  // namespace oar::phi
