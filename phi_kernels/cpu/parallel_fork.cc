// Note [Fork safety] (docs/notes/fork_safety.md): GNU OpenMP keeps a thread's pool of
// workers in that thread, and has no fork handler. After fork() the child's copy of the
// forking thread still owns a pool whose workers do not exist in the child, so its next
// parallel region (any op above kParallelGrain, oneDNN's and OpenBLAS's OpenMP builds)
// waits for them forever. Before fork() the forking thread hands its pool back
// (omp_pause_resource_all, OpenMP 5.0: the workers are joined); the parent and the child
// then start fresh workers at their next parallel region, so a forked child keeps every
// thread (one thread start per worker and fork, ~20 us each). Pools of other threads are
// theirs: their workers do not exist in the child either, but the child has no thread
// that would use them.
#include <omp.h>
#include <pthread.h>

namespace oar::phi {
namespace {

void release_pool_before_fork() {
  // -1 inside a parallel region (a fork from a kernel's worker): nothing to do then.
  if (!omp_in_parallel()) omp_pause_resource_all(omp_pause_hard);
}

const bool g_fork_handler = [] {
  pthread_atfork(release_pool_before_fork, nullptr, nullptr);
  return true;
}();

}  // namespace
}  // namespace oar::phi
