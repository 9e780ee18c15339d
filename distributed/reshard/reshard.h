// Reshard: turns a dist tensor's layout into another on the same mesh, one mesh axis at a
// time, each step one small transfer (reshard_<from>_to_<to>.cc) over the axis's process
// group. See the reshard table in docs/notes/distributed.md (Note [Reshard]).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "distributed/collective/process_group.h"
#include "distributed/mesh/dist_tensor_meta.h"

namespace oar::dist {

class Store;

/// Where this process's collectives for meshes come from: the job's store (to create the
/// group of each mesh axis on first use), its rank and the default group. Set by
/// init_parallel_env; without it the process is rank PADDLE_TRAINER_ID (default 0) of a
/// job of one, and only transfers within one process work.
struct CommContext {
  std::shared_ptr<Store> store;
  std::string hostname = "127.0.0.1";
  std::chrono::milliseconds timeout{std::chrono::seconds(1800)};
  bool debug = false;
  int rank = 0;
  std::shared_ptr<ProcessGroup> world;  // the default group (global ranks 0..n-1)
};
void set_comm_context(CommContext ctx);
/// Forgets the context and every mesh group (destroy_process_group).
void reset_comm_context();
/// This process's global rank.
int current_rank();
/// The group of global `ranks` (sorted as the mesh lists them), created on first use by
/// its members only; nullptr for a group of one. InvalidArgument naming `what` when there
/// is no context to create it from.
ProcessGroup* group_of(const std::vector<int64_t>& ranks, const char* what);

/// One step of a reshard: the layout changes along mesh axis `axis` only.
struct AxisStep {
  std::vector<int64_t> global_shape;
  int64_t k = 1;                  // processes along the axis
  int64_t index = 0;              // this process's coordinate along it
  ProcessGroup* group = nullptr;  // nullptr when k == 1
};

/// The collective's reduce op for a Partial's reduce type (any/all: max/min on bool).
ReduceOp reduce_op_for(ReduceType r);

// The transfers, each on this process's local value (contiguous), returning the new one.
DenseTensor reshard_r_to_s(const DenseTensor& x, const AxisStep& s, int64_t dim);
DenseTensor reshard_s_to_r(const DenseTensor& x, const AxisStep& s, int64_t dim);
DenseTensor reshard_p_to_r(const DenseTensor& x, const AxisStep& s, ReduceType reduce);
DenseTensor reshard_p_to_s(const DenseTensor& x, const AxisStep& s, ReduceType reduce, int64_t dim);
DenseTensor reshard_s_to_s(const DenseTensor& x, const AxisStep& s, int64_t from_dim, int64_t to_dim);
DenseTensor reshard_r_to_p(const DenseTensor& x, const AxisStep& s, ReduceType reduce);

/// The local value of `x` laid out as `to` on `mesh` (no autograd; `x`'s placements `from`).
DenseTensor reshard_local(const DenseTensor& x, const std::vector<int64_t>& global_shape, const ProcessMesh& mesh,
                          const Placements& from, const Placements& to);

/// The local value of `x` (on mesh `from` as `from_p`) moved to mesh `to` as `to_p`
/// (reshard_cross_mesh.cc); ranks outside `to` get an empty value.
/// Pipeline schedules whose stages run in different orders (DistModel's 1F1B, Note
/// [DistModel]): while deferring, the cross-mesh sends of this thread do not wait for
/// their receivers (a stage may send its next activation before receiving the previous
/// gradient); end_deferred_sends waits for them all.
void begin_deferred_sends();
void end_deferred_sends();

/// The bytes this process has sent in cross-mesh transfers (tests check what moved).
int64_t cross_mesh_sent_bytes();

DenseTensor reshard_cross_mesh_local(const DenseTensor& x, const std::vector<int64_t>& global_shape,
                                     const ProcessMesh& from, const Placements& from_p, const ProcessMesh& to,
                                     const Placements& to_p);

/// A dist tensor: `x` (a dist tensor) laid out as `to` on `mesh`, which may be another
/// mesh than x's (cross-mesh). Differentiable: the gradient goes back to `x`'s mesh and
/// placements (Partial ones as Replicate). `x` itself when nothing changes.
Tensor reshard(const Tensor& x, const ProcessMesh& mesh, const Placements& to);
/// A new tensor handle on `local` with the given dist metadata.
Tensor make_dist(const DenseTensor& local, const ProcessMesh& mesh, const Placements& placements,
                 std::vector<int64_t> global_shape);
/// An ordinary tensor as a replicated dist tensor on `mesh` (shares its memory).
Tensor as_replicated(const Tensor& t, const ProcessMesh& mesh);

}  // namespace oar::dist
