// The `decompose` pass: replaces every op that has a `decomp:` key by the primitive ops
// of that expression (Note [Decompositions] in docs/notes/ops.md, "How to add a
// decomposition" in docs/notes/cinn.md). The expression is the compiled
// oar::decomp::<op>; the pass runs it under the program tracer on placeholder inputs of
// the op's operand types and splices the traced ops in place of the op. Runs only under
// FLAGS_prim_all (the CINN switches turn it on).
//
// Dynamic dims: a decomposition may read sizes (mean divides by the reduced count). It
// is traced twice, with the dynamic dims at two different sizes; when the two traces
// differ the op depends on a dynamic size and is kept whole (never a wrong constant).
#include <string>
#include <unordered_map>
#include <vector>

#include <glog/logging.h>

#include "cinn/decompose/decomp_table.h"
#include "cinn/pipeline.h"
#include "oar_generated/ops_api.h"
#include "paddle_core/base/errors.h"
#include "paddle_core/dispatch/trace.h"
#include "pir/dialect/op/op_support.h"
#include "pir/ir/builder.h"
#include "pir/pass/pass.h"
#include "pir/trace/program_tracer.h"

namespace oar::cinn {
using namespace pir;  // NOLINT

namespace {

/// Traces `op`'s decomposition with dynamic dims set to `probe`; null when it cannot.
std::unique_ptr<Program> trace_decomposition(Operation* op, DecompFn fn, int64_t probe) {
  ProgramTracer tracer(op->info()->ctx);
  EvalContext ec;
  ec.info = op->info();
  ec.attrs = &op->attributes();
  for (size_t i = 0; i < op->num_operands(); ++i) {
    Value v = op->operand(i);
    if (!v) {
      ec.inputs.emplace_back();
      continue;
    }
    const Type t = v.type();
    if (!t.is_tensor()) return nullptr;  // lists (Tensor[]) stay whole
    std::vector<int64_t> dims = t.dims(), concrete = dims;
    for (int64_t& d : concrete)
      if (d < 0) d = probe;
    Tensor placeholder = ops::full(concrete, Scalar(0.5), t.dtype());
    tracer.add_input(placeholder, "in" + std::to_string(i), dims);
    ec.inputs.push_back({placeholder});
  }
  {
    trace::TracerGuard guard(&tracer);
    fn(ec);
  }
  // A map `decomp:` gives every result (layer_norm_grad's three), a string the first.
  if (ec.outputs.size() == op->num_results()) return tracer.finish(ec.outputs);
  return tracer.finish({ec.outputs.at(0)});
}

/// Whether `op`'s decomposition gives all its results (its `decomp:` was a map, which
/// the generator writes as one std::make_tuple).
bool gives_all_results(Operation* op) {
  return op->num_results() > 1 && op->info()->decomp.rfind("std::make_tuple(", 0) == 0;
}

/// Splices `traced` in place of `op`'s results (its outputs in order: all of them, or
/// the first).
void splice(Operation* op, const Program& traced) {
  Builder b(op->info()->ctx);
  b.set_insertion_point(op);
  std::unordered_map<const void*, Value> map;
  std::vector<Value> outs;
  for (Operation* t : *traced.block()) {
    if (t->name() == "builtin.input") {
      const std::string& name = t->attr("name").as_string();
      map[t->result(0).impl()] = op->operand(std::stoul(name.substr(2)));
      continue;
    }
    std::vector<Value> operands;
    for (Value v : t->operands()) operands.push_back(v ? map.at(v.impl()) : Value());
    if (t->name() == "builtin.output") {
      outs.push_back(operands.at(0));
      continue;
    }
    std::vector<Type> types;
    for (Value r : t->results()) types.push_back(r.type());
    Operation* c = b.build(t->info(), operands, t->attributes(), types);
    for (size_t i = 0; i < t->num_results(); ++i) map[t->result(i).impl()] = c->result(i);
  }
  OAR_ENFORCE(!outs.empty() && outs.size() <= op->num_results(), Internal, "decompose: ", op->name(),
              "'s decomposition gives ", outs.size(), " results, the op has ", op->num_results());
  for (size_t i = 0; i < outs.size(); ++i) {
    const Value out = outs[i];
    OAR_ENFORCE(out && out.type() == op->result(i).type(), Internal, "decompose: ", op->name(),
                "'s decomposition gives ", out ? out.type().str() : "nothing", " for result ", i, ", the op ",
                op->result(i).type().str());
  }
  for (size_t i = 0; i < outs.size(); ++i) op->result(i).replace_all_uses_with(outs[i]);
  op->erase();
}

bool decomposable(Operation* op) {
  if (gives_all_results(op)) return true;
  for (size_t i = 1; i < op->num_results(); ++i)
    if (!op->result(i).use_empty()) return false;  // statistics outputs are not part of it
  return op->num_results() > 0 && op->result(0).type().is_tensor();
}

bool has_dynamic_dim(Operation* op) {
  for (Value v : op->operands())
    if (v && v.type().is_tensor())
      for (int64_t d : v.type().dims())
        if (d < 0) return true;
  return false;
}

// Note [Short rows keep their kernel] (docs/notes/cinn.md): cross_entropy and its gradient
// over fewer than kMinDecomposedClasses classes keep the op's kernels. The generated row
// loops lose to them on rows shorter than two vectors (bench/cinn_select.py, fwd + bwd,
// one thread, Zen 4: [65536, 10] 0.44x, [65536, 20] 0.82x, [32768, 32] 1.46x,
// [16384, 100] 1.17x). A class dim unknown at compile time decomposes;
// FLAGS_cinn_decompose_short_rows decomposes them all (the tests' small class counts).
constexpr int64_t kMinDecomposedClasses = 32;

bool kernel_wins(Operation* op) {
  if (op->name() != "pd_op.cross_entropy" && op->name() != "pd_op.cross_entropy_grad") return false;
  const Value x = op->operand(0);
  if (!x || !x.type().is_tensor()) return false;
  const std::vector<int64_t> dims = x.type().dims();
  int64_t axis = opgen::a_int(op->attr("axis"), op->info(), op->info()->attr_index("axis"));
  if (axis < 0) axis += static_cast<int64_t>(dims.size());
  if (axis < 0 || axis >= static_cast<int64_t>(dims.size())) return false;
  return dims[axis] >= 0 && dims[axis] < kMinDecomposedClasses && !FLAGS_cinn_decompose_short_rows;
}

class DecomposePass : public Pass {
 public:
  DecomposePass() : Pass("decompose") {}
  bool run(Operation* anchor) override {
    if (!prim_enabled()) return false;
    const auto& table = decomp_table();
    bool changed = false;
    // Decompositions emit ops that may decompose further (layer_norm -> mean, var):
    // repeat until nothing changes. Ops kept whole are remembered, not retried.
    std::unordered_map<const Operation*, bool> kept;
    for (bool again = true; again;) {
      again = false;
      std::vector<Operation*> ops;
      anchor->walk([&](Operation* op) {
        if (table.count(op->name()) && !kept.count(op) && decomposable(op) && !kernel_wins(op)) ops.push_back(op);
      });
      for (Operation* op : ops) {
        DecompFn fn = table.at(op->name());
        std::unique_ptr<Program> a, b2;
        try {
          a = trace_decomposition(op, fn, 2);
          if (a && has_dynamic_dim(op)) {
            b2 = trace_decomposition(op, fn, 3);
            if (!b2 || b2->str() != a->str()) a.reset();
          }
        } catch (const std::exception& e) {
          VLOG(1) << "decompose: keeping " << op->name() << ": " << e.what();
          a.reset();
        }
        if (!a) {
          kept[op] = true;
          continue;
        }
        splice(op, *a);
        changed = again = true;
      }
    }
    return changed;
  }
};

}  // namespace

std::unique_ptr<Pass> create_decompose_pass() { return std::make_unique<DecomposePass>(); }

}  // namespace oar::cinn
