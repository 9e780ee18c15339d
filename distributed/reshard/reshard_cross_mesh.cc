// Cross-mesh reshard: a dist tensor on one mesh becomes one on another (pipeline stages on
// sub-meshes). Pending reductions are done on the source mesh (reduce-scatter where a dim
// allows); then each target process
// receives, from one holder of each source piece that overlaps the region it needs, just
// that overlap (a local copy when it holds the piece itself), and lays out Partial target
// axes locally. Every rank walks the same list of transfers in the same order, so the
// pairwise sends and receives cannot deadlock. Note [Cross-mesh reshard].
#include "distributed/reshard/local_copy.h"
#include "distributed/reshard/reshard.h"

#include <algorithm>
#include <atomic>
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
std::atomic<int64_t> g_sent_bytes{0};

// A region of the global tensor: offset and shape per dim.
struct Box {
  std::vector<int64_t> offset, shape;
  bool operator==(const Box& o) const { return offset == o.offset && shape == o.shape; }
};

// a ∩ b into *out; false when it holds no element.
bool intersect(const Box& a, const Box& b, Box* out) {
  out->offset.clear();
  out->shape.clear();
  for (size_t i = 0; i < a.offset.size(); ++i) {
    const int64_t lo = std::max(a.offset[i], b.offset[i]);
    const int64_t hi = std::min(a.offset[i] + a.shape[i], b.offset[i] + b.shape[i]);
    if (hi <= lo) return false;
    out->offset.push_back(lo);
    out->shape.push_back(hi - lo);
  }
  return true;
}

std::vector<int64_t> minus(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  std::vector<int64_t> r(a.size());
  for (size_t i = 0; i < a.size(); ++i) r[i] = a[i] - b[i];
  return r;
}
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

int64_t cross_mesh_sent_bytes() { return g_sent_bytes.load(); }

DenseTensor reshard_cross_mesh_local(const DenseTensor& x, const std::vector<int64_t>& global_shape,
                                     const ProcessMesh& from, const Placements& from_p, const ProcessMesh& to,
                                     const Placements& to_p) {
  const int me = current_rank();
  const auto rank = static_cast<int64_t>(global_shape.size());
  // Pending reductions first, on the source mesh (its own collective); splits stay. A
  // Partial axis is reduce-scattered along a dim no other source axis splits, one the target
  // splits first (smaller pieces to send), else all-reduced (no dim long enough).
  Placements src_p = from_p, dst_p = to_p;
  auto norm = [rank](int64_t d) { return d < 0 ? d + rank : d; };
  std::vector<bool> split(static_cast<size_t>(rank), false);
  for (const Placement& q : from_p)
    if (q.is_shard()) split[static_cast<size_t>(norm(q.dim))] = true;
  std::vector<int64_t> prefer;
  for (const Placement& q : to_p)
    if (q.is_shard()) prefer.push_back(norm(q.dim));
  for (int64_t d = 0; d < rank; ++d) prefer.push_back(d);
  bool partial = false;
  for (size_t a = 0; a < src_p.size(); ++a) {
    if (!src_p[a].is_partial()) continue;
    partial = true;
    src_p[a] = Placement::replicate();
    for (int64_t d : prefer) {
      if (!split[static_cast<size_t>(d)] && global_shape[static_cast<size_t>(d)] >= from.shape()[a]) {
        src_p[a] = Placement::shard(d);
        split[static_cast<size_t>(d)] = true;
        break;
      }
    }
  }
  for (Placement& q : dst_p)
    if (q.is_partial()) q = Placement::replicate();
  DenseTensor held = x;
  if (partial && from.contains(me)) held = reshard_local(x, global_shape, from, from_p, src_p);
  const TensorDistAttr src_attr = to_dist_attr(from, src_p, rank), dst_attr = to_dist_attr(to, dst_p, rank);

  // The distinct pieces the source holds, each with the processes holding it (replicas).
  std::vector<Box> pieces;
  std::vector<std::vector<int64_t>> holders;
  for (int64_t s : from.process_ids()) {
    const std::vector<int64_t> c = from.coord(s);
    Box b{local_offset(global_shape, src_attr, c), local_shape(global_shape, src_attr, c)};
    size_t i = 0;
    while (i < pieces.size() && !(pieces[i] == b)) ++i;
    if (i == pieces.size()) {
      pieces.push_back(b);
      holders.emplace_back();
    }
    holders[i].push_back(s);
  }
  DenseTensor got;
  if (to.contains(me)) got = local::zeros_like_dims(x, local_shape(global_shape, dst_attr, to.coord(me)));
  // Every rank walks the same list (targets in mesh order, then pieces in order), so the
  // pairwise sends and receives match and cannot wait in a cycle.
  const auto& dst_ids = to.process_ids();
  for (size_t ti = 0; ti < dst_ids.size(); ++ti) {
    const int64_t t = dst_ids[ti];
    const std::vector<int64_t> tc = to.coord(t);
    bool identity = false;  // along a Partial target axis, coordinates > 0 hold the identity
    for (size_t a = 0; a < to_p.size(); ++a) identity = identity || (to_p[a].is_partial() && tc[a] != 0);
    if (identity) continue;
    const Box need{local_offset(global_shape, dst_attr, tc), local_shape(global_shape, dst_attr, tc)};
    for (size_t pi = 0; pi < pieces.size(); ++pi) {
      Box part;
      if (!intersect(need, pieces[pi], &part)) continue;
      const std::vector<int64_t>& hs = holders[pi];
      const bool local = std::find(hs.begin(), hs.end(), t) != hs.end();
      const int64_t src = local ? t : hs[ti % hs.size()];
      if (src != me && t != me) continue;
      const std::vector<int64_t> at_src = minus(part.offset, pieces[pi].offset),
                                 at_dst = minus(part.offset, need.offset);
      if (src == t) {
        local::copy_box(held, at_src, &got, at_dst, part.shape);
        continue;
      }
      std::vector<int64_t> pair = {std::min(src, t), std::max(src, t)};
      ProcessGroup* g = group_of(pair, "reshard");
      DenseTensor buf = local::zeros_like_dims(x, part.shape);
      if (src == me) {
        const int peer = pair[0] == t ? 0 : 1;
        local::copy_box(held, at_src, &buf, std::vector<int64_t>(part.shape.size(), 0), part.shape);
        g_sent_bytes += buf.numel() * static_cast<int64_t>(size_of(buf.dtype()));
        bool defer = false;
        {
          std::lock_guard<std::mutex> lock(g_deferred.mu);
          defer = g_deferred.on;
        }
        std::shared_ptr<Task> task = g->send(buf, peer, !defer);  // sync: waits for the receiver
        if (defer) {
          std::lock_guard<std::mutex> lock(g_deferred.mu);
          g_deferred.pending.emplace_back(std::move(task), buf);
        }
      } else {
        const int peer = pair[0] == src ? 0 : 1;
        g->recv(buf, peer)->wait();
        local::copy_box(buf, std::vector<int64_t>(part.shape.size(), 0), &got, at_dst, part.shape);
      }
    }
  }
  if (!to.contains(me)) {  // outside the target mesh: holds nothing
    return local::zeros_like_dims(x, std::vector<int64_t>(global_shape.size(), 0));
  }
  return reshard_local(got, global_shape, to, dst_p, to_p);  // Partial targets: local r->p
}

}  // namespace oar::dist
