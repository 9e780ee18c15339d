#include <gtest/gtest.h>
#include <immintrin.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "paddle_core/tensor/dtype.h"

namespace oar {

TEST(DataType, SizesAndNames) {
  EXPECT_EQ(size_of(DataType::FLOAT32), 4u);
  EXPECT_EQ(size_of(DataType::BFLOAT16), 2u);
  EXPECT_EQ(size_of(DataType::BOOL), 1u);
  EXPECT_STREQ(dtype_name(DataType::INT64), "int64");
  EXPECT_EQ(dtype_from_name("bf16"), DataType::BFLOAT16);
  EXPECT_THROW(dtype_from_name("float128"), Error);
}

TEST(DataType, Promotion) {
  EXPECT_EQ(promote_types(DataType::INT32, DataType::FLOAT16), DataType::FLOAT16);
  EXPECT_EQ(promote_types(DataType::INT8, DataType::UINT8), DataType::INT16);
  EXPECT_EQ(promote_types(DataType::FLOAT16, DataType::BFLOAT16), DataType::FLOAT32);
  EXPECT_EQ(promote_types(DataType::BOOL, DataType::INT64), DataType::INT64);
  EXPECT_EQ(promote_types(DataType::FLOAT32, DataType::FLOAT64), DataType::FLOAT64);
}

TEST(DataType, HalfConversionsRoundTrip) {
  for (float f : {0.0f, 1.0f, -2.5f, 65504.0f, 1e-3f}) {
    EXPECT_NEAR(static_cast<float>(float16(f)), f, std::abs(f) * 1e-3f);
    EXPECT_NEAR(static_cast<float>(bfloat16(f)), f, std::abs(f) * 1e-2f);
  }
  EXPECT_TRUE(std::isnan(static_cast<float>(bfloat16(NAN))));
}

// Note [float16 conversions in integers]: float16's conversions give F16C's bits exactly.
__attribute__((target("f16c"))) uint16_t f16c_half(float f) {
  return static_cast<uint16_t>(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT));
}
__attribute__((target("f16c"))) float f16c_float(uint16_t h) { return _cvtsh_ss(h); }
uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float float_of(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

TEST(DataType, Float16FromHalfBitsMatchesF16c) {
  if (!__builtin_cpu_supports("f16c")) GTEST_SKIP() << "no F16C on this CPU";
  for (uint32_t h = 0; h < 65536; ++h) {  // every half: normals, subnormals, +-0, inf, NaNs
    float16 x;
    x.bits = static_cast<uint16_t>(h);
    ASSERT_EQ(bits_of(static_cast<float>(x)), bits_of(f16c_float(x.bits))) << "half bits 0x" << std::hex << h;
  }
}

TEST(DataType, Float16FromFloatMatchesF16c) {
  if (!__builtin_cpu_supports("f16c")) GTEST_SKIP() << "no F16C on this CPU";
  int64_t checked = 0;
  auto check = [&](uint32_t u) {
    const uint16_t want = f16c_half(float_of(u)), got = float16(float_of(u)).bits;
    ++checked;
    return want == got ? ::testing::AssertionSuccess()
                       : ::testing::AssertionFailure()
                             << "float bits 0x" << std::hex << u << ": got 0x" << got << ", F16C gives 0x" << want;
  };
  // Around every rounding boundary: the float halfway between two neighbouring halves (a
  // tie: to even), one float ulp either side, both signs; this covers the subnormal step,
  // the overflow to inf at 65520 and every exponent.
  for (uint32_t h = 0; h < 0x7c00u; ++h) {
    const float lo = f16c_float(static_cast<uint16_t>(h)), hi = f16c_float(static_cast<uint16_t>(h + 1));
    const uint32_t mid = bits_of(0.5f * lo + 0.5f * hi);
    for (uint32_t u : {mid - 1, mid, mid + 1, bits_of(lo), bits_of(lo) + 1}) {
      ASSERT_TRUE(check(u));
      ASSERT_TRUE(check(u | 0x80000000u));
    }
  }
  // A stride through all 2^32 patterns (float subnormals, huge values, inf, NaN payloads).
  for (uint64_t u = 0; u < (uint64_t{1} << 32); u += 9973) ASSERT_TRUE(check(static_cast<uint32_t>(u)));
  for (uint32_t u : {0x7f800000u, 0xff800000u, 0x7fc00000u, 0x7f800001u, 0xffbfffffu, 0x477ff000u, 0x477fefffu,
                     0x33000000u, 0x33000001u, 0x00000001u, 0x80000001u}) {
    ASSERT_TRUE(check(u));
  }
  EXPECT_GT(checked, 500000);
}

}  // namespace oar
