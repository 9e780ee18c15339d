// Activations of nn.yaml (silu, softplus, leaky_relu, elu, log_sigmoid, hardswish,
// hardsigmoid, relu6, selu, celu, hardtanh, mish, softsign, tanhshrink, hardshrink,
// softshrink, thresholded_relu, logit, and the pointwise parts of smooth_l1_loss (huber) and
// binary_cross_entropy_with_logits), Paddle's definitions. Each is one functor with the value f,
// the derivative d1 and the second derivative d2 (scalar: double, the double-backward
// kernels, builds without vectors), and the float lanes vf(x) and vg(x, d) = d f'(x): the
// forward and the fused gradient of float, float16 (converted in registers) and bfloat16
// (in blocks) run on them. Built per ISA (Note [CPU dispatch]). The scalar forms were
// written for clarity, and GCC left them scalar and branchy: leaky_relu on 1M floats took
// 4.4 ms, mish 40 ms (Note [Activations on vectors], docs/notes/cpu_speed_steps.md).
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <utility>

#include "oar_generated/kernel_signatures.h"
#include "phi_kernels/cpu/elementwise.h"
#include "phi_kernels/cpu/vec_math.h"

namespace oar::phi {
namespace {

template <typename M> M sigmoid(M x) { return M(1) / (M(1) + std::exp(-x)); }

#if OAR_VEC
using vec::F;
inline F vset(double v) { return vec::set1(static_cast<float>(v)); }
inline F vzero() { return vec::set1(0.0f); }
/// 1 / (1 + exp(-x)): 0 below x = -88.4 (exp's clamp), NaN stays NaN.
inline F sigmoid_v(F x) {
  const F one = vec::set1(1.0f);
  return vec::div(one, vec::add(one, vec::exp(vec::sub(vzero(), x))));
}
/// log1p(exp(-|z|)), the stable tail of softplus and log_sigmoid (NaN stays NaN): exp(-|z|)
/// is in (0, 1], vec::log1p_unit's domain. SLEEF's log1p before: softplus of 1M floats
/// 1.54 -> 0.85-0.90 ms at 1 thread on Zen 4 (torch 1.58-1.63).
inline F log1p_exp_neg_abs(F z) { return vec::log1p_unit(vec::exp_nonpos(vec::sub(vzero(), vec::abs(z)))); }
/// expm1(min(x, 0)), the negative side of elu, selu and celu (exp(x) - 1 would lose the
/// small |x|); NaN stays NaN.
inline F expm1_neg(F x) { return vec::expm1_nonpos(vec::max(vec::set1(-20.0f), vec::min(vzero(), x))); }
/// d where lo < x < hi, else 0 (NaN: 0): the gradient of the clamping activations.
inline F inside(F x, F lo, F hi, F d) { return vec::select_lt(lo, x, vec::select_lt(x, hi, d, vzero()), vzero()); }
/// min(hi, max(lo, x)) with a NaN x kept (x86's max and min return the second operand
/// when one is NaN), as std::min(std::max(x, lo), hi).
inline F clamp_v(F x, F lo, F hi) { return vec::min(hi, vec::max(lo, x)); }
#endif

struct Silu {
  template <typename M> M f(M x) const { return x * sigmoid(x); }
  template <typename M> M d1(M x) const {
    const M s = sigmoid(x);
    return s * (M(1) + x * (M(1) - s));
  }
  template <typename M> M d2(M x) const {
    const M s = sigmoid(x);
    return s * (M(1) - s) * (M(2) + x * (M(1) - M(2) * s));
  }
#if OAR_VEC
  F vg(F x, F d) const {  // forward: SiluF in unary_kernels.cc
    const F s = sigmoid_v(x);
    return vec::mul(vec::mul(d, s), vec::fmadd(x, vec::sub(vec::set1(1.0f), s), vec::set1(1.0f)));
  }
#endif
};

// log(1 + exp(beta x)) / beta, and x itself once beta * x > threshold.
struct Softplus {
  double beta, threshold;
  template <typename M> M f(M x) const {
    const M b = M(beta), z = b * x;
    if (z > M(threshold)) return x;
    // log1p(exp(z)) without overflow: max(z, 0) + log1p(exp(-|z|))
    return (std::max(z, M(0)) + std::log1p(std::exp(-std::abs(z)))) / b;
  }
  template <typename M> M d1(M x) const {
    const M z = M(beta) * x;
    return z > M(threshold) ? M(1) : sigmoid(z);
  }
  template <typename M> M d2(M x) const {
    const M z = M(beta) * x;
    if (z > M(threshold)) return M(0);
    const M s = sigmoid(z);
    return M(beta) * s * (M(1) - s);
  }
#if OAR_VEC
  F vf(F x) const {
    const F b = vset(beta), z = vec::mul(b, x);
    F r = vec::add(vec::max(vzero(), z), log1p_exp_neg_abs(z));
    if (beta != 1.0) r = vec::div(r, b);  // the default beta divides by nothing
    return vec::select_lt(vset(threshold), z, x, r);
  }
  F vg(F x, F d) const {
    const F z = vec::mul(vset(beta), x);
    return vec::select_lt(vset(threshold), z, d, vec::mul(d, sigmoid_v(z)));
  }
#endif
};

struct LeakyRelu {
  double slope;
  template <typename M> M f(M x) const { return x > M(0) ? x : M(slope) * x; }
  template <typename M> M d1(M x) const { return x > M(0) ? M(1) : M(slope); }
#if OAR_VEC
  F vf(F x) const { return vec::select_lt(vzero(), x, x, vec::mul(vset(slope), x)); }
  F vg(F x, F d) const { return vec::select_lt(vzero(), x, d, vec::mul(vset(slope), d)); }
#endif
};

struct Elu {
  double alpha;
  template <typename M> M f(M x) const { return x > M(0) ? x : M(alpha) * std::expm1(x); }
  template <typename M> M d1(M x) const { return x > M(0) ? M(1) : M(alpha) * std::exp(x); }
  template <typename M> M d2(M x) const { return x > M(0) ? M(0) : M(alpha) * std::exp(x); }
#if OAR_VEC
  F vf(F x) const { return vec::select_lt(vzero(), x, x, vec::mul(vset(alpha), expm1_neg(x))); }
  F vg(F x, F d) const { return vec::select_lt(vzero(), x, d, vec::mul(d, vec::mul(vset(alpha), vec::exp(x)))); }
#endif
};

// log(sigmoid(x)) = min(x, 0) - log1p(exp(-|x|)), stable for large |x|.
struct LogSigmoid {
  template <typename M> M f(M x) const {
    return std::min(x, M(0)) - std::log1p(std::exp(-std::abs(x)));
  }
  template <typename M> M d1(M x) const { return sigmoid(-x); }
  template <typename M> M d2(M x) const {
    const M s = sigmoid(x);
    return -s * (M(1) - s);
  }
#if OAR_VEC
  F vf(F x) const { return vec::sub(vec::min(vzero(), x), log1p_exp_neg_abs(x)); }
  F vg(F x, F d) const { return vec::mul(d, sigmoid_v(vec::sub(vzero(), x))); }
#endif
};

// x * relu6(x + 3) / 6 (Paddle: threshold 6, scale 6, offset 3).
struct Hardswish {
  template <typename M> M f(M x) const {
    const M t = std::min(std::max(x + M(3), M(0)), M(6));
    return x * t / M(6);
  }
  template <typename M> M d1(M x) const {
    return x + M(3) >= M(6) ? M(1) : (x + M(3) > M(0) ? (M(2) * x + M(3)) / M(6) : M(0));
  }
  template <typename M> M d2(M x) const {
    return (x + M(3) > M(0) && x + M(3) < M(6)) ? M(1) / M(3) : M(0);
  }
#if OAR_VEC
  F vf(F x) const {
    const F t = clamp_v(vec::add(x, vec::set1(3.0f)), vzero(), vec::set1(6.0f));
    return vec::div(vec::mul(x, t), vec::set1(6.0f));
  }
  F vg(F x, F d) const {
    const F a = vec::add(x, vec::set1(3.0f));
    const F mid = vec::div(vec::fmadd(vec::set1(2.0f), x, vec::set1(3.0f)), vec::set1(6.0f));
    const F d1 = vec::select_le(vec::set1(6.0f), a, vec::set1(1.0f), vec::select_lt(vzero(), a, mid, vzero()));
    return vec::mul(d, d1);
  }
#endif
};

struct Hardsigmoid {
  double slope, offset;
  template <typename M> M f(M x) const {
    return std::min(std::max(M(slope) * x + M(offset), M(0)), M(1));
  }
  template <typename M> M d1(M x) const {
    const M y = M(slope) * x + M(offset);
    return (y > M(0) && y < M(1)) ? M(slope) : M(0);
  }
#if OAR_VEC
  F vf(F x) const { return clamp_v(vec::fmadd(vset(slope), x, vset(offset)), vzero(), vec::set1(1.0f)); }
  F vg(F x, F d) const {
    return inside(vec::fmadd(vset(slope), x, vset(offset)), vzero(), vec::set1(1.0f), vec::mul(d, vset(slope)));
  }
#endif
};

struct Relu6 {
  template <typename M> M f(M x) const { return std::min(std::max(x, M(0)), M(6)); }
  template <typename M> M d1(M x) const { return (x > M(0) && x < M(6)) ? M(1) : M(0); }
#if OAR_VEC
  F vf(F x) const { return clamp_v(x, vzero(), vec::set1(6.0f)); }
  F vg(F x, F d) const { return inside(x, vzero(), vec::set1(6.0f), d); }
#endif
};

// scale * (x > 0 ? x : alpha * (exp(x) - 1))
struct Selu {
  double scale, alpha;
  template <typename M> M f(M x) const {
    return M(scale) * (x > M(0) ? x : M(alpha) * std::expm1(x));
  }
  template <typename M> M d1(M x) const {
    return x > M(0) ? M(scale) : M(scale) * M(alpha) * std::exp(x);
  }
  template <typename M> M d2(M x) const {
    return x > M(0) ? M(0) : M(scale) * M(alpha) * std::exp(x);
  }
#if OAR_VEC
  F vf(F x) const { return vec::mul(vset(scale), vec::select_lt(vzero(), x, x, vec::mul(vset(alpha), expm1_neg(x)))); }
  F vg(F x, F d) const {
    const F sa = vec::mul(vset(scale), vset(alpha));
    return vec::select_lt(vzero(), x, vec::mul(d, vset(scale)), vec::mul(d, vec::mul(sa, vec::exp(x))));
  }
#endif
};

// max(0, x) + min(0, alpha * (exp(x / alpha) - 1))
struct Celu {
  double alpha;
  template <typename M> M f(M x) const {
    return x > M(0) ? x : M(alpha) * std::expm1(x / M(alpha));
  }
  template <typename M> M d1(M x) const { return x > M(0) ? M(1) : std::exp(x / M(alpha)); }
  template <typename M> M d2(M x) const {
    return x > M(0) ? M(0) : std::exp(x / M(alpha)) / M(alpha);
  }
#if OAR_VEC
  F vf(F x) const {
    const F a = vset(alpha);
    return vec::select_lt(vzero(), x, x, vec::mul(a, expm1_neg(vec::div(x, a))));
  }
  F vg(F x, F d) const { return vec::select_lt(vzero(), x, d, vec::mul(d, vec::exp(vec::div(x, vset(alpha))))); }
#endif
};

struct Hardtanh {
  double lo, hi;
  template <typename M> M f(M x) const { return std::min(std::max(x, M(lo)), M(hi)); }
  template <typename M> M d1(M x) const { return (x > M(lo) && x < M(hi)) ? M(1) : M(0); }
#if OAR_VEC
  F vf(F x) const { return clamp_v(x, vset(lo), vset(hi)); }
  F vg(F x, F d) const { return inside(x, vset(lo), vset(hi), d); }
#endif
};

// x * tanh(softplus(x)), softplus linear above 20 as in Paddle.
struct Mish {
  template <typename M> static M softplus(M x) {
    return x > M(20) ? x : std::max(x, M(0)) + std::log1p(std::exp(-std::abs(x)));
  }
  template <typename M> M f(M x) const { return x * std::tanh(softplus(x)); }
  template <typename M> M d1(M x) const {
    const M t = std::tanh(softplus(x)), s = x > M(20) ? M(1) : sigmoid(x);
    return t + x * (M(1) - t * t) * s;
  }
  template <typename M> M d2(M x) const {
    const M t = std::tanh(softplus(x)), s = x > M(20) ? M(1) : sigmoid(x);
    const M u = (M(1) - t * t) * s;
    return M(2) * u + x * u * ((x > M(20) ? M(0) : M(1) - s) - M(2) * t * s);
  }
#if OAR_VEC
  // With n = exp(x) and p = n (n + 2): tanh(log1p(n)) = p / (p + 2) = p q / 2, q = 2 / (p + 2),
  // and 1 - tanh^2 = q (2 - q): one exp and one division for f, t and 1 - t^2 alike, each
  // without cancellation (n is small for x << 0, q for x >> 0). Past x = 20, f = x.
  struct Parts {
    F t, q, n;
  };
  static Parts parts(F x) {
    const F n = vec::exp(vec::min(vec::set1(20.0f), x));
    const F p = vec::mul(n, vec::add(n, vec::set1(2.0f)));
    const F q = vec::div(vec::set1(2.0f), vec::add(p, vec::set1(2.0f)));
    return {vec::mul(vec::mul(p, q), vec::set1(0.5f)), q, n};
  }
  F vf(F x) const { return vec::select_lt(vec::set1(20.0f), x, x, vec::mul(x, parts(x).t)); }
  F vg(F x, F d) const {
    const Parts a = parts(x);
    const F s = vec::div(a.n, vec::add(a.n, vec::set1(1.0f)));   // sigmoid(x)
    const F om = vec::mul(a.q, vec::sub(vec::set1(2.0f), a.q));  // 1 - t^2
    return vec::select_lt(vec::set1(20.0f), x, d, vec::mul(d, vec::fmadd(vec::mul(x, om), s, a.t)));
  }
#endif
};

struct Softsign {
  template <typename M> M f(M x) const { return x / (M(1) + std::abs(x)); }
  template <typename M> M d1(M x) const {
    const M d = M(1) + std::abs(x);
    return M(1) / (d * d);
  }
  template <typename M> M d2(M x) const {
    const M d = M(1) + std::abs(x);
    return (x > M(0) ? M(-2) : (x < M(0) ? M(2) : M(0))) / (d * d * d);
  }
#if OAR_VEC
  F vf(F x) const { return vec::div(x, vec::add(vec::set1(1.0f), vec::abs(x))); }
  F vg(F x, F d) const {
    const F s = vec::add(vec::set1(1.0f), vec::abs(x));
    return vec::div(d, vec::mul(s, s));
  }
#endif
};

struct Tanhshrink {
  template <typename M> M f(M x) const { return x - std::tanh(x); }
  template <typename M> M d1(M x) const {
    const M t = std::tanh(x);
    return t * t;
  }
  template <typename M> M d2(M x) const {
    const M t = std::tanh(x);
    return M(2) * t * (M(1) - t * t);
  }
#if OAR_VEC
  F vf(F x) const { return vec::sub(x, vec::tanh(x)); }
  F vg(F x, F d) const {
    const F t = vec::tanh(x);
    return vec::mul(d, vec::mul(t, t));
  }
#endif
};

struct Hardshrink {
  double threshold;
  template <typename M> M f(M x) const {
    return (x > M(threshold) || x < -M(threshold)) ? x : M(0);
  }
  template <typename M> M d1(M x) const {
    return (x > M(threshold) || x < -M(threshold)) ? M(1) : M(0);
  }
#if OAR_VEC
  F vf(F x) const { return vec::select_lt(vset(threshold), vec::abs(x), x, vzero()); }
  F vg(F x, F d) const { return vec::select_lt(vset(threshold), vec::abs(x), d, vzero()); }
#endif
};

struct Softshrink {
  double threshold;
  template <typename M> M f(M x) const {
    const M t = M(threshold);
    return x > t ? x - t : (x < -t ? x + t : M(0));
  }
  template <typename M> M d1(M x) const {
    return (x > M(threshold) || x < -M(threshold)) ? M(1) : M(0);
  }
#if OAR_VEC
  F vf(F x) const {
    const F t = vset(threshold);
    const F r = vec::select_lt(x, vec::sub(vzero(), t), vec::add(x, t), vzero());
    return vec::select_lt(t, x, vec::sub(x, t), r);
  }
  F vg(F x, F d) const { return vec::select_lt(vset(threshold), vec::abs(x), d, vzero()); }
#endif
};

struct ThresholdedRelu {
  double threshold, value;
  template <typename M> M f(M x) const { return x > M(threshold) ? x : M(value); }
  template <typename M> M d1(M x) const { return x > M(threshold) ? M(1) : M(0); }
#if OAR_VEC
  F vf(F x) const { return vec::select_lt(vset(threshold), x, x, vset(value)); }
  F vg(F x, F d) const { return vec::select_lt(vset(threshold), x, d, vzero()); }
#endif
};

// logit, Paddle's: log(c / (1 - c)) with c = x clipped to [eps, 1 - eps]; with eps = 0, NaN
// for x outside [0, 1]. The derivative 1 / (x (1 - x)) is 0 where x is outside the clip's
// range, NaN for a NaN x. One pass on vec::log (the composite, a clip, a division and a
// log, took three: 2.0x torch on the Xeon).
struct Logit {
  double eps;
  template <typename M>
  M f(M x) const {
    if (eps == 0 && (x < M(0) || x > M(1))) return std::numeric_limits<M>::quiet_NaN();
    const M lo = M(eps), hi = M(1.0 - eps);
    const M c = x < lo ? lo : (x > hi ? hi : x);  // a NaN x stays
    return std::log(c / (M(1) - c));
  }
  template <typename M>
  bool outside(M x) const {
    return x < M(eps) || x > M(1.0 - eps);
  }
  template <typename M>
  M d1(M x) const {
    return outside(x) ? M(0) : M(1) / (x * (M(1) - x));
  }
  template <typename M>
  M d2(M x) const {
    const M q = x * (M(1) - x);
    return outside(x) ? M(0) : (M(2) * x - M(1)) / (q * q);
  }
#if OAR_VEC
  F vf(F x) const {
    const F one = vset(1.0), lo = vset(eps), hi = vset(1.0 - eps);
    const F c = vec::min(hi, vec::max(lo, x));  // the constants first keep a NaN x
    F r = vec::log(vec::div(c, vec::sub(one, c)));
    if (eps == 0) {
      const F nan = vset(std::numeric_limits<double>::quiet_NaN());
      r = vec::select_lt(one, x, nan, vec::select_lt(x, vzero(), nan, r));
    }
    return r;
  }
  F vg(F x, F d) const {
    const F zero = vzero(), in = vec::div(d, vec::mul(x, vec::sub(vset(1.0), x)));
    return vec::select_lt(x, vset(eps), zero, vec::select_lt(vset(1.0 - eps), x, zero, in));
  }
#endif
};

// smooth_l1_loss's pointwise part: f' = clip(x, -delta, delta), f'' = [|x| < delta].
struct Huber {
  double delta;
  template <typename M>
  M f(M x) const {
    const M a = std::abs(x), d = M(delta);
    return a < d ? M(0.5) * x * x : d * (a - M(0.5) * d);
  }
  template <typename M>
  M d1(M x) const {
    return std::min(std::max(x, M(-delta)), M(delta));
  }
  template <typename M>
  M d2(M x) const {
    return std::abs(x) < M(delta) ? M(1) : M(0);
  }
#if OAR_VEC
  F vf(F x) const {
    const F a = vec::abs(x), d = vset(delta), h = vset(0.5);
    return vec::select_lt(a, d, vec::mul(vec::mul(h, x), x), vec::mul(d, vec::fnmadd(h, d, a)));
  }
  F vg(F x, F d) const { return vec::mul(d, clamp_v(x, vset(-delta), vset(delta))); }
#endif
};

// double, the double-backward kernels and builds without vectors take the scalar forms, in
// one flat loop over contiguous data: out[i] = fn(a[i], b[i], ...) in OpMath<T>, the inputs
// of out's shape. (unary_kernel's strided machinery, instantiated for every activation and
// dtype in both ISA copies, would be most of this file's compile time: Note [One copy of a
// loop].)
template <typename T, typename Fn, typename... In>
void scalar_flat(DenseTensor* out, const Fn& fn, const In&... in) {
  using M = OpMath<T>;
  const std::array<DenseTensor, sizeof...(In)> c{contiguous(in)...};
  T* o = out->alloc<T>();
  parallel_for(out->numel(), [&](int64_t b, int64_t e) {
    [&]<size_t... K>(std::index_sequence<K...>) {
      for (int64_t i = b; i < e; ++i) o[i] = static_cast<T>(fn(static_cast<M>(c[K].template data<T>()[i])...));
    }
    (std::index_sequence_for<In...>{});
  });
}

template <typename T>
constexpr bool kOnLanes = OAR_VEC && !std::is_same_v<T, double>;

template <typename T, typename Fn>
void forward(const DenseTensor& x, DenseTensor* out, Fn fn) {
  if constexpr (kOnLanes<T>) {
#if OAR_VEC
    detail::float_map<T, 1>(out, [&fn](F v) { return fn.vf(v); }, {&x});
#endif
  } else {
    scalar_flat<T>(
        out, [&fn](auto v) { return fn.f(v); }, x);
  }
}
// grad_out has x's shape (autograd passes the output's gradient): a direct call with another
// shape is an error naming both.
template <typename T, typename Fn>
void grad(const DenseTensor& x, const DenseTensor& g, DenseTensor* dx, Fn fn, const char* op) {
  OAR_ENFORCE(x.dims() == g.dims(), InvalidArgument, op, ": grad_out shape ", g.dims(), " must equal x shape ",
              x.dims());
  if constexpr (kOnLanes<T>) {
#if OAR_VEC
    detail::float_map<T, 2>(dx, [&fn](F v, F d) { return fn.vg(v, d); }, {&x, &g});
#endif
  } else {
    scalar_flat<T>(
        dx, [&fn](auto v, auto d) { return d * fn.d1(v); }, x, g);
  }
}
template <typename T, typename Fn>
void grad2(const DenseTensor& x, DenseTensor* out, Fn fn) {
  scalar_flat<T>(
      out, [&fn](auto v) { return fn.d2(v); }, x);
}

// binary_cross_entropy_with_logits without pos_weight (nn.yaml): max(x, 0) - x y +
// log1p(exp(-|x|)), and grad (sigmoid(x) - y). label and grad_out have x's shape.
template <typename T>
void SigmoidCrossEntropyWithLogitsKernel(const DeviceContext&, const DenseTensor& x, const DenseTensor& label,
                                         DenseTensor* out) {
  OAR_ENFORCE(x.dims() == label.dims(), InvalidArgument, "sigmoid_cross_entropy_with_logits: label shape ",
              label.dims(), " must equal x shape ", x.dims());
  if constexpr (kOnLanes<T>) {
#if OAR_VEC
    detail::float_map<T, 2>(
        out, [](F v, F y) { return vec::add(vec::fnmadd(v, y, vec::max(vzero(), v)), log1p_exp_neg_abs(v)); },
        {&x, &label});
#endif
  } else {
    scalar_flat<T>(
        out,
        [](auto v, auto y) {
      using M = decltype(v);
      return (std::max(v, M(0)) - v * y) + std::log1p(std::exp(-std::abs(v)));
        },
        x, label);
  }
}
template <typename T>
void SigmoidCrossEntropyWithLogitsGradKernel(const DeviceContext&, const DenseTensor& x, const DenseTensor& label,
                                             const DenseTensor& g, DenseTensor* dx) {
  constexpr const char* op = "sigmoid_cross_entropy_with_logits_grad";
  OAR_ENFORCE(x.dims() == label.dims(), InvalidArgument, op, ": label shape ", label.dims(), " must equal x shape ",
              x.dims());
  OAR_ENFORCE(x.dims() == g.dims(), InvalidArgument, op, ": grad_out shape ", g.dims(), " must equal x shape ",
              x.dims());
  if constexpr (kOnLanes<T>) {
#if OAR_VEC
    detail::float_map<T, 3>(dx, [](F v, F y, F d) { return vec::mul(d, vec::sub(sigmoid_v(v), y)); }, {&x, &label, &g});
#endif
  } else {
    scalar_flat<T>(
        dx, [](auto v, auto y, auto d) { return d * (sigmoid(v) - y); }, x, label, g);
  }
}

#define OAR_ACT_KERNELS(Name, op, Fn, ...)                                                                            \
  template <typename T>                                                                                               \
  void Name##Kernel(const DeviceContext&, const DenseTensor& x OAR_ACT_PARAMS(__VA_ARGS__), DenseTensor* out) {       \
    forward<T>(x, out, Fn{__VA_ARGS__});                                                                              \
  }                                                                                                                   \
  template <typename T>                                                                                               \
  void Name##GradKernel(const DeviceContext&, const DenseTensor& x, const DenseTensor& g OAR_ACT_PARAMS(__VA_ARGS__), \
                        DenseTensor* dx) {                                                                            \
    grad<T>(x, g, dx, Fn{__VA_ARGS__}, #op "_grad");                                                                  \
  }
#define OAR_ACT_GRAD2(Name, Fn, ...)                                                               \
  template <typename T>                                                                            \
  void Name##Grad2Kernel(const DeviceContext&, const DenseTensor& x OAR_ACT_PARAMS(__VA_ARGS__),   \
                         DenseTensor* out) {                                                       \
    grad2<T>(x, out, Fn{__VA_ARGS__});                                                             \
  }

