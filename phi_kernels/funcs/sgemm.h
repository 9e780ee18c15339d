// Row-major float GEMM routed to OpenBLAS or oneDNN's sgemm, whichever is faster for
// the shape on this CPU's ISA (AVX2 or AVX-512; phi_kernels/cpu/sgemm.cc). Used by matmul, fused
// linear and the im2col convolution, so the rule lives in one place.
#pragma once

#include <cstdint>

namespace oar::phi {

/// C[M, N] = op(A) op(B), op = transpose where ta / tb; leading dims as in BLAS
/// (row-major). Uses the calling thread's OpenMP thread count.
void sgemm_rowmajor(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda,
                    const float* B, int64_t ldb, float* C, int64_t ldc);

/// Whether sgemm_rowmajor takes OpenBLAS (else oneDNN's sgemm) for this product.
bool sgemm_uses_openblas(bool ta, bool tb, int64_t M, int64_t N, int64_t K, int64_t lda, int64_t ldb);

/// The OpenBLAS behind the large shapes: "scipy-openblas32", "debian-openblas" or "none".
const char* sgemm_openblas_name();

/// Before sgemm_rowmajor calls run from inside an OpenMP team (one product per thread):
/// makes OpenBLAS single-threaded, as its thread count is global (oneDNN's sgemm is
/// single-threaded inside a team by itself).
void sgemm_serial_in_team();

}  // namespace oar::phi
