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
  int64_t shape_fallbacks = 0;    // kernel calls whose inputs broke an assumed equality of
                                  // dynamic dims and that no recompiled kernel could serve:
                                  // run by the group's unfused ops instead
  int64_t recompiles = 0;         // shape classes a group was lowered again for (Note
                                  // [Recompilation]): their kernels count in compiles/hits
  int64_t class_hits = 0;         // kernel calls served by an earlier recompilation
  int64_t compile_threads = 0;    // most threads one cinn_lower run compiled on
  double compile_seconds = 0;     // LLVM time of the cold compiles (summed over threads)
  double load_seconds = 0;     // time of the disk-cache loads
};

/// A group on its way to a kernel, in three steps so that a program's groups compile in
/// parallel (FLAGS_cinn_compile_thread_num): prepare (lower, key; on the IR's thread),
/// build_object (disk cache or LLVM; any thread), install (load, register; IR's thread).
struct PreparedGroup {
  LoopKernel kernel;
  std::string key, name;
  std::string sym_shapes, sym_assumed;  // the cinn_shape stage's signature and assumptions
  std::string object;                   // the relocatable object (empty: not built)
  bool in_memory = false;               // this process has the kernel already
  bool from_disk = false;
  double seconds = 0;  // build time (compile or disk read)
};
PreparedGroup prepare_group(const pir::Operation* fusion);
void build_object(PreparedGroup& g);
std::string install_group(const pir::Operation* fusion, PreparedGroup& g);
/// Records that one cinn_lower run compiled on `threads` threads (the counter tests read).
void note_parallel_compile(int threads);

/// Compiles (or finds) the kernel of `fusion`; returns the kernel step's name
/// (registered with dispatch::register_kernel_step). Throws when it cannot compile.
std::string compile_group(const pir::Operation* fusion);
CacheStats cache_stats();
/// The accuracy check's comparison of a kernel's value with the unfused ops' (float32:
/// rtol 1e-4, atol 1e-5): NaN only against NaN, an infinity only against itself.
bool accuracy_differs(double got, double want, double rtol, double atol);
void reset_cache_stats();
/// The disk cache folder in use ("" when disk caching is off or unwritable).
std::string cache_dir();
/// Forgets the in-memory map from keys to kernels (loaded code stays mapped), so the
/// next compile of a group reads the disk cache: tests of the disk path in one process.
void forget_memory_cache();
/// Every kernel this process compiled or loaded, as (kernel name, loop kernel): the CUDA
/// C generator's tests compile each with NVRTC (cinn/codegen/cuda_codegen.h).
std::vector<std::pair<std::string, LoopKernel>> loaded_kernels();

/// Kernel-call recording, a test aid: bench/cinn_gpu.py replays the recorded calls of
/// the CINN tests' kernels on a GPU through their CUDA C and compares the outputs. While
/// on, the first call of each kernel whose inputs and outputs take at most `max_bytes`
/// is kept: its rows, cols, inner (rows per kept leading index of a column reduction,
/// else 0), and its inputs before and outputs after the CPU kernel ran.
struct RecordedTensor {
  DataType dtype = DataType::FLOAT32;
  std::vector<int64_t> dims;
  std::string bytes;
};
struct KernelCallRecord {
  std::string name;
  int64_t rows = 0, cols = 0, inner = 0;
  std::vector<RecordedTensor> inputs, outputs;
};
/// Returns the previous setting (on, max_bytes).
std::pair<bool, int64_t> record_kernel_calls(bool on, int64_t max_bytes = int64_t{1} << 20);
/// The calls recorded since the last take (each kernel is recorded once per process).
std::vector<KernelCallRecord> take_kernel_calls();

}  // namespace oar::cinn
