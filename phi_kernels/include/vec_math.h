// Vectorized transcendental unary kernels on SLEEF (16 floats / 8 doubles per call
// with AVX-512). float16/bfloat16 are widened to float in small blocks, computed, and
// rounded back, so every float dtype takes the vector path. Strided inputs are made
// contiguous first (the output is always contiguous). Builds without AVX-512 use the
// scalar functor. Include only from kernel .cc files.
#pragma once

#include <immintrin.h>
#include <sleef.h>

#include "phi_kernels/include/elementwise.h"

namespace oar::phi {

#if defined(__AVX512F__)
#define OAR_VEC512 1
#else
#define OAR_VEC512 0
#endif

/// Declares a functor `Name` with the scalar `s(v)` (float or double) and, with
/// AVX-512, `vf`/`vd` calling SLEEF's `Sleef_<fn>f16_<ulp>` / `Sleef_<fn>d8_<ulp>`.
#if OAR_VEC512
#define OAR_SLEEF_FUNCTOR(Name, fn, ulp, scalar_expr)                                  \
  struct Name {                                                                         \
    static __m512 vf(__m512 v) { return Sleef_##fn##f16_##ulp(v); }                     \
    static __m512d vd(__m512d v) { return Sleef_##fn##d8_##ulp(v); }                    \
    template <typename M> static M s(M v) { return scalar_expr; }                       \
  };
#else
#define OAR_SLEEF_FUNCTOR(Name, fn, ulp, scalar_expr)                                  \
  struct Name {                                                                         \
    template <typename M> static M s(M v) { return scalar_expr; }                       \
  };
#endif

namespace detail {

#if OAR_VEC512
template <typename F>
inline void vec_apply(const float* x, float* o, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(o + i, F::vf(_mm512_loadu_ps(x + i)));
  if (i < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1u);
    _mm512_mask_storeu_ps(o + i, m, F::vf(_mm512_maskz_loadu_ps(m, x + i)));
  }
}
template <typename F>
inline void vec_apply(const double* x, double* o, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm512_storeu_pd(o + i, F::vd(_mm512_loadu_pd(x + i)));
  if (i < n) {
    const __mmask8 m = static_cast<__mmask8>((1u << (n - i)) - 1u);
    _mm512_mask_storeu_pd(o + i, m, F::vd(_mm512_maskz_loadu_pd(m, x + i)));
  }
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
  DenseTensor xc = contiguous(x_in);
  const T* x = xc.data<T>();
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    parallel_for(n, [&](int64_t b, int64_t e) { detail::vec_apply<F>(x + b, o + b, e - b); });
  } else {  // 16-bit floats: widen a block, compute in float, round back
    parallel_for(n, [&](int64_t b, int64_t e) {
      constexpr int64_t kBlock = 512;
      alignas(64) float buf[kBlock];
      for (int64_t s = b; s < e; s += kBlock) {
        const int64_t m = std::min(kBlock, e - s);
        for (int64_t i = 0; i < m; ++i) buf[i] = static_cast<float>(x[s + i]);
        detail::vec_apply<F>(buf, buf, m);
        for (int64_t i = 0; i < m; ++i) o[s + i] = static_cast<T>(buf[i]);
      }
    });
  }
}

}  // namespace oar::phi
