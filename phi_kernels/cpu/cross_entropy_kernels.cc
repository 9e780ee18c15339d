// Fused cross-entropy (log-softmax + NLL + weights + smoothing + reduction) and its
// gradients, following Note [cross_entropy] in paddle_core/meta/infer_meta_nn.cc.
// One pass per sample (a row of C classes, contiguous when the class axis is last):
// max, sum of exp, and the label terms; the backward recomputes the row's softmax
// (cheaper than saving it) and writes scale * (p * sum(y) - y) in the same sweep.
// Per-sample losses are reduced serially in double, so the result does not depend
// on the thread count.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "oar_generated/kernel_signatures.h"
#include "paddle_core/meta/infer_meta_nn.h"
#include "phi_kernels/cpu/parallel.h"
#include "phi_kernels/funcs/softmax_rows.h"

namespace oar::phi {
namespace {

constexpr int64_t kCost = 6;  // relative cost per element (exp, log terms, passes)

// Paddle's TolerableValue: log(0) = -inf becomes -1e20 (use_softmax=False).
template <typename M>
M tolerable_log(M v) {
  const M l = std::log(v);
  constexpr M kBig = static_cast<M>(1e20);
  return l == -std::numeric_limits<M>::infinity() ? -kBig
         : l == std::numeric_limits<M>::infinity() ? kBig : l;
}

// The operands of one cross_entropy call, viewed as samples j = (outer, inner) with
// a row of C classes each (stride `inner`).
template <typename T>
struct CrossEntropyProblem {
  using M = OpMath<T>;
  DenseTensor x_t, label_t, weight_t;  // contiguous copies (or the inputs themselves)
  const T* x = nullptr;
  const T* soft = nullptr;     // soft labels
  const void* hard = nullptr;  // hard labels (int32 or int64)
  bool hard64 = true;
  const T* w = nullptr;  // class weights, or null
  int64_t outer = 1, C = 1, inner = 1;
  bool soft_label = false, use_softmax = true;
  int64_t ignore = -100;
  M eps = 0, keep = 1, spread = 0;  // y' = keep * y + spread
  M wsum = 0;                       // sum of the class weights (smoothing)
  LossReduction reduction = LossReduction::kMean;

  CrossEntropyProblem(const DenseTensor& input, const DenseTensor& label,
                      const DenseTensor* weight, bool soft_label_, bool use_softmax_,
                      int64_t ignore_index, int64_t axis, double label_smoothing,
                      const std::string& red)
      : x_t(contiguous(input)), label_t(contiguous(label)), soft_label(soft_label_),
        use_softmax(use_softmax_), ignore(ignore_index) {
    x = x_t.data<T>();
    const AxisSplit s = split_at_axis(input.dims(), wrap_axis(axis, input.rank(), "cross_entropy"));
    outer = s.outer;
    C = s.n;
    inner = s.inner;
    if (soft_label) {
      soft = label_t.data<T>();
    } else {
      hard = label_t.raw_data();
      hard64 = label_t.dtype() == DataType::INT64;
    }
    if (weight != nullptr) {
      weight_t = contiguous(*weight);
      w = weight_t.data<T>();
      for (int64_t c = 0; c < C; ++c) wsum += static_cast<M>(w[c]);
    }
    eps = static_cast<M>(label_smoothing);
    keep = M(1) - eps;
    spread = C > 0 ? eps / static_cast<M>(C) : M(0);
    reduction = parse_loss_reduction(red, "cross_entropy");
  }

  int64_t samples() const { return outer * inner; }
  int64_t base(int64_t j) const { return (j / inner) * C * inner + j % inner; }
  Row<T> row(int64_t j) const { return {x + base(j), C, inner}; }
  int64_t label_of(int64_t j) const {
    return hard64 ? static_cast<const int64_t*>(hard)[j] : static_cast<const int32_t*>(hard)[j];
  }
  bool ignored(int64_t j) const { return !soft_label && label_of(j) == ignore; }
  // The smoothed soft label y'_c of sample j (soft labels only).
  M soft_at(int64_t j, int64_t c) const {
    return keep * static_cast<M>(soft[base(j) + c * inner]) + spread;
  }

