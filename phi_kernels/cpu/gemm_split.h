// gemm_split: how every GEMM path runs at more than one thread (Note [GEMM splits on the
// pool], docs/notes/thread_pool.md): float32 (sgemm.cc) and oneDNN's bf16 and int8 GEMMs
// (lowp_gemm.cc) alike.
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstdint>

#include "phi_kernels/cpu/omp_serial.h"
#include "phi_kernels/cpu/parallel.h"

namespace oar::phi {

/// Runs a product with M x N outputs as part(r0, r1, c0, c1) calls, each the product's rows
/// [r0, r1) and columns [c0, c1) as one single-threaded library call. At one thread, inside
/// another region, below the pool's grain (`cost` in parallel_for's units) or with fewer
/// than 32 columns (rows) per thread: one call for the whole product, with OpenMP's thread
/// count at 1 (a library would otherwise open an OpenMP region). Else the longer of M and N
/// is cut into one panel of whole 16-element vectors per thread, run as parallel_for's
/// chunks on Oar's pool, whose chunks run with OpenMP at one thread.
template <class Part>
void gemm_split(int64_t M, int64_t N, int64_t cost, Part&& part) {
  const bool region = in_parallel_region();
  const int nt = region ? 1 : omp_get_max_threads();
  const bool by_cols = N >= M;
  const int64_t len = by_cols ? N : M;
  if (nt <= 1 || cost < kParallelGrain || len < 32 * static_cast<int64_t>(nt)) {
    OmpSerial serial(!region && nt > 1);
    part(int64_t{0}, M, int64_t{0}, N);
    return;
  }
  parallel_for(
      (len + 15) / 16,
      [&](int64_t u0, int64_t u1) {
    const int64_t b0 = u0 * 16, b1 = std::min(len, u1 * 16);
    if (by_cols) {
      part(int64_t{0}, M, b0, b1);
    } else {
      part(b0, b1, int64_t{0}, N);
    }
      },
      cost);
}

}  // namespace oar::phi
