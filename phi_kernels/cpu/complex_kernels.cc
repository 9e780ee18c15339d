// The complex64/complex128 kernels of the elementwise ops and reductions that Paddle
// runs on complex tensors (the real dtypes' kernels stay in their own files), and the
// kernels of complex.yaml: real, imag, conj, angle, complex, as_complex, as_real.
#include <cmath>
#include <complex>
#include <cstring>

#include "oar_generated/kernel_signatures.h"
#include "paddle_core/meta/infer_meta.h"
#include "phi_kernels/cpu/elementwise.h"
#include "phi_kernels/cpu/reduce.h"

namespace oar::phi {
namespace {

#define OAR_CX_BINARY(Name, expr)                                                                 \
  template <typename T>                                                                           \
  void Name(const DeviceContext&, const DenseTensor& x, const DenseTensor& y, DenseTensor* out) { \
    binary_kernel<T, T>(x, y, out, [](T a, T b) { return expr; });                                \
  }
OAR_CX_BINARY(CxAddKernel, a + b)
OAR_CX_BINARY(CxSubtractKernel, a - b)
OAR_CX_BINARY(CxMultiplyKernel, a* b)
OAR_CX_BINARY(CxDivideKernel, a / b)
OAR_CX_BINARY(CxPowKernel, std::pow(a, b))

#define OAR_CX_COMPARE(Name, expr)                                                                \
  template <typename T>                                                                           \
  void Name(const DeviceContext&, const DenseTensor& x, const DenseTensor& y, DenseTensor* out) { \
    binary_kernel<T, bool>(x, y, out, [](T a, T b) { return expr; });                             \
  }
OAR_CX_COMPARE(CxEqualKernel, a == b)
OAR_CX_COMPARE(CxNotEqualKernel, a != b)

#define OAR_CX_UNARY(Name, Out, expr)                                       \
  template <typename T>                                                     \
  void Name(const DeviceContext&, const DenseTensor& x, DenseTensor* out) { \
    unary_kernel<T, Out>(x, out, [](T v) { return expr; });                 \
  }
OAR_CX_UNARY(CxNegKernel, T, -v)
OAR_CX_UNARY(CxExpKernel, T, std::exp(v))
OAR_CX_UNARY(CxLogKernel, T, std::log(v))
OAR_CX_UNARY(CxSqrtKernel, T, std::sqrt(v))
OAR_CX_UNARY(CxAbsKernel, typename T::value_type, std::abs(v))
// sign of a complex number: x / |x| (0 at 0), as PyTorch's sgn; abs's gradient uses it.
OAR_CX_UNARY(CxSignKernel, T, v == T(0) ? T(0) : v / std::abs(v))

template <typename T>
void CxPowScalarKernel(const DeviceContext&, const DenseTensor& x, double y, DenseTensor* out) {
  using V = typename T::value_type;
  if (y == 2.0) {
    unary_kernel<T, T>(x, out, [](T v) { return v * v; });
  } else {
    unary_kernel<T, T>(x, out, [y](T v) { return std::pow(v, static_cast<V>(y)); });
  }
}

template <typename T>
void CxScaleKernel(const DeviceContext&, const DenseTensor& x, double scale, double bias, bool bias_after_scale,
                   DenseTensor* out) {
  using V = typename T::value_type;
  const V s = static_cast<V>(scale), b = static_cast<V>(bias_after_scale ? bias : bias * scale);
  unary_kernel<T, T>(x, out, [s, b](T v) { return v * s + b; });
}

// ---- reductions: a plain fold in T (std::complex has no OpenMP reduction)
template <typename T>
void CxSumKernel(const DeviceContext&, const DenseTensor& x, const std::vector<int64_t>& axis, DataType, bool,
                 DenseTensor* out) {
  OAR_ENFORCE(out->dtype() == x.dtype(), InvalidType, "sum: a ", dtype_name(x.dtype()),
              " tensor sums in its own dtype, got dtype=", dtype_name(out->dtype()));
  reduce_kernel<T, T, T>(
      x, meta::reduce_axes(axis, x.rank(), "sum"), out, T(0), [](T a, T b) { return a + b; },
      [](T a, int64_t) { return a; });
}

template <typename T>
void CxMeanKernel(const DeviceContext&, const DenseTensor& x, const std::vector<int64_t>& axis, bool,
                  DenseTensor* out) {
  using V = typename T::value_type;
  reduce_kernel<T, T, T>(
      x, meta::reduce_axes(axis, x.rank(), "mean"), out, T(0), [](T a, T b) { return a + b; },
      [](T a, int64_t n) { return a / static_cast<V>(n); });
}

template <typename T>
void CxProdKernel(const DeviceContext&, const DenseTensor& x, const std::vector<int64_t>& axis, bool, DataType,
                  DenseTensor* out) {
  OAR_ENFORCE(out->dtype() == x.dtype(), InvalidType, "prod: a ", dtype_name(x.dtype()),
              " tensor multiplies in its own dtype, got dtype=", dtype_name(out->dtype()));
  reduce_kernel<T, T, T>(
      x, meta::reduce_axes(axis, x.rank(), "prod"), out, T(1), [](T a, T b) { return a * b; },
      [](T a, int64_t) { return a; });
}

template <typename T>
void CxSumToKernel(const DeviceContext&, const DenseTensor& x, const std::vector<int64_t>& shape, DenseTensor* out) {
  std::vector<int> axes;
  const int lead = x.rank() - static_cast<int>(shape.size());
  for (int i = 0; i < x.rank(); ++i) {
    if (i < lead || (shape[i - lead] == 1 && x.dims()[i] != 1)) axes.push_back(i);
  }
  if (axes.empty()) {
    out->alloc();
    copy_into(x, out);
    return;
  }
  reduce_kernel<T, T, T>(
      x, axes, out, T(0), [](T a, T b) { return a + b; }, [](T a, int64_t) { return a; });
}

// ---- complex.yaml: kernels for complex inputs and, where Paddle accepts them, real ones
template <typename T>
void RealKernel(const DeviceContext&, const DenseTensor& x, DenseTensor* out) {
  if constexpr (is_complex_v<T>) {
    unary_kernel<T, typename T::value_type>(x, out, [](T v) { return v.real(); });
  } else {
    unary_kernel<T, T>(x, out, [](auto v) { return v; });
  }
}

template <typename T>
void ImagKernel(const DeviceContext&, const DenseTensor& x, DenseTensor* out) {
  if constexpr (is_complex_v<T>) {
    unary_kernel<T, typename T::value_type>(x, out, [](T v) { return v.imag(); });
  } else {
    unary_kernel<T, T>(x, out, [](auto v) { return decltype(v)(0); });
  }
}

template <typename T>
void ConjKernel(const DeviceContext&, const DenseTensor& x, DenseTensor* out) {
  if constexpr (is_complex_v<T>) {
    unary_kernel<T, T>(x, out, [](T v) { return std::conj(v); });
  } else {
    unary_kernel<T, T>(x, out, [](auto v) { return v; });
  }
}

template <typename T>
void AngleKernel(const DeviceContext&, const DenseTensor& x, DenseTensor* out) {
  if constexpr (is_complex_v<T>) {
    unary_kernel<T, typename T::value_type>(x, out, [](T v) { return std::arg(v); });
  } else {  // atan2(0, x): pi for negative x (and -0.0), 0 otherwise, NaN stays NaN
    unary_kernel<T, T>(x, out, [](auto v) { return std::atan2(decltype(v)(0), v); });
  }
}

template <typename T>
void ComplexKernel(const DeviceContext&, const DenseTensor& re, const DenseTensor& im, DenseTensor* out) {
  binary_kernel<T, std::complex<T>>(re, im, out, [](T a, T b) { return std::complex<T>(a, b); });
}

// as_complex / as_real: the same bytes, [..., 2] reals <-> complex; a copy of a
// contiguous input (Paddle's results do not share memory either).
template <typename T>
void AsComplexKernel(const DeviceContext&, const DenseTensor& x, DenseTensor* out) {
  DenseTensor c = contiguous(x);
  void* p = out->alloc();
  if (out->numel() > 0) std::memcpy(p, c.raw_data(), out->numel() * sizeof(std::complex<T>));
}

template <typename T>
void AsRealKernel(const DeviceContext&, const DenseTensor& x, DenseTensor* out) {
  DenseTensor c = contiguous(x);
  void* p = out->alloc();
  if (x.numel() > 0) std::memcpy(p, c.raw_data(), x.numel() * sizeof(T));
}

}  // namespace
}  // namespace oar::phi

