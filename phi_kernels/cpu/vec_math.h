// Vectorized transcendental unary kernels on SLEEF (16 floats / 8 doubles per call with
// AVX-512, 8 / 4 with AVX2). float16 is widened to float on load and rounded back on store,
// bfloat16 in small blocks, so every float dtype takes the vector path. Strided inputs
// are made contiguous first (the output is always contiguous). Builds without AVX2 use
// the scalar functor. Include only from kernel .cc files.
#pragma once

#include <immintrin.h>
#include <sleef.h>

#include <algorithm>
#include <array>
#include <type_traits>
#include <utility>

#include "phi_kernels/cpu/dispatch/isa_namespace.h"
#include "phi_kernels/cpu/elementwise.h"

namespace oar::phi {
// Per-ISA names for this header's inline code (isa_namespace.h).
inline namespace OAR_ISA_NS {

#if defined(__AVX512F__)
#define OAR_VEC512 1
#else
#define OAR_VEC512 0
#endif
#if !OAR_VEC512 && defined(__AVX2__) && defined(__FMA__)
#define OAR_VEC256 1
#else
#define OAR_VEC256 0
#endif
#define OAR_VEC (OAR_VEC512 || OAR_VEC256)

/// The widest float vector of the build: vec::F (float) / vec::D (double), kF / kD lanes,
/// with the few operations the functors need. SLEEF names come from OAR_SLEEF_F/D.
namespace vec {
#if OAR_VEC512
using F = __m512;
using D = __m512d;
constexpr int kF = 16, kD = 8;
inline F load(const float* p) { return _mm512_loadu_ps(p); }
inline D load(const double* p) { return _mm512_loadu_pd(p); }
// p[0, n), n < a vector's lanes, then `fill` in the other lanes: the lanes past n are not
// read (no fault). The tails of short rows (sums, products).
inline F load_first(const float* p, int64_t n, float fill = 0) {
  return _mm512_mask_loadu_ps(_mm512_set1_ps(fill), static_cast<__mmask16>((1u << n) - 1), p);
}
inline D load_first(const double* p, int64_t n, double fill = 0) {
  return _mm512_mask_loadu_pd(_mm512_set1_pd(fill), static_cast<__mmask8>((1u << n) - 1), p);
}
// widen(p) of p[0, n), n < kD, with zeros in the other lanes (not read)
inline D widen_first(const float* p, int64_t n) {
  return _mm512_cvtps_pd(_mm256_maskz_loadu_ps(static_cast<__mmask8>((1u << n) - 1), p));
}
inline D widen_first(const double* p, int64_t n) { return load_first(p, n); }
inline void store(float* p, F v) { _mm512_storeu_ps(p, v); }
inline void store(double* p, D v) { _mm512_storeu_pd(p, v); }
// float16 widens on load and rounds on store through F16C (the bits of float16's own
// conversions), in registers: sleef_unary's float16 rows.
inline F load(const float16* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
inline void store(float16* p, F v) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
}
// bfloat16 widens by a shift; store rounds to nearest even on integer lanes (elementwise.h's
// bf16_bits, NaN kept quiet), the same bits as bfloat16(float). store_ne does it in one
// vcvtneps2bf16 where the core has AVX512-BF16 (callers gate on cpu_has_avx512_bf16() and
// sit in a function with that target): that instruction flushes subnormal floats to zero,
// so a vector holding one takes the integer rounding instead.
inline F load(const bfloat16* p) {
  const __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
}
inline void store(bfloat16* p, F v) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtepi32_epi16(detail::bf16_bits(v)));
}
[[gnu::always_inline]] __attribute__((target("avx512bf16"))) inline void store_ne(bfloat16* p, F v) {
  if (__builtin_expect(_mm512_fpclass_ps_mask(v, 0x20) != 0, 0)) {  // 0x20: a subnormal lane
    store(p, v);
    return;
  }
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), (__m256i)_mm512_cvtneps_pbh(v));
}
inline F set1(float v) { return _mm512_set1_ps(v); }
inline D set1(double v) { return _mm512_set1_pd(v); }
inline F add(F a, F b) { return _mm512_add_ps(a, b); }
inline D add(D a, D b) { return _mm512_add_pd(a, b); }
inline F sub(F a, F b) { return _mm512_sub_ps(a, b); }
inline D sub(D a, D b) { return _mm512_sub_pd(a, b); }
inline F mul(F a, F b) { return _mm512_mul_ps(a, b); }
inline D mul(D a, D b) { return _mm512_mul_pd(a, b); }
inline F div(F a, F b) { return _mm512_div_ps(a, b); }
inline D div(D a, D b) { return _mm512_div_pd(a, b); }
inline F fmadd(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
inline F fnmadd(F a, F b, F c) { return _mm512_fnmadd_ps(a, b, c); }  // c - a b
inline D fmadd(D a, D b, D c) { return _mm512_fmadd_pd(a, b, c); }
inline F fmsub(F a, F b, F c) { return _mm512_fmsub_ps(a, b, c); }  // a b - c
// The masked forms with every lane set: GCC 12's _mm512_max_ps/pd pass an undefined vector,
// which -Wmaybe-uninitialized flags where they inline (the same instruction either way).
inline F max(F a, F b) { return _mm512_mask_max_ps(b, 0xFFFF, a, b); }
inline D max(D a, D b) { return _mm512_mask_max_pd(b, 0xFF, a, b); }
inline float hsum(F v) { return _mm512_reduce_add_ps(v); }
inline double hsum(D v) { return _mm512_reduce_add_pd(v); }
inline D widen(const float* p) { return _mm512_cvtps_pd(_mm256_loadu_ps(p)); }  // kD floats
inline D widen(const double* p) { return load(p); }
inline void narrow_store(float* p, D v) { _mm256_storeu_ps(p, _mm512_cvtpd_ps(v)); }
inline void narrow_store(double* p, D v) { store(p, v); }
inline F abs(F a) { return _mm512_abs_ps(a); }
inline D abs(D a) { return _mm512_abs_pd(a); }
/// a where s < 0, else b.
inline F select_neg(F s, F a, F b) { return _mm512_mask_mov_ps(b, _mm512_cmp_ps_mask(s, set1(0.0f), _CMP_LT_OQ), a); }
inline F min(F a, F b) { return _mm512_mask_min_ps(b, 0xFFFF, a, b); }  // masked: as max above
inline D min(D a, D b) { return _mm512_mask_min_pd(b, 0xFF, a, b); }
/// acc with the lanes where v is NaN replaced by v; any_nan(acc) tells if one ever was.
inline F keep_nan(F acc, F v) { return _mm512_mask_mov_ps(acc, _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), v); }
inline D keep_nan(D acc, D v) { return _mm512_mask_mov_pd(acc, _mm512_cmp_pd_mask(v, v, _CMP_UNORD_Q), v); }
inline bool any_nan(F v) { return _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q) != 0; }
// v with its NaN lanes 0 (nansum)
inline F zero_nan(F v) { return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(v, v, _CMP_ORD_Q), v); }
inline D zero_nan(D v) { return _mm512_maskz_mov_pd(_mm512_cmp_pd_mask(v, v, _CMP_ORD_Q), v); }
inline bool any_nan(D v) { return _mm512_cmp_pd_mask(v, v, _CMP_UNORD_Q) != 0; }
inline float hmin(F v) { return _mm512_reduce_min_ps(v); }
inline double hmin(D v) { return _mm512_reduce_min_pd(v); }
inline float hmax(F v) { return _mm512_reduce_max_ps(v); }
inline double hmax(D v) { return _mm512_reduce_max_pd(v); }
inline F round(F v) { return _mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
/// v rounded to an integer in direction kMode (_MM_FROUND_TO_NEG_INF, _TO_POS_INF, _TO_ZERO,
/// _TO_NEAREST_INT): floor, ceil, trunc and nearest-even in one instruction; NaN stays NaN.
template <int kMode>
inline F round_to(F v) {
  return _mm512_roundscale_ps(v, kMode | _MM_FROUND_NO_EXC);
}
template <int kMode>
inline D round_to(D v) {
  return _mm512_roundscale_pd(v, kMode | _MM_FROUND_NO_EXC);
}
inline F sqrt(F v) { return _mm512_sqrt_ps(v); }
/// |m| with the sign of s.
inline F copysign(F m, F s) {
  const F sign = _mm512_set1_ps(-0.0f);
  return _mm512_or_ps(_mm512_andnot_ps(sign, m), _mm512_and_ps(sign, s));
}
inline D copysign(D m, D s) {
  const D sign = _mm512_set1_pd(-0.0);
  return _mm512_or_pd(_mm512_andnot_pd(sign, m), _mm512_and_pd(sign, s));
}
inline F select_lt(F a, F b, F x, F y) { return _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ), x); }
/// a <= b ? x : y per lane (y where either is NaN).
inline F select_le(F a, F b, F x, F y) { return _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(a, b, _CMP_LE_OQ), x); }
/// Whether every lane lies in [lo, hi] (false for a NaN lane).
inline bool all_in(F v, float lo, float hi) {
  return (_mm512_cmp_ps_mask(v, set1(lo), _CMP_GE_OQ) & _mm512_cmp_ps_mask(v, set1(hi), _CMP_LE_OQ)) == 0xffff;
}
/// Whether every lane of a and b has |lane| <= c (false for a NaN lane): one compare a vector.
inline bool all_abs_le(F a, F b, float c) {
  return _mm512_mask_cmp_ps_mask(_mm512_cmp_ps_mask(abs(a), set1(c), _CMP_LE_OQ), abs(b), set1(c), _CMP_LE_OQ) ==
         0xffff;
}
inline bool all_in(D v, double lo, double hi) {
  return (_mm512_cmp_pd_mask(v, set1(lo), _CMP_GE_OQ) & _mm512_cmp_pd_mask(v, set1(hi), _CMP_LE_OQ)) == 0xff;
}
/// 1/x for finite x != 0: the 14-bit estimate and one Newton step (about 1 ulp),
/// several times the throughput of div.
inline F rcp(F x) {
  const F r = _mm512_rcp14_ps(x);
  return _mm512_mul_ps(r, _mm512_fnmadd_ps(x, r, _mm512_set1_ps(2.0f)));
}
// SLEEF's ISA-specific entry points: the generic names go through its own dispatcher.
#define OAR_SLEEF_F(fn, ulp) Sleef_##fn##f16_##ulp##avx512f
#define OAR_SLEEF_D(fn, ulp) Sleef_##fn##d8_##ulp##avx512f
#elif OAR_VEC256
using F = __m256;
using D = __m256d;
constexpr int kF = 8, kD = 4;
inline F load(const float* p) { return _mm256_loadu_ps(p); }
inline D load(const double* p) { return _mm256_loadu_pd(p); }
inline F load_first(const float* p, int64_t n, float fill = 0) {
  const __m256i m =
      _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  return _mm256_blendv_ps(_mm256_set1_ps(fill), _mm256_maskload_ps(p, m), _mm256_castsi256_ps(m));
}
inline D load_first(const double* p, int64_t n, double fill = 0) {
  const __m256i m = _mm256_cmpgt_epi64(_mm256_set1_epi64x(n), _mm256_setr_epi64x(0, 1, 2, 3));
  return _mm256_blendv_pd(_mm256_set1_pd(fill), _mm256_maskload_pd(p, m), _mm256_castsi256_pd(m));
}
inline D widen_first(const float* p, int64_t n) {
  return _mm256_cvtps_pd(
      _mm_maskload_ps(p, _mm_cmpgt_epi32(_mm_set1_epi32(static_cast<int>(n)), _mm_setr_epi32(0, 1, 2, 3))));
}
inline D widen_first(const double* p, int64_t n) { return load_first(p, n); }
inline void store(float* p, F v) { _mm256_storeu_ps(p, v); }
inline void store(double* p, D v) { _mm256_storeu_pd(p, v); }
inline F load(const float16* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
inline void store(float16* p, F v) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
}
inline F set1(float v) { return _mm256_set1_ps(v); }
inline D set1(double v) { return _mm256_set1_pd(v); }
inline F add(F a, F b) { return _mm256_add_ps(a, b); }
inline D add(D a, D b) { return _mm256_add_pd(a, b); }
inline F sub(F a, F b) { return _mm256_sub_ps(a, b); }
inline D sub(D a, D b) { return _mm256_sub_pd(a, b); }
inline F mul(F a, F b) { return _mm256_mul_ps(a, b); }
inline D mul(D a, D b) { return _mm256_mul_pd(a, b); }
inline F div(F a, F b) { return _mm256_div_ps(a, b); }
inline D div(D a, D b) { return _mm256_div_pd(a, b); }
inline F fmadd(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }
inline F fnmadd(F a, F b, F c) { return _mm256_fnmadd_ps(a, b, c); }  // c - a b
inline D fmadd(D a, D b, D c) { return _mm256_fmadd_pd(a, b, c); }
inline F fmsub(F a, F b, F c) { return _mm256_fmsub_ps(a, b, c); }  // a b - c
inline F max(F a, F b) { return _mm256_max_ps(a, b); }
inline D max(D a, D b) { return _mm256_max_pd(a, b); }
inline D widen(const float* p) { return _mm256_cvtps_pd(_mm_loadu_ps(p)); }  // kD floats
inline D widen(const double* p) { return load(p); }
inline void narrow_store(float* p, D v) { _mm_storeu_ps(p, _mm256_cvtpd_ps(v)); }
inline void narrow_store(double* p, D v) { store(p, v); }
inline float hsum(F v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}
inline double hsum(D v) {
  __m128d s = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
  return _mm_cvtsd_f64(_mm_add_sd(s, _mm_unpackhi_pd(s, s)));
}
inline F abs(F a) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), a); }
inline D abs(D a) { return _mm256_andnot_pd(_mm256_set1_pd(-0.0), a); }
/// a where s < 0, else b.
inline F select_neg(F s, F a, F b) { return _mm256_blendv_ps(b, a, _mm256_cmp_ps(s, _mm256_setzero_ps(), _CMP_LT_OQ)); }
inline F min(F a, F b) { return _mm256_min_ps(a, b); }
inline D min(D a, D b) { return _mm256_min_pd(a, b); }
/// acc with the lanes where v is NaN replaced by v; any_nan(acc) tells if one ever was.
inline F keep_nan(F acc, F v) { return _mm256_blendv_ps(acc, v, _mm256_cmp_ps(v, v, _CMP_UNORD_Q)); }
inline D keep_nan(D acc, D v) { return _mm256_blendv_pd(acc, v, _mm256_cmp_pd(v, v, _CMP_UNORD_Q)); }
inline bool any_nan(F v) { return _mm256_movemask_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)) != 0; }
inline F zero_nan(F v) { return _mm256_and_ps(v, _mm256_cmp_ps(v, v, _CMP_ORD_Q)); }
inline D zero_nan(D v) { return _mm256_and_pd(v, _mm256_cmp_pd(v, v, _CMP_ORD_Q)); }
inline bool any_nan(D v) { return _mm256_movemask_pd(_mm256_cmp_pd(v, v, _CMP_UNORD_Q)) != 0; }
inline float hmin(F v) {
  __m128 s = _mm_min_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_min_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_min_ss(s, _mm_movehdup_ps(s)));
}
inline double hmin(D v) {
  __m128d s = _mm_min_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
  return _mm_cvtsd_f64(_mm_min_sd(s, _mm_unpackhi_pd(s, s)));
}
inline float hmax(F v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_max_ss(s, _mm_movehdup_ps(s)));
}
inline double hmax(D v) {
  __m128d s = _mm_max_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
  return _mm_cvtsd_f64(_mm_max_sd(s, _mm_unpackhi_pd(s, s)));
}
inline F round(F v) { return _mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
template <int kMode>
inline F round_to(F v) {
  return _mm256_round_ps(v, kMode | _MM_FROUND_NO_EXC);
}
template <int kMode>
inline D round_to(D v) {
  return _mm256_round_pd(v, kMode | _MM_FROUND_NO_EXC);
}
inline F sqrt(F v) { return _mm256_sqrt_ps(v); }
/// |m| with the sign of s.
inline F copysign(F m, F s) {
  const F sign = _mm256_set1_ps(-0.0f);
  return _mm256_or_ps(_mm256_andnot_ps(sign, m), _mm256_and_ps(sign, s));
}
inline D copysign(D m, D s) {
  const D sign = _mm256_set1_pd(-0.0);
  return _mm256_or_pd(_mm256_andnot_pd(sign, m), _mm256_and_pd(sign, s));
}
/// a < b ? x : y per lane.
inline F select_lt(F a, F b, F x, F y) { return _mm256_blendv_ps(y, x, _mm256_cmp_ps(a, b, _CMP_LT_OQ)); }
/// a <= b ? x : y per lane (y where either is NaN).
inline F select_le(F a, F b, F x, F y) { return _mm256_blendv_ps(y, x, _mm256_cmp_ps(a, b, _CMP_LE_OQ)); }
inline bool all_in(F v, float lo, float hi) {
  return _mm256_movemask_ps(
             _mm256_and_ps(_mm256_cmp_ps(v, set1(lo), _CMP_GE_OQ), _mm256_cmp_ps(v, set1(hi), _CMP_LE_OQ))) == 0xff;
}
/// Whether every lane of a and b has |lane| <= c (false for a NaN lane): one compare a vector.
inline bool all_abs_le(F a, F b, float c) {
  return _mm256_movemask_ps(_mm256_and_ps(_mm256_cmp_ps(abs(a), set1(c), _CMP_LE_OQ),
                                          _mm256_cmp_ps(abs(b), set1(c), _CMP_LE_OQ))) == 0xff;
}
inline bool all_in(D v, double lo, double hi) {
  return _mm256_movemask_pd(
             _mm256_and_pd(_mm256_cmp_pd(v, set1(lo), _CMP_GE_OQ), _mm256_cmp_pd(v, set1(hi), _CMP_LE_OQ))) == 0xf;
}
/// 1/x for finite x != 0: the 12-bit estimate and one Newton step (about 2 ulp).
inline F rcp(F x) {
  const F r = _mm256_rcp_ps(x);
  return _mm256_mul_ps(r, _mm256_fnmadd_ps(x, r, _mm256_set1_ps(2.0f)));
}
#define OAR_SLEEF_F(fn, ulp) Sleef_##fn##f8_##ulp##avx2
#define OAR_SLEEF_D(fn, ulp) Sleef_##fn##d4_##ulp##avx2
#endif

/// Of<float> / Of<double>: the vector type and lane count for an element type (a trait,
/// so the vector types are never template arguments, whose attributes GCC would drop).
template <typename T> struct Of;
template <> struct Of<float> {
  using type = F;
  static constexpr int lanes = kF;
};
template <> struct Of<double> {
  using type = D;
  static constexpr int lanes = kD;
};

/// The lowest argument the float exps below compute; they return 0 below it. exp(-87.33) =
/// 1.18e-38 is just above FLT_MIN: scaling by 2^n further down makes a subnormal (or an
/// underflow to 0), and on Intel's cores every vector whose vscalefps or vmulps result is
/// subnormal or underflows takes a microcode assist, about 27x the time of the whole exp.
/// Masked attention scores (-inf) and softmax's masked lanes hit it on every call
/// (Note [Subnormal results on Intel], docs/notes/cpu_speed_steps.md).
constexpr float kExpLo = -87.33f;

/// exp's argument reduction x = n ln2 + r, |r| <= ln2/2, n = x log2(e) rounded to the
/// nearest integer (|x| < 2^21). The rounding is the FMA's own: t = x log2(e) + 1.5 * 2^23 +
/// 127 lies in [2^23, 2^24), where floats are the integers, so t = n + kExpBias exactly; two
/// instructions against a multiply and vroundps / vrndscaleps (two micro-ops each on Intel's
/// cores). t's low bits are then n + 127, 2^n's exponent field: scale() shifts them into
/// place with AVX2 instead of converting n to integers and adding the bias (Note [exp's
/// reduction and polynomial], docs/notes/cpu_speed_steps.md).
constexpr float kExpBias = 12582912.0f + 127.0f;
/// log2(e), and ln 2 in two parts (Cody and Waite: n kLn2Hi is exact for |n| < 2^9).
constexpr float kLog2e = 1.44269504088896341f, kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
/// The largest x whose exp the 2^n of exp_reduce's t still scales (n <= 127).
constexpr float kExpHi = 88.3762626647949f;
struct ExpArg {
  F r;  // the reduced argument
  F n;  // the integer n, as floats
  F t;  // n + kExpBias
};
inline F round_log2e_biased(F x) { return fmadd(x, set1(kLog2e), set1(kExpBias)); }
inline ExpArg exp_reduce(F x) {
  const F t = round_log2e_biased(x), n = sub(t, set1(kExpBias));
  const F r = fmadd(n, set1(-kLn2Hi), x);
  return {fmadd(n, set1(-kLn2Lo), r), n, t};
}
/// 2^n for n in [-126, 127] (t = n + kExpBias), and y 2^n: vscalefps with AVX-512 (which
/// takes n itself), t's bits shifted left by 23 with AVX2.
inline F pow2(const ExpArg& a) {
#if OAR_VEC512
  return _mm512_scalef_ps(set1(1.0f), a.n);
#else
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_castps_si256(a.t), 23));
#endif
}
inline F scale(F y, const ExpArg& a) {
#if OAR_VEC512
  return _mm512_scalef_ps(y, a.n);
#else
  return mul(y, pow2(a));
#endif
}
/// (exp(r) - 1 - r) / r^2 on |r| <= ln2/2 as q0 + q1 r + ... + q4 r^4: a minimax fit of the
/// error of exp(r) = 1 + r + r^2 Q(r) relative to exp(r), 3.6e-9 with the coefficients
/// rounded to float (0.03 ulp). Cephes' degree-5 polynomial, before it, took one FMA more for
/// an error that the roundings of the evaluation swamp anyway (0.894 ulp at worst against
/// this one's 0.891, every float checked). exp_simd (softmax_rows.h) evaluates the same.
constexpr float kExpQ[5] = {4.9999994040e-01f, 1.6666521132e-01f, 4.1668388993e-02f, 8.3687454462e-03f,
                            1.3814540580e-03f};
