// The GPU schedule of a loop kernel ("The CUDA code generator" in docs/notes/cinn.md):
// how the rows and columns of the loop space map onto CUDA threads, and the reduction
// strategy. The loop IR (loop_ir.h) is the same one the CPU generator reads; only the
// mapping differs:
//   kElementwise  no reduction: a grid-stride loop over the R * C elements;
//   kWarpPerRow   reductions over a short static row (C <= 256): one warp per row,
//                 8 rows per block, the reductions by warp shuffles only;
//   kBlockPerRow  otherwise (long or dynamic rows): one block per row (grid-stride over
//                 the rows), each thread a strided slice of the columns, reductions by
//                 warp shuffles then shared memory across the warps.
//   kColumns      no row reduction but column reductions (bias gradients; not over
//                 middle axes): each thread owns V columns and sums them over a group of
//                 rows in registers, then adds (or compares) into the output once per
//                 group (Note [CUDA column reductions]).
#pragma once

#include <cstdint>
#include <vector>

#include "cinn/schedule/loop_ir.h"

namespace oar::cinn {

struct GpuSchedule {
  enum Strategy : uint8_t { kElementwise, kWarpPerRow, kBlockPerRow, kColumns };
  Strategy strategy = kElementwise;
  int block = 256;         // threads per block
  int rows_per_block = 1;  // kWarpPerRow: block / 32
  int vec = 4;             // elements per vector access (2 for float64; Note [CUDA vector accesses])
  bool columns = false;    // column reductions combined per thread (Note [CUDA column reductions])
  bool vector_atomics = false;  // every column reduction a float32 sum or mean: float4 atomics
  const char* name() const;
};

/// Whether the CUDA C adds V columns of column reduction `n` at once with a float4 atomic
/// (sm_90+): float32 sums and means (Note [CUDA column reductions]).
bool float4_column_atomic(const LoopKernel& k, const Node& n);

/// The schedule the CUDA generator uses for `k` (chosen from its reductions and the
/// static column count, when there is one).
GpuSchedule gpu_schedule(const LoopKernel& k);

/// The launch a CUDA runtime would use for `rows` x `cols` on a device with `sms`
/// multiprocessors: a grid of at most 32 blocks per multiprocessor (the kernels loop over
/// the rest; measured on an H200, Note [CUDA kernels on a GPU]: 8 per multiprocessor,
/// which is full occupancy at 256 threads, left the row kernels' tails idle and ran the
/// elementwise ones 7-12% slower). No launcher exists yet (no CUDA backend); this is what
/// it will call.
struct LaunchDims {
  int64_t grid = 1;
  int block = 256;
};
LaunchDims gpu_launch_dims(const GpuSchedule& s, int64_t rows, int64_t cols, int sms = 132);

/// What a launcher writes into each output before the kernel runs: zeros for column and
/// channel sums and means (the kernel adds into them), -inf / +inf for column max / min
/// (it compares into them), nothing for the outputs it stores.
enum class GpuOutputInit : uint8_t { kNone, kZero, kMinusInf, kPlusInf };
std::vector<GpuOutputInit> gpu_output_init(const LoopKernel& k);
const char* gpu_output_init_name(GpuOutputInit i);  // "none", "zero", "-inf", "inf"

}  // namespace oar::cinn
