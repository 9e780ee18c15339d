// A reshard transfer (one step along one mesh axis) and the planner that lists the steps
// from one layout to another: eager reshard (reshard.cc) runs them, DistModel's tracer
// records them as dist.* ops, and the dist-reshard pass inserts them into a global program
// (Note [Reshard], Note [Static auto-parallel passes] in docs/notes/distributed.md). No
// communication here.
#pragma once

#include <cstdint>
#include <vector>

#include "distributed/mesh/placement.h"

namespace oar::dist {

/// One transfer: what a dist.* transfer op does on this process's local value.
struct Transfer {
  enum class Kind { kAllReduce, kAllGather, kReduceScatter, kAllToAll, kShardSlice, kPartialInit, kSendRecv };
  Kind kind = Kind::kAllReduce;
  std::vector<int64_t> global_shape;
  ProcessMesh mesh;  // the mesh whose axis `axis` the transfer runs along (source mesh for kSendRecv)
  int axis = 0;
  ReduceType reduce = ReduceType::kRedSum;
  int64_t dim = -1;     // the split dim (gather, slice, reduce-scatter; from-dim of all-to-all)
  int64_t to_dim = -1;  // all-to-all's target dim
  // kSendRecv: the source's placements, the target mesh and placements.
  Placements from, to;
  ProcessMesh to_mesh;
};

/// Negative Shard dims counted from the end made non-negative for a tensor of rank `rank`.
Placements normalized(const Placements& p, int64_t rank);

/// The transfers that turn a value laid out as `from` on `mesh` into `to` on the same mesh,
/// one mesh axis at a time (Note [Reshard]): pending reductions first (p->s when the target
/// dim is split by no other axis, else p->r), then splits that change (s->s when the target
/// dim is free, else s->r), then from Replicate to the target (r->s, r->p). Empty when the
/// layouts are equal.
std::vector<Transfer> plan_reshard(const std::vector<int64_t>& global_shape, const ProcessMesh& mesh,
                                   const Placements& from, const Placements& to);

}  // namespace oar::dist
