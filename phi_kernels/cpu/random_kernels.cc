// Random kernels: Paddle's CPU streams (paddle_core/tensor/generator.h). Each kernel
// draws its elements in order from one engine through a std:: distribution, exactly as
// Paddle's CPU kernels do, so seeded Paddle scripts give the same numbers. float16 and
// bfloat16 draw in float and round, as Paddle does.
#include <algorithm>
#include <numeric>
#include <random>
#include <type_traits>

#include "oar_generated/kernel_signatures.h"
#include "paddle_core/tensor/generator.h"

namespace oar::phi {
namespace {

// The type a std:: distribution draws T's values in.
template <typename T>
using DrawType = std::conditional_t<std::is_same_v<T, double>, double, float>;

template <typename T>
void UniformKernel(const DeviceContext&, const std::vector<int64_t>&, DataType, double min,
                   double max, int64_t seed, const Place&, DenseTensor* out) {
  T* o = out->alloc<T>();
  const int64_t n = out->numel();
  using D = DrawType<T>;
  // Paddle's min and max reach its kernel as float, for float64 draws too.
  const D lo = static_cast<D>(static_cast<float>(min)), hi = static_cast<D>(static_cast<float>(max));
  with_cpu_engine(seed, [&](CpuEngine& engine) {
    std::uniform_real_distribution<D> dist(lo, hi);
    for (int64_t i = 0; i < n; ++i) o[i] = static_cast<T>(dist(engine));
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
    std::normal_distribution<D> dist(m, s);
    for (int64_t i = 0; i < n; ++i) o[i] = static_cast<T>(dist(engine));
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
