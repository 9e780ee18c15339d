// bf16 and int8 GEMMs on Intel AMX tiles (tdpbf16ps, tdpbssd), written for Oar (Note [AMX
// GEMM], docs/notes/gemm_backends.md): Debian's oneDNN 2.6 reaches about half of what a
// current oneDNN does there. lowp_gemm.cc routes large products here where the CPU has AMX.
#pragma once

#include <cstdint>

namespace oar::phi {

/// Whether this CPU has AMX-BF16 (with AVX512-BF16) and Linux granted the tile state.
bool amx_bf16_supported();

/// C[M, N] (bf16, rounded to nearest even once) = op(A) op(B) for bf16 A, B (raw bits),
/// row-major with BLAS leading dimensions; accumulates in float. Call only where
/// amx_bf16_supported(). Splits over Oar's pool at more than one thread.
void amx_bf16gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const uint16_t* A, int64_t lda, const uint16_t* B,
                  int64_t ldb, uint16_t* C, int64_t ldc);

/// amx_bf16gemm with C in float, as accumulated (no rounding to bf16).
void amx_bf16gemm_f32(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const uint16_t* A, int64_t lda,
                      const uint16_t* B, int64_t ldb, float* C, int64_t ldc);

/// Whether this CPU has AMX-INT8 and Linux granted the tile state.
bool amx_int8_supported();

/// C[M, N] (int32) = op(A) op(B) for int8 A, B, accumulated in int32 (wrapping like int32
/// only past 2^31), row-major with BLAS leading dimensions. Call only where
/// amx_int8_supported(). Splits over Oar's pool at more than one thread.
void amx_s8gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const int8_t* A, int64_t lda, const int8_t* B,
                int64_t ldb, int32_t* C, int64_t ldc);

}  // namespace oar::phi
