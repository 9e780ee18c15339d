// Helpers used by the backward formulas of cnn.yaml (included by the generated op
// files): attribute arithmetic on shapes, and compositions of differentiable ops.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "oar_generated/ops_api.h"
#include "paddle_core/api/composite.h"
#include "paddle_core/meta/infer_meta_cnn.h"

namespace oar::ops {

/// output_padding that makes conv_transpose(y, w) come back to x's spatial size.
inline std::vector<int64_t> conv_output_padding(const Tensor& x, const Tensor& y,
                                                const Tensor& w,
                                                const std::vector<int64_t>& strides,
                                                const std::vector<int64_t>& paddings,
                                                const std::vector<int64_t>& dilations,
                                                const std::string& data_format) {
  return ::oar::conv_output_padding(x.dims(), y.dims(), w.dims(), strides, paddings, dilations,
                                    data_format);
}

/// The axes layer_norm normalizes over: begin_norm_axis .. rank - 1.
inline std::vector<int64_t> trailing_axes(const Tensor& x, int64_t begin_norm_axis) {
  std::vector<int64_t> axes;
  for (int64_t a = begin_norm_axis; a < x.rank(); ++a) axes.push_back(a);
  return axes;
}

/// layer_norm's affine step on the normalized y: scale and bias are flat over the
/// trailing dims (either may be absent). Used by its decomposition.
inline Tensor layer_norm_affine(const Tensor& y, const Tensor& scale, const Tensor& bias, int64_t begin_norm_axis) {
  const std::vector<int64_t> dims = y.dims().vec();
  const std::vector<int64_t> tail(dims.begin() + begin_norm_axis, dims.end());
  Tensor out = scale.defined() ? y * reshape(scale, tail) : y;
  return bias.defined() ? out + reshape(bias, tail) : out;
}

/// batch_norm's channel axis, the axes its statistics run over and the [1, .., C, .., 1]
/// shape a per-channel value broadcasts with, for its decompositions (Note [batch_norm
/// decomposition] in docs/notes/cinn.md). Throws (the op then stays whole) for what the
/// rules do not cover: an empty x (the kernel's behaviour: the running statistics) and
/// dtypes other than float32/float64.
struct BatchNormAxes {
  std::vector<int64_t> axes, bshape;
  int64_t c = 0, count = 0;  // channels, elements per channel
};

inline BatchNormAxes batch_norm_axes(const Tensor& x, const std::string& data_format, const char* op) {
  const BatchNormView v = batch_norm_view(x.dense(), data_format, op);
  if (x.numel() == 0 || (x.dtype() != DataType::FLOAT32 && x.dtype() != DataType::FLOAT64))
    throw std::invalid_argument(std::string(op) + ": decomposed only for a non-empty float32/float64 x");
  const bool last = x.rank() > 2 && (data_format == "NLC" || data_format == "NHWC" || data_format == "NDHWC");
  const int64_t ca = last ? x.rank() - 1 : 1;
  BatchNormAxes a;
  a.c = v.c;
  a.count = v.n * v.s;
  a.bshape.assign(x.rank(), 1);
  a.bshape[ca] = v.c;
  for (int64_t i = 0; i < x.rank(); ++i)
    if (i != ca) a.axes.push_back(i);
  return a;
}

/// batch_norm from primitives; which: 0 out, 1 mean_out, 2 variance_out, 3 saved_mean,
/// 4 saved_rstd. Batch statistics in one sweep: sum(y) and sum(y * y) of y = x - K, K
/// each channel's first element (the shift keeps the digits E[x^2] - E[x]^2 loses when the
/// mean is large against the spread), variance clamped at 0, momentum as the kernel.
inline Tensor batch_norm_decomp(int which, const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                                const Tensor& scale, const Tensor& bias, bool training, double momentum, double epsilon,
                                const std::string& data_format, bool use_global_stats) {
  const BatchNormAxes a = batch_norm_axes(x, data_format, "batch_norm");
  const bool batch = training && !use_global_stats;
  Tensor mean, var;
  if (batch) {
    std::vector<int64_t> starts(a.axes.size(), 0), ends(a.axes.size(), 1);
    const Tensor k = slice(x, a.axes, starts, ends);
    const Tensor y = x - k;
    const double inv = 1.0 / static_cast<double>(a.count);
    const Tensor m = sum(y, a.axes, DataType::UNDEFINED, true) * inv;
    mean = m + k;
    var = maximum(sum(y * y, a.axes, DataType::UNDEFINED, true) * inv - m * m, full({}, 0.0, x.dtype(), x.place()));
  } else {
    mean = reshape(running_mean, a.bshape);
    var = reshape(running_var, a.bshape);
  }
  // The [C] arithmetic over [1, .., C, .., 1] (one group with the statistics' epilogue),
  // reshaped to [C] at the end.
  const std::vector<int64_t> flat = {a.c};
  auto update = [&](const Tensor& run, const Tensor& batch_value) {
    return reshape(reshape(run, a.bshape) * momentum + batch_value * (1.0 - momentum), flat);
  };
  if (which == 1) return batch ? update(running_mean, mean) : running_mean;
  if (which == 2) return batch ? update(running_var, var) : running_var;
  if (which == 3) return reshape(mean, flat);
  const Tensor rstd = rsqrt(var + epsilon);
  if (which == 4) return reshape(rstd, flat);
  const Tensor out = (x - mean) * (scale.defined() ? rstd * reshape(scale, a.bshape) : rstd);
  return bias.defined() ? out + reshape(bias, a.bshape) : out;
}

/// batch_norm_grad from primitives; which: 0 x_grad, 1 scale_grad, 2 bias_grad. The two
/// channel sums, sum(g) and sum(g * (x - mean)), read x and g once (one group), x_grad is
/// one elementwise pass: w * rstd * (g - sum(g) / M - (x - mean) * sum(g * (x - mean)) *
/// rstd^2 / M), or g * w * rstd with global statistics.
inline Tensor batch_norm_grad_decomp(int which, const Tensor& x, const Tensor& scale, const Tensor& saved_mean,
                                     const Tensor& saved_rstd, const Tensor& grad_out, bool use_global_stats,
                                     const std::string& data_format) {
  const BatchNormAxes a = batch_norm_axes(x, data_format, "batch_norm_grad");
  const std::vector<int64_t> pd = scale.defined() ? scale.dims().vec() : std::vector<int64_t>{a.c};
  const Tensor r = reshape(saved_rstd, a.bshape), xc = x - reshape(saved_mean, a.bshape);
  const Tensor sg = sum(grad_out, a.axes, DataType::UNDEFINED, true);
  if (which == 2) return reshape(sg, pd);
  const Tensor sgx = sum(grad_out * xc, a.axes, DataType::UNDEFINED, true);
  if (which == 1) return reshape(sgx * r, pd);
  const Tensor k = scale.defined() ? r * reshape(scale, a.bshape) : r;
  if (use_global_stats) return grad_out * k;
  const double inv = 1.0 / static_cast<double>(a.count);
  return (grad_out - sg * inv - xc * (sgx * (r * r * inv))) * k;
}

enum class NormKind { kLayer, kGroup };

namespace detail_cnn {

// A normalization as a view of x: `view` (x reshaped), `stat_axes` (the axes each
// mean/variance runs over), `scale_view` (the scale reshaped to broadcast against the
// view) and `scale_axes` (the axes the scale's gradient sums over).
struct NormShape {
  std::vector<int64_t> view, stat_axes, scale_view, scale_axes;
  int64_t count = 1;  // elements per statistic
};

inline NormShape row_norm_shape(NormKind kind, int64_t attr, const Tensor& x) {
  NormShape s;
  const Dims& d = x.dims();
  if (kind == NormKind::kLayer) {
    int64_t n = 1, m = 1;
    for (int i = 0; i < d.size(); ++i) (i < attr ? n : m) *= d[i];
    s.view = {n, m};
    s.stat_axes = {1};
    s.scale_view = {1, m};
    s.scale_axes = {0};
    s.count = m;
  } else {
    const int64_t g = attr, c = d[1], sp = x.dense().numel() / std::max<int64_t>(d[0] * c, 1);
    s.view = {d[0], g, c / g, sp};
    s.stat_axes = {2, 3};
    s.scale_view = {1, g, c / g, 1};
    s.scale_axes = {0, 3};
    s.count = c / g * sp;
  }
  return s;
}

inline NormShape batch_norm_shape(const std::string& fmt, const Tensor& x) {
  const BatchNormView v = batch_norm_view(x.dense(), fmt, "batch_norm_grad");
  NormShape s;
  s.view = {v.n, v.c, v.s};
  s.stat_axes = {0, 2};
  s.scale_view = {1, v.c, 1};
  s.scale_axes = {0, 2};
  s.count = v.n * v.s;
  return s;
}

inline Tensor mean_over(const Tensor& t, const std::vector<int64_t>& axes) {
  return mean(t, axes, true);
}

inline Tensor sum_over(const Tensor& t, const std::vector<int64_t>& axes) {
  return sum(t, axes, DataType::UNDEFINED, true);
}

// The second-order terms of a batch-statistics normalization (Note in cnn.yaml):
// which = 0: d/dx, 1: d/dscale, 2: d/dgrad_out of <Gx, dx> + <Gs, dscale> + <Gb, dbias>.
inline Tensor stats_double_grad(int which, const NormShape& s, const Tensor& x_in,
                                const Tensor& scale_in, const Tensor& rstd_in,
                                const Tensor& g_in, const Tensor& gx_in, const Tensor& gs_in,
                                const Tensor& gb_in) {
  const Tensor x = reshape(x_in, s.view), g = reshape(g_in, s.view);
  const Tensor gx = gx_in.defined() ? reshape(gx_in, s.view) : zeros_like(x);
  std::vector<int64_t> rview = s.view;
  for (int64_t a : s.stat_axes) rview[a] = 1;
  const Tensor r = reshape(rstd_in, rview);
  const Tensor mu = mean_over(x, s.stat_axes);
  const Tensor xh = (x - mu) * r;
  const bool has_scale = scale_in.defined();
  const Tensor gamma = has_scale ? reshape(scale_in, s.scale_view) : Tensor();
  auto times_gamma = [&](const Tensor& t) { return has_scale ? t * gamma : t; };
  // P(v) = r * (v - mean(v) - xh * mean(v * xh)): the normalization's own backward.
  auto project = [&](const Tensor& v) {
    return r * (v - mean_over(v, s.stat_axes) - xh * mean_over(v * xh, s.stat_axes));
  };
  Tensor result;
  if (which == 2) {
    result = times_gamma(project(gx));
    if (gs_in.defined()) result = result + reshape(gs_in, s.scale_view) * xh;
    if (gb_in.defined()) result = result + reshape(gb_in, s.scale_view) + zeros_like(x);
    return reshape(result, x_in.dims().vec());
  }
  if (which == 1) {
    return reshape(sum_over(g * project(gx), s.scale_axes), scale_in.dims().vec());
  }
  const Tensor gh = times_gamma(g);
  const double m = static_cast<double>(s.count);
  const Tensor b = sum_over(gx * xh, s.stat_axes);
  const Tensor c = mean_over(gh * xh, s.stat_axes);
  const Tensor a = sum_over(gx * gh, s.stat_axes) - sum_over(gx, s.stat_axes) * mean_over(gh, s.stat_axes);
  Tensor u = -(r * (c * gx + b * gh / m));
  if (gs_in.defined()) u = u + reshape(gs_in, s.scale_view) * g;
  result = project(u) - (a - b * c) * r * r * xh / m;
  return reshape(result, x_in.dims().vec());
}

}  // namespace detail_cnn

/// Second-order terms of layer_norm_grad / group_norm_grad (which: 0 x, 1 scale, 2 grad_out).
inline Tensor norm_double_grad(int which, NormKind kind, int64_t attr, const Tensor& x,
                               const Tensor& scale, const Tensor& rstd, const Tensor& grad_out,
                               const Tensor& gx, const Tensor& gs, const Tensor& gb) {
  return detail_cnn::stats_double_grad(which, detail_cnn::row_norm_shape(kind, attr, x), x, scale,
                                       rstd, grad_out, gx, gs, gb);
}

/// Second-order terms of batch_norm_grad; with global statistics the normalization is
/// affine in x, which leaves only the cross terms.
inline Tensor batch_norm_double_grad(int which, bool use_global_stats,
                                     const std::string& data_format, const Tensor& x,
                                     const Tensor& scale, const Tensor& saved_mean,
                                     const Tensor& saved_rstd, const Tensor& grad_out,
                                     const Tensor& gx, const Tensor& gs, const Tensor& gb) {
  const detail_cnn::NormShape s = detail_cnn::batch_norm_shape(data_format, x);
  if (!use_global_stats) {
    return detail_cnn::stats_double_grad(which, s, x, scale, saved_rstd, grad_out, gx, gs, gb);
  }
  const Tensor xv = reshape(x, s.view), g = reshape(grad_out, s.view);
  const Tensor r = reshape(saved_rstd, s.scale_view), mu = reshape(saved_mean, s.scale_view);
  const Tensor gamma = scale.defined() ? reshape(scale, s.scale_view) : Tensor();
  const Tensor gxv = gx.defined() ? reshape(gx, s.view) : zeros_like(xv);
  Tensor result;
  if (which == 0) {  // only dscale = sum(g * (x - mu) * r) depends on x
    result = gs.defined() ? reshape(gs, s.scale_view) * g * r : zeros_like(xv);
  } else if (which == 1) {
    return reshape(detail_cnn::sum_over(gxv * g * r, s.scale_axes), scale.dims().vec());
  } else {
    result = scale.defined() ? gxv * gamma * r : gxv * r;
    if (gs.defined()) result = result + reshape(gs, s.scale_view) * (xv - mu) * r;
    if (gb.defined()) result = result + reshape(gb, s.scale_view);
  }
  return reshape(result, x.dims().vec());
}

}  // namespace oar::ops
