// The reshape family (reshape, flatten, squeeze, unsqueeze) as dimension transforms,
// and transpose. A reshape pairs groups of input dims with groups of output dims of
// equal product; within a group only the leading dim's split can carry over, and only
// when it cuts both sides into the same contiguous blocks (both leading sizes divisible
// by the mesh axis), as in Paddle's dim_trans. Reshapes are linear: Partial passes.
#include <numeric>

#include "distributed/spmd_rules/notation.h"
#include "distributed/spmd_rules/rules.h"
#include "paddle_core/base/errors.h"

namespace oar::dist {
namespace {

struct DimGroup {
  std::vector<int64_t> from, to;
};

/// Pairs dims of `from` and `to` into groups of equal product (size-1 dims alone); an
/// empty list when the shapes do not pair (a 0-size dim).
std::vector<DimGroup> pair_dims(const std::vector<int64_t>& from, const std::vector<int64_t>& to) {
  std::vector<DimGroup> groups;
  size_t i = 0, j = 0;
  while (i < from.size() || j < to.size()) {
    bool fi = i < from.size(), tj = j < to.size();
    if (fi && from[i] == 1 && (!tj || to[j] != 1)) {
      groups.push_back({{static_cast<int64_t>(i++)}, {}});
      continue;
    }
    if (tj && to[j] == 1 && (!fi || from[i] != 1)) {
      groups.push_back({{}, {static_cast<int64_t>(j++)}});
      continue;
    }
    if (!fi || !tj || from[i] <= 0 || to[j] <= 0) return {};
    DimGroup g{{static_cast<int64_t>(i)}, {static_cast<int64_t>(j)}};
    int64_t pf = from[i++], pt = to[j++];
    while (pf != pt) {
      if (pf < pt) {
        if (i >= from.size() || from[i] <= 0) return {};
        pf *= from[i];
        g.from.push_back(static_cast<int64_t>(i++));
      } else {
        if (j >= to.size() || to[j] <= 0) return {};
        pt *= to[j];
        g.to.push_back(static_cast<int64_t>(j++));
      }
    }
    groups.push_back(std::move(g));
  }
  return groups;
}

/// From `from`'s layout: the layout `from` should have, and `to`'s.
std::pair<TensorDistAttr, TensorDistAttr> transform(const TensorDistAttr& attr, const std::vector<int64_t>& from,
                                                    const std::vector<int64_t>& to, bool keep_partial) {
  TensorDistAttr want(attr.mesh, std::vector<int64_t>(from.size(), -1));
  TensorDistAttr out(attr.mesh, std::vector<int64_t>(to.size(), -1));
  if (keep_partial) want.partial = out.partial = attr.partial;
  for (const DimGroup& g : pair_dims(from, to)) {
    if (g.from.empty() || g.to.empty()) continue;
    int64_t f = g.from[0], t = g.to[0];
    int64_t m = attr.dims_mapping[f];
    if (m < 0) continue;
    int64_t n = attr.mesh.shape()[m];
    bool same = g.from.size() == 1 && g.to.size() == 1;  // the dim itself: any split carries
    if (same || (from[f] % n == 0 && to[t] % n == 0)) {
      want.dims_mapping[f] = m;
      out.dims_mapping[t] = m;
    }
  }
  return {want, out};
}

std::vector<int64_t> reshape_target(const SpmdContext& c, const std::vector<int64_t>& in) {
  std::vector<int64_t> shape = c.ints_attr("shape", {});
  int64_t known = 1, infer = -1;
  int64_t numel = std::accumulate(in.begin(), in.end(), int64_t{1}, std::multiplies<>());
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0) {
      OAR_ENFORCE(i < in.size(), InvalidArgument, c.op, ": shape ", shape, " copies dim ", i, " of x ", in);
      shape[i] = in[i];
    }
    if (shape[i] == -1) {
      OAR_ENFORCE(infer < 0, InvalidArgument, c.op, ": shape ", shape, " has more than one -1");
      infer = static_cast<int64_t>(i);
    } else {
      known *= shape[i];
    }
  }
  if (infer >= 0) shape[infer] = known ? numel / known : 0;
  return shape;
}