inline F exp_poly_p(F r) {
  F p = set1(kExpQ[4]);
  p = fmadd(p, r, set1(kExpQ[3]));
  p = fmadd(p, r, set1(kExpQ[2]));
  p = fmadd(p, r, set1(kExpQ[1]));
  return fmadd(p, r, set1(kExpQ[0]));
}
// exp(r) = 1 + r (1 + r Q(r)): each FMA rounds once, and the last rounding is the only one
// at full weight. (1 + r) + r^2 Q(r), a form before it, rounded 1 + r first: 1.26 ulp.
inline F exp_poly(F r) {
  const F one = set1(1.0f);
  return fmadd(fmadd(exp_poly_p(r), r, one), r, one);
}

/// exp for lanes x <= kExpHi or NaN (exp's results): exp without its upper clamp and the
/// inf past it (one min fewer with AVX-512; a min, a compare, an and and a max fewer with
/// AVX2), for exp(x - max) of softmax, logsumexp and attention rows, whose arguments are
/// <= 0. Above kExpHi, AVX-512's vscalefps goes on to inf past 88.72 (up to |x| of 2^21,
/// where the reduction ends) and AVX2's 2^n wraps: exp clamps first.
inline F exp_nonpos(F x) {
  const F lo = set1(kExpLo);
  // min/max return their second operand when one is NaN: the constant first keeps a NaN x,
  // which the arithmetic carries to the result
  const ExpArg a = exp_reduce(max(lo, x));
#if OAR_VEC512
  // "not less than" is true for a NaN x, which the product keeps
  return _mm512_maskz_scalef_ps(_mm512_cmp_ps_mask(x, lo, _CMP_NLT_UQ), exp_poly(a.r), a.n);
#else
  return _mm256_and_ps(_mm256_cmp_ps(x, lo, _CMP_NLT_UQ), scale(exp_poly(a.r), a));
#endif
}

