// Kernels of math_functions.yaml that are not SLEEF's vector functions: square, reciprocal,
// integer rounding, classification (isnan/isinf/isfinite), nan_to_num, fmax/fmin, lerp and
// increment (atan2 and the float rounding are in math_functions_kernels.cc). Memory-bound, so
// built once, for the baseline, like binary_kernels.cc (Note [One copy of a loop], docs/notes/cpu_dispatch.md).
#include <cmath>
#include <limits>

#include "oar_generated/kernel_signatures.h"
#include "phi_kernels/cpu/elementwise.h"

namespace oar::phi {
namespace {

template <typename T>
void SquareKernel(const DeviceContext&, const DenseTensor& x, DenseTensor* out) {
  unary_kernel<T, T>(x, out, [](auto v) { return v * v; });
}

// grad_out x 2 ((grad_out x) 2, as the composite rounded it); grad_out has x's shape.
template <typename T>
void SquareGradKernel(const DeviceContext&, const DenseTensor& x, const DenseTensor& g, DenseTensor* dx) {
  OAR_ENFORCE(x.dims() == g.dims(), InvalidArgument, "square_grad: grad_out shape ", g.dims(), " must equal x shape ",
              x.dims());
  binary_kernel<T, T>(g, x, dx, [](auto d, auto v) { return d * v * decltype(v)(2); });
}

template <typename T>
void ReciprocalKernel(const DeviceContext&, const DenseTensor& x, DenseTensor* out) {
  unary_kernel<T, T>(x, out, [](auto v) { return decltype(v)(1) / v; });
}

// Rounding of integers: they are already integral and pass through (floats in
// math_functions_kernels.cc, on vectors).
template <typename T>
void IntRoundingKernel(const DeviceContext&, const DenseTensor& x, DenseTensor* out) {
  unary_kernel<T, T>(x, out, [](auto v) { return v; });
}

// Half away from zero (Paddle, C's round), at `decimals` decimal digits; integers here, floats
// in math_functions_kernels.cc.
template <typename T>
void RoundKernel(const DeviceContext&, const DenseTensor& x, int64_t decimals, DenseTensor* out) {
  if (decimals >= 0) {
    unary_kernel<T, T>(x, out, [](auto v) { return v; });
  } else {
    const double s = std::pow(10.0, static_cast<double>(-decimals));
    unary_kernel<T, T>(x, out,
                       [s](auto v) { return static_cast<decltype(v)>(std::round(static_cast<double>(v) / s) * s); });
  }
}

template <typename T>
void IsnanKernel(const DeviceContext&, const DenseTensor& x, DenseTensor* out) {
  unary_kernel<T, bool>(x, out, [](auto v) {
    if constexpr (std::is_floating_point_v<decltype(v)>)
      return v != v;
    else
      return false;
  });
}
template <typename T>
void IsinfKernel(const DeviceContext&, const DenseTensor& x, DenseTensor* out) {
  unary_kernel<T, bool>(x, out, [](auto v) {
    if constexpr (std::is_floating_point_v<decltype(v)>)
      return std::isinf(v);
    else
      return false;
  });
}
template <typename T>
void IsfiniteKernel(const DeviceContext&, const DenseTensor& x, DenseTensor* out) {
  unary_kernel<T, bool>(x, out, [](auto v) {
    if constexpr (std::is_floating_point_v<decltype(v)>)
      return std::isfinite(v);
    else
      return true;
  });
}

template <typename T>
void NanToNumKernel(const DeviceContext&, const DenseTensor& x, double nan, double posinf, double neginf,
                    DenseTensor* out) {
  using M = OpMath<T>;
  // Replacement values are rounded to T (a float16 posinf of 1e300 becomes float16's max).
  M lim;
  if constexpr (std::is_same_v<T, float16>) {
    lim = M(65504.0f);
  } else if constexpr (std::is_same_v<T, bfloat16>) {
    lim = M(3.3895313892515355e38f);
  } else {
    lim = std::numeric_limits<T>::max();
  }
  auto clamp = [lim](double v) {
    return static_cast<M>(std::isinf(v) ? v : std::max<double>(-lim, std::min<double>(lim, v)));
  };
  const M n = static_cast<M>(nan), p = clamp(posinf), q = clamp(neginf);
  unary_kernel<T, T>(x, out, [n, p, q](M v) { return v != v ? n : (std::isinf(v) ? (v > 0 ? p : q) : v); });
}

// fmax/fmin ignore a NaN operand (NaN only when both are).
template <typename T>
void FmaxKernel(const DeviceContext&, const DenseTensor& x, const DenseTensor& y, DenseTensor* out) {
  binary_kernel<T, T>(x, y, out, [](auto a, auto b) { return (b != b || a >= b) ? a : b; });
}
template <typename T>
void FminKernel(const DeviceContext&, const DenseTensor& x, const DenseTensor& y, DenseTensor* out) {
  binary_kernel<T, T>(x, y, out, [](auto a, auto b) { return (b != b || a <= b) ? a : b; });
}

template <typename T>
void LerpKernel(const DeviceContext&, const DenseTensor& x, const DenseTensor& y, const DenseTensor& weight,
                DenseTensor* out) {
  using M = OpMath<T>;
  ternary_kernel<T, T, T>(weight, x, y, out, [](T w, M a, M b) { return a + static_cast<M>(w) * (b - a); });
}

template <typename T>
void IncrementKernel(const DeviceContext&, const DenseTensor& x, double value, DenseTensor* out) {
  using M = OpMath<T>;
  const M v = static_cast<M>(value);
  unary_kernel<T, T>(x, out, [v](M a) { return a + v; });
}

}  // namespace
}  // namespace oar::phi

using namespace oar::phi;  // NOLINT

#define OAR_INT_TYPES int8_t, uint8_t, int16_t, int32_t, int64_t
OAR_REGISTER_KERNEL(square, CPU, SquareKernel, OAR_FLOAT_TYPES, int32_t, int64_t)
OAR_REGISTER_KERNEL(square_grad, CPU, SquareGradKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(reciprocal, CPU, ReciprocalKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(floor, CPU, IntRoundingKernel, OAR_INT_TYPES)
OAR_REGISTER_KERNEL(ceil, CPU, IntRoundingKernel, OAR_INT_TYPES)
OAR_REGISTER_KERNEL(trunc, CPU, IntRoundingKernel, OAR_INT_TYPES)
OAR_REGISTER_KERNEL(round, CPU, RoundKernel, OAR_INT_TYPES)
OAR_REGISTER_KERNEL(isnan, CPU, IsnanKernel, OAR_ALL_TYPES)
OAR_REGISTER_KERNEL(isinf, CPU, IsinfKernel, OAR_ALL_TYPES)
OAR_REGISTER_KERNEL(isfinite, CPU, IsfiniteKernel, OAR_ALL_TYPES)
OAR_REGISTER_KERNEL(nan_to_num, CPU, NanToNumKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(fmax, CPU, FmaxKernel, OAR_NUMERIC_TYPES)
OAR_REGISTER_KERNEL(fmin, CPU, FminKernel, OAR_NUMERIC_TYPES)
OAR_REGISTER_KERNEL(lerp, CPU, LerpKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(increment, CPU, IncrementKernel, OAR_NUMERIC_TYPES)
