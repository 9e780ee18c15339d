// oar.set_num_threads: one count for every thread team Oar's CPU kernels run on.
#include <cblas.h>
#include <omp.h>

#include "phi_kernels/cpu/parallel.h"
#include "phi_kernels/cpu/parallel_pool.h"

namespace oar::phi {

// OpenMP's count is the pool's (Note [Thread pool]) and what oneDNN reads. Debian's OpenBLAS
// (its pthread build) keeps its own, read once from the environment at load: it serves the
// float64 and complex GEMMs and LAPACK, which otherwise kept both threads after
// set_num_threads(1) (a float64 1024^3 matmul 13.9 ms of wall and 27.7 of CPU time; 27.6 / 27.6
// with OPENBLAS_NUM_THREADS=1). float32's OpenBLAS (scipy-openblas32, sgemm.cc) runs on one
// thread under the pool's splits either way.
void set_num_threads(int n) {
  omp_set_num_threads(n);
#if defined(OPENBLAS_VERSION)
  if (!in_parallel_region()) openblas_set_num_threads(n);
#endif
}

}  // namespace oar::phi
