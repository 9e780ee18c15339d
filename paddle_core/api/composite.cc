#include "paddle_core/api/composite.h"

#include <algorithm>

#include "paddle_core/api/dist_dims.h"
#include "paddle_core/meta/infer_meta.h"

namespace oar {

std::atomic<GlobalDimsFn> g_global_dims_fn{nullptr};

Tensor operator+(const Tensor& a, const Tensor& b) { return ops::add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return ops::subtract(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return ops::multiply(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return ops::divide(a, b); }
Tensor operator-(const Tensor& a) { return ops::neg(a); }
Tensor operator+(const Tensor& a, double b) { return ops::scale(a, 1.0, b, true); }
Tensor operator-(const Tensor& a, double b) { return ops::scale(a, 1.0, -b, true); }
Tensor operator*(const Tensor& a, double b) { return ops::scale(a, b, 0.0, true); }
Tensor operator/(const Tensor& a, double b) { return ops::scale(a, 1.0 / b, 0.0, true); }
Tensor operator-(double a, const Tensor& b) { return ops::scale(b, -1.0, a, true); }
Tensor operator*(double a, const Tensor& b) { return ops::scale(b, a, 0.0, true); }

namespace ops {

Tensor zeros(const std::vector<int64_t>& shape, DataType dtype, const Place& place) {
  return full(shape, Scalar(0.0), dtype, place);
}
Tensor zeros_like(const Tensor& x) { return full_like(x, Scalar(0.0), x.dtype()); }
Tensor ones_like(const Tensor& x) { return full_like(x, Scalar(1.0), x.dtype()); }

Tensor sum_to(const Tensor& g, const Tensor& like) {
  if (dist_dims(g) == dist_dims(like)) return g;
  return sum_to(g, dist_dims(like).vec());
}

std::vector<int64_t> inverse_perm(const std::vector<int64_t>& perm) {
  std::vector<int64_t> inv(perm.size());
  const int64_t r = static_cast<int64_t>(perm.size());
  for (int64_t i = 0; i < r; ++i) inv[perm[i] < 0 ? perm[i] + r : perm[i]] = i;
  return inv;
}

Tensor unreduce(const Tensor& g, const Tensor& x, const std::vector<int64_t>& axis,
                bool keepdim) {
  Tensor gg = g;
  if (!keepdim && x.rank() > 0) {
    auto axes = meta::reduce_axes(axis, x.rank(), "sum");
    std::vector<int64_t> shape = dist_dims(x).vec();
    for (int a : axes) shape[a] = 1;
    gg = reshape(g, shape);
  }
  return expand(gg, dist_dims(x).vec());
}

Tensor minmax_grad(const Tensor& x, const Tensor& out, const Tensor& g,
                   const std::vector<int64_t>& axis, bool keepdim) {
  // The gradient is split evenly between the positions that attain the extreme.
  Tensor o = unreduce(out, x, axis, keepdim);
  Tensor mask = cast(equal(x, o), g.dtype());
  Tensor count = unreduce(sum(mask, axis, DataType::UNDEFINED, keepdim), x, axis, keepdim);
  return unreduce(g, x, axis, keepdim) * mask / count;
}

Tensor conjugate(const Tensor& t) { return is_complex(t.dtype()) ? conj(t) : t; }

Tensor prod_grad(const Tensor& x, const Tensor& out, const Tensor& g,
                 const std::vector<int64_t>& axis, bool keepdim) {
  // d prod / dx_i = prod / x_i (inputs with zeros are not special-cased yet:
  // their gradient is computed as prod / x and may be nan).
  return unreduce(g * conjugate(out), x, axis, keepdim) / conjugate(x);
}

Tensor gelu_grad3(const Tensor& x, bool approximate) {
  if (!approximate) {  // d2 = pdf(x) (2 - x^2), so d3 = pdf(x) (x^3 - 4x)
    Tensor pdf = exp(x * x * -0.5) * 0.3989422804014327;
    return pdf * (x * x * x - x * 4.0);
  }
  // d2 = s u' + x s u''/2 - x t s u'^2 with u = c (x + a x^3), t = tanh(u), s = 1 - t^2
  // (gelu_d2 in phi_kernels/cpu/unary_kernels.cc); t' = s u', s' = -2 t s u'.
  const double c = 0.7978845608028654, a = 0.044715;
  Tensor x2 = x * x;
  Tensor t = tanh((x + x2 * x * a) * c);
  Tensor s = 1.0 - t * t;
  Tensor du = (x2 * (3.0 * a) + 1.0) * c, d2u = x * (6.0 * c * a), du2 = du * du;
  Tensor ds = t * s * du * -2.0;
  Tensor first = ds * du + s * d2u * 1.5 + x * 0.5 * (ds * d2u + s * (6.0 * c * a));
  return first - (t * s * du2 + x * s * du * s * du2 + x * t * ds * du2 +
                  x * t * s * du * d2u * 2.0);
}

namespace {
// matmul treats 1-D operands as a row (x) or a column (y), ignoring their transpose
// flags; the gradients do too.
struct MatmulOperands {
  Tensor x, y, g;
};
MatmulOperands as_matrices(const Tensor& x, const Tensor& y, const Tensor& g, bool* tx, bool* ty) {
  MatmulOperands m{x, y, g};
  if (x.rank() == 1) *tx = false;
  if (y.rank() == 1) *ty = false;
  // y first: for vector . vector, g is 0-D and becomes [1] and then [1, 1].
  if (y.rank() == 1) {
    m.y = unsqueeze(y, {-1});
    m.g = unsqueeze(m.g, {-1});
  }
  if (x.rank() == 1) {
    m.x = unsqueeze(x, {0});
    m.g = unsqueeze(m.g, {-2});
  }
  return m;
}
Tensor reduce_batch(const Tensor& d, const Tensor& like_matrix, const Tensor& like) {
  Tensor r = sum_to(d, like_matrix);
  return dist_dims(r) == dist_dims(like) ? r : reshape(r, dist_dims(like).vec());
}
}  // namespace

Tensor matmul_grad_x(const Tensor& x, const Tensor& y, const Tensor& g, bool tx, bool ty) {
  auto m = as_matrices(x, y, g, &tx, &ty);
  const Tensor yc = conjugate(m.y);  // complex: dL/dx = g y^H (Note [Complex autograd])
  Tensor d = tx ? matmul(yc, m.g, ty, true) : matmul(m.g, yc, false, !ty);
  return reduce_batch(d, m.x, x);
}

Tensor matmul_grad_y(const Tensor& x, const Tensor& y, const Tensor& g, bool tx, bool ty) {
  auto m = as_matrices(x, y, g, &tx, &ty);
  const bool local = x.impl()->dist == nullptr && m.g.impl()->dist == nullptr;  // dist tensors: per batch
  if (local && y.rank() == 2 && x.rank() > 2 && !tx && x.numel() > 0 && m.g.numel() > 0) {
    // A weight without batch dims: dL/dy sums over every row of the batch, so it is one GEMM
    // of the flattened rows ([rows, K]^T [rows, N]) instead of a product per batch element
    // and a reduction over the batch.
    const int64_t k = x.dims()[x.rank() - 1], n = m.g.dims()[m.g.rank() - 1];
    const Tensor x2 = reshape(conjugate(m.x), {-1, k}), g2 = reshape(m.g, {-1, n});
    return ty ? matmul(g2, x2, true, false) : matmul(x2, g2, true, false);
  }
  const Tensor xc = conjugate(m.x);
  Tensor d = ty ? matmul(m.g, xc, true, tx) : matmul(xc, m.g, !tx, false);
  return reduce_batch(d, m.y, y);
}

}  // namespace ops
}  // namespace oar
