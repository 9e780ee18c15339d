// Backward and decomposition helpers of stats.yaml/reduce.yaml, composed of ops (so
// they differentiate again), in the style of composite.h.
#pragma once

#include <vector>

#include "paddle_core/api/composite.h"

namespace oar::ops {

/// d var(x) / dx applied to `g`: unreduce(g) * 2 (x - mean) / (N - unbiased).
Tensor var_grad(const Tensor& x, const Tensor& g, const std::vector<int64_t>& axis,
                bool unbiased, bool keepdim);
/// Gradient of a one-axis selection (kthvalue, mode): g scattered to `indices` along axis.
Tensor select_grad(const Tensor& x, const Tensor& indices, const Tensor& g, int64_t axis,
                   bool keepdim);
/// Gradient of p_norm for every p (inf/-inf: split between the extreme entries; 0: zero).
Tensor p_norm_grad(const Tensor& x, const Tensor& out, const Tensor& g, double p,
                   const std::vector<int64_t>& axis, bool keepdim);
/// Gradient of nansum: g spread over x's shape, 0 at x's NaNs.
Tensor nansum_grad(const Tensor& x, const Tensor& g, const std::vector<int64_t>& axis, bool keepdim);
/// Gradient of glu: [g sigmoid(b), g a sigmoid(b) (1 - sigmoid(b))] along axis, a and b x's halves.
Tensor glu_grad(const Tensor& x, const Tensor& g, int64_t axis);
/// Elements per result of a reduction of x over `axis` ({} = all axes); the divisor of
/// mean's and var's decompositions (`decomp:` in reduce.yaml/stats.yaml).
double reduced_count(const Tensor& x, const std::vector<int64_t>& axis);
/// Gradient of logcumsumexp: sum_{j >= i} g_j exp(x_i - out_j), in log space by sign of g.
Tensor logcumsumexp_grad(const Tensor& x, const Tensor& out, const Tensor& g, int64_t axis,
                         bool flatten, bool exclusive, bool reverse);

}  // namespace oar::ops