using namespace oar::phi;  // NOLINT: registration macros name the kernels unqualified

OAR_REGISTER_KERNEL(add, CPU, CxAddKernel, OAR_COMPLEX_TYPES)
OAR_REGISTER_KERNEL(subtract, CPU, CxSubtractKernel, OAR_COMPLEX_TYPES)
OAR_REGISTER_KERNEL(multiply, CPU, CxMultiplyKernel, OAR_COMPLEX_TYPES)
OAR_REGISTER_KERNEL(divide, CPU, CxDivideKernel, OAR_COMPLEX_TYPES)
OAR_REGISTER_KERNEL(elementwise_pow, CPU, CxPowKernel, OAR_COMPLEX_TYPES)
OAR_REGISTER_KERNEL(equal, CPU, CxEqualKernel, OAR_COMPLEX_TYPES)
OAR_REGISTER_KERNEL(not_equal, CPU, CxNotEqualKernel, OAR_COMPLEX_TYPES)
OAR_REGISTER_KERNEL(neg, CPU, CxNegKernel, OAR_COMPLEX_TYPES)
OAR_REGISTER_KERNEL(exp, CPU, CxExpKernel, OAR_COMPLEX_TYPES)
OAR_REGISTER_KERNEL(log, CPU, CxLogKernel, OAR_COMPLEX_TYPES)
OAR_REGISTER_KERNEL(sqrt, CPU, CxSqrtKernel, OAR_COMPLEX_TYPES)
OAR_REGISTER_KERNEL(abs, CPU, CxAbsKernel, OAR_COMPLEX_TYPES)
OAR_REGISTER_KERNEL(sign, CPU, CxSignKernel, OAR_COMPLEX_TYPES)
OAR_REGISTER_KERNEL(pow, CPU, CxPowScalarKernel, OAR_COMPLEX_TYPES)
OAR_REGISTER_KERNEL(scale, CPU, CxScaleKernel, OAR_COMPLEX_TYPES)
OAR_REGISTER_KERNEL(sum, CPU, CxSumKernel, OAR_COMPLEX_TYPES)
OAR_REGISTER_KERNEL(mean, CPU, CxMeanKernel, OAR_COMPLEX_TYPES)
OAR_REGISTER_KERNEL(prod, CPU, CxProdKernel, OAR_COMPLEX_TYPES)
OAR_REGISTER_KERNEL(sum_to, CPU, CxSumToKernel, OAR_COMPLEX_TYPES)
OAR_REGISTER_KERNEL(real, CPU, RealKernel, OAR_COMPLEX_TYPES, float, double)
OAR_REGISTER_KERNEL(imag, CPU, ImagKernel, OAR_COMPLEX_TYPES, float, double)
OAR_REGISTER_KERNEL(conj, CPU, ConjKernel, OAR_COMPLEX_TYPES, float, double, int32_t, int64_t)
OAR_REGISTER_KERNEL(angle, CPU, AngleKernel, OAR_COMPLEX_TYPES, float, double)
OAR_REGISTER_KERNEL(complex, CPU, ComplexKernel, float, double)
OAR_REGISTER_KERNEL(as_complex, CPU, AsComplexKernel, float, double)
OAR_REGISTER_KERNEL(as_real, CPU, AsRealKernel, OAR_COMPLEX_TYPES)