enum class Kind { kReshape, kFlatten, kSqueeze, kUnsqueeze };

/// The output shape, from the op's attributes (the rule runs before any kernel).
std::vector<int64_t> out_shape(const SpmdContext& c, Kind kind) {
  const std::vector<int64_t>& in = c.inputs.at(0).shape;
  int64_t rank = static_cast<int64_t>(in.size());
  if (kind == Kind::kFlatten) {
    if (rank == 0) return {1};
    int64_t s = norm_axis(c, c.int_attr("start_axis", 0), rank), e = norm_axis(c, c.int_attr("stop_axis", -1), rank);
    std::vector<int64_t> out(in.begin(), in.begin() + s);
    out.push_back(std::accumulate(in.begin() + s, in.begin() + e + 1, int64_t{1}, std::multiplies<>()));
    out.insert(out.end(), in.begin() + e + 1, in.end());
    return out;
  }
  if (kind == Kind::kReshape) return reshape_target(c, in);
  std::vector<int64_t> axes = c.ints_attr("axis", {});
  if (kind == Kind::kUnsqueeze) {
    std::vector<int64_t> out = in;
    for (int64_t a : axes) {
      int64_t r = static_cast<int64_t>(out.size()) + 1;
      a = norm_axis(c, a, r);
      out.insert(out.begin() + a, 1);
    }
    return out;
  }
  std::vector<bool> drop(rank, axes.empty());
  for (int64_t a : axes) drop[norm_axis(c, a, rank)] = true;
  std::vector<int64_t> out;
  for (int64_t i = 0; i < rank; ++i) {
    if (!(drop[i] && in[i] == 1)) out.push_back(in[i]);
  }
  return out;
}

SpmdInfo reshape_like_forward(const SpmdContext& c, Kind kind) {
  const DistMetaTensor& x = c.inputs.at(0);
  auto [want, out] = transform(x.attr, x.shape, out_shape(c, kind), true);
  return {{want}, {out}};
}

SpmdInfo reshape_like_reverse(const SpmdContext& c, const std::vector<DistMetaTensor>& o) {
  OAR_ENFORCE(o.size() == 1, InvalidArgument, c.op, ": reverse SPMD rule needs 1 output, got ", o.size());
  auto [out, want] = transform(o[0].attr, o[0].shape, c.inputs.at(0).shape, false);
  return {{want}, {out}};
}

Notations transpose_notations(const SpmdContext& c) {
  const DistMetaTensor& x = c.inputs.at(0);
  std::vector<int64_t> perm = c.ints_attr("perm", {});
  OAR_ENFORCE(static_cast<int64_t>(perm.size()) == x.rank(), InvalidArgument, c.op, ": perm ", perm,
              " for a tensor of rank ", x.rank());
  std::string in = letters(x.rank()), out;
  for (int64_t p : perm) out += in[norm_axis(c, p, x.rank())];
  Notations n;
  n.inputs = {in};
  n.outputs = {out};
  n.linear = true;
  return n;
}

}  // namespace

#define OAR_RESHAPE_RULE(name, kind)                                                            \
  SpmdInfo name##_forward(const SpmdContext& c) { return reshape_like_forward(c, Kind::kind); } \
  SpmdInfo name##_reverse(const SpmdContext& c, const std::vector<DistMetaTensor>& o) {         \
    return reshape_like_reverse(c, o);                                                          \
  }
OAR_RESHAPE_RULE(reshape, kReshape)
OAR_RESHAPE_RULE(flatten, kFlatten)
OAR_RESHAPE_RULE(squeeze, kSqueeze)
OAR_RESHAPE_RULE(unsqueeze, kUnsqueeze)
#undef OAR_RESHAPE_RULE
OAR_NOTATION_RULE(transpose, transpose_notations)

}  // namespace oar::dist
