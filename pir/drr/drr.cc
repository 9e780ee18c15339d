#include "pir/drr/drr.h"

#include <algorithm>

#include "paddle_core/base/errors.h"
#include "paddle_core/dispatch/kernel_registry.h"
#include "pir/dialect/op/op_support.h"
#include "pir/ir/infer.h"
#include "pir/transforms/passes.h"

namespace oar::pir::drr {

Value Match::tensor(const std::string& name) const {
  auto it = tensors_.find(name);
  OAR_ENFORCE(it != tensors_.end(), NotFound, "drr: the match binds no tensor '", name, "'");
  return it->second;
}
Attribute Match::attr(const std::string& name) const {
  auto it = attrs_.find(name);
  OAR_ENFORCE(it != attrs_.end(), NotFound, "drr: the match binds no attribute '", name, "'");
  return it->second;
}

SourcePattern& SourcePattern::op(std::string name, std::vector<std::string> inputs,
                                 std::vector<std::string> outputs,
                                 std::vector<std::pair<std::string, std::string>> attrs) {
  ops_.push_back(PatternOp{std::move(name), std::move(inputs), std::move(outputs), std::move(attrs), {}});
  return *this;
}
SourcePattern& SourcePattern::require(Constraint c) {
  constraints_.push_back(std::move(c));
  return *this;
}
ResultPattern& ResultPattern::op(std::string name, std::vector<std::string> inputs,
                                 std::vector<std::string> outputs,
                                 std::vector<std::pair<std::string, ResultAttr>> attrs) {
  ops_.push_back(PatternOp{std::move(name), std::move(inputs), std::move(outputs), {}, std::move(attrs)});
  return *this;
}

class DrrPattern : public RewritePattern {
 public:
  explicit DrrPattern(std::shared_ptr<const DrrRule> rule)
      : RewritePattern(rule->source().ops().empty() ? "" : rule->source().ops().back().name, 10),
        rule_(std::move(rule)) {
    const auto& src = rule_->source().ops();
    OAR_ENFORCE(!src.empty(), InvalidArgument, "drr rule '", rule_->name(), "': empty source pattern");
    for (size_t i = 0; i < src.size(); ++i)
      for (size_t k = 0; k < src[i].outputs.size(); ++k)
        if (!src[i].outputs[k].empty()) producer_[src[i].outputs[k]] = {static_cast<int>(i), static_cast<int>(k)};
    for (const auto& r : rule_->result().ops())
      for (const auto& o : r.outputs)
        if (producer_.count(o)) exported_.push_back(o);
  }
  std::string name() const override { return rule_->name(); }

  bool match_and_rewrite(Operation* root, PatternRewriter& rw) const override {
    const auto& src = rule_->source().ops();
    IrContext* ctx = root->info()->ctx;
    if (ctx != cached_ctx_) {  // resolve names once per context
      cached_ctx_ = ctx;
      comm_.clear();
      resolvable_ = true;
      for (size_t i = 0; i < src.size(); ++i) {
        const OpInfo* info = ctx->find_op(src[i].name);
        if (!info) { resolvable_ = false; break; }
        if (info->has(kTraitCommutative) && src[i].inputs.size() >= 2) comm_.push_back(static_cast<int>(i));
      }
    }
    if (!resolvable_ || root->name() != src.back().name || !quick_check(root)) return false;
    // Commutative source ops: try every operand order.
    const std::vector<int>& comm = comm_;
    for (uint32_t mask = 0; mask < (1u << comm.size()); ++mask) {
      State st;
      st.matched.assign(src.size(), nullptr);
      st.swap.assign(src.size(), false);
      for (size_t b = 0; b < comm.size(); ++b) st.swap[comm[b]] = (mask >> b) & 1;
      if (!match_op(static_cast<int>(src.size()) - 1, root, st)) continue;
      if (std::find(st.matched.begin(), st.matched.end(), nullptr) != st.matched.end()) continue;
      if (!uses_contained(st)) continue;
      Match m;
      m.tensors_ = std::move(st.tensors);
      m.attrs_ = std::move(st.attrs);
      m.ops_ = st.matched;
      bool ok = true;
      for (const auto& c : rule_->source().constraints()) {
        try {
          ok = c(m);
        } catch (const Error&) {
          ok = false;
        }
        if (!ok) break;
      }
      if (ok && rewrite(m, root, rw)) return true;
    }
    return false;
  }

