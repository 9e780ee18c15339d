// Backward helpers of the manipulation and linear-algebra ops (manipulation.yaml,
// linalg.yaml), composed of differentiable ops so that their gradients have
// gradients too. Header-only: included by the generated op files.
#pragma once

#include <string>
#include <vector>

#include "paddle_core/api/composite.h"

namespace oar::ops {

inline std::vector<int64_t> negated(const std::vector<int64_t>& v) {
  std::vector<int64_t> r(v.size());
  for (size_t i = 0; i < v.size(); ++i) r[i] = -v[i];
  return r;
}

/// The diagonal `offset` of the (dim1, dim2) planes, as a new last dim (a strided view
/// of a contiguous copy; its gradient is as_strided's scatter).
inline Tensor diagonal_of(const Tensor& x, int64_t offset, int64_t dim1, int64_t dim2) {
  const int r = x.rank();
  const int d1 = wrap_axis(dim1, r, "diagonal"), d2 = wrap_axis(dim2, r, "diagonal");
  const Dims st = contiguous_strides(x.dims());
  std::vector<int64_t> shape, stride;
  for (int i = 0; i < r; ++i) {
    if (i == d1 || i == d2) continue;
    shape.push_back(x.dims()[i]);
    stride.push_back(st[i]);
  }
  const int64_t n1 = x.dims()[d1], n2 = x.dims()[d2];
  int64_t len = offset >= 0 ? std::min(n1, n2 - offset) : std::min(n1 + offset, n2);
  if (len < 0) len = 0;
  shape.push_back(len);
  stride.push_back(st[d1] + st[d2]);
  const int64_t start = len == 0 ? 0 : (offset >= 0 ? offset * st[d2] : -offset * st[d1]);
  return as_strided(x, shape, stride, start);
}

/// Last two dims swapped.
inline Tensor mT(const Tensor& x) {
  std::vector<int64_t> perm(x.rank());
  for (int i = 0; i < x.rank(); ++i) perm[i] = i;
  std::swap(perm[x.rank() - 1], perm[x.rank() - 2]);
  return transpose(x, perm);
}

// ---- put_along_axis: out = arr with values reduced into the indexed positions.
namespace detail_put {
inline Tensor positions(const Tensor& arr, const Tensor& indices, int64_t axis) {
  Tensor ones = full_like(indices, Scalar(1.0), arr.dtype());
  return put_along_axis(zeros_like(arr), indices, ones, axis, "assign", true);  // 1 where written
}
// Per position: how many contributors (values, plus arr itself when it takes part).
inline Tensor contributors(const Tensor& arr, const Tensor& indices, int64_t axis, bool self,
                           const Tensor& arr_mask, const Tensor& val_mask) {
  (void)self;
  return put_along_axis(arr_mask, indices, val_mask, axis, "add", true);
}
}  // namespace detail_put

inline Tensor put_along_axis_grad_arr(const Tensor& arr, const Tensor& indices,
                                      const Tensor& values, const Tensor& out, const Tensor& g,
                                      int64_t axis, const std::string& reduce, bool self) {
  if (reduce == "assign") {
    return put_along_axis(g, indices, zeros_like(values), axis, "assign", true);
  }
  if (reduce == "add") {
    return self ? g : put_along_axis(g, indices, zeros_like(values), axis, "assign", true);
  }
  Tensor pos = detail_put::positions(arr, indices, axis);
  Tensor off = 1.0 - pos;
  if (!self) return g * off;
  if (reduce == "mul" || reduce == "multiply") return g * out / arr * pos + g * off;
  if (reduce == "mean") {
    Tensor cnt = put_along_axis(ones_like(arr), indices, ones_like(values), axis, "add", true);
    return g / cnt;
  }
  // amin / amax: the gradient is split evenly between the positions attaining the result.
  Tensor am = cast(equal(arr, out), g.dtype());
  Tensor vm = cast(equal(values, take_along_axis(out, indices, axis)), g.dtype());
  Tensor cnt = detail_put::contributors(arr, indices, axis, self, am, vm);
  return g * am / cnt;
}

inline Tensor put_along_axis_grad_values(const Tensor& arr, const Tensor& indices,
                                         const Tensor& values, const Tensor& out, const Tensor& g,
                                         int64_t axis, const std::string& reduce, bool self) {
  Tensor gv = take_along_axis(g, indices, axis);
  if (reduce == "assign" || reduce == "add") return gv;
  if (reduce == "mul" || reduce == "multiply") {
    return gv * take_along_axis(out, indices, axis) / values;
  }
  if (reduce == "mean") {
    Tensor base = self ? ones_like(arr) : zeros_like(arr);
    Tensor cnt = put_along_axis(base, indices, ones_like(values), axis, "add", true);
    return gv / take_along_axis(cnt, indices, axis);
  }
  Tensor pos = detail_put::positions(arr, indices, axis);
  Tensor am = self ? cast(equal(arr, out), g.dtype()) * pos : zeros_like(arr);
  Tensor vm = cast(equal(values, take_along_axis(out, indices, axis)), g.dtype());
  Tensor cnt = detail_put::contributors(arr, indices, axis, self, am, vm);
  return gv * vm / take_along_axis(cnt, indices, axis);
}

// ---- linear algebra (formulas for real matrices; batch dims lead).
namespace detail_la {
inline int64_t last(const Tensor& x, int k) { return x.dims()[x.rank() - k]; }
inline Tensor eye_like(int64_t n, const Tensor& like) { return eye(n, n, like.dtype(), like.place()); }
/// 1 / (v_j - v_i) off the diagonal, 0 on it: [*, k, k] from v [*, k].
inline Tensor inv_gaps(const Tensor& v) {
  Tensor d = unsqueeze(v, {-2}) - unsqueeze(v, {-1});
  Tensor I = eye_like(last(v, 1), v);
  return (1.0 - I) / (d + I);
}
/// The lower triangle of m with the diagonal halved (Cholesky's Phi).
inline Tensor phi(const Tensor& m) {
  return tril_triu(m, 0, true) - diag_embed(diagonal_of(m, 0, -2, -1), 0, -2, -1) * 0.5;
}
}  // namespace detail_la

inline Tensor det_grad(const Tensor& x, const Tensor& out, const Tensor& g) {
  return mT(inv(x)) * unsqueeze(g * out, {-1, -2});
}

inline Tensor triangular_solve_grad_x(const Tensor& a, const Tensor& x, const Tensor& g,
                                      bool upper, bool transpose, bool unit) {
  Tensor gb = triangular_solve(a, g, upper, !transpose, unit);
  Tensor ga = transpose ? -matmul(x, gb, false, true) : -matmul(gb, x, false, true);
  const int64_t k = unit ? 1 : 0;
  return upper ? tril_triu(ga, k, false) : tril_triu(ga, -k, true);
}

inline Tensor cholesky_grad(const Tensor& out, const Tensor& g, bool upper) {
  Tensor L = upper ? mT(out) : out;
  Tensor gL = upper ? mT(g) : g;
  Tensor p = detail_la::phi(matmul(L, gL, true, false));
  Tensor s = (p + mT(p)) * 0.5;
  Tensor x1 = triangular_solve(L, s, false, true, false);          // L^-T S
  return mT(triangular_solve(L, mT(x1), false, true, false));      // L^-T S L^-1
}

/// Reduced QR with m >= n (or square): A-bar = [Q-bar + Q copyltu(M)] R^-T,
/// M = R R-bar^T - Q-bar^T Q. Wide inputs split A = [X Y] with X square.
inline Tensor qr_grad(const Tensor& a, const Tensor& q, const Tensor& r, const Tensor& gq,
                      const Tensor& gr, const std::string& mode) {
  const int64_t m = detail_la::last(a, 2), n = detail_la::last(a, 1);
  OAR_ENFORCE(mode == "reduced" || m == n, Unimplemented,
              "qr: the gradient of mode='complete' needs a square input, got shape ", a.dims());
  if (m < n) {
    const int64_t rk = r.rank();
    Tensor r1 = slice(r, {rk - 1}, {0}, {m}), r2 = slice(r, {rk - 1}, {m}, {n});
    Tensor gr1 = slice(gr, {rk - 1}, {0}, {m}), gr2 = slice(gr, {rk - 1}, {m}, {n});
    Tensor y = slice(a, {rk - 1}, {m}, {n});
    Tensor gx = qr_grad(slice(a, {rk - 1}, {0}, {m}), q, r1, gq + matmul(y, gr2, false, true),
                        gr1, "reduced");
    return concat({gx, matmul(q, gr2)}, -1);
  }
  Tensor mm = matmul(r, gr, false, true) - matmul(gq, q, true, false);
  Tensor copyltu = tril_triu(mm, 0, true) + mT(tril_triu(mm, -1, true));
  Tensor b = gq + matmul(q, copyltu);
  return mT(triangular_solve(r, mT(b), true, false, false));
}

inline Tensor svd_grad(const Tensor& a, const Tensor& u, const Tensor& s, const Tensor& vh,
                       const Tensor& gu, const Tensor& gs, const Tensor& gvh, bool full) {
  const int64_t m = detail_la::last(a, 2), n = detail_la::last(a, 1), k = std::min(m, n);
  OAR_ENFORCE(!full || m == n, Unimplemented,
              "svd: the gradient with full_matrices=True needs a square input, got shape ",
              a.dims());
  Tensor v = mT(vh), gv = mT(gvh);
  Tensor f = detail_la::inv_gaps(s * s);
  Tensor utgu = matmul(u, gu, true, false), vtgv = matmul(v, gv, true, false);
  Tensor j = f * (utgu - mT(utgu)), kk = f * (vtgv - mT(vtgv));
  Tensor s_row = unsqueeze(s, {-2}), s_col = unsqueeze(s, {-1});
  Tensor core = j * s_row + diag_embed(gs, 0, -2, -1) + s_col * kk;
  Tensor ga = matmul(matmul(u, core), vh);
  if (m > k) ga = ga + matmul((gu - matmul(u, utgu)) / s_row, vh);
  if (n > k) ga = ga + matmul(u, (mT(gv) - matmul(mT(vtgv), vh)) / s_col);
  return ga;
}

inline Tensor eigh_grad(const Tensor& w, const Tensor& v, const Tensor& gw, const Tensor& gv) {
  Tensor inner = detail_la::inv_gaps(w) * matmul(v, gv, true, false) + diag_embed(gw, 0, -2, -1);
  return matmul(matmul(v, inner), v, false, true);
}

}  // namespace oar::ops