  /// Throws OutOfRange for a hard label outside [0, C) that is not ignore_index.
  void check_labels() const {
    if (soft_label) return;
    const int64_t n = samples();
    for (int64_t j = 0; j < n; ++j) {
      const int64_t l = label_of(j);
      if (l == ignore || (l >= 0 && l < C)) continue;
      OAR_THROW(OutOfRange, "cross_entropy: label value ", l, " at position ", j,
                " is out of range for ", C, " classes (expected [0, ", C,
                ") or ignore_index=", ignore, ")");
    }
  }

  /// W_j: the sample's weight (1 unweighted, 0 when ignored).
  M weight_of(int64_t j) const {
    if (!soft_label) {
      const int64_t l = label_of(j);
      if (l == ignore) return 0;
      if (w == nullptr) return 1;
      return keep * static_cast<M>(w[l]) + spread * wsum;
    }
    if (w == nullptr) return 1;
    M s = 0;
    for (int64_t c = 0; c < C; ++c) s += soft_at(j, c) * static_cast<M>(w[c]);
    return s;
  }

  /// The 'mean' denominator (Note [cross_entropy]).
  double mean_denominator() const {
    const bool by_weight = w != nullptr || (!soft_label && (ignore >= 0 || eps > 0));
    if (!by_weight) return static_cast<double>(samples());
    double d = 0;
    for (int64_t j = 0; j < samples(); ++j) d += static_cast<double>(weight_of(j));
    return d == 0.0 ? 1.0 : d;
  }

  /// log-sum-exp of sample j's row.
  template <bool kUnit>
  M lse(const Row<T>& r) const {
    const M mx = row_max<kUnit>(r);
    return mx + std::log(row_sum_exp<kUnit>(r, mx));
  }
  /// log p_c of sample j, given its lse (use_softmax) or not.
  M log_prob(const Row<T>& r, int64_t c, M lse_j) const {
    return use_softmax ? r[c] - lse_j : tolerable_log(r[c]);
  }

  /// The unweighted loss CE_j = -sum_c y'_c log p_c (0 when ignored), given the row's
  /// log-sum-exp z (unused without softmax).
  M sample_ce_given(int64_t j, M z) const {
    const Row<T> r = row(j);
    if (!soft_label) {
      const int64_t l = label_of(j);
      if (l == ignore) return 0;
      M ce = -keep * log_prob(r, l, z);
      if (eps > 0) {
        M s = 0;
        for (int64_t c = 0; c < C; ++c) s += log_prob(r, c, z);
        ce -= spread * s;
      }
      return ce;
    }
    M ce = 0;
    for (int64_t c = 0; c < C; ++c) ce -= soft_at(j, c) * log_prob(r, c, z);
    return ce;
  }
  template <bool kUnit>
  M sample_ce(int64_t j) const {
    return sample_ce_given(j, use_softmax ? lse<kUnit>(row(j)) : M(0));
  }