/// exp(x) for float lanes, the vector form of exp_simd (softmax_rows.h): x = n ln2 + r,
/// |r| <= ln2/2 (exp_reduce), exp_poly's degree-6 polynomial for exp(r), times 2^n; relative
/// error at most 0.90 ulp (every float in [kExpLo, 88.37] checked: 0.891; SLEEF's u10 exp is
/// 0.988); 0 below kExpLo (never a subnormal), NaN stays NaN. Faster than SLEEF's exp (Note
/// [The exp op on vec::exp]). With AVX-512 the scaling by 2^n is one vscalefps, which
/// overflows to inf itself (past 88.72, as exp); the clamp keeps +-inf from making r NaN and
/// the scaling from going below FLT_MIN, and the lanes below kExpLo are zeroed by its mask
/// (Note [exp on AVX-512], docs/notes/cpu_speed_steps.md). With AVX2, 2^n is built in its
/// exponent field, which stops at 2^127: inf from 88.38 on (exp(88.72) is the last finite
/// float), the exp op's own range test sends those lanes to SLEEF.
inline F exp(F x) {
  // exp_nonpos after a clamp at the top, the constant first in min so a NaN x is kept
#if OAR_VEC512
  return exp_nonpos(min(set1(100.0f), x));  // vscalefps overflows to inf itself
#else
  // inf above kExpHi: the masked inf or 0, then y, so that a NaN y is what max returns
  const F inf_above = _mm256_and_ps(_mm256_cmp_ps(x, set1(kExpHi), _CMP_GT_OQ), set1(__builtin_inff()));
  return max(inf_above, exp_nonpos(min(set1(kExpHi), x)));
#endif
}

