// How the kernel step combines rows after a group's kernel ran over them: a column
// reduction's blocks of rows (Note [Column reductions]) and a channel reduction's row sums
// (Note [Channel reductions] in docs/notes/cinn.md). Both are independent of the thread
// count and the schedule. And the flags word the kernel takes after its buffers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "cinn/codegen/codegen.h"
#include "cinn/schedule/loop_ir.h"
#include "paddle_core/tensor/dense_tensor.h"

namespace oar::cinn {

/// Runs `fn` (kernel `k`'s) over the rows in blocks, each block accumulating the column
/// reductions `col_outs` (outputs after k's inputs in `bufs`) into its own partial row, then
/// combines the partial rows in block order into `outs`. `outer` > 1: a reduction over
/// middle axes, `outer` runs of rows each combined into its own output row.
void run_column_sums(KernelFn fn, int64_t rows, int64_t cols, int64_t outer, const LoopKernel& k,
                     const std::vector<size_t>& col_outs, const std::vector<std::string>& col_ops,
                     const std::vector<void*>& bufs, std::vector<DenseTensor>& outs);

/// The cost parallel_for is given for `k` over rows x cols, in the pool's units (the
/// calibration's float adds; Note [Fused kernels on the pool]): the bytes it streams
/// and its arithmetic per element, so that a kernel worth waking a worker for wakes one.
int64_t kernel_cost(const LoopKernel& k, int64_t rows, int64_t cols);

/// The flags word after a call's buffers (codegen.h): bit 0, write the full outputs with
/// non-temporal stores (Note [Streaming stores]) when together they exceed
/// FLAGS_cinn_nontemporal_store_mb and none is written into an input (`in_place`: the loop
/// has just read those lines; measured slower streamed).
void* kernel_flags(const LoopKernel& k, int64_t rows, int64_t cols, bool in_place);

/// Output `o` of `k` is a channel reduction: adds the kernel's `rows` row sums at
/// `row_sums` into `out` per kept index, in row order (a mean divides by the count).
void fold_channel_rows(const void* row_sums, int64_t rows, int64_t cols, const LoopKernel& k, size_t o,
                       DenseTensor& out);

}  // namespace oar::cinn
