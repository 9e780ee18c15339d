// The reshard planner (one mesh axis at a time), the mesh groups, and reshard's autograd
// node. Note [Reshard] in docs/notes/distributed.md.
#include "distributed/reshard/reshard.h"

#include <cstdlib>
#include <functional>
#include <map>
#include <mutex>

#include "distributed/reshard/local_copy.h"
#include "distributed/static/collective_ops.h"
#include "paddle_core/autograd/grad_mode.h"
#include "paddle_core/autograd/node.h"
#include "paddle_core/base/errors.h"
#include "paddle_core/dispatch/dispatch.h"
#include "paddle_core/dispatch/trace.h"

namespace oar::dist {
namespace {

struct Comm {
  std::mutex mu;
  bool set = false;
  CommContext ctx;
  std::map<std::vector<int64_t>, std::shared_ptr<ProcessGroup>> groups;
};
Comm& comm() {
  static Comm c;
  return c;
}

/// The gradient's layout for a tensor laid out as `p`: Partial axes become Replicate
/// (each piece's gradient is the whole gradient).
Placements grad_placements(const Placements& p) {
  Placements out = p;
  for (Placement& q : out) {
    if (q.is_partial()) q = Placement::replicate();
  }
  return out;
}

/// Reshard's backward: the gradient (on `out_mesh`, the forward's target) goes back to the
/// input's mesh and placements.
class ReshardGradNode : public GradNode {
 public:
  ReshardGradNode(ProcessMesh out_mesh, Placements out, std::vector<int64_t> global_shape, ProcessMesh mesh,
                  Placements to)
      : out_mesh_(std::move(out_mesh)),
        out_(std::move(out)),
        global_shape_(std::move(global_shape)),
        mesh_(std::move(mesh)),
        to_(std::move(to)) {}
  std::vector<Tensor> apply(std::vector<Tensor>& grads) override {
    if (!grads[0].defined()) return {Tensor()};
    Tensor g = grads[0];
    if (!dist_meta(g)) {
      // An ordinary gradient is the whole value; on a process outside the output's mesh
      // (a pipeline stage that only takes part in the transfer back) it is an empty one.
      g = out_mesh_.contains(current_rank()) ? as_replicated(g, out_mesh_)
                                             : make_dist(g.dense(), out_mesh_, grad_placements(out_), global_shape_);
    }
    return {reshard(g, mesh_, to_)};
  }
  const char* name() const override { return "ReshardGrad"; }