/// (log(1 + f) - f + f^2 / 2) / f^3 on f in [sqrt(1/2) - 1, sqrt(2) - 1] as a degree-7
/// polynomial: a least-squares fit weighted by f^3 / log(1 + f), the error it leaves in
/// log(1 + f) far below the evaluation's roundings (0.82 ulp at worst in float).
constexpr float kLogP[8] = {-0.0736289024f, 0.126203597f, -0.132021114f, 0.142271101f,
                            -0.166213691f,  0.19999826f,  -0.250008523f, 0.333333552f};

/// x = 2^e m with m in [sqrt(1/2), sqrt(2)): f = m - 1 (exact, Sterbenz) and e as floats,
/// for normals and subnormals alike (finite nonsense for x <= 0, inf and NaN: log_ends).
struct LogArg {
  F f, e;
};
inline LogArg log_reduce(F x) {
#if OAR_VEC512
  // vgetmantps / vgetexpps: m in [1, 2) and e for normals and subnormals alike
  F m = _mm512_getmant_ps(x, _MM_MANT_NORM_1_2, _MM_MANT_SIGN_nan);
  F e = _mm512_getexp_ps(x);
  const __mmask16 big = _mm512_cmp_ps_mask(m, set1(1.41421356f), _CMP_GT_OQ);
  m = _mm512_mask_mul_ps(m, big, m, set1(0.5f));
  e = _mm512_mask_add_ps(e, big, e, set1(1.0f));
#else
  // subnormals scaled into the normals by 2^25 first; the exponent field, less the bias,
  // is e, and the mantissa with 1's exponent is m in [1, 2) (halved above sqrt(2))
  const F tiny = _mm256_cmp_ps(x, set1(1.17549435e-38f), _CMP_LT_OQ);
  const F xs = _mm256_blendv_ps(x, mul(x, set1(33554432.0f)), tiny);
  const __m256i bits = _mm256_castps_si256(xs);
  const __m256i mant =
      _mm256_or_si256(_mm256_and_si256(bits, _mm256_set1_epi32(0x007fffff)), _mm256_set1_epi32(0x3f800000));
  F m = _mm256_castsi256_ps(mant);
  F e = _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_srli_epi32(bits, 23), _mm256_set1_epi32(127)));
  e = sub(e, _mm256_and_ps(tiny, set1(25.0f)));
  const F big = _mm256_cmp_ps(m, set1(1.41421356f), _CMP_GT_OQ);
  m = _mm256_blendv_ps(m, mul(m, set1(0.5f)), big);
  e = add(e, _mm256_and_ps(big, set1(1.0f)));
