#include <gtest/gtest.h>

#include <cmath>

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

}  // namespace oar
