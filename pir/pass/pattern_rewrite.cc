#include "pir/pass/pattern_rewrite.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "paddle_core/base/errors.h"

namespace oar::pir {

bool is_pure(const Operation* op) {
  if (op->num_regions()) return false;
  if (op->has(kTraitPure)) return true;
  if (op->name() == "kernel.phi_kernel") {
    Attribute n = op->attr("op_name");
    const OpInfo* orig = n.is(AttrKind::kString) ? op->info()->ctx->find_op(n.as_string()) : nullptr;
    return orig && orig->has(kTraitPure);
  }
  return false;
}

// Note [Bounded loops] (docs/notes/robustness.md): the next condition is fixed when it is
// computed from values that are the same in every iteration: values defined outside the
// body, carried values the body yields back unchanged, and results of pure ops of those.
// Only claimed for a body made of pure ops alone (no writes, no random state, no nested
// regions), so that nothing it reads can change between iterations.
bool loop_condition_is_fixed(const Block* body) {
  const Operation* yield = nullptr;
  std::unordered_set<const void*> inside, fixed;
  for (size_t a = 0; a < body->num_arguments(); ++a) inside.insert(body->argument(a).impl());
  for (const Operation* op : *body) {
    if (op->name() == "cf.yield") {
      yield = op;
      continue;
    }
    if (!is_pure(op) || op->has(kTraitRandom)) return false;
    for (size_t r = 0; r < op->num_results(); ++r) inside.insert(op->result(r).impl());
  }
  if (yield == nullptr || yield->num_operands() != body->num_arguments() + 1) return false;
  for (size_t a = 0; a < body->num_arguments(); ++a)
    if (yield->operand(a + 1) == body->argument(a)) fixed.insert(body->argument(a).impl());
  auto is_fixed = [&](Value v) { return v && (!inside.count(v.impl()) || fixed.count(v.impl())); };
  for (const Operation* op : *body) {
    if (op == yield) continue;
    bool all = true;
    for (size_t i = 0; i < op->num_operands() && all; ++i) all = !op->operand(i) || is_fixed(op->operand(i));
    if (all)
      for (size_t r = 0; r < op->num_results(); ++r) fixed.insert(op->result(r).impl());
  }
  return is_fixed(yield->operand(0));
}

void PatternRewriter::replace_op(Operation* op, const std::vector<Value>& values) {
  OAR_ENFORCE(values.size() == op->num_results(), InvalidArgument, "replace_op: '", op->name(),
              "' has ", op->num_results(), " results, got ", values.size(), " values");
  for (size_t i = 0; i < values.size(); ++i) replace_all_uses_with(op->result(i), values[i]);
  erase_op(op);
}
void PatternRewriter::erase_op(Operation* op) {
  if (hooks_) hooks_->on_erase(op);
  op->erase();
}
void PatternRewriter::replace_all_uses_with(Value from, Value to) {
  if (hooks_)
    for (OpOperand* u = from.first_use(); u; u = u->next_use()) hooks_->on_changed(u->owner());
  from.replace_all_uses_with(to);
}
void PatternRewriter::notify_changed(Operation* op) {
  if (hooks_) hooks_->on_changed(op);
}

namespace {

class Driver : public PatternRewriter::Hooks, public Builder::Listener {
 public:
  Driver(Operation* root, const RewritePatternSet& set, const GreedyConfig& cfg)
      : root_(root), cfg_(cfg), rewriter_(root->info()->ctx) {
    IrContext* ctx = root->info()->ctx;
    for (const auto& p : set.patterns()) {
      if (p->root().empty()) {
        generic_.push_back(p.get());
      } else if (const OpInfo* info = ctx->find_op(p->root())) {
        by_op_[info].push_back(p.get());
      }
    }
    auto by_benefit = [](const RewritePattern* a, const RewritePattern* b) { return a->benefit() > b->benefit(); };
    for (auto& [_, v] : by_op_) std::stable_sort(v.begin(), v.end(), by_benefit);
    std::stable_sort(generic_.begin(), generic_.end(), by_benefit);
    rewriter_.set_hooks(this);
    rewriter_.set_listener(this);
  }

  bool run() {
    // Program order: push in reverse pre-order, pop from the back.
    std::vector<Operation*> order;
    root_->walk([&](Operation* op) { order.push_back(op); }, /*post_order=*/false);
    worklist_.reserve(order.size());
    if (cfg_.bottom_up) {
      for (Operation* op : order) push(op);
    } else {
      for (auto it = order.rbegin(); it != order.rend(); ++it) push(*it);
    }
    const size_t budget = (order.size() + 16) * static_cast<size_t>(cfg_.max_rewrites_per_op);
    size_t rewrites = 0;
    bool changed = false;
    while (!worklist_.empty()) {
      Operation* op = worklist_.back();
      worklist_.pop_back();
      if (!op) continue;
      op->scratch = 0;
      if (cfg_.erase_dead && op->use_empty() && is_pure(op)) {
        on_erase(op);
        op->erase();
        changed = true;
        continue;
      }
      if (rewrites >= budget) continue;
      if (try_patterns(op)) {
        changed = true;
        ++rewrites;
      }
    }
    return changed;
  }

  // Hooks / Listener
  void on_op_created(Operation* op) override { push(op); }
  void on_erase(Operation* op) override {
    // The operands' producers may become dead; the op leaves the worklist.
    for (size_t i = 0; i < op->num_operands(); ++i)
      if (Value v = op->operand(i); v && v.defining_op()) push(v.defining_op());
    op->walk([&](Operation* inner) { remove(inner); });
    remove(op);
  }
  void on_changed(Operation* op) override { push(op); }

 private:
  bool try_patterns(Operation* op) {
    auto it = by_op_.find(op->info());
    if (it != by_op_.end())
      for (const RewritePattern* p : it->second)
        if (apply(p, op)) return true;
    for (const RewritePattern* p : generic_)
      if (apply(p, op)) return true;
    return false;
  }
  bool apply(const RewritePattern* p, Operation* op) {
    rewriter_.set_insertion_point(op);
    return p->match_and_rewrite(op, rewriter_);
  }
  void push(Operation* op) {
    if (op->scratch > 0 && static_cast<size_t>(op->scratch) <= worklist_.size() &&
        worklist_[op->scratch - 1] == op)
      return;  // already queued
    worklist_.push_back(op);
    op->scratch = static_cast<int64_t>(worklist_.size());
  }
  void remove(Operation* op) {
    if (op->scratch > 0 && static_cast<size_t>(op->scratch) <= worklist_.size() &&
        worklist_[op->scratch - 1] == op)
      worklist_[op->scratch - 1] = nullptr;
    op->scratch = 0;
  }

  Operation* root_;
  GreedyConfig cfg_;
  PatternRewriter rewriter_;
  std::unordered_map<const OpInfo*, std::vector<const RewritePattern*>> by_op_;
  std::vector<const RewritePattern*> generic_;
  std::vector<Operation*> worklist_;
};

}  // namespace

bool apply_patterns_greedily(Operation* root, const RewritePatternSet& patterns, const GreedyConfig& config) {
  return Driver(root, patterns, config).run();
}

}  // namespace oar::pir
