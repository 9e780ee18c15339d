// Kernels of math_functions.yaml: SLEEF-vectorized transcendental functions, built per ISA,
// and the float atan2, remainder (on SLEEF's atan2 and fmod), round, floor, ceil, trunc and frac. Integer rounding and
// remainder, classification, nan_to_num, fmax/fmin, lerp and increment are in
// math_pointwise_kernels.cc and binary_kernels.cc; float64 erfinv, digamma and polygamma in
// special_kernels.cc.
#include <cmath>

#include "oar_generated/kernel_signatures.h"
#include "phi_kernels/cpu/special_functions.h"
#include "phi_kernels/cpu/vec_erf.h"
#include "phi_kernels/cpu/vec_math.h"

namespace oar::phi {
namespace {

OAR_SLEEF_FUNCTOR(Expm1F, expm1, u10, std::expm1(v))
// log2, log10: float lanes on Oar's vec::log_base (Note [log2 and log10 on vectors]), double
// on SLEEF
OAR_VEC_FUNCTOR(Log2F, log2, log2, u10, std::log2(v))
OAR_VEC_FUNCTOR(Log10F, log10, log10, u10, std::log10(v))
OAR_SLEEF_FUNCTOR(Log1pF, log1p, u10, std::log1p(v))
OAR_SLEEF_FUNCTOR(TanF, tan, u10, std::tan(v))
#if OAR_VEC
// c[0] t^(N-1) + ... + c[N-1] by Horner's rule (the fits below, highest degree first)
template <size_t N>
vec::F horner(const float (&c)[N], vec::F t) {
  vec::F p = vec::set1(c[0]);
  for (size_t k = 1; k < N; ++k) p = vec::fmadd(p, t, vec::set1(c[k]));
  return p;
}
#endif

// asin and acos on float lanes (Note [asin and acos on float lanes], cpu_speed_steps.md):
// with a = |x|, asin(a) = s + t for a <= 1/2 (s = a) and pi/2 - 2 (s + t) above, s =
// sqrt((1 - a) / 2) (1 - a exact there); t = s^3 P(s^2) + s_lo, P a degree-5 fit (relative
// error 9e-10 in asin), s_lo the square root's rounding error by an FMA residual. Each result
// is K + m (s + t) with m = +-1 or +-2 (exact) and K = 0, pi/2 or pi in two floats, added by
// Fast2Sum with the small terms before the last rounding. SLEEF 3.5's u10 forms took 1.5x and
// 1.8x torch's time on the Xeon.
constexpr float kAsinP[6] = {3.392567858e-02f, 1.700290293e-02f, 3.113255277e-02f,
                             4.459656775e-02f, 7.500103116e-02f, 1.666666567e-01f};
#if OAR_VEC
struct AsinParts {
  vec::F s, t;  // asin(s) = s + t
};
inline AsinParts asin_parts(vec::F a) {
  using vec::mul, vec::select_lt, vec::set1;
  const vec::F half = set1(0.5f), zero = set1(0.0f);
  const vec::F z = mul(vec::sub(set1(1.0f), a), half), sq = vec::sqrt(z);
  const vec::F s = select_lt(half, a, sq, a);  // NaN takes a
  const vec::F v = mul(s, s);
  const vec::F p = horner(kAsinP, v);
  // (z - sq^2) / (2 sq), 0 at z = 0 (a = 1) and for a <= 1/2
  const vec::F sq_lo = mul(vec::fnmadd(sq, sq, z), mul(half, vec::rcp(sq)));
  const vec::F s_lo = select_lt(half, a, select_lt(zero, z, sq_lo, zero), zero);
  return {s, vec::fmadd(mul(s, v), p, s_lo)};
}
// K + m s + m t, K = k_hi + k_lo with |k_hi| > |m s| where k_hi != 0 (Fast2Sum)
inline vec::F k_plus(vec::F k_hi, vec::F k_lo, vec::F ms, vec::F mt) {
  const vec::F big = vec::add(k_hi, ms), err = vec::add(vec::sub(k_hi, big), ms);
  return vec::add(big, vec::add(vec::add(err, k_lo), mt));
}
#endif
struct AsinF {
#if OAR_VEC
  static vec::F vf(vec::F x) {
    using vec::set1;
    const vec::F a = vec::abs(x);
    const auto [s, t] = asin_parts(a);
    const vec::F m2 = set1(-2.0f);
    const vec::F big = k_plus(set1(1.570796371e+00f), set1(-4.371138829e-08f), vec::mul(m2, s), vec::mul(m2, t));
    return vec::copysign(vec::select_lt(set1(0.5f), a, big, vec::add(s, t)), x);
  }
  static vec::D vd(vec::D v) { return OAR_SLEEF_D(asin, u10)(v); }
#endif
  template <typename M>
  static M s(M v) {
    return std::asin(v);
  }
};
struct AcosF {
#if OAR_VEC
  static vec::F vf(vec::F x) {
    using vec::mul, vec::select_lt, vec::set1;
    const vec::F a = vec::abs(x), half = set1(0.5f), zero = set1(0.0f);
    const auto [s, t] = asin_parts(a);
    // |x| <= 1/2: pi/2 - asin(x); x > 1/2: 2 asin(s); x < -1/2: pi - 2 asin(s)
    const auto pick = [&](vec::F small, vec::F pos, vec::F neg) {
      return select_lt(half, a, select_lt(x, zero, neg, pos), small);
    };
    // m s and m t: -x and -t with x's sign up to |x| = 1/2, +-2 s and +-2 t above
    const vec::F m = select_lt(x, zero, set1(-2.0f), set1(2.0f));
    const vec::F ms = select_lt(half, a, mul(m, s), vec::sub(zero, x));
    const vec::F mt = select_lt(half, a, mul(m, t), vec::sub(zero, vec::copysign(t, x)));
    const vec::F k_hi = pick(set1(1.570796371e+00f), zero, set1(3.141592741e+00f));
    const vec::F k_lo = pick(set1(-4.371138829e-08f), zero, set1(-8.742277657e-08f));
    return k_plus(k_hi, k_lo, ms, mt);
  }
  static vec::D vd(vec::D v) { return OAR_SLEEF_D(acos, u10)(v); }
#endif
  template <typename M>
  static M s(M v) {
    return std::acos(v);
  }
};

// atan on float lanes (Note [atan on float lanes], docs/notes/cpu_speed_steps.md): atan(a) =
// K + atan(s) for a = |x|, with s = a, K = 0 below 1/2; s = (a - 1) / (a + 1), K = pi/4 up to
// 2; s = -1 / a, K = pi/2 above; so |s| <= 1/2 and one division serves every lane. s's
// rounding error (an FMA residual, and a + 1's by Fast2Sum) is carried as s_lo, and atan(s)
// = s + s^3 P(s^2) + s_lo (1 - s^2), P a degree-5 fit (relative error 1e-9 in atan); K and s
// are added by Fast2Sum and the small terms go in before the last rounding. Within 0.8 ulp.
// SLEEF 3.5's u10 atanf (double-float arithmetic) took 1.9x torch's time on the Xeon (torch's
// newer SLEEF is faster).
constexpr float kAtanP[6] = {4.246346653e-02f,  -8.248452097e-02f, 1.100972220e-01f,
                             -1.428005546e-01f, 1.999988258e-01f,  -3.333333433e-01f};
struct AtanF {
#if OAR_VEC
  static vec::F vf(vec::F x) {
    using vec::add, vec::fmadd, vec::mul, vec::select_le, vec::select_lt, vec::set1, vec::sub;
    const vec::F a = vec::abs(x), one = set1(1.0f), zero = set1(0.0f), half = set1(0.5f), two = set1(2.0f);
    // NaN compares false both times: the third branch, where s = -1 / NaN stays NaN
    const auto pick = [&](vec::F lo, vec::F mid, vec::F hi) {
      return select_lt(a, half, lo, select_le(a, two, mid, hi));
    };
    const vec::F num = pick(a, sub(a, one), set1(-1.0f));  // a - 1 exact on [1/2, 2]
    const vec::F den = pick(one, add(a, one), a);
    const vec::F den_err = pick(zero, add(sub(vec::max(a, one), den), vec::min(a, one)), zero);
    const vec::F s = vec::div(num, den);
    // s_lo = (num - s den - s den_err) / den; 0 past 1e30, where s den is inf times 0
    vec::F s_lo = mul(sub(vec::fnmadd(s, den, num), mul(s, den_err)), vec::rcp(den));
    s_lo = select_lt(a, set1(1e30f), s_lo, zero);
    const vec::F v = mul(s, s);
    const vec::F p = horner(kAtanP, v);
    const vec::F small = fmadd(mul(s, v), p, vec::fnmadd(s_lo, v, s_lo));  // s^3 P + s_lo (1 - v)
    const vec::F k_hi = pick(zero, set1(7.853981853e-01f), set1(1.570796371e+00f));
    const vec::F k_lo = pick(zero, set1(-2.185569414e-08f), set1(-4.371138829e-08f));
    const vec::F big = add(k_hi, s), err = add(sub(k_hi, big), s);  // |k_hi| > |s| where k_hi != 0
    return vec::copysign(add(big, add(add(err, k_lo), small)), x);
  }
  static vec::D vd(vec::D v) { return OAR_SLEEF_D(atan, u10)(v); }
#endif
  template <typename M>
  static M s(M v) {
    return std::atan(v);
  }
};
OAR_SLEEF_FUNCTOR(SinhF, sinh, u10, std::sinh(v))
OAR_SLEEF_FUNCTOR(CoshF, cosh, u10, std::cosh(v))
OAR_SLEEF_FUNCTOR(AsinhF, asinh, u10, std::asinh(v))
OAR_SLEEF_FUNCTOR(AcoshF, acosh, u10, std::acosh(v))
OAR_SLEEF_FUNCTOR(AtanhF, atanh, u10, std::atanh(v))
// erf: float lanes in Oar's own form (Note [erf on vectors],
// docs/notes/cpu_speed_steps.md). For |x| < 1, erf(x) = x + x q(x^2) with q a degree-6
// least-squares fit of erf(x) / x - 1 (the leading x exact); above, erf(a) = 1 - exp(-a^2) Q(t)
// with a = min(|x|, 3.93) (erf rounds to 1 from 3.92 on), t = 1 / (1 + a) and Q a degree-7 fit
// of erfc(a) exp(a^2) on [1, 3.93], and the sign of x. Within 1.2 ulp of float64's erf
// (the test's dense grid); SLEEF's u10 erff took 4x torch's time (2.3 against 0.56 ms on 1M
// floats, the Xeon), torch's own form (Abramowitz & Stegun 7.1.26) is 1.5e-7 absolute, 1e-3
// relative near 0. Double lanes: Note [erf on double lanes] (vec_erf.h).
struct ErfF {
#if OAR_VEC
  static vec::F vf(vec::F x) {
    using vec::fmadd;
    using vec::set1;
    const vec::F a = vec::abs(x), u = vec::mul(x, x);
    vec::F q = fmadd(set1(7.84355943e-05f), u, set1(-0.000800382579f));
    q = fmadd(q, u, set1(0.00518714683f));
    q = fmadd(q, u, set1(-0.0268528704f));
    q = fmadd(q, u, set1(0.112835512f));
    q = fmadd(q, u, set1(-0.3761262f));
    q = fmadd(q, u, set1(0.128379166f));
    const vec::F small = fmadd(x, q, x);
    const vec::F ac = vec::min(set1(3.93f), a);  // a NaN stays
    const vec::F t = vec::rcp(vec::add(set1(1.0f), ac));
    vec::F r = fmadd(set1(-0.666049838f), t, set1(1.45077729f));
    r = fmadd(r, t, set1(-0.763870478f));
    r = fmadd(r, t, set1(-0.551460922f));
    r = fmadd(r, t, set1(0.402367204f));
    r = fmadd(r, t, set1(0.539606452f));
    r = fmadd(r, t, set1(0.566732407f));
    r = fmadd(r, t, set1(-0.000107768887f));
    const vec::F e = vec::mul(vec::exp_nonpos(vec::fnmadd(ac, ac, set1(0.0f))), r);  // erfc(a)
    return vec::select_lt(a, set1(1.0f), small, vec::copysign(vec::sub(set1(1.0f), e), x));
  }
  static vec::D vd(vec::D v) { return vec::erf(v); }
#endif
  template <typename M>
  static M s(M v) {
    return std::erf(v);
  }
};
OAR_SLEEF_FUNCTOR(LgammaF, lgamma, u10, std::lgamma(v))
// erfinv on float lanes (Note [erfinv on float lanes], docs/notes/cpu_speed_steps.md): with
// a = |y| and w = -log(1 - a^2), carried in two floats (vec::log_base_sum), erfinv(a) =
// a (p0 + w R(w - 2)) for w < 4 (|y| < 0.9908) and a (q0 + d R2(d - 1)), d = sqrt(w) - 2 in two
// floats, above; R and R2 are degree-10 least-squares fits (relative error 3e-11 and 1.1e-8
// in erfinv), p0 = sqrt(pi) / 2 and q0 = erfinv at w = 4 in two floats each, and the product
// by a rounds once, in the last FMA. Within 1.3 ulp of float64's erfinv over every 29th float
// in (-1, 1), 0.25 on average (the dense-grid test). Stop 62's form (Giles' approximation
// and a Newton step through SLEEF's erfc: 1.5 ulp) took 5.6 ms on 1M floats at 1 thread on
// the Xeon, torch 0.9; this one takes no erf and one log. float64 lanes take the scalar
// double erfinv (special_kernels.cc) one at a time.
constexpr float kErfinvR[11] = {2.561812984e-10f,  -9.450997762e-10f, -1.092145929e-08f, 9.153825431e-08f,
                                1.339784177e-07f,  -5.143460839e-06f, 1.786784378e-05f,  1.802027691e-04f,
                                -2.052553231e-03f, 2.136962721e-03f,  2.454941422e-01f};
constexpr float kErfinvR2[11] = {-4.132057802e-05f, 4.540014197e-05f, 1.947136770e-04f,  -5.263744388e-04f,
                                 3.463123285e-04f,  1.159273321e-03f, -4.704962485e-03f, 1.038578432e-02f,
                                 -1.803188398e-02f, 2.747770585e-02f, 9.741976857e-01f};
struct ErfinvF {
#if OAR_VEC
  static vec::F vf(vec::F y) {
    using vec::add, vec::fmadd, vec::mul, vec::set1, vec::sub;
    const vec::F a = vec::abs(y), one = set1(1.0f);
    // w = -(big + small) as wh + wl (Fast2Sum); 1 - a^2 rounds once (the FMA)
    const vec::LogSum l = vec::log_base_sum(vec::fnmadd(a, a, one), vec::kLn2Hi, vec::kLn2Lo, 1.0f, 0.0f);
    const vec::F lh = add(l.big, l.small);
    const vec::F wh = sub(set1(0.0f), lh), wl = sub(sub(lh, l.big), l.small);
    const vec::F r = horner(kErfinvR, sub(wh, set1(2.0f)));
    const vec::F xc = fmadd(a, set1(8.862269521e-01f), mul(a, fmadd(wl, r, fmadd(wh, r, set1(-2.662319964e-08f)))));
    // every lane central (w(0.99) = 3.92): no tail and no ends (uniform draws in (-1, 1) skip
    // them in 86% of vectors)
    if (vec::all_in(a, 0.0f, 0.99f)) return vec::copysign(xc, y);
    // sqrt(w) = sh + sl, sl from sqrt's residual (an FMA, exact) and wl; sh - 2 is exact on
    // the tail's [2, 4]
    const vec::F sh = vec::sqrt(wh), dh = sub(sh, set1(2.0f));
    const vec::F sl = mul(add(vec::fnmadd(sh, sh, wh), wl), mul(set1(0.5f), vec::rcp(sh)));
    const vec::F r2 = horner(kErfinvR2, sub(dh, one));
    const vec::F xt = fmadd(a, set1(1.858779073e+00f), mul(a, fmadd(sl, r2, fmadd(dh, r2, set1(3.966543716e-08f)))));
    const vec::F x = vec::select_lt(wh, set1(4.0f), xc, xt);
    // |y| = 1 gives inf, |y| > 1 and NaN give NaN
    const vec::F ends = vec::select_le(a, one, set1(__builtin_inff()), set1(__builtin_nanf("")));
    return vec::copysign(vec::select_lt(a, one, x, ends), y);
  }
  static vec::D vd(vec::D v) {
    alignas(64) double d[vec::kD];
    vec::store(d, v);
    for (double& e : d) e = erfinv(e);
    return vec::load(d);
  }
#endif
  template <typename M>
  static M s(M v) {
    return static_cast<M>(erfinv(static_cast<double>(v)));
  }
};

// out = F(x, y) for floats: F::vf on float lanes (float, float16, bfloat16) where x and y have
// out's shape or one of them is a single element; else (other broadcasts, double) F::s on
// binary_kernel.
template <typename F, typename T>
void binary_lanes(const DenseTensor& x, const DenseTensor& y, DenseTensor* out) {
#if OAR_VEC
  if constexpr (!std::is_same_v<T, double>) {
    const int64_t n = out->numel();
    const bool xf = x.numel() == n, yf = y.numel() == n;
    if (xf && yf) {
      detail::float_map<T, 2>(out, [](vec::F a, vec::F b) { return F::vf(a, b); }, {&x, &y});
      return;
    }
    if (xf && y.numel() == 1) {
      const vec::F b = vec::set1(static_cast<float>(y.data<T>()[0]));
      detail::float_map<T, 1>(out, [b](vec::F a) { return F::vf(a, b); }, {&x});
      return;
    }
    if (yf && x.numel() == 1) {
      const vec::F a = vec::set1(static_cast<float>(x.data<T>()[0]));
      detail::float_map<T, 1>(out, [a](vec::F b) { return F::vf(a, b); }, {&y});
      return;
    }
  }
#endif
  binary_kernel<T, T>(x, y, out, [](auto a, auto b) { return F::s(a, b); });
}

// atan2 on SLEEF's 1-ulp atan2 (the scalar libm call took 24 ms on 1M floats, 19x torch).
OAR_SLEEF_FUNCTOR2(Atan2F, atan2, u10, std::atan2(a, b))
// elementwise_pow of floats (x ** y with a tensor y) on SLEEF's 1-ulp pow, which keeps C's
// special cases (pow(x, 0) = 1 even for a NaN x, a negative x to a non-integer NaN, ...): the
// scalar libm call took 5.1 ms on 1M floats at 1 thread, 2x torch. Integers are in
// binary_kernels.cc.
OAR_SLEEF_FUNCTOR2(PowF, pow, u10, std::pow(a, b))
// remainder of floats, Python's (the sign of y): fmod (SLEEF's is exact, as C's), plus y
// where the signs of a nonzero fmod and y differ. Integers are in binary_kernels.cc.
struct RemainderF {
#if OAR_VEC
  static vec::F vf(vec::F a, vec::F b) {
    const vec::F zero = vec::set1(0.0f), r = OAR_SLEEF_F(fmod, )(a, b);
    const vec::F q = vec::select_lt(r, zero, vec::sub(zero, b), b);  // < 0: the signs differ
    return vec::select_lt(zero, vec::abs(r), vec::select_lt(q, zero, vec::add(r, b), r), r);
  }
#endif
  template <typename M>
  static M s(M a, M b) {
    const M r = std::fmod(a, b);
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
  }
};
template <typename T>
void Atan2Kernel(const DeviceContext&, const DenseTensor& x, const DenseTensor& y, DenseTensor* out) {
  binary_lanes<Atan2F, T>(x, y, out);
}
template <typename T>
void PowFloatKernel(const DeviceContext&, const DenseTensor& x, const DenseTensor& y, DenseTensor* out) {
  binary_lanes<PowF, T>(x, y, out);
}
template <typename T>
void RemainderFloatKernel(const DeviceContext&, const DenseTensor& x, const DenseTensor& y, DenseTensor* out) {
  binary_lanes<RemainderF, T>(x, y, out);
}

// floor, ceil and trunc of floats: one rounding instruction a vector (vec::round_to). In the
// baseline object, where they were before, GCC kept std::floor a call: 1M floats 0.29-0.40 ms,
// 3-4x torch's time. Integers pass through (math_pointwise_kernels.cc).
#if OAR_VEC
#define OAR_ROUNDING_FUNCTOR(Name, mode, fn)                      \
  struct Name {                                                   \
    static vec::F vf(vec::F v) { return vec::round_to<mode>(v); } \
    static vec::D vd(vec::D v) { return vec::round_to<mode>(v); } \
    template <typename M>                                         \
    static M s(M v) {                                             \
      return fn(v);                                               \
    }                                                             \
  };
#else
#define OAR_ROUNDING_FUNCTOR(Name, mode, fn) \
  struct Name {                              \
    template <typename M>                    \
    static M s(M v) {                        \
      return fn(v);                          \
    }                                        \
  };
#endif
OAR_ROUNDING_FUNCTOR(FloorF, _MM_FROUND_TO_NEG_INF, std::floor)
OAR_ROUNDING_FUNCTOR(CeilF, _MM_FROUND_TO_POS_INF, std::ceil)
OAR_ROUNDING_FUNCTOR(TruncF, _MM_FROUND_TO_ZERO, std::trunc)

// round half away from zero (Paddle, C's round) in three instructions: trunc(v + copysign(h,
// v)) with h the float just below 1/2. Adding h rounds to nearest, so a fraction of 1/2 or more
// reaches the next integer (0.5 + h rounds up to 1, a tie to even) and anything below stays
// under it (the largest float under 1/2 plus h is 1 - ulp, exact); from 2^23 (2^52) every
// float is an integer and v + h rounds back to v. NaN and +-inf pass through, -0.3 gives -0.
// GCC keeps std::round a scalar call: 4.3 ms on 1M floats, 13x torch.
#if OAR_VEC
inline vec::F round_half_away(vec::F v) {
  return vec::round_to<_MM_FROUND_TO_ZERO>(vec::add(v, vec::copysign(vec::set1(0x1.fffffep-2f), v)));
}
inline vec::D round_half_away(vec::D v) {
  return vec::round_to<_MM_FROUND_TO_ZERO>(vec::add(v, vec::copysign(vec::set1(0x1.fffffffffffffp-2), v)));
}
#endif
struct RoundF {
#if OAR_VEC
  static vec::F vf(vec::F v) { return round_half_away(v); }
  static vec::D vd(vec::D v) { return round_half_away(v); }
#endif
  template <typename M>
  static M s(M v) {
    return std::round(v);
  }
};

// frac: v - trunc(v), exact (the fraction's bits are v's own), sign kept; +-inf gives NaN.
struct FracF {
#if OAR_VEC
  static vec::F vf(vec::F v) { return vec::sub(v, vec::round_to<_MM_FROUND_TO_ZERO>(v)); }
  static vec::D vd(vec::D v) { return vec::sub(v, vec::round_to<_MM_FROUND_TO_ZERO>(v)); }
#endif
  template <typename M>
  static M s(M v) {
    return v - std::trunc(v);
  }
};

#define OAR_SLEEF_KERNEL(Name, Functor)                                     \
  template <typename T>                                                     \
  void Name(const DeviceContext&, const DenseTensor& x, DenseTensor* out) { \
    sleef_unary<Functor, T>(x, out);                                        \
  }
OAR_SLEEF_KERNEL(FloorFloatKernel, FloorF)
OAR_SLEEF_KERNEL(CeilFloatKernel, CeilF)
OAR_SLEEF_KERNEL(TruncFloatKernel, TruncF)
OAR_SLEEF_KERNEL(FracKernel, FracF)

// round of floats at `decimals` digits: round(v 10^d) / 10^d.
template <typename T>
void RoundFloatKernel(const DeviceContext&, const DenseTensor& x, int64_t decimals, DenseTensor* out) {
  if (decimals == 0) {
    sleef_unary<RoundF, T>(x, out);
    return;
  }
  const double s = std::pow(10.0, static_cast<double>(decimals));
#if OAR_VEC
  if constexpr (!std::is_same_v<T, double>) {
    const vec::F sv = vec::set1(static_cast<float>(s));
    detail::float_map<T, 1>(out, [&](vec::F v) { return vec::div(round_half_away(vec::mul(v, sv)), sv); }, {&x});
    return;
  }
#endif
  unary_kernel<T, T>(x, out, [s](auto v) {
    using M = decltype(v);
    return std::round(v * static_cast<M>(s)) / static_cast<M>(s);
  });
}

OAR_SLEEF_KERNEL(Expm1Kernel, Expm1F)
OAR_SLEEF_KERNEL(Log2Kernel, Log2F)
OAR_SLEEF_KERNEL(Log10Kernel, Log10F)
OAR_SLEEF_KERNEL(Log1pKernel, Log1pF)
OAR_SLEEF_KERNEL(TanKernel, TanF)
OAR_SLEEF_KERNEL(AsinKernel, AsinF)
OAR_SLEEF_KERNEL(AcosKernel, AcosF)
OAR_SLEEF_KERNEL(AtanKernel, AtanF)
OAR_SLEEF_KERNEL(SinhKernel, SinhF)
OAR_SLEEF_KERNEL(CoshKernel, CoshF)
OAR_SLEEF_KERNEL(AsinhKernel, AsinhF)
OAR_SLEEF_KERNEL(AcoshKernel, AcoshF)
OAR_SLEEF_KERNEL(AtanhKernel, AtanhF)
OAR_SLEEF_KERNEL(ErfKernel, ErfF)
OAR_SLEEF_KERNEL(LgammaKernel, LgammaF)
OAR_SLEEF_KERNEL(ErfinvKernel, ErfinvF)

}  // namespace
}  // namespace oar::phi

