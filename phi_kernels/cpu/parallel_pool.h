// Oar's thread pool behind parallel_for: its settings and fork handlers (Note [Thread pool],
// docs/notes/thread_pool.md). Kernels include parallel.h only.
#pragma once

#include <cstdint>

namespace oar::phi {

/// The pool's settings and calibration (Note [Thread pool]): wake_ns (the measured time
/// from waking a sleeping worker to its first chunk; -1 before the first calibration),
/// futex_ns (what the wake's system call costs the caller),
/// wake_grain (cost units below which a sleeping pool is not woken; 0 before the pool
/// starts unless OAR_PARALLEL_WAKE_GRAIN sets it), spin_us (how long a worker stays awake
/// after a region, now), spin_adaptive (false when OAR_PARALLEL_SPIN_US fixes it), workers
/// (started so far).
struct ParallelInfo {
  int64_t wake_ns = 0;
  int64_t futex_ns = 0;
  int64_t wake_grain = 0;
  int64_t spin_us = 0;
  int64_t workers = 0;
  bool wake_grain_from_env = false;
  bool spin_adaptive = true;
  /// Regions so far: run by the caller alone with the workers asleep (alone), and of those
  /// offered to the workers, the ones they ran chunks of in time (paid), took nothing of
  /// (missed), or finished a chunk of after the caller had waited longer than it worked
  /// (late; SpinPolicy in parallel_spin.h).
  int64_t alone = 0, paid = 0, missed = 0, late = 0;
};
ParallelInfo parallel_info();

/// oar.set_num_threads: the thread count of the pool and of the libraries the CPU kernels
/// call (threads.cc).
void set_num_threads(int n);

/// Reads OAR_PARALLEL_SPIN_US and OAR_PARALLEL_WAKE_GRAIN (InvalidArgument naming the
/// variable and its value when one is not a number in range); done once, at import.
void check_parallel_env();

namespace parallel_detail {
/// The pool's fork handlers (Note [Fork safety]; registered by parallel_fork.cc).
void pool_lock_for_fork();
void pool_unlock_in_parent();
void pool_reset_in_child();
}  // namespace parallel_detail

}  // namespace oar::phi
