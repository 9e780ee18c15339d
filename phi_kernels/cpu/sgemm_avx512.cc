// Oar's own float32 GEMM for large untransposed products on AVX-512 (Note [AVX-512 sgemm],
// docs/notes/gemm_backends.md); sgemm_rowmajor (sgemm.cc) decides when it runs.
//
// Only the functions marked OAR_AVX512 are compiled for AVX-512. They live in this file's
// anonymous namespace and call no inline function of a header that they would instantiate
// with AVX-512 code (the linker could keep such a copy for the baseline's callers). The
// driver below them is baseline code.
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>

#include "phi_kernels/cpu/scratch.h"
#include "phi_kernels/funcs/sgemm.h"

#define OAR_AVX512 __attribute__((target("avx512f,avx512vl,avx512dq,avx512bw,fma")))

namespace oar::phi {
namespace {

// Note [AVX-512 sgemm]: oneDNN 2.6's sgemm reaches 85-88% of the FMA peak at 1024^3 on the
// Emerald Rapids Xeon (stop 73), and what it loses there is its packing: two passes over A
// and B that wait on memory while no multiply runs. This GEMM packs only B, and does that
// inside the multiplies:
//  - a micro-tile is 6 rows x 64 columns of C in 24 zmm accumulators; each step of K loads
//    4 vectors of packed B and broadcasts 6 floats of A (30 registers of 32);
//  - A is read where it lies, rows lda apart: a tile's 6 rows x K block (24 KiB at 1024)
//    stay in L1 across the 4 tiles of a 256-column block. Packing A (rows copied to a
//    padded stride) cost 1-2% of the peak more than it saved;
//  - B is packed a block at a time (K block <= 1024 x 256 columns, 1 MiB: in L2), and the
//    block's first row strip does the packing: its tiles read B's rows ldb apart, prefetch
//    64 rows ahead, multiply and store the packed copy in the same pass, so the loads from
//    memory overlap the FMAs of the strip;
//  - K is cut into as few blocks as fit 1024 (one pass over C at K <= 1024: C is stored once
//    and never read back); the K loop is unrolled 4 times (fewer loop uops per FMA, which
//    mattered when the host's other hyperthread was busy).
// On that Xeon at 1 thread, against the FMA loop run right after each call
// (bench/gemm_paths.py's "paired"): 1024^3 90-93% in the host's quiet rounds, where oneDNN's
// sgemm got 79-89% and torch's MKL 77-85%; 2048^3 91-93% against 88-92%. oneDNN stays ahead
// below 1024 rows or K (512^3 92% against 95%; 256x1024x1024 80% against 89%), where the
// block's first strip (the packing) weighs more. So sgemm_rowmajor routes here only M >= 1024,
// K >= 1024, N >= 512 (per library call) on an Intel AVX-512 core. What was tried and the
// tables: docs/notes/gemm_backends.md, "Oar's AVX-512 sgemm".
constexpr int kRows = 6;
constexpr int kVecs = 4;
constexpr int64_t kCols = 16 * kVecs;
constexpr int64_t kMaxKc = 1024;
constexpr int64_t kNc = 256;              // a multiple of kCols
constexpr int64_t kPrefetchPacked = 512;  // floats ahead in the packed micro-panel: 8 steps of K
constexpr int64_t kPrefetchRows = 64;     // rows of B's source ahead while packing

// C[R x 64] = (acc ? C : 0) + A[R x kc] B[kc x 64], columns outside `mask` neither read nor
// written. A's rows lie lda apart. kPack: b is B's source, rows ldb apart, and the tile
// also stores it packed to bp ([k][64], zeros outside the mask); else b is packed (and bp
// unused).
template <int R, bool kPack>
OAR_AVX512 __attribute__((always_inline)) inline void tile(int64_t kc, const float* __restrict a, int64_t lda,
                                                           const float* __restrict b, int64_t ldb, float* __restrict bp,
                                                           float* __restrict c, int64_t ldc, bool acc,
                                                           const __mmask16* mask) {
  __m512 cv[R][kVecs];
  for (int i = 0; i < R; ++i) {
    for (int v = 0; v < kVecs; ++v) {
      cv[i][v] = _mm512_setzero_ps();
      _mm_prefetch(reinterpret_cast<const char*>(c + i * ldc + 16 * v), _MM_HINT_T0);
    }
  }
#pragma GCC unroll 4
  for (int64_t k = 0; k < kc; ++k) {
    __m512 bv[kVecs];
    if constexpr (kPack) {
      const float* bk = b + k * ldb;
#pragma GCC unroll 4
      for (int v = 0; v < kVecs; ++v) {
        bv[v] = _mm512_maskz_loadu_ps(mask[v], bk + 16 * v);
        _mm512_store_ps(bp + k * kCols + 16 * v, bv[v]);
        _mm_prefetch(reinterpret_cast<const char*>(bk + kPrefetchRows * ldb + 16 * v), _MM_HINT_T0);
      }
    } else {
#pragma GCC unroll 4
      for (int v = 0; v < kVecs; ++v) {
        bv[v] = _mm512_load_ps(b + k * kCols + 16 * v);
        _mm_prefetch(reinterpret_cast<const char*>(b + k * kCols + kPrefetchPacked + 16 * v), _MM_HINT_T0);
      }
    }
#pragma GCC unroll 8
    for (int i = 0; i < R; ++i) {
      const __m512 ai = _mm512_set1_ps(a[i * lda + k]);
#pragma GCC unroll 4
      for (int v = 0; v < kVecs; ++v) cv[i][v] = _mm512_fmadd_ps(ai, bv[v], cv[i][v]);
    }
  }
#pragma GCC unroll 8
  for (int i = 0; i < R; ++i) {
#pragma GCC unroll 4
    for (int v = 0; v < kVecs; ++v) {
      float* ci = c + i * ldc + 16 * v;
      if (acc) cv[i][v] = _mm512_add_ps(cv[i][v], _mm512_maskz_loadu_ps(mask[v], ci));
      _mm512_mask_storeu_ps(ci, mask[v], cv[i][v]);
    }
  }
}

// R rows of C over a block's nc columns. kPack: the block's first strip, which packs its
// B (b is the source) into bp; else b is unused and the tiles read bp.
template <int R, bool kPack>
OAR_AVX512 void strip(int64_t kc, int64_t nc, const float* a, int64_t lda, const float* b, int64_t ldb, float* bp,
                      float* c, int64_t ldc, bool acc) {
  for (int64_t j = 0; j < nc; j += kCols) {
    const int64_t w = std::min(kCols, nc - j);
    __mmask16 mask[kVecs];
    for (int v = 0; v < kVecs; ++v) {
      const int64_t in = std::clamp<int64_t>(w - 16 * v, 0, 16);
      mask[v] = static_cast<__mmask16>((uint32_t{1} << in) - 1);
    }
    float* panel = bp + j * kc;
    tile<R, kPack>(kc, a, lda, kPack ? b + j : panel, ldb, kPack ? panel : nullptr, c + j, ldc, acc, mask);
  }
}

using StripFn = void (*)(int64_t, int64_t, const float*, int64_t, const float*, int64_t, float*, float*, int64_t, bool);

template <bool kPack, size_t... I>
constexpr std::array<StripFn, sizeof...(I)> strips(std::index_sequence<I...>) {
  return {{&strip<static_cast<int>(I) + 1, kPack>...}};
}
constexpr auto kStrips = strips<false>(std::make_index_sequence<kRows>{});
constexpr auto kPackingStrips = strips<true>(std::make_index_sequence<kRows>{});

}  // namespace

bool sgemm_avx512_supported() {
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  }();
  return has;
}

