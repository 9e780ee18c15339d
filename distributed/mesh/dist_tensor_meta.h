// What a distributed tensor carries beside its local shard (TensorImpl::dist): the
// mesh, one placement per mesh axis and the global shape.
#pragma once

#include <vector>

#include "distributed/mesh/placement.h"
#include "paddle_core/tensor/tensor.h"

namespace oar::dist {

struct DistTensorMeta : DistMeta {
  ProcessMesh mesh;
  Placements placements;
  std::vector<int64_t> global_shape;
  Dims global_dims;  // the same, for dist_dims() (paddle_core/api/dist_dims.h)
  /// Sets global_shape and global_dims.
  void set_global_shape(std::vector<int64_t> shape) {
    global_dims = Dims(shape);
    global_shape = std::move(shape);
  }
  /// A leaf whose gradient the dist layer reshards to `placements` after accumulation.
  bool grad_hooked = false;
  /// Where that gradient goes instead of `placements` when not empty (ShardingStage2 lays
  /// gradients out split over the sharding axis: a reduce-scatter instead of an all-reduce).
  Placements grad_placements;
};

/// The tensor's dist metadata, nullptr for an ordinary tensor.
inline const DistTensorMeta* dist_meta(const Tensor& t) {
  return t.defined() ? static_cast<const DistTensorMeta*>(t.impl()->dist.get()) : nullptr;
}

}  // namespace oar::dist
