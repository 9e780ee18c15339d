// Row-major float GEMM routed to OpenBLAS, oneDNN's sgemm or Oar's AVX-512 kernel, whichever
// is faster for the shape on this CPU (AVX2 or AVX-512; phi_kernels/cpu/sgemm.cc). Used by matmul, fused
// linear and the im2col convolution, so the rule lives in one place.
#pragma once

#include <cstdint>

namespace oar::phi {

/// C[M, N] = op(A) op(B), op = transpose where ta / tb; leading dims as in BLAS
/// (row-major). At the calling thread's thread count (omp_get_max_threads()) > 1 a large
/// product is split into panels on Oar's pool (Note [GEMM splits on the pool]); every
/// library call runs on one thread.
void sgemm_rowmajor(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda,
                    const float* B, int64_t ldb, float* C, int64_t ldc);

/// A product of M*N*K multiply-adds in parallel_for's cost units (the float adds of the
/// pool's calibration loop): what decides whether the pool's sleeping workers are worth
/// waking for it.
int64_t sgemm_cost(int64_t M, int64_t N, int64_t K);

/// Whether oneDNN runs the code of `isa` (a dnnl_cpu_isa_t, whose bits include the ISAs
/// below it): the CPU has it and DNNL_MAX_CPU_ISA / ONEDNN_MAX_CPU_ISA do not cap it.
/// Every choice between oneDNN's kernels and another path keys on this, not on cpuid,
/// so that a capped oneDNN (an AVX2 run on an AVX-512 machine, Note [CPU dispatch]) takes
/// the path an AVX2 machine takes instead of asking oneDNN for kernels it will not run.
bool onednn_runs_isa(unsigned isa);

/// Whether sgemm_rowmajor takes OpenBLAS (else oneDNN's sgemm) for this product.
bool sgemm_uses_openblas(bool ta, bool tb, int64_t M, int64_t N, int64_t K, int64_t lda, int64_t ldb);

/// Whether sgemm_rowmajor takes Oar's own AVX-512 kernel (sgemm_avx512_nn) for this product
/// (one library call's shape, after the split on the pool).
bool sgemm_uses_avx512_kernel(bool ta, bool tb, int64_t M, int64_t N, int64_t K);

/// Whether the CPU runs sgemm_avx512_nn (AVX-512 F/BW/DQ/VL).
bool sgemm_avx512_supported();

/// C[M, N] = A B, row-major, neither operand transposed, on one thread: Oar's AVX-512 float
/// GEMM (phi_kernels/cpu/sgemm_avx512.cc, Note [AVX-512 sgemm]). Only where
/// sgemm_avx512_supported().
void sgemm_avx512_nn(int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B, int64_t ldb,
                     float* C, int64_t ldc);

/// Whether sgemm_rowmajor first copies a transposed A whose rows lie a multiple of 4 KiB
/// apart into a buffer with 64 bytes more per row (oneDNN's path on an Intel AVX-512 core).
bool sgemm_restrides_a(bool ta, int64_t M, int64_t N, int64_t K, int64_t lda);

/// The OpenBLAS behind the large shapes: "scipy-openblas32", "debian-openblas" or "none".
const char* sgemm_openblas_name();

/// Before sgemm_rowmajor calls run from inside a parallel region (one product per chunk):
/// makes OpenBLAS single-threaded, as its thread count is global and must not be changed
/// from inside a region (oneDNN's sgemm is single-threaded there by itself).
void sgemm_serial_in_team();

}  // namespace oar::phi
