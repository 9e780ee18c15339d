// DRR (declarative rewrite rules): a rewrite written as a source pattern, constraints
// and a result pattern, instead of hand-walking the graph:
//
//   DrrRule r("matmul_add_to_fused_linear");
//   r.source()
//       .op("pd_op.matmul", {"x", "w"}, {"mm"}, {{"transpose_x", "tx"}, {"transpose_y", "ty"}})
//       .op("pd_op.add", {"mm", "bias"}, {"out"})
//       .require([](const Match& m) { return m.type("bias").rank() == 1; });
//   r.result().op("pd_op.fused_linear", {"x", "w", "bias"}, {"out"},
//                 {{"transpose_x", bind("tx")}, {"transpose_y", bind("ty")}});
//
// Names are tensors (inputs of the pattern, or outputs of its ops) and attributes
// bound from source ops. The last source op is the anchor; matching walks back from
// it through operands, tries both operand orders of commutative ops, requires the
// same name to bind the same value, and rejects matches whose intermediate values
// are used outside the pattern. The result ops are built at the anchor with
// inferred types (which must equal the replaced values' types), the named outputs
// are replaced, and the source ops are erased.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "pir/pass/pass.h"
#include "pir/pass/pattern_rewrite.h"

namespace oar::pir::drr {

/// What a successful match bound.
class Match {
 public:
  Value tensor(const std::string& name) const;
  Type type(const std::string& name) const { return tensor(name).type(); }
  Attribute attr(const std::string& name) const;
  bool has_tensor(const std::string& name) const { return tensors_.count(name) > 0; }
  /// The matched ops, in source-pattern order.
  const std::vector<Operation*>& ops() const { return ops_; }

 private:
  friend class DrrPattern;
  std::unordered_map<std::string, Value> tensors_;
  std::unordered_map<std::string, Attribute> attrs_;
  std::vector<Operation*> ops_;
};

using Constraint = std::function<bool(const Match&)>;
using AttrFn = std::function<Attribute(const Match&, IrContext*)>;

/// An attribute of a result op: a bound source attribute, a constant, or computed.
struct ResultAttr {
  std::string bound;
  Attribute constant;
  AttrFn fn;
};
inline ResultAttr bind(std::string name) { return ResultAttr{std::move(name), Attribute(), nullptr}; }
inline ResultAttr value(Attribute a) { return ResultAttr{"", a, nullptr}; }
inline ResultAttr compute(AttrFn fn) { return ResultAttr{"", Attribute(), std::move(fn)}; }

struct PatternOp {
  std::string name;
  std::vector<std::string> inputs;   // "" for an absent optional input
  std::vector<std::string> outputs;  // "" for an output nobody refers to
  std::vector<std::pair<std::string, std::string>> attr_binds;  // source: attribute -> name
  std::vector<std::pair<std::string, ResultAttr>> attrs;         // result: attribute -> value
};

class SourcePattern {
 public:
  /// Appends a source op; `attrs` binds each listed attribute's value to a name.
  SourcePattern& op(std::string name, std::vector<std::string> inputs, std::vector<std::string> outputs,
                    std::vector<std::pair<std::string, std::string>> attrs = {});
  /// A predicate on the match (all must hold).
  SourcePattern& require(Constraint c);
  const std::vector<PatternOp>& ops() const { return ops_; }
  const std::vector<Constraint>& constraints() const { return constraints_; }

 private:
  std::vector<PatternOp> ops_;
  std::vector<Constraint> constraints_;
};

class ResultPattern {
 public:
  /// Appends a result op; outputs named like source outputs replace them.
  ResultPattern& op(std::string name, std::vector<std::string> inputs, std::vector<std::string> outputs,
                    std::vector<std::pair<std::string, ResultAttr>> attrs = {});
  const std::vector<PatternOp>& ops() const { return ops_; }

 private:
  std::vector<PatternOp> ops_;
};

class DrrRule {
 public:
  explicit DrrRule(std::string name) : name_(std::move(name)) {}
  const std::string& name() const { return name_; }
  SourcePattern& source() { return source_; }
  ResultPattern& result() { return result_; }
  const SourcePattern& source() const { return source_; }
  const ResultPattern& result() const { return result_; }
  /// Only rewrite when every result op has a kernel for the anchor's dtype on the place
  /// the pipeline compiles for (its device's, or the CPU's through the fallback).
  DrrRule& require_kernels(bool v) {
    require_kernels_ = v;
    return *this;
  }
  bool requires_kernels() const { return require_kernels_; }

 private:
  std::string name_;
  SourcePattern source_;
  ResultPattern result_;
  bool require_kernels_ = true;
};

/// A RewritePattern (for the greedy driver) that applies one rule.
std::unique_ptr<RewritePattern> make_pattern(std::shared_ptr<const DrrRule> rule);

/// The fusion rules shipped with Oar (fusion_rules.cc).
std::vector<std::shared_ptr<DrrRule>> fusion_rules();
/// A pass applying `rules` greedily.
std::unique_ptr<Pass> create_drr_pass(std::string name, std::vector<std::shared_ptr<DrrRule>> rules);

}  // namespace oar::pir::drr
