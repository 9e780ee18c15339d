// Low-precision GEMMs (docs/notes/gemm_backends.md): bf16 x bf16 and int8 x int8, row-major,
// leading dimensions as in BLAS. Each picks its path once, at run time, from the CPU:
//  - bf16: on an AMX CPU Oar's AMX kernel for large products (funcs/amx_gemm.h) and oneDNN's
//    for the others; oneDNN's matmul primitive where the CPU has AVX512-BF16 and its
//    vdpbf16ps outruns float32 FMAs (measured: bf16_onednn_pays); elsewhere both operands
//    are widened to float and go through sgemm_rowmajor, the float result rounded once to
//    bf16.
//  - int8: on an AMX CPU Oar's AMX-INT8 kernel (all but products of fewer than 16 rows);
//    oneDNN's s8s8s32 GEMM where the CPU has VNNI (AVX512-VNNI, AVX-VNNI), which accumulates
//    in int32 without saturating; elsewhere K is cut into blocks of 1024 whose int8 products
//    sum exactly in float32 (|sum| <= 1024 * 128 * 128 = 2^24) through sgemm, then
//    accumulated in int32. Every path is exact while the result fits int32.
// OAR_BF16_GEMM / OAR_INT8_GEMM = amx | onednn | float force a path (tests run each the CPU
// has; a forced amx takes every product).
#pragma once

#include <cstdint>

namespace oar::phi {

/// C[M, N] (bf16, rounded to nearest even once) = op(A) op(B) for bf16 A, B (raw bits).
void bf16gemm_rowmajor(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const uint16_t* A, int64_t lda,
                       const uint16_t* B, int64_t ldb, uint16_t* C, int64_t ldc);

/// C[M, N] (int32) = op(A) op(B) for int8 A, B; exact (wraps like int32 only past 2^31).
void s8gemm_rowmajor(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const int8_t* A, int64_t lda, const int8_t* B,
                     int64_t ldb, int32_t* C, int64_t ldc);

/// The path each uses on this CPU: "amx", "onednn" or "float".
const char* bf16_gemm_path();
const char* int8_gemm_path();

/// Whether bf16 products (matmul, convolution) should run on oneDNN's bf16 kernels rather
/// than as float32 on widened operands: where oneDNN runs AMX, or runs AVX512-BF16 and this
/// core's vdpbf16ps reaches >= 0.75x its float32 FMA flop rate (Note [bf16 dot or widened
/// float], lowp_gemm.cc: measured once, in about 0.1-0.3 ms).
bool bf16_onednn_pays();

/// That measured ratio of flop rates, vdpbf16ps over float32 FMA; 0 without AVX512-BF16.
double bf16_dot_vs_fma();

/// dst rows (ld ldd) = the bf16 rows of src (ld ld) widened to float (exact); on Oar's pool.
void bf16_to_float_rows(const uint16_t* src, int64_t ld, int64_t rows, int64_t cols, float* dst, int64_t ldd);

/// dst rows = src's float rows rounded to bf16 (nearest even; NaN stays NaN); on Oar's pool.
void float_to_bf16_rows(const float* src, int64_t ld, int64_t rows, int64_t cols, uint16_t* dst, int64_t ldd);

}  // namespace oar::phi