#endif
  return {sub(m, set1(1.0f)), e};
}
/// kLogP's polynomial P(f): log(1 + f) = f - f^2 / 2 + f^3 P(f).
inline F log_poly(F f) {
  F p = fmadd(set1(kLogP[0]), f, set1(kLogP[1]));
  for (int k = 2; k < 8; ++k) p = fmadd(p, f, set1(kLogP[k]));
  return p;
}
/// r, a log of x computed for positive finite x, with the ends of every base: 0 -> -inf,
/// x < 0 -> NaN, +inf -> +inf, NaN -> NaN (log_reduce gives finite nonsense for them).
inline F log_ends(F x, F r) {
#if OAR_VEC512
  const __mmask16 special = _mm512_fpclass_ps_mask(x, 0x01 | 0x02 | 0x04 | 0x08 | 0x10 | 0x40 | 0x80);
  if (__builtin_expect(special == 0, 1)) return r;
  const F zero_out = _mm512_mask_mov_ps(_mm512_set1_ps(__builtin_nanf("")),
                                        _mm512_cmp_ps_mask(x, set1(0.0f), _CMP_EQ_OQ), set1(-__builtin_inff()));
  const F inf_or_nan = _mm512_mask_mov_ps(zero_out, _mm512_cmp_ps_mask(x, set1(__builtin_inff()), _CMP_EQ_OQ), x);
  return _mm512_mask_mov_ps(r, special, inf_or_nan);
#else
  const F ok =
      _mm256_and_ps(_mm256_cmp_ps(x, set1(0.0f), _CMP_GT_OQ), _mm256_cmp_ps(x, set1(__builtin_inff()), _CMP_LT_OQ));
  if (__builtin_expect(_mm256_movemask_ps(ok) == 0xff, 1)) return r;
  const F zero_out =
      _mm256_blendv_ps(set1(__builtin_nanf("")), set1(-__builtin_inff()), _mm256_cmp_ps(x, set1(0.0f), _CMP_EQ_OQ));
  const F inf_or_nan = _mm256_blendv_ps(zero_out, x, _mm256_cmp_ps(x, set1(__builtin_inff()), _CMP_EQ_OQ));
  return _mm256_blendv_ps(inf_or_nan, r, ok);
#endif
}

/// Natural log of float lanes, within 1 ulp (Note [log on vectors], cpu_speed_steps.md):
/// x = 2^e m with m in [sqrt(1/2), sqrt(2)), log x = e ln2 + log(1 + f), f = m - 1, with
/// ln2 in Cody and Waite's two parts. Subnormals are exact inputs; 0 gives -inf, a negative
/// x NaN, +inf +inf, NaN itself. SLEEF's u10 logf took 1.7x torch's time on the Xeon.
inline F log(F x) {
  const auto [f, e] = log_reduce(x);
  const F z = mul(f, f);
  F y = fmadd(mul(log_poly(f), z), f, mul(e, set1(kLn2Lo)));  // f^3 P(f) + e ln2_lo
  y = fnmadd(set1(0.5f), z, y);
  return log_ends(x, fmadd(e, set1(kLn2Hi), add(f, y)));
}

/// log1p(y) of float lanes for y in [0, 1] (NaN stays NaN), on log's polynomial without its
/// reduction or a division: y <= sqrt(2) - 1 is f itself (e = 0, exact: no 1 + y rounded);
/// above, u = 1 + y is rounded and f = u / 2 - 1, e = 1 (both exact), and y's part that u
/// lost, c = y - (u - 1) (exact), adds c / u, with 1 / u from rcp (|c| <= 2^-24: the
/// estimate's error is far below an ulp). softplus and log_sigmoid's tail, log1p(exp(-|z|)).
inline F log1p_unit(F y) {
  const F one = set1(1.0f), u = add(one, y);
  const F big = select_lt(set1(0.414213562f), y, one, set1(0.0f));  // e: 1 where y > sqrt(2) - 1
  const F f = select_lt(set1(0.414213562f), y, fmsub(u, set1(0.5f), one), y);
  const F c = mul(big, sub(y, sub(u, one)));
  const F z = mul(f, f);
  F r = fmadd(mul(log_poly(f), z), f, fmadd(big, set1(kLn2Lo), mul(c, rcp(u))));  // f^3 P(f) + e ln2_lo + c / u
  r = fnmadd(set1(0.5f), z, r);
  return fmadd(big, set1(kLn2Hi), add(f, r));
}

/// log2 and log10 of float lanes on log's reduction (Note [log2 and log10 on vectors]):
/// log_b x = e log_b(2) + log(1 + f) log_b(e), log(1 + f) = f + h + q with h = -f^2 / 2 in
/// two exact parts (z = f^2 rounded, -z / 2, and f^2 - z by an FMA) and q = f^3 P(f). The
/// big products f c and -z c / 2 (c = log_b(e), hi and lo) are added by Fast2Sum, then to e
/// log_b(2) (exact: kHi has 11 bits) by Fast2Sum again (|e kHi| >= 0.30 > their sum when
/// e != 0); every rounding error of those, by FMAs, and the small terms go in before the
/// last rounding. Within 0.75 ulp (log2 0.74, log10 0.68 over every 13th positive float);
/// log2 is exact at the powers of two. One rounded log(1 + f) - f times c, a quarter
/// faster, came to 1.02 ulp near x = sqrt(2), with f^2's rounding error kept to 1.01: the
/// roundings of f^3 P(f) and of that product are a third of an ulp of log2 there.
///
/// log_base_sum: log_b x as big + small (|small| below an ulp of big) for positive finite
/// x, before log_base's last rounding, with about 7 more bits than the rounded sum (erfinv's
/// w, Note [erfinv on float lanes]).
struct LogSum {
  F big, small;
};
inline LogSum log_base_sum(F x, float e_hi, float e_lo, float c_hi, float c_lo) {
  const auto [f, e] = log_reduce(x);
  const F z = mul(f, f), h = mul(set1(-0.5f), z);  // h exact
  const F q = mul(mul(log_poly(f), z), f);
  const F t1 = mul(f, set1(c_hi)), t2 = mul(h, set1(c_hi));
  const F s1 = add(t1, t2), c1 = add(sub(t1, s1), t2);  // |t1| > |t2|
  F lo = add(fmsub(f, set1(c_hi), t1), fmsub(h, set1(c_hi), t2));
  lo = fmadd(add(f, h), set1(c_lo), lo);
  lo = fmadd(fnmadd(set1(0.5f), fmsub(f, f, z), q), set1(c_hi), lo);  // (q - (f^2 - z) / 2) c
  lo = fmadd(e, set1(e_lo), add(lo, c1));
  const F eh = mul(e, set1(e_hi));
  const F s = add(eh, s1);
  return {s, add(add(sub(eh, s), s1), lo)};
}
inline F log_base(F x, float e_hi, float e_lo, float c_hi, float c_lo) {
  const LogSum l = log_base_sum(x, e_hi, e_lo, c_hi, c_lo);
  return log_ends(x, add(l.big, l.small));
}
inline F log2(F x) { return log_base(x, 1.0f, 0.0f, 1.442695022f, 1.925963034e-08f); }
inline F log10(F x) { return log_base(x, 0.301025391f, 4.605039067e-06f, 0.434294492f, -1.010304995e-08f); }

