// Random kernels: Paddle's CPU streams (paddle_core/tensor/generator.h). Each kernel
// draws its elements in order from one engine through a std:: distribution, exactly as
// Paddle's CPU kernels do, so seeded Paddle scripts give the same numbers (float uniforms
// and normals in blocks with the same results, Note [Batched draws]). float16 and
// bfloat16 draw in float and round, as Paddle does.
#include <immintrin.h>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <type_traits>
#include <vector>

#include "oar_generated/kernel_signatures.h"
#include "paddle_core/tensor/generator.h"

namespace oar::phi {
namespace {

// The type a std:: distribution draws T's values in.
template <typename T>
using DrawType = std::conditional_t<std::is_same_v<T, double>, double, float>;

// Note [Batched draws]: float uniform and normal draws come in blocks, each value exactly
// what the standard library's distributions give (the C++ tests compare them for many seeds
// and sizes, and for edge draws in both ISA copies), in steps a block: the engine's raw
// draws in order (MersenneTwister64::fill), their conversions to [0, 1), and for normals the
// polar method's accepted pairs compressed to the front, their logs, and the square roots.
// One draw at a time through std::uniform_real_distribution<float> took about 7 ns an
// element (1M floats 7.2 ms against torch's 2.9): the unsigned 64-bit to float conversion,
// which x86-64-v3 lacks (GCC's sequence branches on the top bit, and random bits
// mispredict half the time), and libstdc++'s engine (3.4 ns a draw). Now, on the Xeon of
// stop 62 at 1 thread: rand 1M 0.8 ms with AVX-512, 1.3 with AVX2; randn 2.7 and 3.4.
constexpr int64_t kDrawBlock = 1024;

/// c[0, m) = generate_canonical<float, 24> of each draw of raw[0, m): float(x) / 2^64
/// (float(x) rounded to nearest, ties to even), and the largest float below 1 where that
/// rounds to 1.
void canonical_floats(const uint64_t* raw, int64_t m, float* c) {
  int64_t i = 0;
#if !defined(__AVX512DQ__) && defined(__AVX2__)
  // AVX2 has no unsigned 64-bit to float conversion, and the scalar one branches on the top
  // bit, which random bits mispredict half the time. Four at a time: x >= 2^53 becomes
  // x >> 11 with the 11 lost bits kept as one sticky bit (29 or more places below float's
  // rounding bit, so float's rounding is unchanged), which is below 2^53, so exact in
  // double from its two 32-bit halves; the double, scaled back by 2^11, rounds to float once.
  const __m256i low32 = _mm256_set1_epi64x(0xffffffff), low11 = _mm256_set1_epi64x(0x7ff);
  const __m256i one = _mm256_set1_epi64x(1), zero = _mm256_setzero_si256();
  const __m256i magic_lo = _mm256_set1_epi64x(0x4330000000000000), magic_hi = _mm256_set1_epi64x(0x4530000000000000);
  const __m256d two52 = _mm256_set1_pd(0x1p52), two84 = _mm256_set1_pd(0x1p84);
  const __m256d scale_small = _mm256_set1_pd(0x1p-64), scale_big = _mm256_set1_pd(0x1p-53);
  const __m128 below_one = _mm_set1_ps(0x1.fffffep-1f);
  for (; i + 4 <= m; i += 4) {
    const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(raw + i));
    const __m256i small = _mm256_cmpeq_epi64(_mm256_srli_epi64(x, 53), zero);
    const __m256i sticky = _mm256_andnot_si256(_mm256_cmpeq_epi64(_mm256_and_si256(x, low11), zero), one);
    const __m256i y = _mm256_blendv_epi8(_mm256_or_si256(_mm256_srli_epi64(x, 11), sticky), x, small);
    const __m256d lo = _mm256_sub_pd(_mm256_castsi256_pd(_mm256_or_si256(_mm256_and_si256(y, low32), magic_lo)), two52);
    const __m256d hi = _mm256_sub_pd(_mm256_castsi256_pd(_mm256_or_si256(_mm256_srli_epi64(y, 32), magic_hi)), two84);
    // hi + lo is y exactly; the scale (2^-64, or 2^-53 for the shifted) is a power of two.
    const __m256d d =
        _mm256_mul_pd(_mm256_add_pd(hi, lo), _mm256_blendv_pd(scale_big, scale_small, _mm256_castsi256_pd(small)));
    _mm_storeu_ps(c + i, _mm_min_ps(_mm256_cvtpd_ps(d), below_one));
  }
#endif
  // AVX-512 DQ converts 8 a vector here (vcvtuqq2ps).
  for (; i < m; ++i) c[i] = std::min(static_cast<float>(raw[i]) * 0x1p-64f, 0x1.fffffep-1f);
}

/// out[0, n) = what std::uniform_real_distribution<float>(lo, hi) draws from `engine`.
void uniform_floats(CpuEngine& engine, float lo, float hi, float* out, int64_t n) {
  uint64_t raw[kDrawBlock];
  float c[kDrawBlock];
  const float span = hi - lo;
  for (int64_t b = 0; b < n; b += kDrawBlock) {
    const int64_t m = std::min(kDrawBlock, n - b);
    engine.fill(raw, m);
    canonical_floats(raw, m, c);
    for (int64_t i = 0; i < m; ++i) out[b + i] = c[i] * span + lo;
  }
}

/// Copies the polar method's accepted pairs (0 < r2 <= 1) of xs, ys, r2s[0, m) to the front
/// of ax, ay, ar2 in order and returns their count. The outputs have 16 floats of room past m.
int64_t accepted_pairs(const float* xs, const float* ys, const float* r2s, int64_t m, float* ax, float* ay,
                       float* ar2) {
  int64_t a = 0, i = 0;
#if defined(__AVX512F__)
  // A fifth of the pairs fail at random: compressing 16 lanes at a time has no branch on it.
  const __m512 one = _mm512_set1_ps(1.0f), zero = _mm512_setzero_ps();
  for (; i + 16 <= m; i += 16) {
    const __m512 r2 = _mm512_loadu_ps(r2s + i);
    const __mmask16 ok = _mm512_cmp_ps_mask(r2, one, _CMP_LE_OQ) & _mm512_cmp_ps_mask(r2, zero, _CMP_NEQ_OQ);
    _mm512_storeu_ps(ax + a, _mm512_maskz_compress_ps(ok, _mm512_loadu_ps(xs + i)));
    _mm512_storeu_ps(ay + a, _mm512_maskz_compress_ps(ok, _mm512_loadu_ps(ys + i)));
    _mm512_storeu_ps(ar2 + a, _mm512_maskz_compress_ps(ok, r2));
    a += __builtin_popcount(ok);
  }
#elif defined(__AVX2__)
  // AVX2 has no compress: the accepted lanes' indices come from the mask by pext (BMI2,
  // part of x86-64-v3), one byte a lane, and a permute moves the lanes to the front.
  const __m256 one = _mm256_set1_ps(1.0f), zero = _mm256_setzero_ps();
  for (; i + 8 <= m; i += 8) {
    const __m256 r2 = _mm256_loadu_ps(r2s + i);
    const int ok =
        _mm256_movemask_ps(_mm256_and_ps(_mm256_cmp_ps(r2, one, _CMP_LE_OQ), _mm256_cmp_ps(r2, zero, _CMP_NEQ_OQ)));
    const uint64_t lanes = _pdep_u64(static_cast<uint64_t>(ok), 0x0101010101010101ull) * 0xff;
    const __m256i order =
        _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<int64_t>(_pext_u64(0x0706050403020100ull, lanes))));
    _mm256_storeu_ps(ax + a, _mm256_permutevar8x32_ps(_mm256_loadu_ps(xs + i), order));
    _mm256_storeu_ps(ay + a, _mm256_permutevar8x32_ps(_mm256_loadu_ps(ys + i), order));
    _mm256_storeu_ps(ar2 + a, _mm256_permutevar8x32_ps(r2, order));
    a += __builtin_popcount(ok);
  }
