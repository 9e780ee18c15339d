// Note [erf on double lanes]
// erf of float64 lanes, Oar's own (the erf op and the exact gelu's Phi). Debian's SLEEF 3.5.1
// `Sleef_erfd8_u10` took 186-240 cycles a vector whatever the inputs: the float64 erf op
// took 6.7 ms on 1M values at 1 thread on Zen 4 and gelu's forward + backward 15.6 ms,
// against torch's (a newer SLEEF) 3.3 and 9.0. With a = |x|:
// - a < 1: erf = a + a q(a^2), q a degree-12 Chebyshev fit of erf(a) / a - 1 (1.3e-19);
// - 1 <= a < 2.5: erf = 1 - exp(-a^2) g(a), g = erfc(a) exp(a^2) by a degree-18 fit in
//   a - 1.75 (1.4e-18);
// - 2.5 <= a: the same with g a degree-13 fit in 1/a - 17/60 over 1/a in [1/6, 0.4]
//   (6.5e-17, which exp(-6.25) makes 1e-19 in erf); a is clamped to 6, past which erf
//   rounds to 1 (erfc(6) = 2.2e-17), so +-inf gives +-1 and NaN stays NaN.
// exp(-a^2) is Oar's: a^2 = hi + lo exactly (an FMA), exp(-hi) by k ln2 reduction (ln2 in
// two parts) and a degree-11 fit on [-ln2/2, ln2/2] (3.2e-18), times 1 - lo; a >= 1 only,
// so -hi lies in [-36, -1] and 2^k stays normal. The fits were made with mpmath's chebyfit
// at 50 digits (docs/notes/fits/erf_double.py prints these arrays). Every range's result is
// computed and one is selected per lane; a vector with every lane below 1 takes the first
// alone. Within 1 ulp of the correctly rounded erf on a dense grid, 0.04 on average (the
// test allows 2 against libm's). [1024, 1024] float64 at 1 thread on Zen 4: erf 6.7 -> 2.6
// ms (torch 3.2), gelu forward + backward 15.5 -> 7.4 (8.5); 4.1 ms forced to AVX2.
#pragma once

#include "phi_kernels/cpu/vec_math.h"

namespace oar::phi {
inline namespace OAR_ISA_NS {
namespace vec {
#if OAR_VEC
namespace erf_detail {
constexpr double kSmall[] = {0.1283791670955126,      -0.3761263890318375,     0.11283791670954879,
                             -0.026866170645076792,   0.0052239776248180145,   -0.000854832698083379,
                             0.0001205533111164271,   -1.4925595266831182e-05, 1.6461000484121368e-06,
                             -1.6350312701054695e-07, 1.4659775274047436e-08,  -1.1372848856791674e-09,
                             5.957176147748911e-11};
constexpr double kMid[] = {
    0.2849722347374364,     -0.13097634551448525,    0.055763630087087276,   -0.02225999524138518,
    0.008404319207328103,   -0.0030209746515235288,  0.001039204522468239,   -0.00034353335207403353,
    0.00010950528813741835, -3.375536597808422e-05,  1.0086685892130918e-05, -2.9278897922625368e-06,
    8.271205251327796e-07,  -2.2789363581221837e-07, 6.1252070760844e-08,    -1.5873415383260977e-08,
    4.084618418115575e-09,  -1.2224937057975568e-09, 3.000102602576273e-10};
constexpr double kFar[] = {0.15408741116919214,  0.5070310199784949,   -0.17130614668800787, -0.08575536991692627,
                           0.19408811176279184,  -0.12186467504169032, -0.08909294110794055, 0.3046037209860116,
                           -0.32440210608963554, -0.02038834758395809, 0.7021805881285088,   -1.300065852534753,
                           0.7286154449413021,   1.5306261128932916};
constexpr double kExp[] = {1.0,
                           1.0,
                           0.5000000000000019,
                           0.1666666666666668,
                           0.0416666666664881,
                           0.008333333333319601,
                           0.0013888888952314775,
                           0.00019841269890047113,
                           2.4801485482328494e-05,
                           2.755724091857897e-06,
                           2.763263963904103e-07,
                           2.5110037605963777e-08};

template <size_t N>
inline D horner(const double (&c)[N], D u) {
  D r = set1(c[N - 1]);
  for (size_t i = N - 1; i-- > 0;) r = fmadd(r, u, set1(c[i]));
  return r;
}

#if OAR_VEC512
inline D fms(D a, D b, D c) { return _mm512_fmsub_pd(a, b, c); }    // a b - c
inline D fnma(D a, D b, D c) { return _mm512_fnmadd_pd(a, b, c); }  // c - a b
inline D round_even(D v) { return _mm512_roundscale_pd(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
inline D scale2(D p, D k) { return _mm512_scalef_pd(p, k); }  // p 2^k
inline bool all_lt(D v, double c) { return _mm512_cmp_pd_mask(v, set1(c), _CMP_LT_OQ) == 0xFF; }
inline D select_lt(D a, double c, D x, D y) {
  return _mm512_mask_mov_pd(y, _mm512_cmp_pd_mask(a, set1(c), _CMP_LT_OQ), x);
}
#else
inline D fms(D a, D b, D c) { return _mm256_fmsub_pd(a, b, c); }
inline D fnma(D a, D b, D c) { return _mm256_fnmadd_pd(a, b, c); }
inline D round_even(D v) { return _mm256_round_pd(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
// p 2^k for integral k in [-60, 0]: 2^k built in the exponent field
inline D scale2(D p, D k) {
  const __m256i e = _mm256_slli_epi64(_mm256_cvtepi32_epi64(_mm256_cvtpd_epi32(_mm256_add_pd(k, set1(1023.0)))), 52);
  return mul(p, _mm256_castsi256_pd(e));
}
inline bool all_lt(D v, double c) { return _mm256_movemask_pd(_mm256_cmp_pd(v, set1(c), _CMP_LT_OQ)) == 0xF; }
inline D select_lt(D a, double c, D x, D y) { return _mm256_blendv_pd(y, x, _mm256_cmp_pd(a, set1(c), _CMP_LT_OQ)); }
#endif
}  // namespace erf_detail

/// erf of double lanes (Note [erf on double lanes]).
inline D erf(D x) {
  using namespace erf_detail;
  const D a = abs(x);
  const D small = fmadd(a, horner(kSmall, mul(a, a)), a);
  if (all_lt(a, 1.0)) return copysign(small, x);
  const D ac = min(set1(6.0), a);  // a NaN stays (min returns its second operand)
  const D hi = mul(ac, ac), lo = fms(ac, ac, hi);
  const D k = round_even(mul(hi, set1(-1.4426950408889634)));  // -hi / ln2
  D r = fmadd(k, set1(-0.6931471805599453), sub(set1(0.0), hi));
  r = fmadd(k, set1(-2.3190468138462996e-17), r);
  const D e0 = scale2(horner(kExp, r), k);
  const D e = fnma(e0, lo, e0);  // exp(-hi - lo)
  const D mid = horner(kMid, sub(ac, set1(1.75)));
  const D far = horner(kFar, sub(div(set1(1.0), ac), set1(0.2833333333333333)));
  const D big = fnma(e, select_lt(ac, 2.5, mid, far), set1(1.0));
  return copysign(select_lt(a, 1.0, small, big), x);
}
#endif
}  // namespace vec
}  // namespace OAR_ISA_NS
}  // namespace oar::phi