/// exp(x) for lanes the caller knows lie in [kExpLo, 88.37] (NaN, inf and the ends are its
/// to route elsewhere): exp's arithmetic without its clamp (a min and a max) and its mask's
/// compare (the exp op, Note [The exp op on vec::exp]).
inline F exp_in_range(F x) {
  const ExpArg a = exp_reduce(x);
  return scale(exp_poly(a.r), a);
}

/// exp(w) for float lanes with w in [kExpLo, 0] (the caller's to ensure), to about 1.1e-7
/// relative plus n 1.9e-9 (every float in [kExpLo, 0] checked: 4.0e-7 at most, near
/// kExpLo): one-constant argument reduction and a degree-5 polynomial (a near-minimax fit of
/// exp(r) - 1 - r on |r| <= ln2/2), 3 fewer FMAs than exp. For callers whose own error is
/// larger: gelu's erfc (1.5e-7 absolute), which is bound by the FMA pipes (Note [gelu's
/// erfc], docs/notes/cpu_speed_steps.md).
inline F exp_lite_in_range(F w) {
  const F t = round_log2e_biased(w), n = sub(t, set1(kExpBias));
  const F r = fmadd(n, set1(-0.693147180559945f), w);  // one constant: 1.9e-9 per unit of n
  F p = set1(8.312501682e-3f);
  p = fmadd(p, r, set1(4.189033251e-2f));
  p = fmadd(p, r, set1(1.666711539e-1f));
  p = fmadd(p, r, set1(4.999923030e-1f));
  const F one = set1(1.0f);
  p = fmadd(fmadd(p, r, one), r, one);  // exp_poly's form: one operation fewer
  return scale(p, ExpArg{r, n, t});
}

/// exp_lite_in_range for any finite w <= 0: 0 below kExpLo (never a subnormal).
inline F exp_nonpos_lite(F w) {
  const F lo = set1(kExpLo);
  // the mask zeroes the lanes below lo; the clamp keeps their scaling off the subnormals
#if OAR_VEC512
  return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(w, lo, _CMP_NLT_UQ), exp_lite_in_range(max(w, lo)));
#else
  return _mm256_and_ps(_mm256_cmp_ps(w, lo, _CMP_NLT_UQ), exp_lite_in_range(max(w, lo)));
#endif
}

/// expm1(w) for float lanes w in [-20, 0] or NaN (the caller clamps; expm1(-20) rounds to
/// -1): 2^n t + (2^n - 1) from exp's reduction w = n ln2 + r and t = exp(r) - 1 = r + r^2 Q(r),
/// which keeps the relative accuracy of small |w| (n = 0: expm1 = t) without a second
/// polynomial; 2^n - 1 is exact for these n.
inline F expm1_nonpos(F w) {
  const ExpArg a = exp_reduce(w);
  const F t = fmadd(mul(exp_poly_p(a.r), a.r), a.r, a.r);
  const F p2 = pow2(a);
  return fmadd(t, p2, sub(p2, set1(1.0f)));
}
/// tanh(x) for float lanes: -expm1(w) / (2 + expm1(w)) with w = -2|x| and the sign of x,
/// on expm1_nonpos above. Relative error below 2.5 ulp, +-1 past |x| = 9, NaN stays NaN.
/// One exp's work and a division; the form before it (Cephes' odd polynomial below 0.625,
/// 1 - 2 / (exp(2|x|) + 1) above, both computed for every lane) took a fifth longer and was
/// 1.1x torch's SLEEF tanh on Intel (Note [tanh on expm1], docs/notes/cpu_speed_steps.md).
inline F tanh(F x) {
  // |x| clamped to 9 (tanh(9) rounds to 1); min with the constant first keeps a NaN
  const F em = expm1_nonpos(mul(min(set1(9.0f), abs(x)), set1(-2.0f)));  // in (-1, 0]
  return copysign(div(em, add(em, set1(2.0f))), x);
}
}  // namespace vec

/// Declares a functor `Name` with the scalar `s(v)` (float or double) and, with AVX-512
/// or AVX2, `vf`/`vd` calling SLEEF's `Sleef_<fn>f16_<ulp>` / `Sleef_<fn>d8_<ulp>`
/// (`f8` / `d4` with AVX2).
#if OAR_VEC
#define OAR_SLEEF_FUNCTOR(Name, fn, ulp, scalar_expr)                                  \
  struct Name {                                                                         \
    static vec::F vf(vec::F v) { return OAR_SLEEF_F(fn, ulp)(v); }                      \
    static vec::D vd(vec::D v) { return OAR_SLEEF_D(fn, ulp)(v); }                      \
    template <typename M> static M s(M v) { return scalar_expr; }                       \
  };
// Float lanes on Oar's own vec::vec_fn, double lanes on SLEEF's fn.
#define OAR_VEC_FUNCTOR(Name, vec_fn, fn, ulp, scalar_expr)        \
  struct Name {                                                    \
    static vec::F vf(vec::F v) { return vec::vec_fn(v); }          \
    static vec::D vd(vec::D v) { return OAR_SLEEF_D(fn, ulp)(v); } \
    template <typename M>                                          \
    static M s(M v) {                                              \
      return scalar_expr;                                          \
    }                                                              \
  };
// Two operands, float lanes on SLEEF (binary_lanes in math_functions_kernels.cc).
#define OAR_SLEEF_FUNCTOR2(Name, fn, ulp, scalar_expr)                          \
  struct Name {                                                                 \
    static vec::F vf(vec::F a, vec::F b) { return OAR_SLEEF_F(fn, ulp)(a, b); } \
    template <typename M>                                                       \
    static M s(M a, M b) {                                                      \
      return scalar_expr;                                                       \
    }                                                                           \
  };
#else
#define OAR_SLEEF_FUNCTOR(Name, fn, ulp, scalar_expr)                                  \
  struct Name {                                                                         \
    template <typename M> static M s(M v) { return scalar_expr; }                       \
  };
#define OAR_VEC_FUNCTOR(Name, vec_fn, fn, ulp, scalar_expr) OAR_SLEEF_FUNCTOR(Name, fn, ulp, scalar_expr)
#define OAR_SLEEF_FUNCTOR2(Name, fn, ulp, scalar_expr) \
  struct Name {                                        \
    template <typename M>                              \
    static M s(M a, M b) {                             \
      return scalar_expr;                              \
    }                                                  \
  };
#endif

