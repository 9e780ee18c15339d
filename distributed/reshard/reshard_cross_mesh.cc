// Cross-mesh reshard: a dist tensor on one mesh becomes one on another (pipeline stages on
// sub-meshes). The source mesh gathers the whole value (a reshard to Replicate on it), the
// i-th process of the target mesh receives it from process i mod |source| of the source
// (a local copy when that is itself), and each target process cuts its own layout from it
// (no communication). Every rank walks the same list of transfers in the same order, so
// the pairwise sends and receives cannot deadlock. Note [Reshard].
#include "distributed/reshard/local_copy.h"
#include "distributed/reshard/reshard.h"

#include <mutex>
#include <utility>
#include <vector>

namespace oar::dist {

namespace {
// Process-wide (the backward may run on another thread than the step that began it).
struct Deferred {
  std::mutex mu;
  bool on = false;
  std::vector<std::pair<std::shared_ptr<Task>, DenseTensor>> pending;  // each send and the data it reads
};
Deferred g_deferred;
}  // namespace

void begin_deferred_sends() {
  std::lock_guard<std::mutex> lock(g_deferred.mu);
  g_deferred.on = true;
}

void end_deferred_sends() {
  std::vector<std::pair<std::shared_ptr<Task>, DenseTensor>> pending;
  {
    std::lock_guard<std::mutex> lock(g_deferred.mu);
    g_deferred.on = false;
    pending.swap(g_deferred.pending);
  }
  for (auto& [task, data] : pending) task->wait();
}

DenseTensor reshard_cross_mesh_local(const DenseTensor& x, const std::vector<int64_t>& global_shape,
                                     const ProcessMesh& from, const Placements& from_p, const ProcessMesh& to,
                                     const Placements& to_p) {
  const int me = current_rank();
  const Placements all_from(from.ndim(), Placement::replicate());
  const Placements all_to(to.ndim(), Placement::replicate());
  DenseTensor whole;
  if (from.contains(me)) whole = reshard_local(x, global_shape, from, from_p, all_from);
  int64_t numel = 1;
  for (int64_t d : global_shape) numel *= d;
  DenseTensor got;
  const auto& src_ids = from.process_ids();
  const auto& dst_ids = to.process_ids();
  for (size_t i = 0; i < dst_ids.size(); ++i) {
    const int64_t dst = dst_ids[i], src = src_ids[i % src_ids.size()];
    if (src != me && dst != me) continue;
    if (src == dst) {
      got = whole;
      continue;
    }
    if (numel == 0) {  // nothing to move
      if (dst == me) got = local::zeros_like_dims(x, global_shape);
      continue;
    }
    std::vector<int64_t> pair = {std::min(src, dst), std::max(src, dst)};
    ProcessGroup* g = group_of(pair, "reshard");
    const int peer = src == me ? (pair[0] == dst ? 0 : 1) : (pair[0] == src ? 0 : 1);
    if (src == me) {
      bool defer = false;
      {
        std::lock_guard<std::mutex> lock(g_deferred.mu);
        defer = g_deferred.on;
      }
      std::shared_ptr<Task> task = g->send(whole, peer, !defer);  // sync: waits for the receiver
      if (defer) {
        std::lock_guard<std::mutex> lock(g_deferred.mu);
        g_deferred.pending.emplace_back(std::move(task), whole);
      }
    } else {
      got = local::zeros_like_dims(x, global_shape);
      g->recv(got, peer)->wait();
    }
  }
  if (!to.contains(me)) {  // outside the target mesh: holds nothing
    return local::zeros_like_dims(x, std::vector<int64_t>(global_shape.size(), 0));
  }
  return reshard_local(got, global_shape, to, all_to, to_p);
}

}  // namespace oar::dist
