// float_to_int<To>(v): a float -> integer conversion that is defined for every input.
//
// C++ leaves the conversion undefined when the truncated value does not fit To (NaN, +-inf,
// 1e30 -> int32), and UBSan (-fsanitize=float-cast-overflow, scripts/sanitize.sh) reports
// it. Kernels convert user floats (cast, fills, scalar attributes of integer ops), so they
// use this instead of static_cast. The result is what x86's truncating conversion gives,
// the instruction gcc emits for static_cast (so NumPy's and Paddle's CPU results, and this
// library's before the change, stay the same): truncate toward zero into int32 (int64 for
// a 64-bit To); NaN and values outside that range give its minimum (x86's "integer
// indefinite"); then wrap to To's width (int8/uint8/int16 keep the low bits).
#pragma once

#include <cstdint>
#include <limits>
#include <type_traits>

namespace oar {

template <typename To, typename From>
inline To float_to_int(From v) {
  static_assert(std::is_integral_v<To> && !std::is_same_v<To, bool>, "float_to_int: integer To");
  using W = std::conditional_t<(sizeof(To) > 4), int64_t, int32_t>;
  const double d = static_cast<double>(v);
  // The doubles whose truncation fits W: (-2^31 - 1, 2^31) and [-2^63, 2^63). NaN fails both.
  const bool fits = sizeof(W) == 8 ? (d >= -9223372036854775808.0 && d < 9223372036854775808.0)
                                   : (d > -2147483649.0 && d < 2147483648.0);
  const W w = fits ? static_cast<W>(d) : std::numeric_limits<W>::min();
  return static_cast<To>(w);
}

}  // namespace oar
