// Storage types for the two 16-bit floats. Arithmetic happens in float
// (see OpMath in dtype.h): these types only convert on load and store.
#pragma once

#include <cstdint>
#include <cstring>

namespace oar {

struct float16 {
  uint16_t bits = 0;
  float16() = default;
  float16(float f) {  // NOLINT: implicit, like a built-in float type
    _Float16 h = static_cast<_Float16>(f);
    std::memcpy(&bits, &h, 2);
  }
  operator float() const {  // NOLINT
    _Float16 h;
    std::memcpy(&h, &bits, 2);
    return static_cast<float>(h);
  }
};

struct bfloat16 {
  uint16_t bits = 0;
  bfloat16() = default;
  bfloat16(float f) {  // NOLINT: round to nearest even; NaN stays NaN (quieted)
    uint32_t u;
    std::memcpy(&u, &f, 4);
    const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16, quiet = (u >> 16) | 0x40u;
    bits = static_cast<uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? quiet : rounded);  // a select: loops vectorize
  }
  operator float() const {  // NOLINT
    uint32_t u = static_cast<uint32_t>(bits) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
};

static_assert(sizeof(float16) == 2 && sizeof(bfloat16) == 2);

}  // namespace oar
