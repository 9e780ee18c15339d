// cross_entropy and cross_entropy_grad from primitive ops, for the fusion compiler's
// `decompose` pass (Note [cross_entropy decomposition] in docs/notes/cinn.md; the
// semantics they reproduce are Note [cross_entropy] in paddle_core/meta/infer_meta_nn.cc).
// Hard labels select their class with `where(class == label, ...)` over a [1, .., C, .., 1]
// arange, so the pick is an elementwise select and a sum along the class axis (no gather);
// what they do not cover throws, and the op then stays whole.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "oar_generated/ops_api.h"

namespace oar::ops {

namespace detail_loss {

// What the forward and backward rules share: the class axis, the per-sample shape (the
// input's with the class dim 1), and for hard labels the class hit and the ignore mask.
struct CeTerms {
  int64_t axis = 0, classes = 0, samples = 0;
  std::vector<int64_t> kdims;   // the input's dims with the class dim 1
  std::vector<int64_t> bshape;  // [1, .., C, .., 1]: a per-class value
  DataType dt = DataType::FLOAT32;
  Place place;                  // the input's: the constants below live there
  double keep = 1, spread = 0;  // y' = keep * y + spread
  Tensor hit;                   // hard: bool, the input's shape: class == label
  Tensor valid;                 // hard: bool [kdims]: label != ignore_index
  Tensor valid_label;           // hard: bool, the label's shape: the same, on the integer labels
  Tensor weight_of;             // [kdims]: each sample's W (undefined: 1; hard: not masked)
  Tensor zero, one;             // 0-D constants of the input's dtype

