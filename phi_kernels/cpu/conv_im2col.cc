// float32 forward convolution as im2col + sgemm. With the batch folded into the GEMM's
// columns, a convolution with a small image (7x7, 14x14) becomes one large product
// [out_c, in_c*k] x [in_c*k, batch*out_spatial] that OpenBLAS runs near peak, where a
// direct convolution or per-image GEMMs with few columns do not.
#include "phi_kernels/funcs/conv_im2col.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

#include "paddle_core/base/errors.h"
#include "paddle_core/tensor/allocator.h"
#include "phi_kernels/cpu/parallel.h"
#include "phi_kernels/funcs/sgemm.h"

namespace oar::phi {
namespace {

// Per-thread: slot 0 the column matrix, slot 1 the GEMM output of a batch chunk.
struct Im2colTag;
float* workspace(int slot, size_t floats) {
  return static_cast<float*>(thread_workspace<Im2colTag, 2>(slot, floats * sizeof(float)));
}

// d[i] = s[2 i] for i in [lo, hi), reading s[0, len) only (2 hi - 1 <= len). The even
// floats of two 8-float loads make 8 outputs (AVX2, the baseline ISA); the last 8 overlap
// the ones before, and their second load is masked at len (Note [Convolution tuning]).
inline void gather_stride2(const float* s, int64_t len, float* d, int64_t lo, int64_t hi) {
#if defined(__AVX2__)
  if (hi - lo >= 8) {
    auto eight = [&](int64_t i) {
      const int64_t rest = len - 2 * i - 8;  // floats of the second load inside s
      const __m256 a = _mm256_loadu_ps(s + 2 * i);
      const __m256 b =
          rest >= 8 ? _mm256_loadu_ps(s + 2 * i + 8)
                    : _mm256_maskload_ps(s + 2 * i + 8, _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(rest)),
                                                                           _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)));
      // [a0 a2 b0 b2 | a4 a6 b4 b6] -> [a0 a2 a4 a6 b0 b2 b4 b6]
      const __m256 e = _mm256_shuffle_ps(a, b, 0x88);
      _mm256_storeu_ps(d + i, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(e), 0xD8)));
    };
    for (int64_t i = lo; i + 8 < hi; i += 8) eight(i);
    eight(hi - 8);
    return;
  }
#else
  (void)len;
#endif
  for (int64_t i = lo; i < hi; ++i) d[i] = s[2 * i];
}

// col[(c, kd, kh, kw), n * os + (od, oh, ow)] = src[n, c, od*s - p + kd*d, ...], 0 outside.
void im2col(const Geo3& g, int64_t batch, int64_t channels, const float* src, float* col) {
  const int64_t os = g.out[0] * g.out[1] * g.out[2], is = g.in[0] * g.in[1] * g.in[2];
  const int64_t kn = g.k[0] * g.k[1] * g.k[2], ld = batch * os, rows = channels * kn;
  parallel_for(rows, [&](int64_t r0, int64_t r1) {
    for (int64_t row = r0; row < r1; ++row) {
      const int64_t c = row / kn, kr = row % kn;
      const int64_t kd = kr / (g.k[1] * g.k[2]), kh = kr / g.k[2] % g.k[1], kw = kr % g.k[2];
      // The output columns ow whose input column iw = ow*s - p + kw*d lies inside.
      const int64_t off = kw * g.d[2] - g.p[2];
      int64_t lo = off >= 0 ? 0 : (-off + g.s[2] - 1) / g.s[2];
      int64_t hi = g.in[2] - 1 - off < 0 ? 0 : (g.in[2] - 1 - off) / g.s[2] + 1;
      lo = std::min(lo, g.out[2]), hi = std::max(lo, std::min(hi, g.out[2]));
      for (int64_t n = 0; n < batch; ++n) {
        const float* plane = src + (n * channels + c) * is;
        float* dst = col + row * ld + n * os;
        for (int64_t od = 0; od < g.out[0]; ++od) {
          const int64_t id = od * g.s[0] - g.p[0] + kd * g.d[0];
          for (int64_t oh = 0; oh < g.out[1]; ++oh) {
            const int64_t ih = oh * g.s[1] - g.p[1] + kh * g.d[1];
            float* drow = dst + (od * g.out[1] + oh) * g.out[2];
            if (id < 0 || id >= g.in[0] || ih < 0 || ih >= g.in[1]) {
              std::memset(drow, 0, g.out[2] * sizeof(float));
              continue;
            }
            const float* srow = plane + (id * g.in[1] + ih) * g.in[2];
            std::fill(drow, drow + lo, 0.f);
            if (g.s[2] == 1) {
              if (hi > lo) std::memcpy(drow + lo, srow + lo + off, (hi - lo) * sizeof(float));
            } else if (g.s[2] == 2) {
              gather_stride2(srow + off, g.in[2] - off, drow, lo, hi);
            } else {
              for (int64_t ow = lo; ow < hi; ++ow) drow[ow] = srow[ow * g.s[2] + off];
            }
            std::fill(drow + hi, drow + g.out[2], 0.f);
          }
        }
      }
    }
  }, rows * ld);
}

