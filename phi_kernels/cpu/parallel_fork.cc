// Note [Fork safety] (docs/notes/fork_safety.md): two pools run Oar's threads.
// - Oar's own pool (parallel_for, Note [Thread pool]): before fork() the forking thread
//   takes the pool's region lock, so no region is running and every worker is idle; the
//   child, whose copies of the workers do not exist, forgets them and starts new ones at
//   its next parallel region (calibration is kept). A fork from inside a region (a
//   kernel's body) is not covered.
// - GNU OpenMP (GEMM splits, oneDNN's and OpenBLAS's OpenMP builds) keeps a thread's pool
//   of workers in that thread, and has no fork handler. After fork() the child's copy of
//   the forking thread still owns a pool whose workers do not exist in the child, so its
//   next parallel region waits for them forever. Before fork() the forking thread hands
//   its pool back (omp_pause_resource_all, OpenMP 5.0: the workers are joined); the parent
//   and the child then start fresh workers at their next parallel region (one thread start
//   per worker and fork, ~20 us each). Pools of other threads are theirs: their workers do
//   not exist in the child either, but the child has no thread that would use them.
#include <omp.h>
#include <pthread.h>

#include "phi_kernels/cpu/parallel.h"
#include "phi_kernels/cpu/parallel_pool.h"

namespace oar::phi {
namespace {

void release_pools_before_fork() {
  // -1 inside a parallel region (a fork from a kernel's worker): nothing to do then.
  if (!omp_in_parallel()) omp_pause_resource_all(omp_pause_hard);
  parallel_detail::pool_lock_for_fork();
}

const bool g_fork_handler = [] {
  pthread_atfork(release_pools_before_fork, parallel_detail::pool_unlock_in_parent,
                 parallel_detail::pool_reset_in_child);
  return true;
}();

}  // namespace
}  // namespace oar::phi
