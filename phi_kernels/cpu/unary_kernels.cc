// Unary elementwise kernels and their fused backward kernels (cast, assign and the fills:
// cast_kernels.cc).
#include <cmath>
#include <limits>
#include <type_traits>

#include "oar_generated/kernel_signatures.h"
#include "phi_kernels/cpu/elementwise.h"
#include "phi_kernels/cpu/vec_erf.h"
#include "phi_kernels/cpu/vec_math.h"

namespace oar::phi {
namespace {

#define OAR_UNARY_KERNEL(Name, expr)                                                      \
  template <typename T>                                                                    \
  void Name(const DeviceContext&, const DenseTensor& x, DenseTensor* out) {                \
    unary_kernel<T, T>(x, out, [](auto v) { return expr; });                               \
  }

// Transcendentals run on SLEEF vectors (vec_math.h); 1-ulp accuracy.
// Note [The exp op on vec::exp]: float exp is vec::exp's arithmetic (0.891 ulp at worst,
// every float checked; SLEEF's u10 is 0.988) on pairs of vectors whose lanes all lie in
// |x| <= 87.33, without its clamp and masks (vec::exp_in_range). The other vectors go to
// SLEEF: results that are subnormal (vec::exp gives 0 there), the top of the range, where
// the AVX2 copy's 2^n overflows, and +-inf/NaN. On the Emerald Rapids Xeon at 1 thread,
// 128K floats in L2: 0.19 ns an element with AVX-512, against 0.32-0.33 through Debian's
// SLEEF (this op before) and torch's 0.20-0.21 (MKL's); 0.31 with AVX2, as MKL's AVX2 copy
// (Note [exp's reduction and polynomial], docs/notes/cpu_speed_steps.md). The benchmark's
// 1M floats are bound by memory. There, a test per vector cost 1.04x torch (0.322 against
// 0.311 ms, relu 0.298); one test per pair of vectors (vf2) runs at 0.96-0.98x: fewer
// instructions per cache line, so more of the stream's loads are in flight.
struct ExpF {
#if OAR_VEC
  static vec::F vf(vec::F x) {
    return vec::all_in(x, vec::kExpLo, 88.37f) ? vec::exp_in_range(x) : OAR_SLEEF_F(exp, u10)(x);
  }
  // One range test for the loop's two vectors, |x| <= 87.33 (one compare a vector; the pairs
  // with a lane in (87.33, 88.37] take vf): with a branch per pair, not per vector, the
  // compiler interleaves the two chains and loads each constant once for both (GCC 12: 12
  // broadcasts and 42 instructions a pair, against 17 loads of constants a vector).
  static void vf2(vec::F& a, vec::F& b) {
    if (vec::all_abs_le(a, b, -vec::kExpLo)) {
      a = vec::exp_in_range(a);
      b = vec::exp_in_range(b);
    } else {
      a = vf(a);
      b = vf(b);
    }
  }
  static vec::D vd(vec::D x) { return OAR_SLEEF_D(exp, u10)(x); }
#endif
  template <typename M>
  static M s(M v) {
    return std::exp(v);
  }
};
// log: float lanes on vec::log (Note [log on vectors]), double on SLEEF.
OAR_VEC_FUNCTOR(LogF, log, log, u10, std::log(v))
OAR_SLEEF_FUNCTOR(SinF, sin, u10, std::sin(v))
OAR_SLEEF_FUNCTOR(CosF, cos, u10, std::cos(v))
// tanh: vec::tanh for float (3 ulp, twice SLEEF's speed), SLEEF for double.
OAR_VEC_FUNCTOR(TanhF, tanh, tanh, u10, std::tanh(v))
struct SigmoidF {  // 1 / (1 + exp(-x)); vec::exp for float, SLEEF for double
#if OAR_VEC
  static vec::F vf(vec::F x) {
    const vec::F one = vec::set1(1.0f);
    return vec::div(one, vec::add(one, vec::exp(vec::sub(vec::set1(0.0f), x))));
  }
  static vec::D vd(vec::D x) {
    const vec::D one = vec::set1(1.0);
    return vec::div(one, vec::add(one, OAR_SLEEF_D(exp, u10)(vec::sub(vec::set1(0.0), x))));
  }
#endif
  template <typename M> static M s(M v) { return M(1) / (M(1) + std::exp(-v)); }
};
struct SiluF {  // x / (1 + exp(-x)); its gradients are in activation_kernels.cc
#if OAR_VEC
  static vec::F vf(vec::F x) {
    const vec::F one = vec::set1(1.0f);
    return vec::div(x, vec::add(one, vec::exp(vec::sub(vec::set1(0.0f), x))));
  }
  static vec::D vd(vec::D x) {
    const vec::D one = vec::set1(1.0);
    return vec::div(x, vec::add(one, OAR_SLEEF_D(exp, u10)(vec::sub(vec::set1(0.0), x))));
  }
#endif
  template <typename M>
  static M s(M v) {
    return v * (M(1) / (M(1) + std::exp(-v)));
  }
};
#define OAR_SLEEF_KERNEL(Name, Functor)                                       \
  template <typename T>                                                       \
  void Name(const DeviceContext&, const DenseTensor& x, DenseTensor* out) {   \
    sleef_unary<Functor, T>(x, out);                                          \
  }
OAR_SLEEF_KERNEL(ExpKernel, ExpF)
OAR_SLEEF_KERNEL(LogKernel, LogF)
OAR_SLEEF_KERNEL(TanhKernel, TanhF)
OAR_SLEEF_KERNEL(SigmoidKernel, SigmoidF)
OAR_SLEEF_KERNEL(SiluKernel, SiluF)
OAR_SLEEF_KERNEL(SinKernel, SinF)
OAR_SLEEF_KERNEL(CosKernel, CosF)
OAR_UNARY_KERNEL(SqrtKernel, std::sqrt(v))
OAR_UNARY_KERNEL(RsqrtKernel, decltype(v)(1) / std::sqrt(v))
// Integer negation and abs in unsigned arithmetic: -INT64_MIN overflows (undefined); it wraps
// to INT64_MIN as in NumPy and Paddle.
template <typename V>
V wrapping_neg(V v) {
  if constexpr (std::is_integral_v<V> && std::is_signed_v<V>) {
    return static_cast<V>(-static_cast<std::make_unsigned_t<V>>(v));
  } else {
    return -v;
  }
}
// abs and neg of contiguous 16-bit floats on their bits: the sign bit cleared or flipped, as
// fabs and negation treat a float (-0 and NaN included), with no widening through float
// blocks: [1024, 1024] float16 at 1 thread, abs 0.37 ms and neg 0.33 (torch 0.22 and 0.18).
template <typename T, uint16_t kKeep, uint16_t kFlip>
bool sign_bits_half(const DenseTensor& x, DenseTensor* out) {
  if (!x.is_contiguous()) return false;
  const T* in = x.data<T>();
  T* o = out->alloc<T>();
  parallel_for(x.numel(), [&](int64_t b, int64_t e) {
#pragma omp simd
    for (int64_t i = b; i < e; ++i) o[i].bits = static_cast<uint16_t>((in[i].bits & kKeep) ^ kFlip);
  });
  return true;
}

template <typename T>
void NegKernel(const DeviceContext&, const DenseTensor& x, DenseTensor* out) {
  if constexpr (detail::kIsHalf<T>) {
    if (sign_bits_half<T, 0xffff, 0x8000>(x, out)) return;
  }
  unary_kernel<T, T>(x, out, [](auto v) { return wrapping_neg(v); });
}
// relu of contiguous 16-bit floats on their bits: v > 0 keeps v, everything else (-0, the
// negatives, NaN) becomes +0, as the float compare gives it. The values kept are the bit
// patterns 1 .. +inf (0x7c00 float16, 0x7f80 bfloat16), one unsigned compare of bits - 1,
// with no widening: float16 read through F16C took 1.5x an add of the same size ([1024,
// 1024] at 1 thread on Zen 4, 0.126 ms against torch's 0.115).
template <typename T>
constexpr bool positive_bits(uint16_t v) {
  return static_cast<uint16_t>(v - 1) < (std::is_same_v<T, float16> ? 0x7c00 : 0x7f80);
}

template <typename T>
void relu_half_bits(const DenseTensor& x, DenseTensor* out) {
  const T* in = x.data<T>();
  T* o = out->alloc<T>();
  parallel_for(x.numel(), [&](int64_t b, int64_t e) {
#pragma omp simd
    for (int64_t i = b; i < e; ++i) o[i].bits = positive_bits<T>(in[i].bits) ? in[i].bits : uint16_t{0};
  });
}

template <typename T>
void ReluKernel(const DeviceContext&, const DenseTensor& x, DenseTensor* out) {
  if constexpr (std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>) {
    if (x.is_contiguous()) return relu_half_bits<T>(x, out);
  }
  unary_kernel<T, T>(x, out, [](auto v) { return v > decltype(v)(0) ? v : decltype(v)(0); });
}

// abs of a float clears its sign bit (fabs): abs(-0.0) is +0.0, as in NumPy, Paddle and torch
// (a compare with 0 kept -0.0, and 1 / abs(-0.0) was -inf).
template <typename T>
void AbsKernel(const DeviceContext&, const DenseTensor& x, DenseTensor* out) {
  if constexpr (detail::kIsHalf<T>) {
    if (sign_bits_half<T, 0x7fff, 0>(x, out)) return;
  }
  unary_kernel<T, T>(x, out, [](auto v) {
    using V = decltype(v);
    if constexpr (std::is_floating_point_v<V>) {
      return std::fabs(v);
    } else if constexpr (std::is_unsigned_v<V> || std::is_same_v<V, bool>) {
      return v;
    } else {
      return v < 0 ? wrapping_neg(v) : v;
    }
  });
}

template <typename T>
void SignKernel(const DeviceContext&, const DenseTensor& x, DenseTensor* out) {
  unary_kernel<T, T>(x, out, [](auto v) {
    using V = decltype(v);
    return static_cast<V>((V(0) < v) - (v < V(0)));
  });
}

template <typename T>
void ScaleKernel(const DeviceContext&, const DenseTensor& x, double scale, double bias,
                 bool bias_after_scale, DenseTensor* out) {
  using M = OpMath<T>;
  if constexpr (std::is_integral_v<M> && !std::is_same_v<M, bool>) {
    // Integers: scale and bias truncated to T (float_to_int: NaN and out-of-range values are
    // defined), the products wrap (unsigned arithmetic) instead of overflowing.
    using U = std::make_unsigned_t<std::conditional_t<(sizeof(M) > 4), int64_t, int32_t>>;
    const U s = static_cast<U>(float_to_int<M>(scale));
    const U b = static_cast<U>(float_to_int<M>(bias_after_scale ? bias : bias * scale));
    unary_kernel<T, T>(x, out, [s, b](M v) { return static_cast<M>(static_cast<U>(v) * s + b); });
  } else {
    const M s = static_cast<M>(scale);
    const M b = static_cast<M>(bias_after_scale ? bias : bias * scale);
    unary_kernel<T, T>(x, out, [s, b](M v) { return v * s + b; });
  }
}

template <typename T>
void PowScalarKernel(const DeviceContext&, const DenseTensor& x, double y, DenseTensor* out) {
  using M = OpMath<T>;
  if (y == 2.0) {
    unary_kernel<T, T>(x, out, [](M v) { return v * v; });
  } else if (y == 1.0) {
    unary_kernel<T, T>(x, out, [](M v) { return v; });
  } else if constexpr (std::is_integral_v<M>) {
    // The exponent and the power convert without undefined behaviour (float_to_int).
    const M e = float_to_int<M>(y);
    unary_kernel<T, T>(x, out, [e](M v) { return float_to_int<M>(std::pow(v, e)); });
  } else if (y == 3.0) {  // the common exponents as torch does them, pow's special values kept
    unary_kernel<T, T>(x, out, [](M v) { return v * v * v; });
  } else if (y == -1.0) {
    unary_kernel<T, T>(x, out, [](M v) { return M(1) / v; });
  } else if (y == -2.0) {
    unary_kernel<T, T>(x, out, [](M v) {  // not 1 / (v v), which loses the subnormal results
      const M r = M(1) / v;
      return r * r;
    });
  } else if (y == 0.5 || y == -0.5) {
    // pow(-0, +-0.5) is +0 / +inf and pow(-inf, +-0.5) +inf / +0, where sqrt gives -0 and NaN
    const bool inv = y < 0;
    unary_kernel<T, T>(x, out, [inv](M v) {
      const M r = std::isinf(v) ? std::abs(v) : std::sqrt(v) + M(0);
      return inv ? M(1) / r : r;
    });
  } else {
#if OAR_VEC
    if constexpr (!std::is_same_v<M, double>) {  // SLEEF's pow (1 ulp) on float lanes
      const vec::F e = vec::set1(static_cast<float>(y));
      detail::float_map<T, 1>(out, [e](vec::F v) { return OAR_SLEEF_F(pow, u10)(v, e); }, {&x});
      return;
    }
#endif
    const M e = static_cast<M>(y);
    unary_kernel<T, T>(x, out, [e](M v) { return static_cast<M>(std::pow(v, e)); });
  }
}

// clip of contiguous 16-bit floats. Its result is x itself, bfloat16(lo) or bfloat16(hi)
// (float16 alike), so the loop compares the widened floats and selects 16-bit patterns: the
// same bits as rounding the float result back, without the rounding, which was most of the
// element loop's time ([1024, 1024] bfloat16 at 1 thread on Zen 4: 0.248 -> 0.096 ms, torch
// 0.235).
// NaN compares false both ways and passes through as it came.
template <typename T>
void clip_half_bits(const DenseTensor& x, float lo, float hi, DenseTensor* out) {
  const T* src = x.data<T>();
  T* dst = out->alloc<T>();
  const uint16_t lo_bits = T(lo).bits, hi_bits = T(hi).bits;
  auto rows = [&](int64_t b, int64_t e) {
    // Note [Kernel closures in registers]: locals, not the closure's members, which a 16-bit
    // store could alias: read through it, the loop kept a branch per element (7.0 ms).
    const float l = lo, h = hi;
    const uint16_t lb = lo_bits, hb = hi_bits;
    alignas(64) float f[detail::kHalfBlock];
    for (int64_t s = b; s < e; s += detail::kHalfBlock) {
      const int64_t k = std::min(detail::kHalfBlock, e - s);
      detail::to_floats(src + s, f, k);
      const T* in = src + s;
      T* o = dst + s;
#pragma omp simd
      for (int64_t i = 0; i < k; ++i) {
        const uint16_t v = in[i].bits;  // loaded unconditionally, not on one side of the select
        const uint16_t r = f[i] < l ? lb : v;
        o[i].bits = f[i] > h ? hb : r;
      }
    }
  };
  parallel_for(x.numel(), rows);
}

template <typename T>
void ClipKernel(const DeviceContext&, const DenseTensor& x, double min, double max,
                DenseTensor* out) {
  using M = OpMath<T>;
  M lo, hi;
  if constexpr (std::is_integral_v<M>) {
    // Bounds past T's range (the defaults are +-FLT_MAX) clip nothing on that side; the
    // others are truncated to T. A bare cast of -3.4e38 to an integer is undefined.
    constexpr double tmin = static_cast<double>(std::numeric_limits<M>::min());
    constexpr double tmax = static_cast<double>(std::numeric_limits<M>::max());
    auto bound = [&](double d) {
      return d <= tmin ? std::numeric_limits<M>::min() : d >= tmax ? std::numeric_limits<M>::max() : float_to_int<M>(d);
    };
    lo = bound(min);
    hi = bound(max);
  } else {
    lo = static_cast<M>(std::max<double>(min, -1e300));
    hi = static_cast<M>(max);
  }
  if constexpr (detail::kIsHalf<T>) {
    if (x.is_contiguous()) return clip_half_bits<T>(x, lo, hi, out);
  }
  unary_kernel<T, T>(x, out, [lo, hi](M v) { return v < lo ? lo : (v > hi ? hi : v); });
}

// ---- fused backward kernels: (out, grad_out) -> grad_x
template <typename T>
void ReluGradKernel(const DeviceContext&, const DenseTensor& out, const DenseTensor& g,
                    DenseTensor* dx) {
  if constexpr (std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>) {
    // on the bits, as relu_half_bits: g where out > 0, +0 elsewhere
    if (out.is_contiguous() && g.is_contiguous() && out.dims() == g.dims()) {
      const T* po = out.data<T>();
      const T* pg = g.data<T>();
      T* d = dx->alloc<T>();
      parallel_for(out.numel(), [&](int64_t b, int64_t e) {
#pragma omp simd
        for (int64_t i = b; i < e; ++i) {
          const uint16_t gv = pg[i].bits;  // loaded unconditionally: a select, not a branch per value
          d[i].bits = positive_bits<T>(po[i].bits) ? gv : uint16_t{0};
        }
      });
      return;
    }
  }
  binary_kernel<T, T>(out, g, dx, [](auto o, auto d) { return o > decltype(o)(0) ? d : decltype(o)(0); });
}
template <typename T>
void TanhGradKernel(const DeviceContext&, const DenseTensor& out, const DenseTensor& g,
                    DenseTensor* dx) {
  binary_kernel<T, T>(out, g, dx, [](auto o, auto d) { return d * (decltype(o)(1) - o * o); });
}
template <typename T>
void SigmoidGradKernel(const DeviceContext&, const DenseTensor& out, const DenseTensor& g,
                       DenseTensor* dx) {
  binary_kernel<T, T>(out, g, dx, [](auto o, auto d) { return d * o * (decltype(o)(1) - o); });
}

// gelu(x) = x * Phi(x) (exact) or the tanh approximation.
constexpr double kSqrt2OverPi = 0.7978845608028654;
constexpr double kInvSqrt2 = 0.7071067811865476;
constexpr double kInvSqrt2Pi = 0.3989422804014327;

template <typename M> M gelu(M x, bool approx) {
  if (approx) {
    M u = M(kSqrt2OverPi) * (x + M(0.044715) * x * x * x);
    return M(0.5) * x * (M(1) + std::tanh(u));
  }
  return M(0.5) * x * std::erfc(-x * M(kInvSqrt2));  // 1 + erf(z) would cancel for x < 0
}
template <typename M> M gelu_d1(M x, bool approx) {
  if (approx) {
    M u = M(kSqrt2OverPi) * (x + M(0.044715) * x * x * x);
    M t = std::tanh(u);
    M du = M(kSqrt2OverPi) * (M(1) + M(3 * 0.044715) * x * x);
    return M(0.5) * (M(1) + t) + M(0.5) * x * (M(1) - t * t) * du;
  }
  return M(0.5) * std::erfc(-x * M(kInvSqrt2)) + x * M(kInvSqrt2Pi) * std::exp(M(-0.5) * x * x);
}
template <typename M> M gelu_d2(M x, bool approx) {
  if (approx) {
    const M c = M(kSqrt2OverPi), a = M(0.044715);
    M u = c * (x + a * x * x * x);
    M t = std::tanh(u);
    M s = M(1) - t * t;  // sech^2
    M du = c * (M(1) + M(3) * a * x * x);
    M d2u = c * M(6) * a * x;
    return s * du + M(0.5) * x * (s * d2u - M(2) * t * s * du * du);
  }
  M pdf = M(kInvSqrt2Pi) * std::exp(M(-0.5) * x * x);
  return pdf * (M(2) - x * x);
}

// Vector gelu. Exact form, float: erfc(|z|), z = x / sqrt2, from Abramowitz & Stegun 7.1.26
// (t = 1 / (1 + p|z|), erfc = t P(t) exp(-z^2), absolute error <= 1.5e-7, about 1 ulp of
// Phi near 1; the same approach as PyTorch's vectorized CPU erf), then
// gelu(x) = max(x, 0) - |x| erfc(|z|) / 2 (no cancellation for x < 0; one fused rounding).
// Double on Oar's erf (vec_erf.h). Tanh form: 0.5 x (1 + tanh(u)) = x / (1 + exp(-2u)), exact.
#if OAR_VEC
// s * erfc(a) for float lanes with a = |z| in [0, 10.5] (the approximation above, its
// coefficients scaled by s, a constant folded in when inlined), and in *e the factor exp(-a^2)
// it used, which the gradient's density shares. Past |z| = 10.5 nothing changes
// (erfc(10) < 1e-44) and rcp's argument stays finite; at 10.5 exp(-a^2) is exactly 0 in
// both copies (AVX-512's vscalefps would leave a subnormal at 10).
inline vec::F erfc_as(vec::F a, float s, vec::F* e) {
  const vec::F t = vec::rcp(vec::fmadd(vec::set1(0.3275911f), a, vec::set1(1.0f)));
  vec::F p = vec::set1(1.061405429f * s);
  p = vec::fmadd(p, t, vec::set1(-1.453152027f * s));
  p = vec::fmadd(p, t, vec::set1(1.421413741f * s));
  p = vec::fmadd(p, t, vec::set1(-0.284496736f * s));
  p = vec::fmadd(p, t, vec::set1(0.254829592f * s));
  *e = vec::exp_nonpos_lite(vec::fnmadd(a, a, vec::set1(0.0f)));  // -a^2
  return vec::mul(vec::mul(p, t), *e);
}
// 1 + erf(x / sqrt2) = 2 Phi(x) for float lanes, and exp(-x^2 / 2) in *e (for |x| > 14.8,
// where z is clamped, both are 0 or subnormal). A NaN x gives a finite value here; the
// callers' product with x makes the result NaN.
inline vec::F gelu_cdf2(vec::F x, vec::F* e) {
  const vec::F z = vec::mul(x, vec::set1(float(kInvSqrt2)));
  const vec::F q = erfc_as(vec::min(vec::abs(z), vec::set1(10.5f)), 1.0f, e);
  return vec::select_neg(z, q, vec::sub(vec::set1(2.0f), q));
}
// gelu(x) = max(x, 0) - |x| erfc(|z|) / 2 on K float vectors, each step taken for all K
// before the next (Note [gelu on two vectors], docs/notes/cpu_speed_steps.md): erfc_as's
// arithmetic with a = |z| clamped to 9, where exp(-a^2) = 6.6e-36 and every product after
// it stay normal floats (Intel's cores take a microcode assist on each subnormal result),
// so exp needs no clamp or mask of its own. The lanes past 9 (|x| > 12.73, where
// |gelu| < 3e-36) keep max(x, 0) through one mask on the last fnmadd (a blend with AVX2).
// max(x, 0) is h + |h|, h = x / 2 (exact): NaN for x = -inf (gelu(-inf) = -inf * 0 is NaN
// in float64 too) and NaN x (no lane compares below 9), +inf for +inf.
// Phi(x) for double lanes: 0.5 + 0.5 erf(z) on Oar's erf (Note [erf on double lanes]) where
// every lane has x >= -3 (there 1 + erf(z) >= 2.7e-3, so erf's 1.1e-16 costs at most 4e-14
// relative), else 0.5 erfc(-z) on SLEEF's 1.5-ulp erfc (1.47x SLEEF's erf on every vector),
// which keeps Phi's relative accuracy in the tail: 0.5 + 0.5 erf is
// 0 from x = -8.3 down (gelu(-10) = -7.6e-23 came out 0; the gradient was 1.2% off at -9).
inline vec::D gelu_cdf(vec::D x) {
  const vec::D z = vec::mul(x, vec::set1(kInvSqrt2));
  if (vec::all_in(x, -3.0, std::numeric_limits<double>::infinity()))
    return vec::fmadd(vec::set1(0.5), vec::erf(z), vec::set1(0.5));
  return vec::mul(vec::set1(0.5), OAR_SLEEF_D(erfc, u15)(vec::sub(vec::set1(0.0), z)));
}
template <int K>
[[gnu::always_inline]] inline void gelu_erf_lanes(vec::F* v) {
  using vec::F;
  using vec::set1;
  const float s = float(kInvSqrt2);  // erfc's coefficients carry the 1 / sqrt2 of |x| / 2
  const F lim = set1(9.0f);
  F c[K], ar[K], a[K], t[K], w[K], n[K], p[K], q[K];
  for (int k = 0; k < K; ++k) {
    const F h = vec::mul(set1(0.5f), v[k]);
    const F ah = vec::abs(h);
    c[k] = vec::add(h, ah);
    ar[k] = vec::mul(ah, set1(float(2 * kInvSqrt2)));
  }
  for (int k = 0; k < K; ++k) a[k] = vec::min(ar[k], lim);
  for (int k = 0; k < K; ++k) t[k] = vec::fmadd(set1(0.3275911f), a[k], set1(1.0f));
  for (int k = 0; k < K; ++k) w[k] = vec::fnmadd(a[k], a[k], set1(0.0f));  // -a^2
  for (int k = 0; k < K; ++k) t[k] = vec::rcp(t[k]);
  for (int k = 0; k < K; ++k) p[k] = vec::fmadd(set1(1.061405429f * s), t[k], set1(-1.453152027f * s));
  for (int k = 0; k < K; ++k) q[k] = vec::exp_lite_in_range(w[k]);
  for (int k = 0; k < K; ++k) p[k] = vec::fmadd(p[k], t[k], set1(1.421413741f * s));
  for (int k = 0; k < K; ++k) p[k] = vec::fmadd(p[k], t[k], set1(-0.284496736f * s));
  for (int k = 0; k < K; ++k) p[k] = vec::fmadd(p[k], t[k], set1(0.254829592f * s));
  for (int k = 0; k < K; ++k) n[k] = vec::mul(a[k], t[k]);  // off p's chain
  for (int k = 0; k < K; ++k) p[k] = vec::mul(p[k], n[k]);
  for (int k = 0; k < K; ++k) v[k] = vec::select_lt(ar[k], lim, vec::fnmadd(p[k], q[k], c[k]), c[k]);
}
#endif
struct GeluErfF {
#if OAR_VEC
  // always inlined: GCC's own limits left the two-vector body a call, its vectors passed
  // through memory (0.41 ns an element against 0.365 inlined, in a standalone loop)
  [[gnu::always_inline]] static vec::F vf(vec::F x) {
    gelu_erf_lanes<1>(&x);
    return x;
  }
  [[gnu::always_inline]] static void vf2(vec::F& x0, vec::F& x1) {
    vec::F v[2] = {x0, x1};
    gelu_erf_lanes<2>(v);
    x0 = v[0];
    x1 = v[1];
  }
  static vec::D vd(vec::D x) { return vec::mul(x, gelu_cdf(x)); }
#endif
  template <typename M> static M s(M v) { return gelu(v, false); }
};
struct GeluTanhF {
#if OAR_VEC
  template <typename V, typename E, typename Exp> static V v(V x, Exp exp) {
    const V x3 = vec::mul(vec::mul(x, x), x);
    const V u2 = vec::mul(vec::set1(E(-2 * kSqrt2OverPi)), vec::fmadd(vec::set1(E(0.044715)), x3, x));
    return vec::div(x, vec::add(vec::set1(E(1)), exp(u2)));
  }
  // vec::exp: 0.9 ulp, faster than SLEEF's; overflow to inf (x -> -inf) gives x / inf = -0
  static vec::F vf(vec::F x) {
    return v<vec::F, float>(x, [](vec::F u) { return vec::exp(u); });
  }
  static vec::D vd(vec::D x) { return v<vec::D, double>(x, OAR_SLEEF_D(exp, u10)); }
#endif
  template <typename M> static M s(M v) { return gelu(v, true); }
};

template <typename T>
void GeluKernel(const DeviceContext&, const DenseTensor& x, bool approximate, DenseTensor* out) {
  if (approximate) {
    sleef_unary<GeluTanhF, T>(x, out);
  } else {
    sleef_unary<GeluErfF, T>(x, out);
  }
}
// d * gelu'(x) on vectors: the exact form's Phi as in GeluErfF (float) or Oar's double erf
// (double), the density and tanh on vec::exp / vec::tanh (float) or SLEEF (double).
struct GeluGradErfF {
#if OAR_VEC
  static vec::F vf(vec::F x, vec::F d) {
    vec::F e;
    const vec::F cdf2 = gelu_cdf2(x, &e);
    const vec::F pdf = vec::mul(vec::set1(float(kInvSqrt2Pi)), e);
    return vec::mul(d, vec::fmadd(vec::set1(0.5f), cdf2, vec::mul(x, pdf)));
  }
  static vec::D vd(vec::D x, vec::D d) {
    const vec::D pdf =
        vec::mul(vec::set1(kInvSqrt2Pi), OAR_SLEEF_D(exp, u10)(vec::mul(vec::set1(-0.5), vec::mul(x, x))));
    return vec::mul(d, vec::fmadd(x, pdf, gelu_cdf(x)));
  }
#endif
  template <typename M>
  static M s(M x, M d) {
    return d * gelu_d1(x, false);
  }
};
struct GeluGradTanhF {
#if OAR_VEC
  template <typename V, typename E, typename Tanh>
  static V v(V x, V d, Tanh tanh) {
    const V x2 = vec::mul(x, x);
    const V t = tanh(vec::mul(vec::set1(E(kSqrt2OverPi)), vec::fmadd(vec::mul(vec::set1(E(0.044715)), x2), x, x)));
    const V du = vec::mul(vec::set1(E(kSqrt2OverPi)), vec::fmadd(vec::set1(E(3 * 0.044715)), x2, vec::set1(E(1))));
    const V half = vec::set1(E(0.5));
    const V sech2 = vec::sub(vec::set1(E(1)), vec::mul(t, t));
    const V d1 = vec::fmadd(half, vec::add(vec::set1(E(1)), t), vec::mul(vec::mul(half, x), vec::mul(sech2, du)));
    return vec::mul(d, d1);
  }
  static vec::F vf(vec::F x, vec::F d) {
    return v<vec::F, float>(x, d, [](vec::F u) { return vec::tanh(u); });
  }
  static vec::D vd(vec::D x, vec::D d) { return v<vec::D, double>(x, d, OAR_SLEEF_D(tanh, u10)); }
#endif
  template <typename M>
  static M s(M x, M d) {
    return d * gelu_d1(x, true);
  }
};

// o = Fn(x, d) over n elements of float or double: full vectors, then the tail through
// padded buffers.
template <typename Fn, typename T>
void vec_binary(const T* x, const T* d, T* o, int64_t n) {
#if OAR_VEC
  using V = typename vec::Of<T>::type;
  constexpr int64_t kL = vec::Of<T>::lanes;
  auto call = [](V a, V b) {
    if constexpr (std::is_same_v<T, float>) {
      return Fn::vf(a, b);
    } else {
      return Fn::vd(a, b);
    }
  };
  int64_t i = 0;
  // two independent vectors per iteration: the functors are long dependency chains
  for (; i + 2 * kL <= n; i += 2 * kL) {
    const V r0 = call(vec::load(x + i), vec::load(d + i));
    const V r1 = call(vec::load(x + i + kL), vec::load(d + i + kL));
    vec::store(o + i, r0);
    vec::store(o + i + kL, r1);
  }
  for (; i + kL <= n; i += kL) vec::store(o + i, call(vec::load(x + i), vec::load(d + i)));
  if (i < n) {
    alignas(64) T bx[kL] = {}, bd[kL] = {};
    for (int64_t k = i; k < n; ++k) bx[k - i] = x[k], bd[k - i] = d[k];
    vec::store(bx, call(vec::load(bx), vec::load(bd)));
    for (int64_t k = i; k < n; ++k) o[k] = bx[k - i];
  }
#else
  for (int64_t i = 0; i < n; ++i) o[i] = Fn::s(x[i], d[i]);
#endif
}

template <typename T>
void GeluGradKernel(const DeviceContext&, const DenseTensor& x, const DenseTensor& g,
                    bool approximate, DenseTensor* dx) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    if (x.dims() == g.dims()) {       // rows read in place, a one-value g from a short run (Note
      T* o = dx->alloc<T>();          // [Vector maps on row views]; its copy made x.sum()'s
      const int64_t n = dx->numel();  // backward 1.13-1.28x the time with a dense g)
      if (n == 0) return;
      std::array<detail::RowOperand<T>, 2> r;
      int64_t longest = 0;
      const int64_t cols = detail::row_operands<T, 2>({&x, &g}, n, &r, &longest);
      const auto piece = [&](int64_t b, int64_t m, int64_t row, int64_t col) {
        if (approximate) {
          vec_binary<GeluGradTanhF>(r[0].at(row, col), r[1].at(row, col), o + b, m);
        } else {
          vec_binary<GeluGradErfF>(r[0].at(row, col), r[1].at(row, col), o + b, m);
        }
      };
      detail::row_pieces(n, cols, piece, longest);
      return;
    }
  }
#if OAR_VEC
  if constexpr (!std::is_same_v<T, float> && !std::is_same_v<T, double>) {
    // 16-bit: the float functors on lanes (float_map widens the rows; Note [Vector maps on row
    // views]). binary_kernel's element loop called the scalar erf: [1024, 1024] bfloat16 gelu's
    // gradient took 6.7 ms against torch's 1.5.
    if (x.dims() == g.dims()) {
      if (approximate) {
        detail::float_map<T, 2>(dx, [](vec::F v, vec::F d) { return GeluGradTanhF::vf(v, d); }, {&x, &g});
      } else {
        detail::float_map<T, 2>(dx, [](vec::F v, vec::F d) { return GeluGradErfF::vf(v, d); }, {&x, &g});
      }
      return;
    }
  }
#endif
  binary_kernel<T, T>(x, g, dx, [approximate](auto v, auto d) { return d * gelu_d1(v, approximate); });
}
template <typename T>
void GeluGrad2Kernel(const DeviceContext&, const DenseTensor& x, bool approximate,
                     DenseTensor* out) {
  unary_kernel<T, T>(x, out, [approximate](auto v) { return gelu_d2(v, approximate); });
}

}  // namespace
}  // namespace oar::phi

