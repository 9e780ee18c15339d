// Rules for ops that work along axes: reductions, argmax/argmin, scans and sorts
// (along_axis), softmax, cross_entropy, layer_norm (and its grad), rms_norm.
#include <algorithm>

#include "distributed/spmd_rules/notation.h"
#include "distributed/spmd_rules/rules.h"
#include "paddle_core/base/errors.h"

namespace oar::dist {
namespace {

/// The axes an op works along: attr `name` (int or int[]), all dims when empty and
/// `empty_means_all`, or when `flatten` is set.
std::vector<int64_t> op_axes(const SpmdContext& c, const std::string& name, int64_t rank, bool empty_means_all,
                             const std::vector<int64_t>& dflt) {
  std::vector<int64_t> axes = c.ints_attr(name, dflt);
  if (c.bool_attr("flatten", false) || (axes.empty() && empty_means_all)) {
    axes.clear();
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  }
  for (auto& a : axes) a = norm_axis(c, a, rank);
  return axes;
}

std::string letters_at(const std::string& s, const std::vector<int64_t>& axes) {
  std::string r;
  for (int64_t a : axes) {
    if (a < static_cast<int64_t>(s.size())) r += s[a];
  }
  return r;
}

/// The Partial a reduction leaves when its axis is split, or false when none can
/// express the result (var, std, logsumexp, p_norm): those axes stay whole.
bool partial_reduce_of(const std::string& op, ReduceType* r) {
  static const std::map<std::string, ReduceType> kinds = {
      {"sum", ReduceType::kRedSum},   {"mean", ReduceType::kRedAvg}, {"max", ReduceType::kRedMax},
      {"amax", ReduceType::kRedMax},  {"min", ReduceType::kRedMin},  {"amin", ReduceType::kRedMin},
      {"prod", ReduceType::kRedProd}, {"all", ReduceType::kRedAll},  {"any", ReduceType::kRedAny}};
  auto it = kinds.find(op);
  if (it == kinds.end()) return false;
  *r = it->second;
  return true;
}

Notations reduction_notations(const SpmdContext& c) {
  const DistMetaTensor& x = c.inputs.at(0);
  std::vector<int64_t> axes = op_axes(c, "axis", x.rank(), true, {});
  bool keepdim = c.bool_attr("keepdim", false);
  Notations n;
  std::string in = letters(x.rank()), out;
  for (int64_t i = 0; i < x.rank(); ++i) {
    bool reduced = std::find(axes.begin(), axes.end(), i) != axes.end();
    if (!reduced) {
      out += in[i];
    } else if (keepdim) {
      out += '1';
    }
  }
  n.inputs = {in};
  n.outputs.assign(c.num_outputs, out);
  if (!partial_reduce_of(c.op, &n.reduce)) {
    n.replicated = letters_at(in, axes);
    return n;
  }
  // Only a sum survives uneven shards: a mean of means, or a max over an empty shard,
  // would be wrong, so those keep an unevenly split axis whole.
  for (int64_t a : axes) {
    int64_t m = x.attr.dims_mapping.empty() ? -1 : x.attr.dims_mapping[a];
    if (n.reduce != ReduceType::kRedSum && m >= 0 && x.shape[a] % x.attr.mesh.shape()[m] != 0) n.replicated += in[a];
  }
  return n;
}

/// argmax/argmin: an index into a shard is not the global index, so the axis stays
/// whole.
Notations arg_reduction_notations(const SpmdContext& c) {
  const DistMetaTensor& x = c.inputs.at(0);
  bool keepdim = c.bool_attr("keepdim", false);
  Notations n;
  std::string in = letters(x.rank()), out;
  n.inputs = {in};
  if (c.bool_attr("flatten", false)) {
    n.replicated = in;
    n.outputs = {keepdim ? std::string(x.rank(), '1') : ""};
    return n;
  }
  int64_t a = norm_axis(c, c.int_attr("axis", 0), x.rank());
  for (int64_t i = 0; i < x.rank(); ++i) {
    if (i != a) {
      out += in[i];
    } else if (keepdim) {
      out += '1';
    }
  }
  n.replicated = letters_at(in, {a});
  n.outputs = {out};
  return n;
}

/// Scans, flips, rolls, sorts and top-k: each output element depends on the whole
/// axis, so the axis stays whole; outputs keep the input's letters (a flattened scan
/// gives a 1-d, replicated output).
Notations along_axis_notations(const SpmdContext& c) {
  const DistMetaTensor& x = c.inputs.at(0);
  bool roll = c.op == "roll";
  bool flat = c.bool_attr("flatten", false) || (roll && c.ints_attr("axis", {}).empty());
  std::vector<int64_t> dflt = c.op == "flip" ? std::vector<int64_t>{} : std::vector<int64_t>{-1};
  std::vector<int64_t> axes =
      flat ? op_axes(c, "__all__", x.rank(), true, {}) : op_axes(c, "axis", x.rank(), false, dflt);
  Notations n;
  std::string in = letters(x.rank());
  n.inputs = {in};
  n.replicated = letters_at(in, axes);
  bool to_1d = flat && !roll && x.rank() != 1;  // a flattened scan's output is 1-d
  n.outputs.assign(c.num_outputs, to_1d ? std::string("z") : in);
  n.replicated += 'z';
  return n;
}

/// softmax / log_softmax and their grads (out, grad_out): the axis stays whole.
Notations softmax_notations(const SpmdContext& c) {
  std::string in = letters(c.inputs.at(0).rank());
  Notations n;
  n.inputs.assign(c.inputs.size(), in);
  n.outputs.assign(c.num_outputs, in);
  n.replicated = letters_at(in, {norm_axis(c, c.int_attr("axis", -1), c.inputs[0].rank())});
  return n;
}

/// cross_entropy(input, label, weight): the class axis stays whole; batch dims split.
/// A 'sum' loss becomes a Partial sum; a 'mean' loss keeps batch dims whole, since
/// ignored labels make the per-shard counts differ.
Notations cross_entropy_notations(const SpmdContext& c) {
  const DistMetaTensor& input = c.inputs.at(0);
  const DistMetaTensor& label = c.inputs.at(1);
  int64_t a = norm_axis(c, c.int_attr("axis", -1), input.rank());
  std::string in = letters(input.rank()), lb = in;
  bool soft = c.bool_attr("soft_label", false);
  std::string reduction = c.str_attr("reduction", "mean");
  Notations n;
  if (label.rank() + 1 == input.rank()) {
    lb.erase(a, 1);
  } else if (!soft) {
    lb[a] = '1';
  }
  n.inputs = {in, lb, c.inputs.size() > 2 && c.inputs[2].defined ? in.substr(a, 1) : ""};
  n.replicated = in.substr(a, 1);
  if (reduction == "none") {
    std::string out = lb;
    if (soft) {
      out[a] = '1';
    } else if (lb.size() < in.size() && c.float_attr("label_smoothing", 0.0) > 0.0) {
      out.insert(a, 1, '1');
    }
    n.outputs = {out};
  } else {
    n.outputs = {""};
    if (reduction == "mean") n.replicated = in;
  }
  return n;
}

/// layer_norm(x, scale, bias) -> out, mean, rstd: the normalized dims stay whole;
/// scale and bias (flattened over them) replicated; mean/rstd take the leading dims.
Notations layer_norm_notations(const SpmdContext& c) {
  const DistMetaTensor& x = c.inputs.at(0);
  int64_t b = norm_axis(c, c.int_attr("begin_norm_axis", 1), x.rank());
  std::string in = letters(x.rank());
  Notations n;
  n.inputs = {in};
  for (size_t i = 1; i < c.inputs.size(); ++i) n.inputs.push_back(c.inputs[i].defined ? "z" : "");
  n.replicated = in.substr(b) + "z";
  n.outputs = {in, in.substr(0, b), in.substr(0, b)};
  return n;
}

/// layer_norm_grad(x, scale, mean, rstd, grad_out) -> x_grad, scale_grad, bias_grad:
/// the affine grads sum over the leading dims, so they come out Partial when split.
Notations layer_norm_grad_notations(const SpmdContext& c) {
  const DistMetaTensor& x = c.inputs.at(0);
  int64_t b = norm_axis(c, c.int_attr("begin_norm_axis", 1), x.rank());
  std::string in = letters(x.rank()), lead = in.substr(0, b);
  Notations n;
  n.inputs = {in, c.inputs.at(1).defined ? "z" : "", lead, lead, in};
  n.replicated = in.substr(b) + "z";
  n.outputs = {in, "z", "z"};
  return n;
}

/// rms_norm(x, scale) -> out, invvar: like layer_norm over the last dims.
Notations rms_norm_notations(const SpmdContext& c) {
  const DistMetaTensor& x = c.inputs.at(0);
  int64_t b = norm_axis(c, c.int_attr("begin_norm_axis", x.rank() - 1), x.rank());
  std::string in = letters(x.rank());
  Notations n;
  n.inputs = {in};
  for (size_t i = 1; i < c.inputs.size(); ++i) n.inputs.push_back(c.inputs[i].defined ? in.substr(b) : "");
  n.replicated = in.substr(b);
  n.outputs = {in, in.substr(0, b)};
  n.outputs.resize(c.num_outputs, in);
  return n;
}

}  // namespace

OAR_NOTATION_RULE(reduction, reduction_notations)
OAR_NOTATION_RULE(arg_reduction, arg_reduction_notations)
OAR_NOTATION_RULE(along_axis, along_axis_notations)
OAR_NOTATION_RULE(softmax, softmax_notations)
OAR_NOTATION_RULE(cross_entropy, cross_entropy_notations)
OAR_NOTATION_RULE(layer_norm, layer_norm_notations)
OAR_NOTATION_RULE(layer_norm_grad, layer_norm_grad_notations)
OAR_NOTATION_RULE(rms_norm, rms_norm_notations)

}  // namespace oar::dist