 private:
  struct State {
    std::vector<Operation*> matched;
    std::vector<bool> swap;
    std::unordered_map<std::string, Value> tensors;
    std::unordered_map<std::string, Attribute> attrs;
  };

  /// Cheap pre-filter: each root input produced by a source op comes from an op of
  /// that name (in either order for a commutative root).
  bool quick_check(Operation* root) const {
    const PatternOp& p = rule_->source().ops().back();
    const bool comm = !comm_.empty() && comm_.back() == static_cast<int>(rule_->source().ops().size()) - 1;
    if (root->num_operands() < p.inputs.size()) return false;
    for (size_t i = 0; i < p.inputs.size(); ++i) {
      auto prod = producer_.find(p.inputs[i]);
      if (prod == producer_.end()) continue;
      const std::string& want = rule_->source().ops()[prod->second.first].name;
      auto from = [&](size_t k) {
        Value v = root->operand(k);
        return v && v.defining_op() && v.defining_op()->name() == want;
      };
      if (from(i)) continue;
      if (comm && i < 2 && from(1 - i)) continue;
      return false;
    }
    return true;
  }

  static bool bind_tensor(State& st, const std::string& n, Value v) {
    auto [it, ins] = st.tensors.emplace(n, v);
    return ins || it->second == v;
  }

  bool match_op(int idx, Operation* op, State& st) const {
    const PatternOp& p = rule_->source().ops()[idx];
    if (st.matched[idx]) return st.matched[idx] == op;
    if (op->name() != p.name) return false;
    for (size_t j = 0; j < st.matched.size(); ++j)
      if (st.matched[j] == op) return false;  // one op, one pattern op
    if (op->num_operands() < p.inputs.size() || op->num_results() < p.outputs.size()) return false;
    st.matched[idx] = op;
    for (size_t k = 0; k < p.outputs.size(); ++k)
      if (!p.outputs[k].empty() && !bind_tensor(st, p.outputs[k], op->result(k))) return false;
    const OpInfo* info = op->info();
    for (const auto& [an, var] : p.attr_binds) {
      Attribute a = op->attr(an);
      if (!a) {
        int i = info->attr_index(an);
        if (i < 0) return false;
        a = info->attrs[i].default_value;
        if (!a) return false;
      }
      auto [it, ins] = st.attrs.emplace(var, a);
      if (!ins && it->second != a) return false;
    }
    for (size_t i = 0; i < p.inputs.size(); ++i) {
      size_t oi = st.swap[idx] && i < 2 ? 1 - i : i;
      Value v = op->operand(oi);
      const std::string& n = p.inputs[i];
      if (n.empty()) {
        if (v) return false;
        continue;
      }
      if (!v) return false;
      auto prod = producer_.find(n);
      if (prod != producer_.end()) {
        Operation* d = v.defining_op();
        if (!d || static_cast<int>(v.index()) != prod->second.second) return false;
        if (!match_op(prod->second.first, d, st)) return false;
      }
      if (!bind_tensor(st, n, v)) return false;
    }
    return true;
  }

  /// Every value produced by a matched op is either replaced (exported) or used only
  /// by matched ops, so erasing them is safe.
  bool uses_contained(const State& st) const {
    for (Operation* op : st.matched)
      for (size_t r = 0; r < op->num_results(); ++r) {
        Value v = op->result(r);
        bool exported = false;
        for (const auto& e : exported_)
          if (st.tensors.count(e) && st.tensors.at(e) == v) exported = true;
        if (exported) continue;
        for (OpOperand* u = v.first_use(); u; u = u->next_use())
          if (std::find(st.matched.begin(), st.matched.end(), u->owner()) == st.matched.end()) return false;
      }
    return true;
  }