#endif
  for (; i < m; ++i) {
    ax[a] = xs[i];
    ay[a] = ys[i];
    ar2[a] = r2s[i];
    a += static_cast<int64_t>(r2s[i] <= 1.0f) & static_cast<int64_t>(r2s[i] != 0.0f);
  }
  return a;
}

/// out[0, n) = what std::normal_distribution<float>(mean, stddev), fresh, draws from
/// `engine` (libstdc++'s polar method: pairs (x, y) = 2u - 1 until 0 < x^2 + y^2 <= 1, then
/// y m and x m with m = sqrt(-2 log(r2) / r2); an odd n drops the last x m). A round
/// attempts only as many pairs as are still needed, so the engine advances exactly as it
/// would one draw at a time. Only the logs are scalar calls (glibc's logf: a vector log
/// would round some values differently); the rest are vector loops.
void normal_floats(CpuEngine& engine, float mean, float stddev, float* out, int64_t n) {
  uint64_t raw[2 * kDrawBlock];
  float c[2 * kDrawBlock];
  float xs[kDrawBlock], ys[kDrawBlock], r2s[kDrawBlock];
  float ax[kDrawBlock + 16], ay[kDrawBlock + 16], ar2[kDrawBlock + 16], mult[kDrawBlock];
  const int64_t pairs = (n + 1) / 2;
  int64_t done = 0;
  while (done < pairs) {
    const int64_t m = std::min(kDrawBlock, pairs - done);
    engine.fill(raw, 2 * m);
    canonical_floats(raw, 2 * m, c);
    for (int64_t i = 0; i < m; ++i) {
      const float x = 2.0f * c[2 * i] - 1.0f;
      const float y = 2.0f * c[2 * i + 1] - 1.0f;
      xs[i] = x;
      ys[i] = y;
      r2s[i] = x * x + y * y;
    }
    const int64_t a = accepted_pairs(xs, ys, r2s, m, ax, ay, ar2);
    for (int64_t i = 0; i < a; ++i) mult[i] = std::log(ar2[i]);
    for (int64_t i = 0; i < a; ++i) mult[i] = std::sqrt(-2 * mult[i] / ar2[i]);
    float* o = out + 2 * done;
    const int64_t whole = std::min(a, n / 2 - done);  // pairs whose both values are kept
    for (int64_t i = 0; i < whole; ++i) {
      o[2 * i] = ay[i] * mult[i] * stddev + mean;
      o[2 * i + 1] = ax[i] * mult[i] * stddev + mean;
    }
    if (whole < a) o[2 * whole] = ay[whole] * mult[whole] * stddev + mean;
    done += a;
  }
}

