// The parallel grain of memcpy-bound kernels (Note [Copy grain], docs/notes/copy_grain.md).
#pragma once

#include <cstdint>

#include "phi_kernels/cpu/parallel.h"

namespace oar::phi {

/// Below this many bytes moved, a memcpy-bound kernel (concat, split, stack, index_select's
/// rows) runs on the calling thread: waking a sleeping worker costs about as much as
/// copying this much.
constexpr int64_t kCopyParallelBytes = int64_t{1} << 20;

/// The `cost` argument of parallel_for for a loop that moves `bytes` with memcpy.
constexpr int64_t copy_cost(int64_t bytes) { return bytes / (kCopyParallelBytes / kParallelGrain); }

}  // namespace oar::phi
