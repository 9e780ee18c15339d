// Matrix transposition for kernels that repack an operand: the 8x8 register transposes and a
// strided block transpose built on it. One copy for the transposing copy (elementwise.h),
// the copy kernel's transposes (copy_kernel.cc), the RNN weights (rnn_kernels.cc),
// attention's packed K^T (attention_kernels.cc), LAPACK's column-major operands
// (linalg_kernels.cc) and grid_sample's channels-last images (interp_kernels.cc).
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "phi_kernels/cpu/dispatch/isa_namespace.h"

namespace oar::phi {
// Per-ISA names for this header's inline code (isa_namespace.h).
inline namespace OAR_ISA_NS {

#if defined(__AVX2__)
/// Transposes the 8x8 float block held in v[0..7] (rows) in registers.
inline void transpose8x8(__m256 v[8]) {
  __m256 t[8], u[8];
  for (int k = 0; k < 4; ++k) {
    t[2 * k] = _mm256_unpacklo_ps(v[2 * k], v[2 * k + 1]);
    t[2 * k + 1] = _mm256_unpackhi_ps(v[2 * k], v[2 * k + 1]);
  }
  for (int k = 0; k < 2; ++k) {  // rows 4k..4k+3: t[4k..4k+3]
    u[4 * k] = _mm256_shuffle_ps(t[4 * k], t[4 * k + 2], _MM_SHUFFLE(1, 0, 1, 0));
    u[4 * k + 1] = _mm256_shuffle_ps(t[4 * k], t[4 * k + 2], _MM_SHUFFLE(3, 2, 3, 2));
    u[4 * k + 2] = _mm256_shuffle_ps(t[4 * k + 1], t[4 * k + 3], _MM_SHUFFLE(1, 0, 1, 0));
    u[4 * k + 3] = _mm256_shuffle_ps(t[4 * k + 1], t[4 * k + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int k = 0; k < 4; ++k) {
    v[k] = _mm256_permute2f128_ps(u[k], u[k + 4], 0x20);
    v[k + 4] = _mm256_permute2f128_ps(u[k], u[k + 4], 0x31);
  }
}
#endif

/// Transposes the 8x8 block of 16-bit values held in v[0..7] (rows) in registers: pairs,
/// then pairs of pairs, then halves interleaved (24 unpacks per 64 values, as the float one).
inline void transpose8x8_16(__m128i v[8]) {
  __m128i t[8], u[8];
  for (int k = 0; k < 4; ++k) {
    t[2 * k] = _mm_unpacklo_epi16(v[2 * k], v[2 * k + 1]);
    t[2 * k + 1] = _mm_unpackhi_epi16(v[2 * k], v[2 * k + 1]);
  }
  for (int k = 0; k < 2; ++k) {  // rows 4k..4k+3: t[4k..4k+3]
    u[4 * k] = _mm_unpacklo_epi32(t[4 * k], t[4 * k + 2]);
    u[4 * k + 1] = _mm_unpackhi_epi32(t[4 * k], t[4 * k + 2]);
    u[4 * k + 2] = _mm_unpacklo_epi32(t[4 * k + 1], t[4 * k + 3]);
    u[4 * k + 3] = _mm_unpackhi_epi32(t[4 * k + 1], t[4 * k + 3]);
  }
  for (int k = 0; k < 4; ++k) {
    v[2 * k] = _mm_unpacklo_epi64(u[k], u[k + 4]);
    v[2 * k + 1] = _mm_unpackhi_epi64(u[k], u[k + 4]);
  }
}

/// dst[c * ldd + r] = src[r * lds + c] for r < rows, c < cols. Float and the 16-bit types go
/// through 8x8 register tiles (24 shuffles per 64 values), walked down a band of 8 source
/// columns so that each destination line is written whole before the next; ragged edges and
/// other types are copied one value at a time, in bands of 8 source rows. (A [1024, 1024]
/// bfloat16 transpose took 1.6 ms a value at a time, torch 0.58.)
template <typename T>
void transpose_strided(const T* src, int64_t lds, int64_t rows, int64_t cols, T* dst, int64_t ldd) {
  int64_t c0 = 0;
  if constexpr (sizeof(T) == 2 && std::is_trivially_copyable_v<T>) {
    const int64_t rows8 = rows / 8 * 8;
    for (; c0 + 8 <= cols; c0 += 8) {
      for (int64_t r0 = 0; r0 < rows8; r0 += 8) {
        __m128i v[8];
        for (int k = 0; k < 8; ++k) v[k] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + (r0 + k) * lds + c0));
        transpose8x8_16(v);
        for (int k = 0; k < 8; ++k) _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + (c0 + k) * ldd + r0), v[k]);
      }
      for (int64_t c = c0; c < c0 + 8; ++c) {
        for (int64_t r = rows8; r < rows; ++r) dst[c * ldd + r] = src[r * lds + c];
      }
    }
  }
#if defined(__AVX2__)
  if constexpr (std::is_same_v<T, float>) {
    const int64_t rows8 = rows / 8 * 8;
    for (; c0 + 8 <= cols; c0 += 8) {
      for (int64_t r0 = 0; r0 < rows8; r0 += 8) {
        __m256 v[8];
        for (int k = 0; k < 8; ++k) v[k] = _mm256_loadu_ps(src + (r0 + k) * lds + c0);
        transpose8x8(v);
        for (int k = 0; k < 8; ++k) _mm256_storeu_ps(dst + (c0 + k) * ldd + r0, v[k]);
      }
      for (int64_t c = c0; c < c0 + 8; ++c) {
        for (int64_t r = rows8; r < rows; ++r) dst[c * ldd + r] = src[r * lds + c];
      }
    }
  }
#endif
  for (int64_t r0 = 0; r0 < rows; r0 += 8) {
    const int64_t r1 = std::min(rows, r0 + 8);
    for (int64_t c = c0; c < cols; ++c) {
      for (int64_t r = r0; r < r1; ++r) dst[c * ldd + r] = src[r * lds + c];
    }
  }
}

