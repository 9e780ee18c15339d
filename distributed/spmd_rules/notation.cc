#include "distributed/spmd_rules/notation.h"

#include <algorithm>
#include <set>

#include "paddle_core/base/errors.h"

namespace oar::dist {

std::string letters(int64_t rank, char first) {
  std::string s;
  for (int64_t i = 0; i < rank; ++i) s += static_cast<char>(first + i);
  return s;
}

std::map<char, int64_t> merge_axes(const std::vector<std::string>& notations,
                                   const std::vector<const std::vector<int64_t>*>& mappings,
                                   const std::string& replicated) {
  std::map<char, int64_t> axes;
  std::vector<char> order;  // letters by first appearance: who keeps a contested mesh axis
  for (size_t t = 0; t < notations.size(); ++t) {
    const std::string& n = notations[t];
    for (size_t d = 0; d < n.size(); ++d) {
      char l = n[d];
      if (!axes.count(l)) {
        axes[l] = -1;
        order.push_back(l);
      }
      if (l == '1' || replicated.find(l) != std::string::npos || !mappings[t]) continue;
      int64_t m = (*mappings[t])[d];
      if (axes[l] < 0 && m >= 0) axes[l] = m;
    }
  }
  std::set<int64_t> taken;
  for (char l : order) {
    int64_t& m = axes[l];
    if (m >= 0 && !taken.insert(m).second) m = -1;
  }
  return axes;
}

std::vector<int64_t> mapping_for(const std::string& notation, const std::map<char, int64_t>& axes) {
  std::vector<int64_t> dm(notation.size(), -1);
  for (size_t d = 0; d < notation.size(); ++d) {
    auto it = axes.find(notation[d]);
    if (it != axes.end() && notation[d] != '1') dm[d] = it->second;
  }
  return dm;
}

int64_t norm_axis(const SpmdContext& ctx, int64_t axis, int64_t rank) {
  int64_t r = std::max<int64_t>(rank, 1);
  OAR_ENFORCE(axis >= -r && axis < r, OutOfRange, ctx.op, ": axis ", axis, " out of range for rank ", rank);
  return axis < 0 ? axis + r : axis;
}

namespace {

void check_ranks(const SpmdContext& ctx, const Notations& n) {
  OAR_ENFORCE(n.inputs.size() == ctx.inputs.size(), Internal, ctx.op, ": SPMD rule gave ", n.inputs.size(),
              " notations for ", ctx.inputs.size(), " inputs");
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    if (!ctx.inputs[i].defined) continue;
    OAR_ENFORCE(static_cast<int64_t>(n.inputs[i].size()) == ctx.inputs[i].rank(), Internal, ctx.op, ": SPMD notation '",
                n.inputs[i], "' for input ", i, " of rank ", ctx.inputs[i].rank());
  }
}

/// The partial map every defined input shares, or empty when they differ.
std::map<int64_t, ReduceType> shared_partial(const SpmdContext& ctx) {
  const std::map<int64_t, ReduceType>* first = nullptr;
  for (const auto& t : ctx.inputs) {
    if (!t.defined) continue;
    if (!first) {
      first = &t.attr.partial;
    } else if (t.attr.partial != *first) {
      return {};
    }
  }
  if (!first) return {};
  for (const auto& [axis, r] : *first) {
    // Only sums (and means) pass through a linear map; max/min/prod do not.
    if (r != ReduceType::kRedSum && r != ReduceType::kRedAvg) return {};
  }
  return *first;
}

/// Per output: a split letter it lacks was contracted (summed, maxed...) into it, so
/// each process holds a partial result.
std::vector<TensorDistAttr> outputs_for(const ProcessMesh& mesh, const Notations& n,
                                        const std::map<char, int64_t>& axes,
                                        const std::map<int64_t, ReduceType>& keep) {
  std::vector<TensorDistAttr> out;
  for (const auto& o : n.outputs) {
    std::map<int64_t, ReduceType> partial = keep;
    for (const auto& [l, m] : axes) {
      if (m >= 0 && o.find(l) == std::string::npos) partial[m] = n.reduce;
    }
    out.emplace_back(mesh, mapping_for(o, axes), partial);
  }
  return out;
}

}  // namespace

SpmdInfo infer_by_notation(const SpmdContext& ctx, const Notations& n) {
  check_ranks(ctx, n);
  const ProcessMesh& mesh = ctx.mesh();
  std::map<int64_t, ReduceType> keep = n.linear ? shared_partial(ctx) : std::map<int64_t, ReduceType>{};
  std::vector<const std::vector<int64_t>*> maps;
  for (const auto& t : ctx.inputs) maps.push_back(t.defined ? &t.attr.dims_mapping : nullptr);
  std::map<char, int64_t> axes = merge_axes(n.inputs, maps, n.replicated);
  for (auto& [l, m] : axes) {
    if (keep.count(m)) m = -1;  // an axis holding pending sums cannot also split a dim
  }
  SpmdInfo info;
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    TensorDistAttr a(mesh, mapping_for(n.inputs[i], axes));
    if (ctx.inputs[i].defined) a.partial = keep;
    info.inputs.push_back(std::move(a));
  }
  info.outputs = outputs_for(mesh, n, axes, keep);
  return info;
}

SpmdInfo reverse_by_notation(const SpmdContext& ctx, const std::vector<DistMetaTensor>& outputs, const Notations& n) {
  check_ranks(ctx, n);
  OAR_ENFORCE(outputs.size() == n.outputs.size(), InvalidArgument, ctx.op, ": ", outputs.size(),
              " outputs given to the reverse SPMD rule, expected ", n.outputs.size());
  std::vector<const std::vector<int64_t>*> maps;
  for (const auto& t : outputs) maps.push_back(&t.attr.dims_mapping);
  std::map<char, int64_t> axes = merge_axes(n.outputs, maps, n.replicated);
  const ProcessMesh& mesh = ctx.mesh();
  SpmdInfo info;
  for (const auto& in : n.inputs) info.inputs.emplace_back(mesh, mapping_for(in, axes));
  // The outputs as those inputs produce them: one output's split letter can be another's
  // contraction (layer_norm_grad's batch: split in x_grad, summed into bias_grad).
  info.outputs = outputs_for(mesh, n, axes, {});
  return info;
}

}  // namespace oar::dist
