// Constant folding: an op-dialect op whose operands are all constants (or lists of
// constants) runs eagerly, through the same op API and kernels as eager mode, and is
// replaced by constants holding its results.
#include <cstring>

#include "paddle_core/dispatch/kernel_registry.h"
#include "pir/dialect/op/op_support.h"
#include "pir/ir/builder.h"
#include "pir/transforms/passes.h"

namespace oar::pir {
namespace {

constexpr int64_t kMaxFoldedElements = 1 << 20;  // keep programs small

Attribute const_value(Value v) {
  Operation* d = v ? v.defining_op() : nullptr;
  return d && d->name() == "builtin.constant" ? d->attr("value") : Attribute();
}

Tensor tensor_of(Attribute dense) { return Tensor(dense.as_dense_tensor()); }

}  // namespace

std::vector<Value> try_fold(Operation* op, Builder& b) {
  const OpInfo* info = op->info();
  if (!info->eval || !op->has(kTraitPure) || op->has(kTraitRandom) || op->num_regions()) return {};
  for (const auto& o : info->outputs)
    if (o.is_list) return {};
  EvalContext c;
  c.info = info;
  c.attrs = &op->attributes();
  c.inputs.resize(op->num_operands());
  for (size_t i = 0; i < op->num_operands(); ++i) {
    Value v = op->operand(i);
    if (!v) continue;
    if (v.type().is_vector()) {
      Operation* comb = v.defining_op();
      if (!comb || comb->name() != "builtin.combine") return {};
      for (size_t k = 0; k < comb->num_operands(); ++k) {
        Attribute a = const_value(comb->operand(k));
        if (!a) return {};
        c.inputs[i].push_back(tensor_of(a));
      }
    } else {
      Attribute a = const_value(v);
      if (!a) return {};
      c.inputs[i].push_back(tensor_of(a));
    }
  }
  if (op->num_operands() == 0) return {};  // creation ops stay (folding would only bloat the program)
  for (size_t i = 0; i < op->num_results(); ++i) {
    Type t = op->result(i).type();
    if (!t.is_tensor() || t.has_dynamic_dims() || t.numel() > kMaxFoldedElements) return {};
  }
  try {
    info->eval(c);
  } catch (const Error&) {
    return {};  // e.g. no kernel for this dtype: leave the op to run later
  }
  if (c.outputs.size() != op->num_results()) return {};
  std::vector<Value> out;
  for (size_t i = 0; i < c.outputs.size(); ++i) {
    const DenseTensor& d = c.outputs[i].dense();
    if (d.dtype() != op->result(i).type().dtype() || d.dims().vec() != op->result(i).type().dims()) return {};
    std::string bytes(static_cast<size_t>(d.numel()) * size_of(d.dtype()), '\0');
    if (!bytes.empty()) copy_to_host(d, bytes.data(), bytes.size());  // any view, any place
    out.push_back(b.constant(b.ctx()->dense_attr(op->result(i).type(), std::move(bytes))));
  }
  return out;
}

namespace {
class ConstantFoldPass : public Pass {
 public:
  ConstantFoldPass() : Pass("constant_fold") {}
  bool run(Operation* anchor) override {
    bool changed = false;
    Builder b(anchor->info()->ctx);
    std::vector<Operation*> ops;
    anchor->walk([&](Operation* op) { ops.push_back(op); }, /*post_order=*/false);
    for (Operation* op : ops) {  // program order: folded results feed later folds
      if (!op->info()->eval) continue;
      b.set_insertion_point(op);
      std::vector<Value> vals = try_fold(op, b);
      if (vals.empty()) continue;
      op->replace_all_uses_with(vals);
      op->erase();
      changed = true;
    }
    return changed;
  }
};
}  // namespace

std::unique_ptr<Pass> create_constant_fold_pass() { return std::make_unique<ConstantFoldPass>(); }

}  // namespace oar::pir
