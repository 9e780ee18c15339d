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
  }
  return "?";
}

GpuSchedule gpu_schedule(const LoopKernel& k) {
  GpuSchedule s;
  bool reduce = false;
  for (const Node& n : k.nodes) reduce |= n.kind == Node::kReduce && n.cls == VClass::kRow;  // column sums: atomics
  if (!reduce) return s;
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
  if (s.strategy == GpuSchedule::kElementwise)
    want = (rows * cols + s.block - 1) / s.block;
  else
    want = (rows + s.rows_per_block - 1) / s.rows_per_block;
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
