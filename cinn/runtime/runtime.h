// The fusion compiler's runtime (Note [Compile cache] in docs/notes/cinn.md): compiles a
// cinn.fusion into a kernel step the executor runs (kernel.compiled_kernel), through a
// compile cache in memory and on disk.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "cinn/schedule/loop_ir.h"

namespace oar::pir {
class Operation;
}

namespace oar::cinn {

struct CacheStats {
  int64_t compiles = 0;     // groups compiled by LLVM (cold)
  int64_t memory_hits = 0;  // groups whose kernel this process already had
  int64_t disk_hits = 0;    // groups loaded from the disk cache
  int64_t disk_writes = 0;
  int64_t corrupt = 0;         // disk entries rejected (and rebuilt)
  int64_t fallbacks = 0;       // groups that failed to compile and run unfused
  int64_t kernels = 0;         // distinct kernels loaded in this process
  int64_t accuracy_checks = 0;    // kernel runs compared with the unfused ops
  int64_t accuracy_failures = 0;  // ... whose outputs differed
  double compile_seconds = 0;  // LLVM time of the cold compiles
  double load_seconds = 0;     // time of the disk-cache loads
};

/// Compiles (or finds) the kernel of `fusion`; returns the kernel step's name
/// (registered with dispatch::register_kernel_step). Throws when it cannot compile.
std::string compile_group(const pir::Operation* fusion);
CacheStats cache_stats();
void reset_cache_stats();
/// The disk cache folder in use ("" when disk caching is off or unwritable).
std::string cache_dir();
/// Forgets the in-memory map from keys to kernels (loaded code stays mapped), so the
/// next compile of a group reads the disk cache: tests of the disk path in one process.
void forget_memory_cache();
/// Every kernel this process compiled or loaded, as (kernel name, loop kernel): the CUDA
/// C generator's tests compile each with NVRTC (cinn/codegen/cuda_codegen.h).
std::vector<std::pair<std::string, LoopKernel>> loaded_kernels();

}  // namespace oar::cinn
