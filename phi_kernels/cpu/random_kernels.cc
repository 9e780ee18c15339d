// Random kernels: Paddle's CPU streams (paddle_core/tensor/generator.h). Each kernel
// draws its elements in order from one engine through a std:: distribution, exactly as
// Paddle's CPU kernels do, so seeded Paddle scripts give the same numbers (float uniforms
// and normals in blocks with the same results, Note [Batched draws]). float16 and
// bfloat16 draw in float and round, as Paddle does.
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
// and sizes), in three steps a block: the engine's raw draws in order, the conversions, and
// for normals the polar method's logs and square roots over the accepted pairs. One draw at
// a time through std::uniform_real_distribution<float> took about 7 ns an element (1M
// floats 7.2 ms against torch's 2.9), most of it in the unsigned 64-bit to float
// conversion, which x86-64-v3 lacks: GCC's sequence branches on the top bit, and random
// bits mispredict half the time.
constexpr int64_t kDrawBlock = 1024;

/// generate_canonical<float, 24> of one mt19937_64 draw: float(x) / 2^64, and the largest
/// float below 1 where that rounds to 1. Branch-free: above 2^63, x is halved with the
/// lost bit kept sticky (far below float's rounding bit, so the rounding is unchanged) and
/// the result doubled.
inline float canonical_float(uint64_t x) {
  const float small = static_cast<float>(static_cast<int64_t>(x & ~(uint64_t{1} << 63)));
  const float big = static_cast<float>(static_cast<int64_t>((x >> 1) | (x & 1))) * 2.0f;
  uint32_t sb, bb;
  std::memcpy(&sb, &small, 4);
  std::memcpy(&bb, &big, 4);
  const uint32_t top = static_cast<uint32_t>(0) - static_cast<uint32_t>(x >> 63);
  const uint32_t bits = (bb & top) | (sb & ~top);
  float f;
  std::memcpy(&f, &bits, 4);
  return std::min(f * 0x1p-64f, 0x1.fffffep-1f);
}

/// out[0, n) = what std::uniform_real_distribution<float>(lo, hi) draws from `engine`.
void uniform_floats(CpuEngine& engine, float lo, float hi, float* out, int64_t n) {
  uint64_t raw[kDrawBlock];
  const float span = hi - lo;
  for (int64_t b = 0; b < n; b += kDrawBlock) {
    const int64_t m = std::min(kDrawBlock, n - b);
    for (int64_t i = 0; i < m; ++i) raw[i] = engine();
    for (int64_t i = 0; i < m; ++i) out[b + i] = canonical_float(raw[i]) * span + lo;
  }
}

/// out[0, n) = what std::normal_distribution<float>(mean, stddev), fresh, draws from
/// `engine` (libstdc++'s polar method: pairs (x, y) = 2u - 1 until 0 < x^2 + y^2 <= 1, then
/// y m and x m with m = sqrt(-2 log(r2) / r2); an odd n drops the last x m). A round
/// attempts only as many pairs as are still needed, so the engine advances exactly as it
/// would one draw at a time.
void normal_floats(CpuEngine& engine, float mean, float stddev, float* out, int64_t n) {
  uint64_t raw[2 * kDrawBlock];
  float xs[kDrawBlock], ys[kDrawBlock], r2s[kDrawBlock];
  const int64_t pairs = (n + 1) / 2;
  int64_t done = 0;
  while (done < pairs) {
    const int64_t m = std::min(kDrawBlock, pairs - done);
    for (int64_t i = 0; i < 2 * m; ++i) raw[i] = engine();
    int64_t a = 0;
    for (int64_t i = 0; i < m; ++i) {
      const float x = 2.0f * canonical_float(raw[2 * i]) - 1.0;
      const float y = 2.0f * canonical_float(raw[2 * i + 1]) - 1.0;
      const float r2 = x * x + y * y;
      xs[a] = x;
      ys[a] = y;
      r2s[a] = r2;
      a += (r2 > 1.0 || r2 == 0.0) ? 0 : 1;
    }
    for (int64_t i = 0; i < a; ++i) {
      const float mult = std::sqrt(-2 * std::log(r2s[i]) / r2s[i]);
      const int64_t k = 2 * (done + i);
      out[k] = ys[i] * mult * stddev + mean;
      if (k + 1 < n) out[k + 1] = xs[i] * mult * stddev + mean;
    }
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