void sgemm_avx512_nn(int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B, int64_t ldb,
                     float* C, int64_t ldc) {
  if (M <= 0 || N <= 0) return;
  if (K <= 0) {
    for (int64_t i = 0; i < M; ++i) std::memset(C + i * ldc, 0, N * sizeof(float));
    return;
  }
  thread_local Scratch scratch;
  const int64_t passes = (K + kMaxKc - 1) / kMaxKc;
  const int64_t kc_max = (K + passes - 1) / passes;
  const int64_t nc_max = std::min(kNc, (N + kCols - 1) / kCols * kCols);
  float* bp = scratch.get<float>(kc_max * nc_max, "matmul");
  for (int64_t p = 0; p < K; p += kc_max) {
    const int64_t kc = std::min(kc_max, K - p);
    for (int64_t jc = 0; jc < N; jc += kNc) {
      const int64_t nc = std::min(kNc, N - jc);
      for (int64_t ic = 0; ic < M; ic += kRows) {
        const int64_t r = std::min<int64_t>(kRows, M - ic);
        const StripFn run = (ic == 0 ? kPackingStrips : kStrips)[r - 1];
        run(kc, nc, A + ic * lda + p, lda, B + p * ldb + jc, ldb, bp, C + ic * ldc + jc, ldc, p > 0);
      }
    }
  }
}

}  // namespace oar::phi
