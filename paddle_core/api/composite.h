// Hand-written functions composed of generated ops, used by backward formulas and
// by other C++ code: operators on Tensor, reductions back to a shape, the matmul
// gradients. Being compositions of differentiable ops, they are differentiable too.
#pragma once

#include <vector>

#include "oar_generated/ops_api.h"

namespace oar {

Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a);
Tensor operator+(const Tensor& a, double b);
Tensor operator-(const Tensor& a, double b);
Tensor operator*(const Tensor& a, double b);
Tensor operator/(const Tensor& a, double b);
Tensor operator-(double a, const Tensor& b);
Tensor operator*(double a, const Tensor& b);

namespace ops {

/// conj(t) for a complex t, t itself (no op recorded) for a real one. Backward formulas
/// multiply the incoming gradient by the conjugate of the local derivative
/// (Note [Complex autograd] in docs/notes/autograd.md), which this keeps free for real ops.
Tensor conjugate(const Tensor& t);
/// Zeros on `place` (a gradient that never arrived: its forward output's place).
Tensor zeros(const std::vector<int64_t>& shape, DataType dtype, const Place& place);
Tensor zeros_like(const Tensor& x);
Tensor ones_like(const Tensor& x);
/// Sums `g` (broadcast from like's shape) back to like's shape.
Tensor sum_to(const Tensor& g, const Tensor& like);
/// The inverse of a permutation (for transpose's gradient).
std::vector<int64_t> inverse_perm(const std::vector<int64_t>& perm);
/// Broadcasts a reduction's gradient back to the input's shape.
Tensor unreduce(const Tensor& g, const Tensor& x, const std::vector<int64_t>& axis, bool keepdim);
Tensor minmax_grad(const Tensor& x, const Tensor& out, const Tensor& g,
                   const std::vector<int64_t>& axis, bool keepdim);
Tensor prod_grad(const Tensor& x, const Tensor& out, const Tensor& g,
                 const std::vector<int64_t>& axis, bool keepdim);
/// Third derivative of gelu (gelu_grad2's gradient), composed of ops so that every
/// order of gelu's derivatives is differentiable.
Tensor gelu_grad3(const Tensor& x, bool approximate);
Tensor matmul_grad_x(const Tensor& x, const Tensor& y, const Tensor& g, bool tx, bool ty);
Tensor matmul_grad_y(const Tensor& x, const Tensor& y, const Tensor& g, bool tx, bool ty);

}  // namespace ops
}  // namespace oar
