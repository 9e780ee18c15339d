// The reshard planner: the transfers from one layout to another, one mesh axis at a time.
// Note [Reshard] in docs/notes/distributed.md.
#include "distributed/reshard/transfer.h"

namespace oar::dist {
namespace {

/// Whether tensor dim `dim` is split by a mesh axis other than `axis` in `p`.
bool split_elsewhere(const Placements& p, int axis, int64_t dim) {
  for (int i = 0; i < static_cast<int>(p.size()); ++i) {
    if (i != axis && p[i].is_shard() && p[i].dim == dim) return true;
  }
  return false;
}

}  // namespace

Placements normalized(const Placements& p, int64_t rank) {
  Placements out = p;
  for (Placement& q : out) {
    if (q.is_shard() && q.dim < 0) q.dim += rank;
  }
  return out;
}

std::vector<Transfer> plan_reshard(const std::vector<int64_t>& global_shape, const ProcessMesh& mesh,
                                   const Placements& from, const Placements& to_in) {
  const int64_t rank = static_cast<int64_t>(global_shape.size());
  Placements cur = normalized(from, rank), to = normalized(to_in, rank);
  std::vector<Transfer> out;
  using Kind = Transfer::Kind;
  auto step = [&](Kind kind, int axis) {
    Transfer t;
    t.kind = kind;
    t.global_shape = global_shape;
    t.mesh = mesh;
    t.axis = axis;
    return t;
  };
  const int n = mesh.ndim();
  // 1. Pending reductions first (they shrink nothing but must happen before a gather).
  for (int a = 0; a < n; ++a) {
    if (!cur[a].is_partial() || cur[a] == to[a]) continue;
    Transfer t = step(Kind::kAllReduce, a);
    t.reduce = cur[a].reduce;
    if (to[a].is_shard() && !split_elsewhere(cur, a, to[a].dim)) {  // p->s
      t.kind = Kind::kReduceScatter;
      t.dim = to[a].dim;
      cur[a] = to[a];
    } else {  // p->r
      cur[a] = Placement::replicate();
    }
    out.push_back(t);
  }
  // 2. Splits that change: to another dim (all-to-all) or gathered.
  for (int a = 0; a < n; ++a) {
    if (!cur[a].is_shard() || cur[a] == to[a]) continue;
    Transfer t = step(Kind::kAllGather, a);
    t.dim = cur[a].dim;
    if (to[a].is_shard() && !split_elsewhere(cur, a, to[a].dim)) {  // s->s
      t.kind = Kind::kAllToAll;
      t.to_dim = to[a].dim;
      cur[a] = to[a];
    } else {  // s->r
      cur[a] = Placement::replicate();
    }
    out.push_back(t);
  }
  // 3. From Replicate to what is asked (no communication).
  for (int a = 0; a < n; ++a) {
    if (cur[a] == to[a]) continue;
    if (to[a].is_shard()) {
      Transfer t = step(Kind::kShardSlice, a);
      t.dim = to[a].dim;
      out.push_back(t);
    } else if (to[a].is_partial()) {
      Transfer t = step(Kind::kPartialInit, a);
      t.reduce = to[a].reduce;
      out.push_back(t);
    }
    cur[a] = to[a];
  }
  return out;
}

}  // namespace oar::dist
