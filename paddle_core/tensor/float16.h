// Storage types for the two 16-bit floats. Arithmetic happens in float
// (see OpMath in dtype.h): these types only convert on load and store.
#pragma once

#include <cstdint>
#include <cstring>

namespace oar {

namespace half_detail {

inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
// c ? a : b through a mask, so that the compiler keeps no branch to turn back into one.
inline uint32_t pick(bool c, uint32_t a, uint32_t b) {
  const uint32_t m = 0u - static_cast<uint32_t>(c);
  return (a & m) | (b & ~m);
}

}  // namespace half_detail

// Note [float16 conversions in integers]: both conversions are integer selects plus one
// float operation, bit for bit what F16C's vcvtps2ph (round to nearest even) and vcvtph2ps
// give, NaN payloads and the quiet bit included (every float and every half checked against
// the instructions, tests/cpp/paddle_core/test_dtype.cc). _Float16 casts compile to scalar
// vcvt instructions that GCC 12 does not vectorize without AVX512-FP16, so every float16
// elementwise loop ran one element at a time (relu on 1M halves took 6 ms against torch's
// 0.09, branching on each sign); in this form the loops vectorize as bfloat16's do. No
// subnormal float reaches an operation, so flush-to-zero modes give the same results.
struct float16 {
  uint16_t bits = 0;
  float16() = default;
  float16(float f) {  // NOLINT: implicit, like a built-in float type
    using namespace half_detail;
    const uint32_t x = float_bits(f), sign = x & 0x80000000u, u = x ^ sign;
    // inf, or NaN quieted with the top 10 bits of its payload
    const uint32_t special = pick(u > 0x7f800000u, 0x7e00u | ((u >> 13) & 0x3ffu), 0x7c00u);
    // |f| < 2^-14: adding 0.5 rounds f to a multiple of 2^-24 (the half subnormals' step)
    const uint32_t sub = float_bits(bits_float(u) + 0.5f) - 0x3f000000u;
    // rebias the exponent, round the 13 dropped bits to nearest even
    const uint32_t normal = (u - ((127u - 15u) << 23) + 0xfffu + ((u >> 13) & 1u)) >> 13;
    const uint32_t o = pick(u >= 0x47800000u, special, pick(u < 0x38800000u, sub, normal));
    bits = static_cast<uint16_t>(o | (sign >> 16));
  }
  operator float() const {  // NOLINT
    using namespace half_detail;
    const uint32_t em = bits & 0x7fffu, sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
    const uint32_t normal = (em << 13) + ((127u - 15u) << 23);
    const uint32_t sub = float_bits(static_cast<float>(static_cast<int32_t>(em)) * 0x1p-24f);  // exact
    const uint32_t special = (em << 13) | 0x7f800000u | (em > 0x7c00u ? 0x400000u : 0u);       // inf, quiet NaN
    return bits_float(pick(em >= 0x7c00u, special, pick(em < 0x400u, sub, normal)) | sign);
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