// The attribute parameters of a kernel: ", double a, double b" for attrs a, b.
#define OAR_ACT_P0()
#define OAR_ACT_P1(a) , double a
#define OAR_ACT_P2(a, b) , double a, double b
#define OAR_ACT_PN(_0, _1, _2, N, ...) N
#define OAR_ACT_PARAMS(...) \
  OAR_ACT_PN(_0 __VA_OPT__(, ) __VA_ARGS__, OAR_ACT_P2, OAR_ACT_P1, OAR_ACT_P0)(__VA_ARGS__)

// silu's forward runs on vectors (vec::exp), so it is in unary_kernels.cc, built per ISA.
template <typename T>
void SiluGradKernel(const DeviceContext&, const DenseTensor& x, const DenseTensor& g, DenseTensor* dx) {
  grad<T>(x, g, dx, Silu{}, "silu_grad");
}
OAR_ACT_GRAD2(Silu, Silu)
OAR_ACT_KERNELS(Softplus, softplus, Softplus, beta, threshold)
OAR_ACT_GRAD2(Softplus, Softplus, beta, threshold)
OAR_ACT_KERNELS(LeakyRelu, leaky_relu, LeakyRelu, negative_slope)
OAR_ACT_KERNELS(Elu, elu, Elu, alpha)
OAR_ACT_GRAD2(Elu, Elu, alpha)
OAR_ACT_KERNELS(LogSigmoid, log_sigmoid, LogSigmoid)
OAR_ACT_GRAD2(LogSigmoid, LogSigmoid)
OAR_ACT_KERNELS(Hardswish, hardswish, Hardswish)
OAR_ACT_GRAD2(Hardswish, Hardswish)
OAR_ACT_KERNELS(Hardsigmoid, hardsigmoid, Hardsigmoid, slope, offset)
OAR_ACT_KERNELS(Relu6, relu6, Relu6)
OAR_ACT_KERNELS(Selu, selu, Selu, scale, alpha)
OAR_ACT_GRAD2(Selu, Selu, scale, alpha)
OAR_ACT_KERNELS(Celu, celu, Celu, alpha)
OAR_ACT_GRAD2(Celu, Celu, alpha)
OAR_ACT_KERNELS(Hardtanh, hardtanh, Hardtanh, t_min, t_max)
OAR_ACT_KERNELS(Mish, mish, Mish)
OAR_ACT_GRAD2(Mish, Mish)
OAR_ACT_KERNELS(Softsign, softsign, Softsign)
OAR_ACT_GRAD2(Softsign, Softsign)
OAR_ACT_KERNELS(Tanhshrink, tanhshrink, Tanhshrink)
OAR_ACT_GRAD2(Tanhshrink, Tanhshrink)
OAR_ACT_KERNELS(Hardshrink, hardshrink, Hardshrink, threshold)
OAR_ACT_KERNELS(Softshrink, softshrink, Softshrink, threshold)
OAR_ACT_KERNELS(ThresholdedRelu, thresholded_relu, ThresholdedRelu, threshold, value)
OAR_ACT_KERNELS(Huber, huber, Huber, delta)
OAR_ACT_KERNELS(Logit, logit, Logit, eps)
OAR_ACT_GRAD2(Logit, Logit, eps)
OAR_ACT_GRAD2(Huber, Huber, delta)

