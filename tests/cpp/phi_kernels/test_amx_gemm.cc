// Oar's AMX GEMMs (phi_kernels/funcs/amx_gemm.h), bf16 against a float64 loop and int8
// against an exact int64 one, on every shape class the packing meets: dims below, at and
// across the 32 of a tile block, the K blocks and the column panels, K tails, both
// transposes, leading dimensions wider than the matrix (whose gaps must stay untouched), and
// the two ways the work splits over two threads. Skipped on a CPU without AMX.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "phi_kernels/funcs/amx_gemm.h"

namespace oar::phi {
namespace {

float bf16_to_float(uint16_t b) {
  const uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

uint16_t float_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

constexpr uint16_t kSentinel = 0x7fc1;  // a NaN no product gives

// Runs one product and returns the largest error in units of its bound (<= 1 passes):
// float accumulation, one rounding to bf16: |got - ref| <= 2^-8 |ref| + 2^-12 sum |a||b|.
double run_case(bool ta, bool tb, int64_t M, int64_t N, int64_t K, int64_t pad, bool* gaps_kept) {
  std::mt19937 rng(static_cast<uint32_t>(M * 131 + N * 7 + K + ta * 2 + tb));
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  const int64_t lda = (ta ? M : K) + pad, ldb = (tb ? K : N) + pad, ldc = N + pad;
  std::vector<uint16_t> A((ta ? K : M) * lda + 1), B((tb ? N : K) * ldb + 1), C(M * ldc, kSentinel);
  for (auto& v : A) v = float_to_bf16(u(rng));
  for (auto& v : B) v = float_to_bf16(u(rng));
  amx_bf16gemm(ta, tb, M, N, K, A.data(), lda, B.data(), ldb, C.data(), ldc);
  double worst = 0;
  *gaps_kept = true;
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < N; ++j) {
      double ref = 0, mag = 0;
      for (int64_t k = 0; k < K; ++k) {
        const double a = bf16_to_float(ta ? A[k * lda + i] : A[i * lda + k]);
        const double b = bf16_to_float(tb ? B[j * ldb + k] : B[k * ldb + j]);
        ref += a * b;
        mag += std::fabs(a * b);
      }
      const double err = std::fabs(bf16_to_float(C[i * ldc + j]) - ref);
      const double ratio = err / (std::ldexp(std::fabs(ref), -8) + std::ldexp(mag, -12) + 1e-30);
      if (!(ratio <= worst)) worst = ratio;  // NaN (an unwritten element) sticks
    }
    for (int64_t j = N; j < ldc; ++j) *gaps_kept = *gaps_kept && C[i * ldc + j] == kSentinel;
  }
  return worst;
}

struct Shape {
  int64_t m, n, k;
};

class AmxGemm : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!amx_bf16_supported()) GTEST_SKIP() << "no AMX-BF16 on this CPU";
  }
};

TEST_F(AmxGemm, EveryShapeClassAgainstFloat64) {
  const Shape shapes[] = {{1, 1, 1},     {32, 32, 32},   {33, 17, 5},    {31, 31, 33}, {64, 300, 70},
                          {7, 600, 300}, {300, 40, 513}, {100, 257, 96}, {5, 5, 0},    {65, 520, 256}};
  for (const Shape& s : shapes) {
    for (int ta = 0; ta < 2; ++ta) {
      for (int tb = 0; tb < 2; ++tb) {
        for (int64_t pad : {0, 3}) {
          bool gaps = false;
          const double worst = run_case(ta, tb, s.m, s.n, s.k, pad, &gaps);
          EXPECT_LE(worst, 1.0) << "ta " << ta << " tb " << tb << " " << s.m << "x" << s.n << "x" << s.k << " pad "
                                << pad;
          EXPECT_TRUE(gaps) << "wrote past N: " << s.m << "x" << s.n << "x" << s.k << " pad " << pad;
        }
      }
    }
  }
}