// C[M, N] = A[M, K] B[K, N], all row-major.
void sgemm(int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B, int64_t ldb,
           float* C, int64_t ldc) {
  sgemm_rowmajor(false, false, M, N, K, A, lda, B, ldb, C, ldc);
}

constexpr int64_t kChunkBytes = 32 << 20;

bool pointwise(const Geo3& g) {
  for (int i = 0; i < 3; ++i)
    if (g.k[i] != 1 || g.s[i] != 1 || g.p[i] != 0 || g.in[i] != g.out[i]) return false;
  return true;
}

}  // namespace

bool conv_im2col_fwd_supported(const ConvGeometry& g) {
  if (g.channels_last || g.groups != 1) return false;
  int64_t kn = 1, os = 1;
  for (int i = 0; i < g.nd; ++i) kn *= g.k[i], os *= g.out[i];
  return 4.0 * g.in_c * kn * os <= kChunkBytes;  // one image's columns
}

void conv_im2col_fwd(const ConvGeometry& cg, const float* src, const float* w, float* dst, const float* bias,
                     bool relu) {
  const Geo3 g = geo3(cg);
  const int64_t os = g.out[0] * g.out[1] * g.out[2], kk = cg.in_c * g.k[0] * g.k[1] * g.k[2];
  const int64_t nb = cg.batch, oc = cg.out_c;
  // d[o, 0..os) = act(s[o, 0..os) + bias[o]) for every output channel o (d may be s).
  auto finish = [&](const float* s, int64_t lds, float* d, int64_t ldd) {
    parallel_for(oc, [&](int64_t o0, int64_t o1) {
      for (int64_t o = o0; o < o1; ++o) {
        const float b = bias ? bias[o] : 0.f;
        const float* si = s + o * lds;
        float* di = d + o * ldd;
        if (relu) {
          for (int64_t i = 0; i < os; ++i) di[i] = std::max(si[i] + b, 0.f);
        } else if (bias || si != di) {
          for (int64_t i = 0; i < os; ++i) di[i] = si[i] + b;
        }
      }
    }, oc * os);
  };
  const bool epilogue = bias != nullptr || relu;
  if (pointwise(g)) {  // 1x1, stride 1: the input is its own column matrix, per image
    for (int64_t n = 0; n < nb; ++n) {
      float* d = dst + n * oc * os;
      sgemm(oc, os, kk, w, kk, src + n * kk * os, os, d, os);
      if (epilogue) finish(d, os, d, os);
    }
    return;
  }
  // As many images per GEMM as keep the column matrix within kChunkBytes (the wider the
  // GEMM, the nearer peak; a bound keeps the workspace of large images in check).
  const int64_t chunk = std::clamp<int64_t>(kChunkBytes / (4 * kk * os), 1, nb);
  float* col = workspace(0, static_cast<size_t>(kk * chunk * os));
  float* out = chunk > 1 ? workspace(1, static_cast<size_t>(oc * chunk * os)) : nullptr;
  for (int64_t n0 = 0; n0 < nb; n0 += chunk) {
    const int64_t m = std::min(chunk, nb - n0), cols = m * os;
    im2col(g, m, cg.in_c, src + n0 * cg.in_c * g.in[0] * g.in[1] * g.in[2], col);
    float* d = dst + n0 * oc * os;
    if (m == 1) {
      sgemm(oc, os, kk, w, kk, col, os, d, os);
      if (epilogue) finish(d, os, d, os);
      continue;
    }
    sgemm(oc, cols, kk, w, kk, col, cols, out, cols);
    // out[o, n * os + s] -> d[n, o, s], with the bias and relu on the way
    if (epilogue) {
      for (int64_t n = 0; n < m; ++n) finish(out + n * os, cols, d + n * oc * os, os);
      continue;
    }
    parallel_for(oc, [&](int64_t o0, int64_t o1) {
      for (int64_t o = o0; o < o1; ++o)
        for (int64_t n = 0; n < m; ++n) std::memcpy(d + (n * oc + o) * os, out + o * cols + n * os, os * sizeof(float));
    }, oc * cols);
  }
}

void conv_im2col_release() { release_thread_workspace<Im2colTag, 2>(); }

}  // namespace oar::phi