#if defined(__AVX2__)
/// Note [Transposed tiles through a buffer]: the copy kernel's transposes (copy_kernel.cc)
/// move kTransposeTile x kTransposeTile float tiles, dst[c * ldd + r] = src[r * lds + c],
/// through an L1 buffer: eight source rows at a time go through the 8x8 register transpose
/// into buf, then each destination row of the tile is written whole from it. Walked
/// straight through transpose_strided, a tile keeps 32 source and 16 destination lines in
/// use at once, and with power-of-two strides (a [1024, 1024] float transpose: 4 KiB) they
/// all fall in one L1 set, which holds 8 on Zen 4: each line was fetched from L2 several
/// times. [1024, 1024] at 1 thread on Zen 4: 32x32 tiles walked straight 0.63 ms, 16x16
/// through a buffer (the copy before stop 58) 0.50, 64x64 through a buffer 0.29-0.30. Where
/// the rows spread over the sets the buffer's extra pass costs more than it saves ([1000,
/// 1000] 0.14-0.19 straight, 0.19-0.25 buffered; [64, 3136], an NCHW -> NHWC plane, 0.037
/// against 0.047), and at 1280 or 768 floats a row the two tie; so the copy buffers only
/// where a side's rows lie a multiple of 2 KiB apart (512 floats: 0.076 straight, 0.057
/// buffered; [256, 4096] 0.60 against 0.22).
constexpr int64_t kTransposeTile = 64;
/// Whether a transpose of `elem`-byte values with these row strides goes through the buffer:
/// 4-byte values whose rows on either side lie a multiple of 2 KiB apart.
inline bool transpose_buffered(size_t elem, int64_t lds, int64_t ldd) {
  return elem == 4 && ((lds * 4) % 2048 == 0 || (ldd * 4) % 2048 == 0);
}
inline void transpose_tile_buffered(const float* src, int64_t lds, float* dst, int64_t ldd) {
  constexpr int64_t kT = kTransposeTile;
  alignas(64) float buf[kT][kT];  // buf[c][r]
  for (int64_t r0 = 0; r0 < kT; r0 += 8) {
    for (int64_t c0 = 0; c0 < kT; c0 += 8) {
      __m256 v[8];
      for (int k = 0; k < 8; ++k) v[k] = _mm256_loadu_ps(src + (r0 + k) * lds + c0);
      transpose8x8(v);
      for (int k = 0; k < 8; ++k) _mm256_store_ps(&buf[c0 + k][r0], v[k]);
    }
  }
  for (int64_t c = 0; c < kT; ++c) {
    for (int64_t r = 0; r < kT; r += 8) _mm256_storeu_ps(dst + c * ldd + r, _mm256_load_ps(&buf[c][r]));
  }
}
#endif

/// transpose_strided for a whole matrix, one thread: through buffered tiles where a side's
/// rows lie a multiple of 2 KiB apart, straight elsewhere, as the copy kernel chooses (Note
/// [Transposed tiles through a buffer]).
template <typename T>
void transpose_blocked(const T* src, int64_t lds, int64_t rows, int64_t cols, T* dst, int64_t ldd) {
#if defined(__AVX2__)
  if constexpr (sizeof(T) == 4) {
    if (transpose_buffered(sizeof(T), lds, ldd)) {
      constexpr int64_t kT = kTransposeTile;
      for (int64_t r0 = 0; r0 < rows; r0 += kT) {
        for (int64_t c0 = 0; c0 < cols; c0 += kT) {
          const int64_t wr = std::min(kT, rows - r0), wc = std::min(kT, cols - c0);
          const T* s = src + r0 * lds + c0;
          T* d = dst + c0 * ldd + r0;
          if (wr == kT && wc == kT) {
            transpose_tile_buffered(reinterpret_cast<const float*>(s), lds, reinterpret_cast<float*>(d), ldd);
          } else {
            transpose_strided(s, lds, wr, wc, d, ldd);
          }
        }
      }
      return;
    }
  }
#endif
  transpose_strided(src, lds, rows, cols, dst, ldd);
}

}  // namespace OAR_ISA_NS
}  // namespace oar::phi
