#include "cinn/schedule/gpu_schedule.h"

#include <algorithm>

namespace oar::cinn {

const char* GpuSchedule::name() const {
  switch (strategy) {
    case kElementwise:
      return "elementwise";
    case kWarpPerRow:
      return "warp_per_row";
    case kBlockPerRow:
      return "block_per_row";
    case kColumns:
      return "columns";
  }
  return "?";
}

bool float4_column_atomic(const LoopKernel& k, const Node& n) {
  return k.dtype == DataType::FLOAT32 && n.kind == Node::kReduce && n.cls == VClass::kCol &&
         (n.op == "sum" || n.op == "mean");
}

GpuSchedule gpu_schedule(const LoopKernel& k) {
  GpuSchedule s;
  s.vec = k.dtype == DataType::FLOAT64 ? 2 : 4;
  bool reduce = false, column = false, float4 = true;
  for (const Node& n : k.nodes) {
    reduce |= n.kind == Node::kReduce && n.cls == VClass::kRow;
    column |= n.kind == Node::kReduce && n.cls == VClass::kCol;
    if (n.kind == Node::kReduce && n.cls == VClass::kCol) float4 &= float4_column_atomic(k, n);
  }
  s.columns = column && k.col_outer == 0;
  s.vector_atomics = column && float4;
  if (!reduce) {
    if (s.columns) s.strategy = GpuSchedule::kColumns;
    return s;
  }
  const int64_t cols = k.space.empty() ? -1 : k.space.back();
  if (cols >= 0 && cols <= 256) {
    s.strategy = GpuSchedule::kWarpPerRow;  // <= 8 elements per lane: shuffles only
    s.block = 256;
    s.rows_per_block = s.block / 32;
  } else {
    s.strategy = GpuSchedule::kBlockPerRow;
    s.block = cols > 8192 ? 1024 : cols > 0 && cols <= 1024 ? 128 : 256;
  }
  return s;
}

LaunchDims gpu_launch_dims(const GpuSchedule& s, int64_t rows, int64_t cols, int sms) {
  LaunchDims d;
  d.block = s.block;
  const int64_t cap = std::max<int64_t>(1, int64_t{32} * sms);
  int64_t want = 1;
  if (s.strategy == GpuSchedule::kElementwise) {
    want = (rows * cols + s.block - 1) / s.block;
  } else if (s.strategy == GpuSchedule::kColumns) {
    // Column blocks of block * vec columns times row groups of >= 64 rows (32 with float4
    // atomics): each thread adds into the output once per group (Note [CUDA column
    // reductions]; on the H200 a [4096, 4096] column sum took 0.028 ms with 64-row groups,
    // 0.043 with 16-row ones: the adds into one address queue up. With float4 atomics
    // 64-row groups took 0.029 ms, 32-row ones 0.030; with a stored output beside the
    // sum, 0.060 and 0.052).
    const int64_t span = int64_t{s.block} * s.vec;
    const int64_t cblocks = std::max<int64_t>(1, (cols + span - 1) / span);
    const int64_t group_rows = s.vector_atomics ? 32 : 64;
    const int64_t groups =
        std::clamp<int64_t>((rows + group_rows - 1) / group_rows, 1, std::max<int64_t>(1, cap / cblocks));
    want = cblocks * groups;
  } else if (s.columns) {
    // A row kernel with column reductions: its resident body adds each thread's columns
    // once per block, so a block takes >= 16 rows (one row per block made it add per row:
    // 0.41 ms against 0.061 on the H200's [4096, 4096] LayerNorm backward sums).
    want = (rows + 16 * s.rows_per_block - 1) / (16 * s.rows_per_block);
  } else {
    want = (rows + s.rows_per_block - 1) / s.rows_per_block;
  }
  d.grid = std::clamp<int64_t>(want, 1, cap);
  return d;
}

std::vector<GpuOutputInit> gpu_output_init(const LoopKernel& k) {
  std::vector<GpuOutputInit> init(k.outputs.size(), GpuOutputInit::kNone);
  for (size_t o = 0; o < k.outputs.size(); ++o) {
    const Node& n = k.nodes[k.outputs[o]];
    if (o < k.chan.size() && !k.chan[o].keep.empty())
      init[o] = GpuOutputInit::kZero;  // Note [Channel reductions]
    else if (n.cls == VClass::kCol)    // Note [Column reductions]
      init[o] = n.op == "max"   ? GpuOutputInit::kMinusInf
                : n.op == "min" ? GpuOutputInit::kPlusInf
                                : GpuOutputInit::kZero;
  }
  return init;
}

const char* gpu_output_init_name(GpuOutputInit i) {
  switch (i) {
    case GpuOutputInit::kNone:
      return "none";
    case GpuOutputInit::kZero:
      return "zero";
    case GpuOutputInit::kMinusInf:
      return "-inf";
    case GpuOutputInit::kPlusInf:
      return "inf";
  }
  return "?";
}

}  // namespace oar::cinn