  /// Short contiguous rows take the chunked path (softmax_rows.h, kShortRow).
  bool short_rows() const { return inner == 1 && use_softmax && C <= kShortRow; }
};

// Short-row path: calls f(j, lse_j, exps of row j (x - max), sum of those exps) for
// every sample, a chunk of rows at a time (one vectorized exp loop per chunk).
template <typename T, typename F>
void for_short_rows(const CrossEntropyProblem<T>& p, F f) {
  using M = OpMath<T>;
  const int64_t K = rows_per_chunk(p.C), n = p.samples();
  parallel_for(
      (n + K - 1) / K,
      [&](int64_t b, int64_t e) {
        M mx[kChunkElems], sum[kChunkElems], ex[kChunkElems];
        for (int64_t t = b; t < e; ++t) {
          const int64_t j0 = t * K, k = std::min(K, n - j0);
          short_rows_exp(p.x + j0 * p.C, k, p.C, mx, sum, ex);
          for (int64_t r = 0; r < k; ++r) f(j0 + r, mx[r] + std::log(sum[r]), ex + r * p.C, sum[r]);
        }
      },
      n * p.C * kCost);
}

template <typename T, typename F>
void for_samples(const CrossEntropyProblem<T>& p, F f) {
  parallel_for(
      p.samples(), [&](int64_t b, int64_t e) {
        for (int64_t j = b; j < e; ++j) f(j);
      },
      p.samples() * p.C * kCost);
}

// Runs body.template operator()<kUnit>() with kUnit = (class axis is the last one).
template <typename F>
void dispatch_unit(int64_t inner, F&& body) {
  if (inner == 1) {
    body(std::true_type{});
  } else {
    body(std::false_type{});
  }
}

template <typename T>
void CrossEntropyKernel(const DeviceContext&, const DenseTensor& input, const DenseTensor& label,
                        const DenseTensor* weight, bool soft_label, bool use_softmax,
                        int64_t ignore_index, int64_t axis, double label_smoothing,
                        const std::string& reduction, DenseTensor* loss) {
  using M = OpMath<T>;
  T* out = loss->alloc<T>();
  const CrossEntropyProblem<T> p(input, label, weight, soft_label, use_softmax, ignore_index, axis,
                                 label_smoothing, reduction);
  p.check_labels();
  const int64_t n = p.samples();
  // Per-sample losses go to the output ('none') or to a buffer reduced below.
  std::vector<M> buffer(p.reduction == LossReduction::kNone ? 0 : n);
  auto put = [&](int64_t j, M ce) {
    const M v = ce * p.weight_of(j);
    if (p.reduction == LossReduction::kNone) {
      out[j] = static_cast<T>(v);
    } else {
      buffer[j] = v;
    }
  };
  if (p.short_rows()) {
    for_short_rows(p, [&](int64_t j, M z, const M*, M) { put(j, p.sample_ce_given(j, z)); });
  } else {
    dispatch_unit(p.inner, [&](auto unit) {
      for_samples(p, [&](int64_t j) { put(j, p.template sample_ce<decltype(unit)::value>(j)); });
    });
  }
  if (p.reduction == LossReduction::kNone) return;
  const std::vector<M>& losses = buffer;
  double total = 0;
  for (int64_t j = 0; j < n; ++j) total += static_cast<double>(losses[j]);
  if (p.reduction == LossReduction::kMean) total /= p.mean_denominator();
  out[0] = static_cast<T>(total);
}

// Short-row path of the input gradient (softmax, contiguous row): from the row's
// exps ex[c] = exp(x_c - max) and their sum, d_c = scale * (p_c * sum(y') - y'_c).
template <typename T>
void softmax_grad_from_exps(const CrossEntropyProblem<T>& p, int64_t j, OpMath<T> scale,
                            const OpMath<T>* ex, OpMath<T> sum, T* d) {
  using M = OpMath<T>;
  const int64_t C = p.C;
  if (p.ignored(j) || scale == M(0)) {
    for (int64_t c = 0; c < C; ++c) d[c] = T(0);
    return;
  }
  if (!p.soft_label) {
    const M a = scale / sum, b = scale * p.spread;
    for (int64_t c = 0; c < C; ++c) d[c] = static_cast<T>(ex[c] * a - b);
    const int64_t l = p.label_of(j);
    d[l] = static_cast<T>(static_cast<M>(d[l]) - scale * p.keep);
    return;
  }
  M ysum = 0;
  for (int64_t c = 0; c < C; ++c) ysum += p.soft_at(j, c);
  const M a = scale * ysum / sum;
  for (int64_t c = 0; c < C; ++c) d[c] = static_cast<T>(ex[c] * a - scale * p.soft_at(j, c));
}

// d loss / d logits of one sample, times `scale`, written to d (stride p.inner).
template <bool kUnit, typename T>
void input_grad_sample(const CrossEntropyProblem<T>& p, int64_t j, OpMath<T> scale, T* d) {
  using M = OpMath<T>;
  const Row<T> r = p.row(j);
  const int64_t C = p.C, st = p.inner;
  if (p.ignored(j) || scale == M(0)) {
    for (int64_t c = 0; c < C; ++c) d[c * st] = T(0);
    return;
  }
  if (!p.use_softmax) {  // loss = -sum_c y'_c log x_c
    if (!p.soft_label) {
      const int64_t l = p.label_of(j);
      for (int64_t c = 0; c < C; ++c) {
        const M y = p.spread + (c == l ? p.keep : M(0));
        d[c * st] = static_cast<T>(-scale * y / r[c]);
      }
    } else {
      for (int64_t c = 0; c < C; ++c) d[c * st] = static_cast<T>(-scale * p.soft_at(j, c) / r[c]);
    }
    return;
  }
  // softmax: d/dx_c = p_c * sum(y') - y'_c
  const M mx = row_max<kUnit>(r);
  constexpr bool kStore = kUnit && std::is_same_v<T, M>;  // d holds exp(x - max)
  M* store = nullptr;
  if constexpr (kStore) store = d;
  const M s = row_sum_exp<kUnit>(r, mx, store);
  auto e = [&](int64_t c) -> M {
    if constexpr (kStore) {
      return static_cast<M>(d[c]);
    } else {
      return exp_simd(r[c] - mx);
    }
  };
  if (!p.soft_label) {
    const M a = scale / s, b = scale * p.spread;
    if constexpr (kUnit) {
#pragma omp simd
      for (int64_t c = 0; c < C; ++c) d[c] = static_cast<T>(e(c) * a - b);
    } else {
      for (int64_t c = 0; c < C; ++c) d[c * st] = static_cast<T>(e(c) * a - b);
    }
    const int64_t l = p.label_of(j);
    d[l * st] = static_cast<T>(static_cast<M>(d[l * st]) - scale * p.keep);
    return;
  }
  M ysum = 0;
  for (int64_t c = 0; c < C; ++c) ysum += p.soft_at(j, c);
  const M a = scale * ysum / s;
  for (int64_t c = 0; c < C; ++c) d[c * st] = static_cast<T>(e(c) * a - scale * p.soft_at(j, c));
}

// The per-sample factor of d total / d loss_j: grad (none: per sample), /D for mean.
template <typename T>
struct UpstreamScale {
  const T* g = nullptr;
  bool per_sample = false;
  double k = 1;
  OpMath<T> at(int64_t j) const {
    return per_sample ? static_cast<OpMath<T>>(g[j]) : static_cast<OpMath<T>>(k);
  }
};

template <typename T>
UpstreamScale<T> upstream_scale(const CrossEntropyProblem<T>& p, const DenseTensor& g) {
  UpstreamScale<T> u;
  u.g = g.data<T>();
  if (p.reduction == LossReduction::kNone) {
    u.per_sample = true;
  } else {
    u.k = static_cast<double>(static_cast<OpMath<T>>(u.g[0]));
    if (p.reduction == LossReduction::kMean) u.k /= p.mean_denominator();
  }
  return u;
}

template <typename T>
void CrossEntropyGradKernel(const DeviceContext&, const DenseTensor& input,
                            const DenseTensor& label, const DenseTensor* weight,
                            const DenseTensor& grad_loss, bool soft_label, bool use_softmax,
                            int64_t ignore_index, int64_t axis, double label_smoothing,
                            const std::string& reduction, DenseTensor* input_grad) {
  T* d = input_grad->alloc<T>();
  if (input_grad->numel() == 0) return;
  const CrossEntropyProblem<T> p(input, label, weight, soft_label, use_softmax, ignore_index, axis,
                                 label_smoothing, reduction);
  p.check_labels();
  const DenseTensor g = contiguous(grad_loss);
  const UpstreamScale<T> u = upstream_scale(p, g);
  if (p.short_rows()) {
    using M = OpMath<T>;
    for_short_rows(p, [&](int64_t j, M, const M* ex, M sum) {
      softmax_grad_from_exps(p, j, u.at(j) * p.weight_of(j), ex, sum, d + j * p.C);
    });
    return;
  }
  dispatch_unit(p.inner, [&](auto unit) {
    for_samples(p, [&](int64_t j) {
      input_grad_sample<decltype(unit)::value>(p, j, u.at(j) * p.weight_of(j), d + p.base(j));
    });
  });
}

// d total / d y_c (soft labels): loss_j = CE_j * W_j with CE_j = -sum y'_c log p_c and
// W_j = sum y'_c w_c; the weighted mean also divides by D = sum_j W_j; y' = keep*y + spread.
template <typename T>
void CrossEntropyLabelGradKernel(const DeviceContext&, const DenseTensor& input,
                                 const DenseTensor& label, const DenseTensor* weight,
                                 const DenseTensor& grad_loss, bool soft_label, bool use_softmax,
                                 int64_t ignore_index, int64_t axis, double label_smoothing,
                                 const std::string& reduction, DenseTensor* label_grad) {
  using M = OpMath<T>;
  T* d = label_grad->alloc<T>();
  if (label_grad->numel() == 0) return;
  const CrossEntropyProblem<T> p(input, label, weight, soft_label, use_softmax, ignore_index, axis,
                                 label_smoothing, reduction);
  const DenseTensor g = contiguous(grad_loss);
  const UpstreamScale<T> u = upstream_scale(p, g);
  const int64_t n = p.samples();
  // Weighted mean: the denominator D depends on the labels too: - S / D^2 * w_c.
  M mean_w_term = 0;
  if (p.reduction == LossReduction::kMean && p.w != nullptr) {
    double total = 0;
    for (int64_t j = 0; j < n; ++j) {
      total += static_cast<double>(p.template sample_ce<false>(j) * p.weight_of(j));
    }
    const double D = p.mean_denominator();
    const double g0 = static_cast<double>(static_cast<M>(g.data<T>()[0]));
    mean_w_term = static_cast<M>(g0 * total / (D * D));
  }
  for_samples(p, [&](int64_t j) {
    const Row<T> r = p.row(j);
    const M z = p.use_softmax ? p.template lse<false>(r) : M(0);
    const M s = u.at(j) * p.keep;
    const M W = p.weight_of(j);
    const M ce = p.w != nullptr ? p.template sample_ce<false>(j) : M(0);
    T* dr = d + p.base(j);
    for (int64_t c = 0; c < p.C; ++c) {
      M v = -p.log_prob(r, c, z) * W;
      if (p.w != nullptr) v += ce * static_cast<M>(p.w[c]);
      M gc = s * v;
      if (p.w != nullptr) gc -= p.keep * mean_w_term * static_cast<M>(p.w[c]);
      dr[c * p.inner] = static_cast<T>(gc);
    }
  });
}

// cross_entropy_check_labels: out = label, with cross_entropy's check of hard labels.
template <typename T>
void CrossEntropyCheckLabelsKernel(const DeviceContext&, const DenseTensor& label, int64_t classes,
                                   int64_t ignore_index, DenseTensor* out) {
  const T* l = label.data<T>();
  T* o = out->alloc<T>();
  const int64_t n = label.numel();
  for (int64_t j = 0; j < n; ++j) {
    const int64_t v = static_cast<int64_t>(l[j]);
    if (v != ignore_index && (v < 0 || v >= classes))
      OAR_THROW(OutOfRange, "cross_entropy: label value ", v, " at position ", j, " is out of range for ", classes,
                " classes (expected [0, ", classes, ") or ignore_index=", ignore_index, ")");
    o[j] = l[j];
  }
}

}  // namespace
}  // namespace oar::phi

using namespace oar::phi;  // NOLINT

OAR_REGISTER_KERNEL(cross_entropy, CPU, CrossEntropyKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(cross_entropy_grad, CPU, CrossEntropyGradKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(cross_entropy_label_grad, CPU, CrossEntropyLabelGradKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(cross_entropy_check_labels, CPU, CrossEntropyCheckLabelsKernel, int32_t, int64_t)