using namespace oar::phi;  // NOLINT

OAR_REGISTER_KERNEL(exp, CPU, ExpKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(log, CPU, LogKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(sqrt, CPU, SqrtKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(rsqrt, CPU, RsqrtKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(tanh, CPU, TanhKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(sigmoid, CPU, SigmoidKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(silu, CPU, SiluKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(sin, CPU, SinKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(cos, CPU, CosKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(neg, CPU, NegKernel, OAR_FLOAT_TYPES, int8_t, int16_t, int32_t, int64_t)
OAR_REGISTER_KERNEL(relu, CPU, ReluKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(abs, CPU, AbsKernel, OAR_NUMERIC_TYPES)
OAR_REGISTER_KERNEL(sign, CPU, SignKernel, OAR_FLOAT_TYPES, int8_t, int16_t, int32_t, int64_t)
OAR_REGISTER_KERNEL(scale, CPU, ScaleKernel, OAR_NUMERIC_TYPES)
OAR_REGISTER_KERNEL(pow, CPU, PowScalarKernel, OAR_FLOAT_TYPES, int32_t, int64_t)
OAR_REGISTER_KERNEL(clip, CPU, ClipKernel, OAR_FLOAT_TYPES, int32_t, int64_t)
OAR_REGISTER_KERNEL(relu_grad, CPU, ReluGradKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(tanh_grad, CPU, TanhGradKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(sigmoid_grad, CPU, SigmoidGradKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(gelu, CPU, GeluKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(gelu_grad, CPU, GeluGradKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(gelu_grad2, CPU, GeluGrad2Kernel, OAR_FLOAT_TYPES)
