// Canonicalization of the op dialect: local simplifications run by the greedy driver.
// Each pattern names the ops it touches; patterns of ops that are not declared are
// skipped, so the pass works on whatever the op definition files hold.
#include <functional>

#include "pir/transforms/passes.h"

namespace oar::pir {
namespace {

using RewriteFn = std::function<bool(Operation*, PatternRewriter&)>;

class FnPattern : public RewritePattern {
 public:
  FnPattern(std::string root, std::string name, RewriteFn fn)
      : RewritePattern(std::move(root)), name_(std::move(name)), fn_(std::move(fn)) {}
  bool match_and_rewrite(Operation* op, PatternRewriter& r) const override { return fn_(op, r); }
  std::string name() const override { return name_; }

 private:
  std::string name_;
  RewriteFn fn_;
};

Operation* def(Value v, const char* name) {
  Operation* d = v ? v.defining_op() : nullptr;
  return d && d->name() == name ? d : nullptr;
}
/// Replaces op's single result by `v` when the types agree.
bool forward(Operation* op, Value v, PatternRewriter& r) {
  if (!v || op->result(0).type() != v.type()) return false;
  r.replace_op(op, {v});
  return true;
}
bool is_const(Value v) { return def(v, "builtin.constant") != nullptr; }

}  // namespace

void add_canonicalization_patterns(RewritePatternSet& set) {
  auto add = [&](const char* root, const char* name, RewriteFn fn) {
    set.add(std::make_unique<FnPattern>(root, name, std::move(fn)));
  };
  // split(combine(a, b, ...)) -> a, b, ...
  add("builtin.split", "split_of_combine", [](Operation* op, PatternRewriter& r) {
    Operation* c = def(op->operand(0), "builtin.combine");
    if (!c || c->num_operands() != op->num_results()) return false;
    r.replace_op(op, c->operands());
    return true;
  });
  // scale(x, 1, 0) -> x
  add("pd_op.scale", "identity_scale", [](Operation* op, PatternRewriter& r) {
    Attribute s = op->attr("scale"), b = op->attr("bias");
    if (!s || !b || s.as_number() != 1.0 || b.as_number() != 0.0) return false;
    return forward(op, op->operand(0), r);
  });
  // cast(x, x.dtype) -> x (also assign(x) -> x below: values are immutable in the IR)
  add("pd_op.cast", "identity_cast", [](Operation* op, PatternRewriter& r) {
    return forward(op, op->operand(0), r);
  });
  add("pd_op.assign", "assign_of_value", [](Operation* op, PatternRewriter& r) {
    return forward(op, op->operand(0), r);
  });
  // reshape/expand/contiguous to the same type -> x
  for (const char* n : {"pd_op.reshape", "pd_op.expand", "pd_op.contiguous", "pd_op.flatten", "pd_op.squeeze",
                        "pd_op.unsqueeze"}) {
    add(n, "identity_view", [](Operation* op, PatternRewriter& r) {
      Value x = op->operand(0);
      if (!x || x.type().has_dynamic_dims()) return false;
      return forward(op, x, r);
    });
  }
  // reshape(reshape(x)) -> reshape(x), when the inner reshape has no other use: else it
  // is computed anyway, and where x is a strided view (a transpose) each reshape of x
  // would copy it, while the outer one of the inner's contiguous result is a view (the
  // attention gradients' [b, L, h, d] -> [b, L, D] and [b*L, D], docs/notes/cinn.md).
  add("pd_op.reshape", "reshape_of_reshape", [](Operation* op, PatternRewriter& r) {
    Operation* inner = def(op->operand(0), "pd_op.reshape");
    if (!inner || op->result(0).type().has_dynamic_dims() || !op->operand(0).has_one_use()) return false;
    Operation* n = r.build(op->info(), {inner->operand(0)}, op->attributes(), {op->result(0).type()});
    r.replace_op(op, {n->result(0)});
    return true;
  });
  // transpose(transpose(x, p), q) -> transpose(x, p∘q), or x when it is the identity
  add("pd_op.transpose", "transpose_of_transpose", [](Operation* op, PatternRewriter& r) {
    Operation* inner = def(op->operand(0), "pd_op.transpose");
    Attribute q = op->attr("perm");
    if (!inner || !q.is(AttrKind::kShape) || !inner->attr("perm").is(AttrKind::kShape)) return false;
    const auto& p = inner->attr("perm").as_shape();
    const auto& qq = q.as_shape();
    if (p.size() != qq.size()) return false;
    std::vector<int64_t> comp(p.size());
    bool identity = true;
    const int64_t n = static_cast<int64_t>(p.size());
    for (size_t i = 0; i < qq.size(); ++i) {
      int64_t qi = qq[i] < 0 ? qq[i] + n : qq[i];
      if (qi < 0 || qi >= n) return false;
      int64_t pi = p[qi] < 0 ? p[qi] + n : p[qi];
      comp[i] = pi;
      identity &= pi == static_cast<int64_t>(i);
    }
    if (identity) return forward(op, inner->operand(0), r);
    Operation* t = r.build(op->info(), {inner->operand(0)}, {{"perm", r.ctx()->shape_attr(comp)}},
                           {op->result(0).type()});
    r.replace_op(op, {t->result(0)});
    return true;
  });
  // neg(neg(x)) -> x
  add("pd_op.neg", "double_negation", [](Operation* op, PatternRewriter& r) {
    Operation* inner = def(op->operand(0), "pd_op.neg");
    return inner && forward(op, inner->operand(0), r);
  });
  // max_pool2d_with_index whose mask nobody reads -> max_pool2d (no argmax, no mask
  // buffer; a vectorized kernel). Traced MaxPool2D layers always ask for the mask.
  add("pd_op.max_pool2d_with_index", "max_pool_without_index", [](Operation* op, PatternRewriter& r) {
    if (op->num_results() != 2 || !op->result(1).use_empty()) return false;
    const OpInfo* info = r.ctx()->find_op("pd_op.max_pool2d");
    if (!info) return false;
    Operation* n = r.build(info, {op->operand(0)}, op->attributes(), {op->result(0).type()});
    r.replace_all_uses_with(op->result(0), n->result(0));
    r.erase_op(op);
    return true;
  });
  // commutative ops: constants go second (so CSE and folding rules see one form)
  add("", "constant_operand_last", [](Operation* op, PatternRewriter& r) {
    if (!op->has(kTraitCommutative) || op->num_operands() < 2) return false;
    if (!is_const(op->operand(0)) || is_const(op->operand(1))) return false;
    Value a = op->operand(0), b = op->operand(1);
    op->set_operand(0, b);
    op->set_operand(1, a);
    r.notify_changed(op);
    return true;
  });
}

namespace {
class CanonicalizePass : public Pass {
 public:
  CanonicalizePass() : Pass("canonicalize") { add_canonicalization_patterns(patterns_); }
  bool run(Operation* anchor) override { return apply_patterns_greedily(anchor, patterns_); }

 private:
  RewritePatternSet patterns_;
};
}  // namespace

std::unique_ptr<Pass> create_canonicalize_pass() { return std::make_unique<CanonicalizePass>(); }

}  // namespace oar::pir
