// Random kernels. Each call reserves the Philox blocks it needs from the generator
// once (paddle_core/tensor/generator.h), then fills the output in parallel: element
// block b is a pure function of (key, offset + b), so results do not depend on the
// number of threads and a saved generator state replays them exactly.
#include <cmath>
#include <numeric>
#include <type_traits>

#include "oar_generated/kernel_signatures.h"
#include "paddle_core/tensor/generator.h"
#include "phi_kernels/cpu/parallel.h"

namespace oar::phi {
namespace {

constexpr double kTwoPi = 6.283185307179586;

// [0, 1) with 24 (float) or 53 (double) random bits.
inline float unit_float(uint32_t u) { return static_cast<float>(u >> 8) * 0x1.0p-24f; }
inline double unit_double(uint32_t hi, uint32_t lo) {
  return static_cast<double>(((uint64_t{hi} << 32) | lo) >> 11) * 0x1.0p-53;
}
inline uint64_t u64(uint32_t hi, uint32_t lo) { return (uint64_t{hi} << 32) | lo; }
// Uniform in [0, range) (Lemire's multiply-shift; bias below 2^-64 * range).
inline uint64_t bounded(uint64_t r, uint64_t range) {
  return static_cast<uint64_t>((static_cast<unsigned __int128>(r) * range) >> 64);
}

// Fills out[0, n) in parallel; fill(block_words, index of the block's first element,
// count) writes up to `per_block` values of one Philox block.
template <typename Fill>
void fill_blocks(int64_t n, int per_block, int64_t seed, int cost_per_elem, Fill fill) {
  if (n == 0) return;
  const int64_t blocks = (n + per_block - 1) / per_block;
  const PhiloxRange r = philox_range_for(seed, static_cast<uint64_t>(blocks));
  parallel_for(
      blocks,
      [&](int64_t b0, int64_t b1) {
        for (int64_t b = b0; b < b1; ++b) {
          const Philox4x32::Block w = Philox4x32::block(r.key, r.offset + b);
          const int64_t i = b * per_block;
          fill(w, i, std::min<int64_t>(per_block, n - i));
        }
      },
      n * cost_per_elem);
}

template <typename T>
void UniformKernel(const DeviceContext&, const std::vector<int64_t>&, DataType, double min,
                   double max, int64_t seed, const Place&, DenseTensor* out) {
  T* o = out->alloc<T>();
  if constexpr (std::is_same_v<T, double>) {
    const double span = max - min;
    fill_blocks(out->numel(), 2, seed, 2, [&](const Philox4x32::Block& w, int64_t i, int64_t k) {
      for (int64_t j = 0; j < k; ++j) o[i + j] = min + span * unit_double(w[2 * j], w[2 * j + 1]);
    });
  } else {
    const float lo = static_cast<float>(min), span = static_cast<float>(max - min);
    fill_blocks(out->numel(), 4, seed, 2, [&](const Philox4x32::Block& w, int64_t i, int64_t k) {
      for (int64_t j = 0; j < k; ++j) o[i + j] = static_cast<T>(lo + span * unit_float(w[j]));
    });
  }
}

// Box-Muller: two uniforms -> two independent standard normals.
template <typename M>
inline void box_muller(M u1, M u2, M* z0, M* z1) {
  const M r = std::sqrt(M(-2) * std::log(u1));
  const M t = static_cast<M>(kTwoPi) * u2;
  *z0 = r * std::cos(t);
  *z1 = r * std::sin(t);
}

template <typename T>
void GaussianKernel(const DeviceContext&, const std::vector<int64_t>&, double mean, double stddev,
                    int64_t seed, DataType, const Place&, DenseTensor* out) {
  T* o = out->alloc<T>();
  if constexpr (std::is_same_v<T, double>) {
    fill_blocks(out->numel(), 2, seed, 16, [&](const Philox4x32::Block& w, int64_t i, int64_t k) {
      double z[2];
      // u1 in (0, 1] so that log(u1) is finite.
      box_muller(1.0 - unit_double(w[0], w[1]), unit_double(w[2], w[3]), &z[0], &z[1]);
      for (int64_t j = 0; j < k; ++j) o[i + j] = mean + stddev * z[j];
    });
  } else {
    const float m = static_cast<float>(mean), s = static_cast<float>(stddev);
    fill_blocks(out->numel(), 4, seed, 16, [&](const Philox4x32::Block& w, int64_t i, int64_t k) {
      float z[4];
      box_muller(1.0f - unit_float(w[0]), unit_float(w[1]), &z[0], &z[1]);
      box_muller(1.0f - unit_float(w[2]), unit_float(w[3]), &z[2], &z[3]);
      for (int64_t j = 0; j < k; ++j) o[i + j] = static_cast<T>(m + s * z[j]);
    });
  }
}

template <typename T>
void RandintKernel(const DeviceContext&, int64_t low, int64_t high, const std::vector<int64_t>&,
                   DataType, const Place&, DenseTensor* out) {
  T* o = out->alloc<T>();
  const uint64_t range = static_cast<uint64_t>(high) - static_cast<uint64_t>(low);
  fill_blocks(out->numel(), 2, 0, 2, [&](const Philox4x32::Block& w, int64_t i, int64_t k) {
    for (int64_t j = 0; j < k; ++j) {
      const uint64_t v = bounded(u64(w[2 * j], w[2 * j + 1]), range);
      o[i + j] = static_cast<T>(static_cast<int64_t>(static_cast<uint64_t>(low) + v));
    }
  });
}

template <typename T>
void RandpermKernel(const DeviceContext&, int64_t n, DataType, const Place&, DenseTensor* out) {
  T* o = out->alloc<T>();
  if (n == 0) return;
  std::vector<int64_t> p(n);
  std::iota(p.begin(), p.end(), int64_t{0});
  // Fisher-Yates; swap k (for position n-1-k) uses block offset + k.
  const PhiloxRange r = philox_range_for(0, static_cast<uint64_t>(n));
  for (int64_t i = n - 1; i > 0; --i) {
    const Philox4x32::Block w = Philox4x32::block(r.key, r.offset + (n - 1 - i));
    const int64_t j = static_cast<int64_t>(bounded(u64(w[0], w[1]), static_cast<uint64_t>(i + 1)));
    std::swap(p[i], p[j]);
  }
  for (int64_t i = 0; i < n; ++i) o[i] = static_cast<T>(p[i]);
}

}  // namespace
}  // namespace oar::phi

using namespace oar::phi;  // NOLINT

OAR_REGISTER_KERNEL(uniform, CPU, UniformKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(gaussian, CPU, GaussianKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(randint, CPU, RandintKernel, int32_t, int64_t)
OAR_REGISTER_KERNEL(randperm, CPU, RandpermKernel, float, double, int32_t, int64_t)