TEST_F(AmxGemm, TwoThreadsSplitPanelsOrRows) {
  const int before = omp_get_max_threads();
  omp_set_num_threads(2);
  // N over two kNc panels (split by panels), then one panel with many rows (split by rows).
  for (const Shape& s : {Shape{96, 700, 300}, Shape{400, 100, 200}}) {
    for (int t = 0; t < 4; ++t) {
      bool gaps = false;
      EXPECT_LE(run_case(t & 1, t >> 1, s.m, s.n, s.k, 5, &gaps), 1.0) << s.m << "x" << s.n << "x" << s.k;
      EXPECT_TRUE(gaps);
    }
  }
  omp_set_num_threads(before);
}

TEST_F(AmxGemm, EmptyOutputWritesNothing) {
  std::vector<uint16_t> C(4, kSentinel);
  const uint16_t one = float_to_bf16(1.f);
  amx_bf16gemm(false, false, 0, 4, 3, &one, 3, &one, 4, C.data(), 4);
  amx_bf16gemm(false, false, 4, 0, 3, &one, 3, &one, 1, C.data(), 1);
  for (uint16_t v : C) EXPECT_EQ(v, kSentinel);
}

// int8: the exact product, int8 values in [lo, hi]; true when every element and gap is right.
bool run_int8_case(bool ta, bool tb, int64_t M, int64_t N, int64_t K, int64_t pad, int lo, int hi) {
  std::mt19937 rng(static_cast<uint32_t>(M * 131 + N * 7 + K + ta * 2 + tb + lo));
  std::uniform_int_distribution<int> u(lo, hi);
  const int64_t lda = (ta ? M : K) + pad, ldb = (tb ? K : N) + pad, ldc = N + pad;
  std::vector<int8_t> A((ta ? K : M) * lda + 1), B((tb ? N : K) * ldb + 1);
  std::vector<int32_t> C(M * ldc, -7);
  for (auto& v : A) v = static_cast<int8_t>(u(rng));
  for (auto& v : B) v = static_cast<int8_t>(u(rng));
  amx_s8gemm(ta, tb, M, N, K, A.data(), lda, B.data(), ldb, C.data(), ldc);
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < N; ++j) {
      int64_t ref = 0;
      for (int64_t k = 0; k < K; ++k)
        ref += int64_t{ta ? A[k * lda + i] : A[i * lda + k]} * (tb ? B[j * ldb + k] : B[k * ldb + j]);
      if (C[i * ldc + j] != ref) return false;
    }
    for (int64_t j = N; j < ldc; ++j) {
      if (C[i * ldc + j] != -7) return false;
    }
  }
  return true;
}

class AmxInt8Gemm : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!amx_int8_supported()) GTEST_SKIP() << "no AMX-INT8 on this CPU";
  }
};

TEST_F(AmxInt8Gemm, EveryShapeClassExact) {
  // K across the 64 of a tile step and the 512 of a K block; N across the 32 of a block
  const Shape shapes[] = {{1, 1, 1},     {32, 32, 64},    {33, 17, 5},    {31, 31, 65}, {64, 300, 70},
                          {7, 600, 600}, {300, 40, 1025}, {100, 257, 96}, {5, 5, 0},    {65, 520, 512}};
  for (const Shape& s : shapes) {
    for (int ta = 0; ta < 2; ++ta) {
      for (int tb = 0; tb < 2; ++tb) {
        for (int64_t pad : {0, 3}) {
          EXPECT_TRUE(run_int8_case(ta, tb, s.m, s.n, s.k, pad, -128, 127))
              << "ta " << ta << " tb " << tb << " " << s.m << "x" << s.n << "x" << s.k << " pad " << pad;
        }
      }
    }
  }
}

TEST_F(AmxInt8Gemm, ExtremesAndTwoThreads) {
  // all -128 (the largest products) and all 127, then the two splits at two threads
  for (int v : {-128, 127}) EXPECT_TRUE(run_int8_case(false, true, 40, 50, 3000, 1, v, v)) << v;
  const int before = omp_get_max_threads();
  omp_set_num_threads(2);
  for (const Shape& s : {Shape{96, 700, 300}, Shape{400, 100, 200}}) {
    for (int t = 0; t < 4; ++t) EXPECT_TRUE(run_int8_case(t & 1, t >> 1, s.m, s.n, s.k, 5, -128, 127));
  }
  omp_set_num_threads(before);
}

}  // namespace
}  // namespace oar::phi
