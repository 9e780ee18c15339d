// SPMD rules: given how an op's inputs are laid out over a mesh, say how they should
// be laid out for the op to run locally on each process (the dist layer reshards to
// that), and how its outputs come out (Partial where a contraction is split). The
// reverse direction goes from outputs to inputs (backward, and propagation from
// consumers). Rules are named by `spmd:` in paddle_core/ops/*.yaml; registry.cc lists
// them all. See Note [SPMD rules] in docs/notes/distributed.md.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "distributed/mesh/placement.h"

namespace oar::dist {

/// One tensor as a rule sees it: global shape and layout; `defined` false for an
/// absent optional input (layer_norm without scale).
struct DistMetaTensor {
  std::vector<int64_t> shape;
  TensorDistAttr attr;
  bool defined = true;
  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
};

using SpmdAttr = std::variant<bool, int64_t, double, std::string, std::vector<int64_t>>;

/// An op call as the rules see it: tensor inputs in declaration order (a Tensor[]
/// argument expanded in place), the other arguments by name, and the output count.
struct SpmdContext {
  std::string op;
  std::vector<DistMetaTensor> inputs;
  std::map<std::string, SpmdAttr> attrs;
  int num_outputs = 1;
  /// Output ranks, when known (the dist layer knows them from infer_meta); only the
  /// replicated fallback, which cannot derive them, needs them.
  std::vector<int64_t> output_ranks;

  int64_t int_attr(const std::string& name, int64_t dflt) const;
  bool bool_attr(const std::string& name, bool dflt) const;
  double float_attr(const std::string& name, double dflt) const;
  std::string str_attr(const std::string& name, const std::string& dflt) const;
  /// An int[] attribute; an int one becomes a one-element list.
  std::vector<int64_t> ints_attr(const std::string& name, const std::vector<int64_t>& dflt) const;
  bool has_attr(const std::string& name) const { return attrs.count(name) != 0; }
  const ProcessMesh& mesh() const;
};

/// A rule's answer: the layout each input should have (absent inputs: replicated on a
/// rank-0 attr) and each output's layout.
struct SpmdInfo {
  std::vector<TensorDistAttr> inputs;
  std::vector<TensorDistAttr> outputs;
  std::string to_string() const;
};

using SpmdForwardFn = SpmdInfo (*)(const SpmdContext& ctx);
/// Reverse: outputs' layouts (and shapes) -> inputs' layouts.
using SpmdReverseFn = SpmdInfo (*)(const SpmdContext& ctx, const std::vector<DistMetaTensor>& outputs);

struct SpmdRule {
  SpmdForwardFn forward;
  SpmdReverseFn reverse;
};

/// The rule registered as `name`; nullptr when none is.
const SpmdRule* find_spmd_rule(const std::string& name);
/// The rule for `rule_name` (the op's `spmd:`); the replicated fallback when empty or
/// unknown, reported on stderr once per op.
const SpmdRule& spmd_rule_or_fallback(const std::string& op, const std::string& rule_name);
/// The rule name an op's definition gives (`spmd:`), "" when none (op_rules.cc).
std::string spmd_rule_name(const std::string& op);
/// The op's declared output count (a Tensor[] output counts once; `has_list` set when it
/// has one), from its definition; 1 for an unknown op.
int op_num_outputs(const std::string& op, bool* has_list);
/// The op's rule, or the replicated fallback (reported once).
const SpmdRule& spmd_rule_for_op(const std::string& op);
/// Every registered rule name, sorted.
std::vector<std::string> spmd_rule_names();
/// The ops that fell back to `replicated` so far (tests, debugging).
std::vector<std::string> replicated_fallback_ops();

/// Runs the rule and checks its answer against the inputs (counts, ranks, the
/// TensorDistAttr invariants), so a broken rule fails loudly, not as wrong numbers.
SpmdInfo infer_forward(const SpmdRule& rule, const SpmdContext& ctx);
SpmdInfo infer_reverse(const SpmdRule& rule, const SpmdContext& ctx, const std::vector<DistMetaTensor>& outputs);

}  // namespace oar::dist