/// fill(float* p, n) into o, through a float buffer for float16 and bfloat16 (rounded
/// after, as Paddle draws them in float).
template <typename T, typename Fill>
void batched_as(T* o, int64_t n, Fill fill) {
  if constexpr (std::is_same_v<T, float>) {
    fill(o, n);
  } else {
    std::vector<float> f(static_cast<size_t>(n));
    fill(f.data(), n);
    for (int64_t i = 0; i < n; ++i) o[i] = static_cast<T>(f[i]);
  }
}

template <typename T>
void UniformKernel(const DeviceContext&, const std::vector<int64_t>&, DataType, double min,
                   double max, int64_t seed, const Place&, DenseTensor* out) {
  T* o = out->alloc<T>();
  const int64_t n = out->numel();
  using D = DrawType<T>;
  // Paddle's min and max reach its kernel as float, for float64 draws too.
  const D lo = static_cast<D>(static_cast<float>(min)), hi = static_cast<D>(static_cast<float>(max));
  with_cpu_engine(seed, [&](CpuEngine& engine) {
    if constexpr (std::is_same_v<D, float>) {
      batched_as<T>(o, n, [&](float* f, int64_t m) { uniform_floats(engine, lo, hi, f, m); });
    } else {
      std::uniform_real_distribution<D> dist(lo, hi);
      for (int64_t i = 0; i < n; ++i) o[i] = static_cast<T>(dist(engine));
    }
  });
}

