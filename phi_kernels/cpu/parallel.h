// parallel_for: splits [0, n) into one contiguous chunk per thread, but only when the
// work is large enough. Small ops never enter an OpenMP region: even a region that
// ends up single-threaded costs a team setup and futex traffic (~0.5 us), more than
// a tiny kernel itself.
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstdint>

namespace oar::phi {

/// Below this many elements a kernel runs on the calling thread.
constexpr int64_t kParallelGrain = 32768;

/// Calls body(begin, end) on disjoint chunks covering [0, n); `cost` is the element
/// count that decides whether threads are worth waking (defaults to n).
template <typename Body>
void parallel_for(int64_t n, Body&& body, int64_t cost = -1) {
  if (n <= 0) return;
  if (cost < 0) cost = n;
  if (cost < kParallelGrain || n == 1 || omp_in_parallel() || omp_get_max_threads() == 1) {
    body(int64_t{0}, n);
    return;
  }
#pragma omp parallel
  {
    const int64_t nt = omp_get_num_threads(), t = omp_get_thread_num();
    const int64_t chunk = (n + nt - 1) / nt;
    const int64_t b = t * chunk, e = std::min(n, b + chunk);
    if (b < e) body(b, e);
  }
}

}  // namespace oar::phi