namespace detail {

// Note [Vector maps on row views]. The vector maps (float_map, sleef_unary) read an operand
// in place when its elements are rows of `cols` contiguous elements at one stride: a slice
// along the last axis (x[..., :n], a chunk, a split's half), with the leading axes coalesced.
// Any other layout (a transpose, a step) is copied contiguous first, as every operand was
// before: sigmoid of a [1024, 512] column slice of a [1024, 1024] tensor took 0.42 ms against
// 0.22 for a contiguous one on the Xeon. Rows under 64 elements are copied too (each row's
// tail goes through a padded buffer). An operand that is one value everywhere (stride 0 on
// every axis: the gradient of x.sum() or x.mean()) is read from a short run of that value,
// and the pieces are cut to its length: copying it out to out's size cost 0.04 ms per 1M
// floats, a third of a gradient kernel's time.
template <typename T>
struct RowOperand {
  static constexpr int64_t kSplat = 1024;  // elements in a splat's run, and the longest piece
  DenseTensor copy;  // holds the contiguous copy when one was made
  const T* data = nullptr;
  int64_t stride = 0;  // elements from one row to the next
  bool splat = false;  // data is kSplat copies of the operand's one value, in `run`
  alignas(64) unsigned char run[kSplat * sizeof(T)];  // raw: float16's constructor zeroes
  const T* at(int64_t row, int64_t col) const { return splat ? data : data + row * stride + col; }
};

// The operand's rows: {rows, cols, row stride}, or {0, 0, 0} when its layout is not rows of
// contiguous elements (a contiguous operand is one row of numel).
inline std::array<int64_t, 3> row_layout(const DenseTensor& t) {
  const Dims& d = t.dims();
  const Dims& st = t.strides();
  int64_t cols = 1, rows = 1, stride = 0;
  bool in_rows = false;
  for (int64_t i = d.size() - 1; i >= 0; --i) {
    if (d[i] == 1) continue;
    if (!in_rows && st[i] == cols) {
      cols *= d[i];
    } else if (!in_rows) {
      in_rows = true;
      rows = d[i];
      stride = st[i];
    } else if (st[i] == stride * rows) {
      rows *= d[i];
    } else {
      return {0, 0, 0};
    }
  }
  return {rows, cols, in_rows ? stride : cols};
}

// Fills r[k] for the K inputs of n elements each (out's shape) and returns the row length
// they are walked by: the rows of the first strided operand with a row layout; operands with
// other rows, and every operand when those rows are short, are copied. *piece is the longest
// piece the walk may hand over: n, or a splat's run.
template <typename T, size_t K>
int64_t row_operands(const std::array<const DenseTensor*, K>& in, int64_t n, std::array<RowOperand<T>, K>* r,
                     int64_t* piece) {
  constexpr int64_t kMinCols = 64;
  int64_t cols = n;
  *piece = n;
  for (size_t k = 0; k < K && cols == n; ++k) {
    if (in[k]->is_contiguous() || is_splat(*in[k])) continue;
    const auto l = row_layout(*in[k]);
    if (l[1] >= kMinCols && l[0] * l[1] == n) cols = l[1];
  }
  for (size_t k = 0; k < K; ++k) {
    RowOperand<T>& o = (*r)[k];
    if (is_splat(*in[k])) {
      T* run = reinterpret_cast<T*>(o.run);
      std::fill_n(run, RowOperand<T>::kSplat, *in[k]->template data<T>());
      o.data = run;
      o.splat = true;
      *piece = RowOperand<T>::kSplat;
      continue;
    }
    const auto l = in[k]->is_contiguous() ? std::array<int64_t, 3>{n / cols, cols, cols} : row_layout(*in[k]);
    if (l[1] == cols && l[0] * l[1] == n) {
      o.data = in[k]->template data<T>();
      o.stride = l[2];
    } else {
      o.copy = contiguous(*in[k]);
      o.data = o.copy.template data<T>();
      o.stride = cols;
    }
  }
  return cols;
}

// piece(b, m, row, col) over parallel_for's chunks of [0, n) cut at the ends of rows of
// `cols` and into at most `longest` elements: out[b, b + m) is row `row` from column `col`.
template <typename Piece>
void row_pieces(int64_t n, int64_t cols, const Piece& piece, int64_t longest = INT64_MAX) {
  parallel_for(n, [&](int64_t b, int64_t e) {
    int64_t row = b / cols, col = b % cols;
    while (b < e) {
      const int64_t m = std::min({cols - col, e - b, longest});
      piece(b, m, row, col);
      b += m;
      col += m;
      if (col == cols) {
        ++row;
        col = 0;
      }
    }
  });
}

#if OAR_VEC
/// Whether functor F has `vf2(vec::F&, vec::F&)`: both vectors in place, its stages
/// interleaved by hand. The compiler does not schedule the two inlined vf calls into each
/// other, and their long chains keep the out-of-order window from filling both pipes
/// (gelu, Note [gelu on two vectors], docs/notes/cpu_speed_steps.md).
template <typename F, typename = void>
struct HasPair : std::false_type {};
template <typename F>
struct HasPair<F, std::void_t<decltype(F::vf2(std::declval<vec::F&>(), std::declval<vec::F&>()))>> : std::true_type {};

// Full vectors, then the tail through a padded buffer (so F::vf never reads past n). T is
// float or float16 (widened and rounded in registers).
template <typename F, typename T>
inline void vec_apply(const T* x, T* o, int64_t n) {
  int64_t i = 0;
  // two independent vectors per iteration: the inline functors are long dependency chains
  for (; i + 2 * vec::kF <= n; i += 2 * vec::kF) {
    vec::F r0 = vec::load(x + i), r1 = vec::load(x + i + vec::kF);
    if constexpr (HasPair<F>::value) {
      F::vf2(r0, r1);
    } else {
      r0 = F::vf(r0);
      r1 = F::vf(r1);
    }
    vec::store(o + i, r0);
    vec::store(o + i + vec::kF, r1);
  }
  for (; i + vec::kF <= n; i += vec::kF) vec::store(o + i, F::vf(vec::load(x + i)));
  if (i < n) {
    alignas(64) float buf[vec::kF] = {};
    for (int64_t k = i; k < n; ++k) buf[k - i] = static_cast<float>(x[k]);
    vec::store(buf, F::vf(vec::load(buf)));
    for (int64_t k = i; k < n; ++k) o[k] = static_cast<T>(buf[k - i]);
  }
}
#if OAR_VEC512
inline bool cpu_has_avx512_bf16() {
  static const bool has = __builtin_cpu_supports("avx512bf16");
  return has;
}
// vec_apply for bfloat16 rows rounded by vcvtneps2bf16 (vec::store_ne); the tail through
// vec_apply. Only where cpu_has_avx512_bf16(). Its loop is vec_apply's own: code inlined into
// a function of another target cannot call store_ne.
template <typename F>
__attribute__((target("avx512bf16"))) void vec_apply_ne(const bfloat16* x, bfloat16* o, int64_t n) {
  int64_t i = 0;
  for (; i + 2 * vec::kF <= n; i += 2 * vec::kF) {
    vec::F r0 = vec::load(x + i), r1 = vec::load(x + i + vec::kF);
    if constexpr (HasPair<F>::value) {
      F::vf2(r0, r1);
    } else {
      r0 = F::vf(r0);
      r1 = F::vf(r1);
    }
    vec::store_ne(o + i, r0);
    vec::store_ne(o + i + vec::kF, r1);
  }
  if (i < n) vec_apply<F>(x + i, o + i, n - i);
}
#endif
template <typename F>
inline void vec_apply(const double* x, double* o, int64_t n) {
  int64_t i = 0;
  for (; i + 2 * vec::kD <= n; i += 2 * vec::kD) {  // two independent chains, as the float loop
    const vec::D r0 = F::vd(vec::load(x + i)), r1 = F::vd(vec::load(x + i + vec::kD));
    vec::store(o + i, r0);
    vec::store(o + i + vec::kD, r1);
  }
  for (; i + vec::kD <= n; i += vec::kD) vec::store(o + i, F::vd(vec::load(x + i)));
  if (i < n) {
    alignas(64) double buf[vec::kD] = {};
    for (int64_t k = i; k < n; ++k) buf[k - i] = x[k];
    vec::store(buf, F::vd(vec::load(buf)));
    for (int64_t k = i; k < n; ++k) o[k] = buf[k - i];
  }
}
// op on the vectors at p[0] + i, p[1] + i, ...
template <typename Op, typename P, size_t... I>
vec::F apply_at(const Op& op, const P& p, int64_t i, std::index_sequence<I...>) {
  return op(vec::load(p[I] + i)...);
}

// o[i] = op(in[0][i], in[1][i], ...) for float or float16 rows (widened and rounded in
// registers): full vectors, then the tail through padded float buffers, so op never reads
// past n.
template <size_t K, typename T, typename Op>
void lanes(T* o, int64_t n, const Op& op, const std::array<const T*, K>& in) {
  constexpr auto seq = std::make_index_sequence<K>();
  int64_t i = 0;
  for (; i + vec::kF <= n; i += vec::kF) vec::store(o + i, apply_at(op, in, i, seq));
  if (i == n) return;
  alignas(64) float tail[K + 1][vec::kF] = {};
  std::array<const float*, K> tp;
  for (size_t k = 0; k < K; ++k) {
    for (int64_t j = i; j < n; ++j) tail[k + 1][j - i] = static_cast<float>(in[k][j]);
    tp[k] = tail[k + 1];
  }
  vec::store(tail[0], apply_at(op, tp, 0, seq));
  for (int64_t j = i; j < n; ++j) o[j] = static_cast<T>(tail[0][j - i]);
}

#if OAR_VEC512
// lanes for bfloat16 rows rounded by vcvtneps2bf16 (vec::store_ne); the tail through lanes.
// Only where cpu_has_avx512_bf16().
template <size_t K, typename Op>
__attribute__((target("avx512bf16"))) void lanes_ne(bfloat16* o, int64_t n, const Op& op,
                                                    const std::array<const bfloat16*, K>& in) {
  constexpr auto seq = std::make_index_sequence<K>();
  int64_t i = 0;
  for (; i + vec::kF <= n; i += vec::kF) vec::store_ne(o + i, apply_at(op, in, i, seq));
  if (i == n) return;
  std::array<const bfloat16*, K> rest;
  for (size_t k = 0; k < K; ++k) rest[k] = in[k] + i;
  lanes<K>(o + i, n - i, op, rest);
}
#endif

// lanes over contiguous rows of any float dtype but double: bfloat16 in registers where the
// core has AVX512-BF16 (lanes_ne), else through float blocks (its integer rounding is
// several instructions a vector; Note [float16 rows in blocks]). The activations' and pow's
// vector loops; op takes K vec::F and returns one.
template <size_t K, typename T, typename Op>
void float_rows(T* o, int64_t n, const Op& op, const std::array<const T*, K>& in) {
  if constexpr (std::is_same_v<T, bfloat16>) {
#if OAR_VEC512
    if (cpu_has_avx512_bf16()) return lanes_ne<K>(o, n, op, in);
#endif
    constexpr int64_t kBlock = 512;
    alignas(64) float buf[K + 1][kBlock];
    std::array<const float*, K> bp;
    for (int64_t s = 0; s < n; s += kBlock) {
      const int64_t m = std::min(kBlock, n - s);
      for (size_t k = 0; k < K; ++k) {
        to_floats(in[k] + s, buf[k + 1], m);
        bp[k] = buf[k + 1];
      }
      lanes<K>(buf[0], m, op, bp);
      from_floats(buf[0], o + s, m);
    }
  } else {
    lanes<K>(o, n, op, in);
  }
}

// out = op on float lanes over the K inputs (each of out's shape, read in place as rows:
// Note [Vector maps on row views]), split over the pool: the driver of the vector kernels
// built on float_rows.
template <typename T, size_t K, typename Op>
void float_map(DenseTensor* out, const Op& op, const std::array<const DenseTensor*, K>& in) {
  T* o = out->alloc<T>();
  const int64_t n = out->numel();
  if (n == 0) return;
  std::array<RowOperand<T>, K> r;
  int64_t longest = 0;
  const int64_t cols = row_operands<T, K>(in, n, &r, &longest);
  const auto piece = [&](int64_t b, int64_t m, int64_t row, int64_t col) {
    std::array<const T*, K> q;
    for (size_t k = 0; k < K; ++k) q[k] = r[k].at(row, col);
    float_rows<K>(o + b, m, op, q);
  };
  row_pieces(n, cols, piece, longest);
}

#else
template <typename F, typename M>
inline void vec_apply(const M* x, M* o, int64_t n) {
  for (int64_t i = 0; i < n; ++i) o[i] = F::template s<M>(x[i]);
}
#endif

}  // namespace detail