  bool rewrite(const Match& m, Operation* root, PatternRewriter& rw) const {
    IrContext* ctx = rw.ctx();
    struct Planned {
      const OpInfo* info;
      std::vector<std::string> inputs;
      std::vector<NamedAttribute> attrs;
      std::vector<Type> types;
    };
    std::vector<Planned> plan;
    std::unordered_map<std::string, Type> types;
    for (const auto& [n, v] : m.tensors_) types[n] = v ? v.type() : Type();
    std::unordered_map<std::string, Type> new_types;
    // Dry run: resolve attributes and infer every result type first, so a rule that
    // does not fit (a type would change, a kernel is missing) leaves the IR untouched.
    for (const PatternOp& p : rule_->result().ops()) {
      const OpInfo* info = ctx->find_op(p.name);
      if (!info) return false;
      Planned pl{info, p.inputs, {}, {}};
      for (const auto& [an, ra] : p.attrs) {
        Attribute a = ra.fn ? ra.fn(m, ctx) : ra.constant ? ra.constant : m.attr(ra.bound);
        if (!a) return false;
        pl.attrs.push_back(NamedAttribute{an, a});
      }
      fill_default_attrs(info, pl.attrs);
      std::sort(pl.attrs.begin(), pl.attrs.end(),
                [](const NamedAttribute& a, const NamedAttribute& b) { return a.name < b.name; });
      std::vector<Type> in;
      for (const auto& n : p.inputs) {
        if (n.empty()) { in.push_back(Type()); continue; }
        auto it = new_types.find(n);
        if (it != new_types.end()) { in.push_back(it->second); continue; }
        auto jt = types.find(n);
        if (jt == types.end()) return false;
        in.push_back(jt->second);
      }
      try {
        pl.types = infer_result_types(ctx, info, in, pl.attrs);
      } catch (const Error&) {
        return false;
      }
      if (pl.types.size() < p.outputs.size()) return false;
      for (size_t k = 0; k < p.outputs.size(); ++k) {
        const std::string& o = p.outputs[k];
        if (o.empty()) continue;
        if (producer_.count(o) && m.tensor(o).type() != pl.types[k]) return false;
        new_types[o] = pl.types[k];
      }
      if (rule_->requires_kernels() && !info->kernel.empty()) {
        DataType dt = root->num_results() && root->result(0).type().is_tensor() ? root->result(0).type().dtype()
                                                                                 : DataType::FLOAT32;
        // The kernel the program will run (Note [Lowering for a place]): its place's, or the
        // CPU's through the fallback.
        if (!kernel_device_for(info->kernel, current_place(), dt)) return false;
      }
      plan.push_back(std::move(pl));
    }
    // Build.
    std::unordered_map<std::string, Value> made;
    const auto& rops = rule_->result().ops();
    for (size_t i = 0; i < plan.size(); ++i) {
      std::vector<Value> operands;
      for (const auto& n : plan[i].inputs) {
        if (n.empty()) { operands.push_back(Value()); continue; }
        auto it = made.find(n);
        operands.push_back(it != made.end() ? it->second : m.tensor(n));
      }
      Operation* op = rw.build(plan[i].info, operands, plan[i].attrs, plan[i].types);
      for (size_t k = 0; k < rops[i].outputs.size(); ++k)
        if (!rops[i].outputs[k].empty()) made[rops[i].outputs[k]] = op->result(k);
    }
    for (const auto& e : exported_) rw.replace_all_uses_with(m.tensor(e), made.at(e));
    for (auto it = m.ops().rbegin(); it != m.ops().rend(); ++it)
      if ((*it)->use_empty()) rw.erase_op(*it);
    return true;
  }

  std::shared_ptr<const DrrRule> rule_;
  mutable IrContext* cached_ctx_ = nullptr;
  mutable std::vector<int> comm_;
  mutable bool resolvable_ = false;
  std::unordered_map<std::string, std::pair<int, int>> producer_;
  std::vector<std::string> exported_;
};

std::unique_ptr<RewritePattern> make_pattern(std::shared_ptr<const DrrRule> rule) {
  return std::make_unique<DrrPattern>(std::move(rule));
}

namespace {
class DrrPass : public Pass {
 public:
  DrrPass(std::string name, std::vector<std::shared_ptr<DrrRule>> rules) : Pass(std::move(name)) {
    for (auto& r : rules) set_.add(make_pattern(std::move(r)));
  }
  bool run(Operation* anchor) override {
    GreedyConfig cfg;
    cfg.bottom_up = true;
    return apply_patterns_greedily(anchor, set_, cfg);
  }

 private:
  RewritePatternSet set_;
};
}  // namespace

std::unique_ptr<Pass> create_drr_pass(std::string name, std::vector<std::shared_ptr<DrrRule>> rules) {
  return std::make_unique<DrrPass>(std::move(name), std::move(rules));
}

}  // namespace oar::pir::drr

namespace oar::pir {
std::unique_ptr<Pass> create_fuse_pass() { return drr::create_drr_pass("fuse", drr::fusion_rules()); }
}  // namespace oar::pir