 private:
  ProcessMesh out_mesh_;
  Placements out_;
  std::vector<int64_t> global_shape_;
  ProcessMesh mesh_;
  Placements to_;
};

}  // namespace

void set_comm_context(CommContext ctx) {
  Comm& c = comm();
  std::lock_guard<std::mutex> lock(c.mu);
  c.ctx = std::move(ctx);
  c.set = true;
  c.groups.clear();
}

void reset_comm_context() {
  Comm& c = comm();
  std::lock_guard<std::mutex> lock(c.mu);
  for (auto& [ranks, g] : c.groups) {
    if (g != c.ctx.world) g->shutdown();
  }
  c.groups.clear();
  c.ctx = CommContext();
  c.set = false;
}

int current_rank() {
  Comm& c = comm();
  std::lock_guard<std::mutex> lock(c.mu);
  if (c.set) return c.ctx.rank;
  const char* env = std::getenv("PADDLE_TRAINER_ID");
  return env != nullptr ? std::atoi(env) : 0;
}

ProcessGroup* group_of(const std::vector<int64_t>& ranks, const char* what) {
  if (ranks.size() <= 1) return nullptr;
  Comm& c = comm();
  std::lock_guard<std::mutex> lock(c.mu);
  OAR_ENFORCE(c.set && c.ctx.store != nullptr, PreconditionNotMet, what, ": a transfer between processes ",
              "needs oar.distributed.init_parallel_env() first (this process is not part of a job)");
  auto it = c.groups.find(ranks);
  if (it != c.groups.end()) return it->second.get();
  std::vector<int> members(ranks.begin(), ranks.end());
  std::shared_ptr<ProcessGroup> g;
  if (c.ctx.world && c.ctx.world->ranks() == members) {
    g = c.ctx.world;
  } else {
    GroupInfo info;
    info.ranks = members;
    info.rank = -1;
    std::string name = "mesh";
    for (size_t i = 0; i < members.size(); ++i) {
      name += "_" + std::to_string(members[i]);
      if (members[i] == c.ctx.rank) info.rank = static_cast<int>(i);
    }
    OAR_ENFORCE(info.rank >= 0, InvalidArgument, what, ": rank ", c.ctx.rank, " is not in the group ", name);
    for (int r : members) {
      OAR_ENFORCE(!c.ctx.world || r < c.ctx.world->size(), InvalidArgument, what, ": mesh process ", r,
                  " is outside the job's ranks [0, ", c.ctx.world ? c.ctx.world->size() : 1, ")");
    }
    info.name = name;
    info.timeout = c.ctx.timeout;
    info.debug_check = c.ctx.debug;
    g = create_process_group("gloo", info, c.ctx.store, c.ctx.hostname);
  }
  c.groups[ranks] = g;
  return g.get();
}

namespace {
// While reshard() records a program (Note [DistModel]), each transfer it runs is reported
// here, so the rank's program gets one dist.* op per transfer.
thread_local std::function<void(const Transfer&, const DenseTensor&)>* t_observer = nullptr;

DenseTensor transfer(const Transfer& t, const DenseTensor& x) {
  DenseTensor y = run_transfer(t, x);
  if (t_observer != nullptr) (*t_observer)(t, y);
  return y;
}
}  // namespace

DenseTensor reshard_local(const DenseTensor& x_in, const std::vector<int64_t>& global_shape, const ProcessMesh& mesh,
                          const Placements& from_in, const Placements& to_in) {
  const int64_t rank = static_cast<int64_t>(global_shape.size());
  Placements cur = normalized(from_in, rank), to = normalized(to_in, rank);
  const int me = current_rank();
  if (!mesh.contains(me)) return x_in;  // outside the mesh: holds nothing, moves nothing
  std::vector<int64_t> coord = mesh.coord(me);
  int64_t numel = 1;
  for (int64_t d : global_shape) numel *= d;
  if (numel == 0) {  // nothing to move: every process just takes its (empty) shape
    return local::zeros_like_dims(x_in, local_shape(global_shape, to_dist_attr(mesh, to, rank), coord));
  }
  DenseTensor x = x_in.is_contiguous() ? x_in : contiguous(x_in);
  for (const Transfer& t : plan_reshard(global_shape, mesh, cur, to)) x = transfer(t, x);
  return x;
}

Tensor make_dist(const DenseTensor& local, const ProcessMesh& mesh, const Placements& placements,
                 std::vector<int64_t> global_shape) {
  Tensor out(local);
  auto meta = std::make_unique<DistTensorMeta>();
  meta->mesh = mesh;
  meta->placements = placements;
  meta->set_global_shape(std::move(global_shape));
  out.impl()->dist = std::move(meta);
  return out;
}

Tensor as_replicated(const Tensor& t, const ProcessMesh& mesh) {
  Tensor out(std::make_shared<TensorImpl>(t.dense()));
  dispatch::note_alias(out, t);
  auto meta = std::make_unique<DistTensorMeta>();
  meta->mesh = mesh;
  meta->placements.assign(mesh.ndim(), Placement::replicate());
  meta->set_global_shape(t.dense().dims().vec());
  out.impl()->dist = std::move(meta);
  return out;
}

Tensor reshard(const Tensor& x, const ProcessMesh& mesh, const Placements& to_in) {
  const DistTensorMeta* m = dist_meta(x);
  OAR_ENFORCE(m != nullptr, InvalidArgument, "reshard: the input is not a dist tensor (use shard_tensor)");
  const int64_t rank = static_cast<int64_t>(m->global_shape.size());
  to_dist_attr(mesh, to_in, rank);  // validates: count, dims in range, no co-sharding
  Placements to = normalized(to_in, rank);
  const bool cross = m->mesh != mesh;
  if (!cross && normalized(m->placements, rank) == to) return x;
  DenseTensor local;
  // Recording a program (Note [DistModel]): each transfer becomes a dist.* op of the rank's
  // program, reading the previous one's value; the cross-mesh move is one dist.send_recv.
  Tensor cur = x;
  std::function<void(const Transfer&, const DenseTensor&)> record = [&](const Transfer& t, const DenseTensor& y) {
    Tensor next(y);
    record_transfer(t, cur, next);
    cur = next;
  };
  const bool tracing = tracing_program();
  if (cross) {
    Transfer t;
    t.kind = Transfer::Kind::kSendRecv;
    t.global_shape = m->global_shape;
    t.mesh = m->mesh;
    t.from = m->placements;
    t.to_mesh = mesh;
    t.to = to;
    local = run_transfer(t, x.dense());
    if (tracing) record(t, local);
  } else {
    auto* prev = t_observer;
    t_observer = tracing ? &record : nullptr;
    try {
      local = reshard_local(x.dense(), m->global_shape, mesh, m->placements, to);
    } catch (...) {
      t_observer = prev;
      throw;
    }
    t_observer = prev;
  }
  Tensor out = make_dist(local, mesh, to, m->global_shape);
  // The result is the last transfer's value (or x's, when none moved anything); a value of
  // another shape made without a transfer (an empty one) is a constant of the program.
  if (tracing && (cur.impl() != x.impl() || local.dims() == x.dense().dims())) {
    if (auto* tracer = trace::active()) tracer->record_alias(out, cur);
  }
  if (autograd::grad_enabled() && x.requires_grad()) {
    auto node = std::make_shared<ReshardGradNode>(mesh, to, m->global_shape, m->mesh, grad_placements(m->placements));
    node->next_edges = {autograd::gradient_edge(x)};
    node->output_meta = {OutputMeta{Dims(m->global_shape), x.dtype(), x.place()}};
    autograd::set_history(out, node, 0);
  }
  return out;
}

}  // namespace oar::dist
