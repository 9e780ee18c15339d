// parallel_for: splits [0, n) into one contiguous chunk per thread, but only when the
// work is large enough. The chunks run on Oar's own pool (Note [Thread pool],
// docs/notes/thread_pool.md): the caller starts on them at once and does every chunk no
// worker has taken yet, so a worker that wakes late costs the caller nothing but the wake.
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <type_traits>

namespace oar::phi {

/// Below this many elements a kernel runs on the calling thread.
constexpr int64_t kParallelGrain = 32768;

namespace parallel_detail {
using ChunkFn = void (*)(void* body, int64_t begin, int64_t end);
/// Runs fn(body, b, e) on each of parallel_for's chunks of [0, n) (cost >= kParallelGrain):
/// on the pool, or all on the caller when no worker is worth waking; on [0, n) at once
/// inside another region or at one thread.
void run_parallel(int64_t n, int64_t cost, ChunkFn fn, void* body);
}  // namespace parallel_detail

/// Calls body(begin, end) on disjoint chunks covering [0, n); `cost` is the element
/// count that decides whether threads are worth waking (defaults to n). With t threads
/// (omp_get_max_threads()) the chunks are always the same t pieces of ceil(n / t)
/// elements, whichever thread runs them, so a reduction that sums per chunk gives the same
/// bits run to run, whether a worker helped or not (1 thread, or a call from inside another
/// region, runs [0, n) whole). A body may throw: the region finishes its other chunks, then
/// rethrows.
///
/// The body is compiled once, into `chunk`, which the calling thread runs on a small space
/// and the pool on a large one. Called directly on the small path, GCC would inline a
/// second copy of every kernel's loops there; the serial call costs one call instruction
/// (Note [One copy of a loop], docs/notes/cpu_dispatch.md).
template <typename Body>
void parallel_for(int64_t n, Body&& body, int64_t cost = -1) {
  if (n <= 0) return;
  if (cost < 0) cost = n;
  using B = std::remove_reference_t<Body>;
  constexpr parallel_detail::ChunkFn chunk = [](void* b, int64_t lo, int64_t hi) __attribute__((noinline, noclone)) {
    (*static_cast<B*>(b))(lo, hi);
  };
  void* const b = const_cast<void*>(static_cast<const void*>(std::addressof(body)));
  if (cost < kParallelGrain || n == 1) {
    chunk(b, 0, n);
    return;
  }
  parallel_detail::run_parallel(n, cost, chunk, b);
}

/// The length of parallel_for(n, ...)'s chunks when called from this thread: a body that
/// keeps per-chunk results indexes them by begin / parallel_chunk(n) (computed outside).
inline int64_t parallel_chunk(int64_t n) {
  const int64_t t = std::max(1, omp_get_max_threads());
  return std::max<int64_t>(1, (n + t - 1) / t);
}

/// Whether this thread runs inside a parallel region (Oar's pool or an OpenMP team): a
/// library with a global thread count (OpenBLAS) must not be changed from there.
bool in_parallel_region();

}  // namespace oar::phi
