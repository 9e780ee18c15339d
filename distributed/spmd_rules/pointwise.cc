// Rules for ops that map elements to elements: broadcasting n-ary ops (also where,
// optimizer updates), unary ops (also cast, dropout), expand, tile, sum_to, and the
// replicated fallback.
#include <algorithm>
#include <set>

#include "distributed/spmd_rules/notation.h"
#include "distributed/spmd_rules/rules.h"
#include "paddle_core/base/errors.h"

namespace oar::dist {
namespace {

/// Output letters a, b, c... right-aligned against each input; an input dim of size
/// 1 under a larger output dim is a broadcast ('1', replicated).
Notations broadcast_notations(const SpmdContext& c) {
  int64_t rank = 0;
  for (const auto& t : c.inputs) rank = std::max(rank, t.defined ? t.rank() : 0);
  std::vector<int64_t> out(rank, 1);
  for (const auto& t : c.inputs) {
    for (int64_t i = 0; t.defined && i < t.rank(); ++i) {
      int64_t& o = out[rank - t.rank() + i];
      if (t.shape[i] != 1) o = t.shape[i];
    }
  }
  Notations n;
  std::string all = letters(rank);
  for (const auto& t : c.inputs) {
    std::string s;
    for (int64_t i = 0; t.defined && i < t.rank(); ++i) {
      int64_t od = rank - t.rank() + i;
      s += t.shape[i] == out[od] ? all[od] : '1';
    }
    n.inputs.push_back(s);
  }
  n.outputs.assign(c.num_outputs, all);
  // Sums of Partial values stay Partial: (a1 + a2) + (b1 + b2) = (a1 + b1) + (a2 + b2).
  n.linear = c.op == "add" || c.op == "subtract";
  return n;
}

Notations unary_notations(const SpmdContext& c) {
  Notations n;
  std::string x = letters(c.inputs.at(0).rank());
  n.inputs.push_back(x);
  // Extra tensor inputs (rare) are replicated: fresh letters in `replicated`.
  for (size_t i = 1; i < c.inputs.size(); ++i) {
    n.inputs.push_back(c.inputs[i].defined ? letters(c.inputs[i].rank(), 'p') : "");
  }
  n.replicated = "pqrstuvwxyz";
  n.outputs.assign(c.num_outputs, x);
  // Linear maps of a sum are sums of the maps: Partial passes through.
  n.linear = c.op == "assign" || c.op == "neg" || c.op == "contiguous" ||
             (c.op == "scale" && c.float_attr("bias", 0.0) == 0.0);
  return n;
}

/// expand(x, shape): x right-aligned against `shape`; a dim that grows from 1 is a
/// broadcast, new leading dims are fresh (replicated) letters.
Notations expand_notations(const SpmdContext& c) {
  const DistMetaTensor& x = c.inputs.at(0);
  std::vector<int64_t> shape = c.ints_attr("shape", {});
  int64_t rank = static_cast<int64_t>(shape.size());
  OAR_ENFORCE(rank >= x.rank(), InvalidArgument, c.op, ": shape ", shape, " has fewer dims than x ", x.shape);
  Notations n;
  std::string out = letters(rank), in;
  for (int64_t i = 0; i < x.rank(); ++i) {
    int64_t t = shape[rank - x.rank() + i];
    in += (t == -1 || t == x.shape[i]) ? out[rank - x.rank() + i] : '1';
  }
  n.inputs = {in};
  n.outputs = {out};
  return n;
}

/// tile: a repeated dim holds copies end to end, so a split of it would interleave.
Notations tile_notations(const SpmdContext& c) {
  const DistMetaTensor& x = c.inputs.at(0);
  std::vector<int64_t> reps = c.ints_attr("repeat_times", {});
  int64_t rank = std::max<int64_t>(x.rank(), static_cast<int64_t>(reps.size()));
  reps.insert(reps.begin(), rank - static_cast<int64_t>(reps.size()), 1);
  Notations n;
  std::string out = letters(rank);
  n.inputs = {out.substr(rank - x.rank())};
  n.outputs = {out};
  for (int64_t i = 0; i < rank; ++i) {
    if (reps[i] != 1) n.replicated += out[i];
  }
  return n;
}

/// sum_to(x, shape): the dims summed away are contracted (Partial sums when split).
Notations sum_to_notations(const SpmdContext& c) {
  const DistMetaTensor& x = c.inputs.at(0);
  std::vector<int64_t> shape = c.ints_attr("shape", {});
  int64_t rank = static_cast<int64_t>(shape.size());
  OAR_ENFORCE(rank <= x.rank(), InvalidArgument, c.op, ": shape ", shape, " has more dims than x ", x.shape);
  Notations n;
  std::string in = letters(x.rank()), out;
  for (int64_t i = 0; i < rank; ++i) {
    int64_t xd = x.rank() - rank + i;
    out += shape[i] == x.shape[xd] ? in[xd] : '1';
  }
  n.inputs = {in};
  n.outputs = {out};
  return n;
}

}  // namespace

OAR_NOTATION_RULE(elementwise, broadcast_notations)
OAR_NOTATION_RULE(unary, unary_notations)
OAR_NOTATION_RULE(expand, expand_notations)
OAR_NOTATION_RULE(tile, tile_notations)
OAR_NOTATION_RULE(sum_to, sum_to_notations)

namespace {
std::vector<int64_t> output_ranks(const SpmdContext& c, const std::vector<DistMetaTensor>* outs) {
  std::vector<int64_t> r;
  for (int i = 0; i < c.num_outputs; ++i) {
    r.push_back(outs ? (*outs)[i].rank() : (static_cast<size_t>(i) < c.output_ranks.size() ? c.output_ranks[i] : 0));
  }
  return r;
}

SpmdInfo all_replicated(const SpmdContext& c, const std::vector<int64_t>& out_ranks) {
  SpmdInfo info;
  for (const auto& t : c.inputs) info.inputs.push_back(TensorDistAttr::replicated(c.mesh(), t.defined ? t.rank() : 0));
  for (int64_t r : out_ranks) info.outputs.push_back(TensorDistAttr::replicated(c.mesh(), r));
  return info;
}
}  // namespace

// The fallback: every process computes the whole op (correct, and as slow as one
// process plus the gathers). Output ranks come from ctx.output_ranks.
SpmdInfo replicated_forward(const SpmdContext& c) { return all_replicated(c, output_ranks(c, nullptr)); }
SpmdInfo replicated_reverse(const SpmdContext& c, const std::vector<DistMetaTensor>& o) {
  return all_replicated(c, output_ranks(c, &o));
}

}  // namespace oar::dist
