// fold_parameters (inference): an op of the module's block whose operands are all
// parameters with data or constants runs once, at pass time, through its eval (the
// eager op), and its results become new parameters holding the data. constant_fold
// cannot do this: parameters are not constants (to_static feeds the layer's live
// tensors) and weights are far above its size limit. Only predictors run this pass,
// on a program whose parameters they own; it needs the Program (current_program())
// and does nothing on a bare op. Typical use: the conv + batch norm fusion leaves
// filter * scale / sqrt(var + eps) and the bias as ops on parameters.
#include <string>
#include <unordered_map>

#include "paddle_core/base/errors.h"
#include "pir/dialect/op/op_support.h"
#include "pir/ir/builder.h"
#include "pir/ir/program.h"
#include "pir/transforms/passes.h"

namespace oar::pir {
namespace {

Tensor tensor_of_dense(Attribute dense) { return Tensor(dense.as_dense_tensor()); }

class FoldParametersPass : public Pass {
 public:
  FoldParametersPass() : Pass("fold_parameters") {}

  bool run(Operation* anchor) override {
    Program* prog = current_program();
    if (prog == nullptr || prog->module() != anchor) return false;
    Builder b(prog->context());
    std::unordered_map<const void*, Tensor> known;  // value -> its data
    std::vector<Operation*> ops;
    for (Operation* op : *prog->block()) ops.push_back(op);
    bool changed = false;
    int counter = 0;
    for (Operation* op : ops) {
      const std::string& name = op->name();
      if (name == "builtin.parameter") {
        if (auto d = prog->parameter(op->attr("name").as_string())) known[op->result(0).impl()] = Tensor(DenseTensor(*d));
        continue;
      }
      if (name == "builtin.constant") {
        Attribute a = op->attr("value");
        if (a && a.is(AttrKind::kDense) && op->result(0).type().is_tensor())
          known[op->result(0).impl()] = tensor_of_dense(a);
        continue;
      }
      const OpInfo* info = op->info();
      if (!info->eval || !op->has(kTraitPure) || op->has(kTraitRandom) || op->num_regions() ||
          op->num_operands() == 0 || op->num_results() == 0)
        continue;
      bool list_out = false;
      for (const auto& o : info->outputs) list_out |= o.is_list;
      if (list_out) continue;
      EvalContext c;
      c.info = info;
      c.attrs = &op->attributes();
      c.inputs.resize(op->num_operands());
      bool ok = true;
      int64_t in_bytes = 0;
      for (size_t i = 0; ok && i < op->num_operands(); ++i) {
        Value v = op->operand(i);
        if (!v) continue;
        auto it = known.find(v.impl());
        if (it == known.end()) {
          ok = false;
          break;
        }
        c.inputs[i].push_back(it->second);
        in_bytes += it->second.numel() * static_cast<int64_t>(size_of(it->second.dtype()));
      }
      if (!ok) continue;
      int64_t out_bytes = 0;
      for (size_t i = 0; ok && i < op->num_results(); ++i) {
        Type t = op->result(i).type();
        ok = t.is_tensor() && !t.has_dynamic_dims();
        if (ok) out_bytes += t.numel() * static_cast<int64_t>(size_of(t.dtype()));
      }
      // Never trade a small parameter for a large one (an expand of a bias...).
      if (!ok || out_bytes > 2 * in_bytes + (1 << 20)) continue;
      try {
        info->eval(c);
      } catch (const Error&) {
        continue;  // e.g. no kernel for this dtype: the op runs later
      }
      if (c.outputs.size() != op->num_results()) continue;
      std::vector<Value> repl;
      b.set_insertion_point(op);
      for (size_t i = 0; i < c.outputs.size(); ++i) {
        Type t = op->result(i).type();
        DenseTensor d = contiguous(c.outputs[i].dense());
        if (d.dtype() != t.dtype() || d.dims().vec() != t.dims()) {
          repl.clear();
          break;
        }
        std::string pname;
        do {
          pname = "@folded." + std::to_string(counter++);
        } while (prog->parameter(pname) != nullptr);
        auto data = std::make_shared<DenseTensor>(std::move(d));
        prog->set_parameter(pname, data);
        Value p = b.parameter(pname, t);
        known[p.impl()] = Tensor(DenseTensor(*data));
        repl.push_back(p);
      }
      if (repl.size() != op->num_results()) continue;
      op->replace_all_uses_with(repl);
      op->erase();
      changed = true;
    }
    return changed;
  }
};

}  // namespace

std::unique_ptr<Pass> create_fold_parameters_pass() { return std::make_unique<FoldParametersPass>(); }

}  // namespace oar::pir