// GLU: out = a * sigmoid(b), a and b the halves of x along `axis`. With x contiguous, x is
// `rows` rows of 2 * half elements: a is the first half of a row, b the second, and out's
// row is `half` long; both are read where they lie (as sigmoid's vector and scalar forms).
template <typename T>
void GluKernel(const DeviceContext&, const DenseTensor& x, int64_t axis, DenseTensor* out) {
  T* o = out->alloc<T>();
  const int64_t n = out->numel();
  if (n == 0) return;
  const int a = wrap_axis(axis, x.rank(), "glu");
  int64_t half = x.dims()[a] / 2;
  for (int k = a + 1; k < x.rank(); ++k) half *= x.dims()[k];
  const DenseTensor xc = contiguous(x);
  const T* p = xc.data<T>();
  detail::row_pieces(n, half, [&](int64_t b, int64_t m, int64_t row, int64_t col) {
    const T* lo = p + row * 2 * half + col;
    if constexpr (kOnLanes<T>) {
#if OAR_VEC
      detail::float_rows<2>(
          o + b, m, [](F va, F vb) { return vec::mul(va, sigmoid_v(vb)); }, std::array<const T*, 2>{lo, lo + half});
#endif
    } else {
      using M = OpMath<T>;
      for (int64_t i = 0; i < m; ++i) {
        o[b + i] = static_cast<T>(static_cast<M>(lo[i]) * (M(1) / (M(1) + std::exp(-static_cast<M>(lo[half + i])))));
      }
    }
  });
}

}  // namespace
}  // namespace oar::phi

