#include "paddle_core/api/composite_math.h"

#include <cmath>

#include "paddle_core/api/dist_dims.h"
#include "paddle_core/meta/infer_meta.h"

namespace oar::ops {

Tensor var_grad(const Tensor& x, const Tensor& g, const std::vector<int64_t>& axis,
                bool unbiased, bool keepdim) {
  auto axes = meta::reduce_axes(axis, x.rank(), "var");
  int64_t n = 1;
  for (int a : axes) n *= dist_dims(x)[a];
  const double denom = static_cast<double>(n) - (unbiased ? 1.0 : 0.0);
  Tensor centered = x - mean(x, axis, true);
  return unreduce(g, x, axis, keepdim) * centered * (2.0 / denom);
}

Tensor nansum_grad(const Tensor& x, const Tensor& g, const std::vector<int64_t>& axis, bool keepdim) {
  Tensor gu = unreduce(g, x, axis, keepdim);
  return where(isnan(x), zeros_like(gu), gu);
}

Tensor glu_grad(const Tensor& x, const Tensor& g, int64_t axis) {
  const int64_t ax = axis < 0 ? axis + x.rank() : axis, h = x.dims()[ax] / 2;
  const Tensor a = slice(x, {ax}, {0}, {h}), s = sigmoid(slice(x, {ax}, {h}, {2 * h}));
  const Tensor gs = g * s;
  return concat({gs, gs * a * (1.0 - s)}, ax);
}

double reduced_count(const Tensor& x, const std::vector<int64_t>& axis) {
  int64_t n = 1;
  for (int a : meta::reduce_axes(axis, x.rank(), "reduced_count")) n *= dist_dims(x)[a];
  return static_cast<double>(n);
}

Tensor select_grad(const Tensor& x, const Tensor& indices, const Tensor& g, int64_t axis,
                   bool keepdim) {
  if (x.rank() == 0) return reshape(g, {});
  if (keepdim) return gather_axis_grad(x, indices, g, axis);
  return gather_axis_grad(x, unsqueeze(indices, {axis}), unsqueeze(g, {axis}), axis);
}

Tensor p_norm_grad(const Tensor& x, const Tensor& out, const Tensor& g, double p,
                   const std::vector<int64_t>& axis, bool keepdim) {
  Tensor gu = unreduce(g, x, axis, keepdim);
  Tensor ou = unreduce(out, x, axis, keepdim);
  Tensor zero = zeros_like(x);
  if (p == 0) return zero;
  if (std::isinf(p)) {  // |x_i| attaining the max (min) share the gradient
    Tensor mask = cast(equal(abs(x), ou), g.dtype());
    Tensor count = unreduce(sum(mask, axis, DataType::UNDEFINED, keepdim), x, axis, keepdim);
    return gu * sign(x) * mask / count;
  }
  if (p == 1) return gu * sign(x);
  // out == 0 only when every |x_i| is 0: use 1 there, the numerator is 0.
  Tensor safe = where(equal(ou, zero), ones_like(ou), ou);
  if (p == 2) return gu * x / safe;
  Tensor r = gu * sign(x) * pow(abs(x), p - 1.0) / pow(safe, p - 1.0);
  return where(equal(x, zero), zero, r);
}

Tensor logcumsumexp_grad(const Tensor& x, const Tensor& out, const Tensor& g, int64_t axis,
                         bool flatten, bool exclusive, bool reverse) {
  Tensor xf = flatten ? reshape(x, {-1}) : x;
  const int64_t ax = flatten ? 0 : axis;
  Tensor zero = zeros_like(g);
  Tensor pos = where(greater_than(g, zero), g, zero);
  Tensor neg = where(less_than(g, zero), -g, zero);
  Tensor lp = logcumsumexp(log(pos) - out, ax, false, exclusive, !reverse);
  Tensor ln = logcumsumexp(log(neg) - out, ax, false, exclusive, !reverse);
  Tensor dx = exp(xf + lp) - exp(xf + ln);
  return flatten ? reshape(dx, dist_dims(x).vec()) : dx;
}

}  // namespace oar::ops