  Tensor k(double v) const { return full({}, v, dt, place); }
  /// The smoothed labels y' (the input's shape, or broadcastable to it).
  Tensor smoothed(const Tensor& label, bool soft) const {
    if (soft) return spread == 0 ? label : label * keep + spread;
    return where(hit, k(keep + spread), k(spread));
  }
};

inline CeTerms ce_terms(const Tensor& input, const Tensor& label, const Tensor& weight, bool soft_label,
                        int64_t ignore_index, int64_t axis, double label_smoothing, const char* op) {
  CeTerms t;
  t.dt = input.dtype();
  t.place = input.place();
  // Float32 and float64 only: bfloat16/float16 (amp keeps the op in float32 anyway) would
  // compare the class indices in a type that cannot hold them exactly.
  if (t.dt != DataType::FLOAT32 && t.dt != DataType::FLOAT64)
    throw std::invalid_argument(std::string(op) + ": decomposed only for float32/float64 input");
  const int64_t rank = input.rank();
  if (rank < 1) throw std::invalid_argument(std::string(op) + ": 0-D input");
  t.axis = axis < 0 ? axis + rank : axis;
  if (t.axis < 0 || t.axis >= rank) throw std::invalid_argument(std::string(op) + ": axis out of range");
  const std::vector<int64_t> dims = input.dims().vec();
  t.classes = dims[t.axis];
  t.kdims = dims;
  t.kdims[t.axis] = 1;
  t.samples = 1;
  for (int64_t d : t.kdims) t.samples *= d;
  t.bshape.assign(rank, 1);
  t.bshape[t.axis] = t.classes;
  t.keep = 1.0 - label_smoothing;
  t.spread = label_smoothing > 0 && t.classes > 0 ? label_smoothing / static_cast<double>(t.classes) : 0.0;
  t.zero = t.k(0.0);
  t.one = t.k(1.0);
  Tensor wb;
  if (weight.defined()) wb = reshape(weight, t.bshape);
  if (soft_label) {
    if (weight.defined()) t.weight_of = sum(t.smoothed(label, true) * wb, {t.axis}, DataType::UNDEFINED, true);
    return t;
  }
  // Class indices compared in the input's dtype (so the compare joins the fused group):
  // exact for float64, and for float32 while C <= 2^24 (a valid label is below C; a large
  // ignore_index rounds, but to a value no valid label has).
  if (t.dt == DataType::FLOAT32 && t.classes > (int64_t{1} << 24))
    throw std::invalid_argument(std::string(op) + ": more than 2^24 classes in float32");
  // The kernel's range check stays: a bad label raises as the op does, not a zero pick.
  const Tensor checked = cross_entropy_check_labels(label, t.classes, ignore_index);
  const Tensor lf = cast(reshape(checked, t.kdims), t.dt);
  const Tensor cls = reshape(arange(0, t.classes, 1, t.dt, t.place), t.bshape);
  t.hit = equal(cls, lf);
  t.valid = not_equal(lf, t.k(static_cast<double>(ignore_index)));
  t.valid_label = not_equal(checked, full({}, Scalar(ignore_index), label.dtype(), label.place()));
  if (weight.defined()) {
    // W = keep * w[label] + spread * sum(w), as the kernel's weight_of
    const Tensor picked = sum(where(t.hit, wb, t.zero), {t.axis}, DataType::UNDEFINED, true);
    t.weight_of = t.spread == 0 ? picked : picked * t.keep + sum(weight) * t.spread;
  }
  return t;
}

// log p without softmax: log(input) clamped to +-1e20 (Paddle's TolerableValue).
inline Tensor tolerable_log(const Tensor& input) { return clip(log(input), -1e20, 1e20); }

// The 'mean' denominator: the samples' W summed (0 counts as 1) when weighted, or for hard
// labels with ignore_index >= 0 or smoothing the non-ignored count; else the sample count
// (undefined: the caller takes mean()).
inline Tensor ce_mean_denominator(const CeTerms& t, bool soft_label, bool weighted, int64_t ignore_index,
                                  double label_smoothing) {
  const bool by_weight = weighted || (!soft_label && (ignore_index >= 0 || label_smoothing > 0));
  if (!by_weight) return Tensor();
  const Tensor w = t.weight_of.defined() ? t.weight_of : t.one;
  // Unweighted hard labels count from the integer labels: a sum that reads no value of the
  // fused loss's group, so the gradient's last multiply (by upstream / D) can join it.
  const Tensor s = soft_label ? sum(w) : !weighted ? sum(cast(t.valid_label, t.dt)) : sum(where(t.valid, w, t.zero));
  return where(equal(s, t.zero), t.one, s);
}

}  // namespace detail_loss

/// cross_entropy from primitives (Note [cross_entropy decomposition] in docs/notes/cinn.md).
inline Tensor cross_entropy_decomp(const Tensor& input, const Tensor& label, const Tensor& weight, bool soft_label,
                                   bool use_softmax, int64_t ignore_index, int64_t axis, double label_smoothing,
                                   const std::string& reduction) {
  using namespace detail_loss;  // NOLINT
  const CeTerms t = ce_terms(input, label, weight, soft_label, ignore_index, axis, label_smoothing, "cross_entropy");
  const std::vector<int64_t> ax = {t.axis};
  auto rsum = [&](const Tensor& v) { return sum(v, ax, DataType::UNDEFINED, true); };
  Tensor ce;
  if (use_softmax) {
    // log p = x - lse, so the label terms are sums of x, which the fused kernel takes in the
    // sweep of the row max (two sweeps over the row, as the kernel; log p itself would add
    // a third after the exp sum): keep * (lse - x[label]) + spread * (C * lse - sum(x)), or
    // lse * sum(y') - sum(y' * x).
    const Tensor mx = max(input, ax, true);
    const Tensor lse = mx + log(rsum(exp(input - mx)));
    if (soft_label) {
      const Tensor y = t.smoothed(label, true);
      ce = lse * rsum(y) - rsum(y * input);
    } else {
      ce = (lse - rsum(where(t.hit, input, t.zero))) * t.keep;
      if (t.spread != 0) ce = ce + (lse * static_cast<double>(t.classes) - rsum(input)) * t.spread;
    }
  } else {
    const Tensor logp = tolerable_log(input);
    if (soft_label) {
      ce = -rsum(t.smoothed(label, true) * logp);
    } else {
      // -keep * log p[label] - spread * sum(log p), as the kernel (no 0 * -inf terms when
      // there is no smoothing)
      ce = rsum(where(t.hit, logp, t.zero)) * -t.keep;
      if (t.spread != 0) ce = ce - rsum(logp) * t.spread;
    }
  }
  Tensor loss = t.weight_of.defined() ? ce * t.weight_of : ce;
  if (!soft_label) loss = where(t.valid, loss, t.zero);  // ignored: 0, whatever the row holds
  if (reduction == "none") {
    // Hard labels without the class dim keep it only when smoothed (Paddle), else the label's shape.
    return !soft_label && label.rank() + 1 == input.rank() && label_smoothing == 0 ? reshape(loss, label.dims().vec())
                                                                                   : loss;
  }
  if (reduction == "sum") return sum(loss);
  const Tensor d = ce_mean_denominator(t, soft_label, weight.defined(), ignore_index, label_smoothing);
  return d.defined() ? sum(loss) / d : mean(loss);
}

/// cross_entropy_grad (d loss / d input) from primitives: scale * (softmax * sum(y') - y')
/// with scale = upstream * W (0 for ignored samples), or -scale * y' / input without softmax.
inline Tensor cross_entropy_grad_decomp(const Tensor& input, const Tensor& label, const Tensor& weight,
                                        const Tensor& grad_loss, bool soft_label, bool use_softmax,
                                        int64_t ignore_index, int64_t axis, double label_smoothing,
                                        const std::string& reduction) {
  using namespace detail_loss;  // NOLINT
  const CeTerms t =
      ce_terms(input, label, weight, soft_label, ignore_index, axis, label_smoothing, "cross_entropy_grad");
  Tensor u;  // d total / d loss_j, [kdims] or 0-D
  if (reduction == "none") {
    u = reshape(grad_loss, t.kdims);
  } else if (reduction == "sum") {
    u = grad_loss;
  } else {
    const Tensor d = ce_mean_denominator(t, soft_label, weight.defined(), ignore_index, label_smoothing);
    u = grad_loss / (d.defined() ? d : t.k(static_cast<double>(t.samples)));
  }
  Tensor scale = t.weight_of.defined() ? u * t.weight_of : u;
  if (!soft_label) scale = where(t.valid, scale, t.zero);
  const Tensor y = t.smoothed(label, soft_label);
  if (!use_softmax) return y / input * -scale;
  const Tensor p = softmax(input, t.axis);
  // Hard labels: sum(y') = keep + C * spread = 1, as the kernel takes it.
  if (!soft_label) return (p - y) * scale;
  return (p * sum(y, {t.axis}, DataType::UNDEFINED, true) - y) * scale;
}

}  // namespace oar::ops