using namespace oar::phi;  // NOLINT

OAR_REGISTER_KERNEL(glu, CPU, GluKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(silu_grad, CPU, SiluGradKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(logit, CPU, LogitKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(logit_grad, CPU, LogitGradKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(logit_grad2, CPU, LogitGrad2Kernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(silu_grad2, CPU, SiluGrad2Kernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(softplus, CPU, SoftplusKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(softplus_grad, CPU, SoftplusGradKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(softplus_grad2, CPU, SoftplusGrad2Kernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(leaky_relu, CPU, LeakyReluKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(leaky_relu_grad, CPU, LeakyReluGradKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(elu, CPU, EluKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(elu_grad, CPU, EluGradKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(elu_grad2, CPU, EluGrad2Kernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(log_sigmoid, CPU, LogSigmoidKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(log_sigmoid_grad, CPU, LogSigmoidGradKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(log_sigmoid_grad2, CPU, LogSigmoidGrad2Kernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(hardswish, CPU, HardswishKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(hardswish_grad, CPU, HardswishGradKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(hardswish_grad2, CPU, HardswishGrad2Kernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(hardsigmoid, CPU, HardsigmoidKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(hardsigmoid_grad, CPU, HardsigmoidGradKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(relu6, CPU, Relu6Kernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(relu6_grad, CPU, Relu6GradKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(selu, CPU, SeluKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(selu_grad, CPU, SeluGradKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(selu_grad2, CPU, SeluGrad2Kernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(celu, CPU, CeluKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(celu_grad, CPU, CeluGradKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(celu_grad2, CPU, CeluGrad2Kernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(hardtanh, CPU, HardtanhKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(hardtanh_grad, CPU, HardtanhGradKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(mish, CPU, MishKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(mish_grad, CPU, MishGradKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(mish_grad2, CPU, MishGrad2Kernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(softsign, CPU, SoftsignKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(softsign_grad, CPU, SoftsignGradKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(softsign_grad2, CPU, SoftsignGrad2Kernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(tanhshrink, CPU, TanhshrinkKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(tanhshrink_grad, CPU, TanhshrinkGradKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(tanhshrink_grad2, CPU, TanhshrinkGrad2Kernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(hardshrink, CPU, HardshrinkKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(hardshrink_grad, CPU, HardshrinkGradKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(softshrink, CPU, SoftshrinkKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(softshrink_grad, CPU, SoftshrinkGradKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(thresholded_relu, CPU, ThresholdedReluKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(thresholded_relu_grad, CPU, ThresholdedReluGradKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(sigmoid_cross_entropy_with_logits, CPU, SigmoidCrossEntropyWithLogitsKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(sigmoid_cross_entropy_with_logits_grad, CPU, SigmoidCrossEntropyWithLogitsGradKernel,
                    OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(huber, CPU, HuberKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(huber_grad, CPU, HuberGradKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(huber_grad2, CPU, HuberGrad2Kernel, OAR_FLOAT_TYPES)
