#include "paddle_core/api/composite_complex.h"

namespace oar::ops {

namespace {
int64_t last_axis(const std::vector<int64_t>& axes, int rank) {
  const int64_t a = axes.back();
  return a < 0 ? a + rank : a;
}
}  // namespace

Tensor angle_grad(const Tensor& x, const Tensor& grad) {
  if (!is_complex(x.dtype())) return zeros_like(grad);
  Tensor re = real(x), im = imag(x);
  Tensor r2 = re * re + im * im;
  Tensor safe = r2 + cast(equal(r2, zeros_like(r2)), r2.dtype());  // x == 0: numerator is 0 too
  return complex(-grad * im / safe, grad * re / safe);
}

std::string fft_adjoint_norm(const std::string& normalization) {
  if (normalization == "backward") return "forward";
  if (normalization == "forward") return "backward";
  return normalization;
}

Tensor fft_r2c_grad(const Tensor& x, const Tensor& grad, const std::vector<int64_t>& axes,
                    const std::string& normalization, bool forward, bool onesided) {
  Tensor g = grad;
  if (onesided) {
    const int64_t ax = last_axis(axes, x.rank());
    const int64_t missing = x.dims()[ax] - grad.dims()[ax];
    if (missing > 0) {
      std::vector<int64_t> shape = grad.dims().vec();
      shape[ax] = missing;
      g = concat({grad, zeros(shape, grad.dtype(), grad.place())}, ax);
    }
  }
  return real(fft_c2c(g, axes, fft_adjoint_norm(normalization), !forward));
}

Tensor fft_c2r_grad(const Tensor& grad, const std::vector<int64_t>& axes, const std::string& normalization,
                    bool forward, int64_t half) {
  Tensor g = fft_r2c(grad, axes, fft_adjoint_norm(normalization), !forward, true);
  const int64_t ax = last_axis(axes, grad.rank());
  const int64_t n = grad.dims()[ax], doubled = n - half;  // bins 1..n-half have a mirror image
  if (doubled <= 0) return g;
  const DataType real_t = complex_to_real(g.dtype());
  std::vector<Tensor> parts = {full({1}, 1.0, real_t, g.place()), full({doubled}, 2.0, real_t, g.place())};
  if (half - 1 - doubled > 0) parts.push_back(full({half - 1 - doubled}, 1.0, real_t, g.place()));
  std::vector<int64_t> shape(grad.rank() - ax, 1);
  shape[0] = half;
  return g * reshape(concat(parts, 0), shape);
}

}  // namespace oar::ops