template <typename T>
void GaussianKernel(const DeviceContext&, const std::vector<int64_t>&, double mean, double stddev,
                    int64_t seed, DataType, const Place&, DenseTensor* out) {
  T* o = out->alloc<T>();
  const int64_t n = out->numel();
  using D = DrawType<T>;
  // Paddle's mean and std attributes are float: a float64 draw uses their float values.
  const D m = static_cast<D>(static_cast<float>(mean)), s = static_cast<D>(static_cast<float>(stddev));
  with_cpu_engine(seed, [&](CpuEngine& engine) {
    if constexpr (std::is_same_v<D, float>) {
      batched_as<T>(o, n, [&](float* f, int64_t k) { normal_floats(engine, m, s, f, k); });
    } else {
      std::normal_distribution<D> dist(m, s);
      for (int64_t i = 0; i < n; ++i) o[i] = static_cast<T>(dist(engine));
    }
  });
}

template <typename T>
void RandintKernel(const DeviceContext&, int64_t low, int64_t high, const std::vector<int64_t>&,
                   DataType, const Place&, DenseTensor* out) {
  T* o = out->alloc<T>();
  const int64_t n = out->numel();
  with_cpu_engine(0, [&](CpuEngine& engine) {
    std::uniform_int_distribution<T> dist(static_cast<T>(low), static_cast<T>(high - 1));
    for (int64_t i = 0; i < n; ++i) o[i] = dist(engine);
  });
}

template <typename T>
void RandpermKernel(const DeviceContext&, int64_t n, DataType, const Place&, DenseTensor* out) {
  T* o = out->alloc<T>();
  if (n == 0) return;
  // std::shuffle's swaps depend only on n, so shuffling indices and converting gives the
  // permutation Paddle's shuffle of T values gives.
  std::vector<int64_t> p(n);
  std::iota(p.begin(), p.end(), int64_t{0});
  with_cpu_engine(0, [&](CpuEngine& engine) { std::shuffle(p.begin(), p.end(), engine); });
  for (int64_t i = 0; i < n; ++i) o[i] = static_cast<T>(p[i]);
}

// The dyn_ forms (shape read at run time): out is already sized from the shape tensor
// (DynUniformInferMeta...), which is all the fixed-shape kernels read of their shape.
template <typename T>
void DynUniformKernel(const DeviceContext& ctx, const DenseTensor&, const std::vector<int64_t>& hint, DataType dtype,
                      double min, double max, int64_t seed, const Place& place, DenseTensor* out) {
  UniformKernel<T>(ctx, hint, dtype, min, max, seed, place, out);
}

template <typename T>
void DynGaussianKernel(const DeviceContext& ctx, const DenseTensor&, const std::vector<int64_t>& hint, double mean,
                       double stddev, int64_t seed, DataType dtype, const Place& place, DenseTensor* out) {
  GaussianKernel<T>(ctx, hint, mean, stddev, seed, dtype, place, out);
}

template <typename T>
void DynRandintKernel(const DeviceContext& ctx, const DenseTensor&, const std::vector<int64_t>& hint, int64_t low,
                      int64_t high, DataType dtype, const Place& place, DenseTensor* out) {
  RandintKernel<T>(ctx, low, high, hint, dtype, place, out);
}

}  // namespace
}  // namespace oar::phi

using namespace oar::phi;  // NOLINT

OAR_REGISTER_KERNEL(uniform, CPU, UniformKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(gaussian, CPU, GaussianKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(randint, CPU, RandintKernel, int32_t, int64_t)
OAR_REGISTER_KERNEL(dyn_uniform, CPU, DynUniformKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(dyn_gaussian, CPU, DynGaussianKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(dyn_randint, CPU, DynRandintKernel, int32_t, int64_t)
OAR_REGISTER_KERNEL(randperm, CPU, RandpermKernel, float, double, int32_t, int64_t)