using namespace oar::phi;  // NOLINT

OAR_REGISTER_KERNEL(expm1, CPU, Expm1Kernel, float, double, ::oar::float16, ::oar::bfloat16)
OAR_REGISTER_KERNEL(log2, CPU, Log2Kernel, float, double, ::oar::float16, ::oar::bfloat16)
OAR_REGISTER_KERNEL(log10, CPU, Log10Kernel, float, double, ::oar::float16, ::oar::bfloat16)
OAR_REGISTER_KERNEL(log1p, CPU, Log1pKernel, float, double, ::oar::float16, ::oar::bfloat16)
OAR_REGISTER_KERNEL(tan, CPU, TanKernel, float, double, ::oar::float16, ::oar::bfloat16)
OAR_REGISTER_KERNEL(asin, CPU, AsinKernel, float, double, ::oar::float16, ::oar::bfloat16)
OAR_REGISTER_KERNEL(acos, CPU, AcosKernel, float, double, ::oar::float16, ::oar::bfloat16)
OAR_REGISTER_KERNEL(atan, CPU, AtanKernel, float, double, ::oar::float16, ::oar::bfloat16)
OAR_REGISTER_KERNEL(sinh, CPU, SinhKernel, float, double, ::oar::float16, ::oar::bfloat16)
OAR_REGISTER_KERNEL(cosh, CPU, CoshKernel, float, double, ::oar::float16, ::oar::bfloat16)
OAR_REGISTER_KERNEL(asinh, CPU, AsinhKernel, float, double, ::oar::float16, ::oar::bfloat16)
OAR_REGISTER_KERNEL(acosh, CPU, AcoshKernel, float, double, ::oar::float16, ::oar::bfloat16)
OAR_REGISTER_KERNEL(atanh, CPU, AtanhKernel, float, double, ::oar::float16, ::oar::bfloat16)
OAR_REGISTER_KERNEL(erf, CPU, ErfKernel, float, double, ::oar::float16, ::oar::bfloat16)
OAR_REGISTER_KERNEL(lgamma, CPU, LgammaKernel, float, double, ::oar::float16, ::oar::bfloat16)
OAR_REGISTER_KERNEL(erfinv, CPU, ErfinvKernel, float, double, ::oar::float16, ::oar::bfloat16)
OAR_REGISTER_KERNEL(atan2, CPU, Atan2Kernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(round, CPU, RoundFloatKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(floor, CPU, FloorFloatKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(ceil, CPU, CeilFloatKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(trunc, CPU, TruncFloatKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(frac, CPU, FracKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(remainder, CPU, RemainderFloatKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(elementwise_pow, CPU, PowFloatKernel, OAR_FLOAT_TYPES)