/// out = F(x) elementwise for a float dtype T; out's dims/dtype are set.
template <typename F, typename T>
void sleef_unary(const DenseTensor& x_in, DenseTensor* out) {
  T* o = out->alloc<T>();
  const int64_t n = out->numel();
  if (n == 0) return;
  std::array<detail::RowOperand<T>, 1> x;
  int64_t longest = 0;
  const int64_t cols = detail::row_operands<T, 1>({&x_in}, n, &x, &longest);
  // float16 converts in registers (gelu of 1M halves 0.40 -> 0.35 ms on the Xeon against
  // blocks). bfloat16 does too where the core has AVX512-BF16 (vec::store_ne's one
  // vcvtneps2bf16 a vector; gelu of 1M 0.564 -> 0.480 ms on Zen 4, exp 0.371 -> 0.302, torch
  // 0.449 / 0.488); elsewhere it keeps blocks converted by loops GCC vectorizes: its integer
  // rounding is about eight instructions a vector, and in registers (or through
  // elementwise.h's from_floats) gelu ran 3-6% slower on the Xeon.
  const auto piece = [&](int64_t b, int64_t m, int64_t row, int64_t col) {
    const T* xp = x[0].at(row, col);
    if constexpr ((OAR_VEC && std::is_same_v<T, float16>) || std::is_same_v<T, float> || std::is_same_v<T, double>) {
      detail::vec_apply<F>(xp, o + b, m);
    } else {
#if OAR_VEC512
      if constexpr (std::is_same_v<T, bfloat16>) {
        if (detail::cpu_has_avx512_bf16()) return detail::vec_apply_ne<F>(xp, o + b, m);
      }
#endif
      // bfloat16 elsewhere (and float16 without vectors): widen a block, compute in float, round back
      constexpr int64_t kBlock = 512;
      alignas(64) float buf[kBlock];
      for (int64_t s = 0; s < m; s += kBlock) {
        const int64_t w = std::min(kBlock, m - s);
        for (int64_t i = 0; i < w; ++i) buf[i] = static_cast<float>(xp[s + i]);
        detail::vec_apply<F>(buf, buf, w);
        for (int64_t i = 0; i < w; ++i) o[b + s + i] = static_cast<T>(buf[i]);
      }
    }
  };
  detail::row_pieces(n, cols, piece, longest);
}

}  // namespace OAR_ISA_NS
}  // namespace oar::phi
