// dist.<rule>_update: the optimizer step in a rank's program. Note [DistModel].
#include "distributed/static/update_ops.h"

#include <memory>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "distributed/static/collective_ops.h"
#include "distributed/static/step_slots.h"
#include "paddle_core/api/fused_update.h"
#include "paddle_core/base/errors.h"
#include "paddle_core/dispatch/trace.h"
#include "pir/ir/builder.h"
#include "pir/ir/ir_context.h"
#include "pir/trace/program_tracer.h"

namespace oar::dist {
namespace {

// The op names: every fused rule, plus adamw (adam with decoupled decay).
std::string op_name(const std::string& rule, bool flag) {
  return "dist." + std::string(rule == "adam" && flag ? "adamw" : rule) + "_update";
}

struct UpdateInputs {
  Tensor lr, step, skip;
};

bool skip_input(const pir::Operation* op) {
  pir::Attribute a = op->attr("skip_input");
  return a && a.as_bool();
}

bool holds_true(const DenseTensor& t) {
  OAR_ENFORCE(t.numel() == 1 && t.dtype() == DataType::BOOL, InvalidArgument,
              "dist update: the skip input must be one bool, got ", t.numel(), " elements of ", dtype_name(t.dtype()));
  bool v = false;
  copy_to_host(t, &v, sizeof v);
  return v;
}
thread_local UpdateInputs g_inputs;

pir::Attribute floats(pir::IrContext* c, const std::vector<double>& v) {
  std::vector<pir::Attribute> a;
  for (double x : v) a.push_back(c->float_attr(x));
  return c->array_attr(a);
}
std::vector<double> floats_of(const pir::Operation* op, const char* name) {
  pir::Attribute a = op->attr(name);
  OAR_ENFORCE(static_cast<bool>(a), InvalidArgument, op->name(), ": attribute '", name, "' is missing");
  std::vector<double> out;
  for (size_t i = 0; i < a.size(); ++i) out.push_back(a.element(i).as_number());
  return out;
}

DenseTensor copy_of(const DenseTensor& x) {
  DenseTensor out(x.dims(), x.dtype(), x.place());
  out.alloc();
  copy_into(x, &out);
  return out;
}

// What one update op does, read from its attributes once (its slot's state).
struct UpdateStep {
  std::string rule;
  size_t n = 0;
  std::vector<int64_t> lists;  // each state list's length (n, or 0: rmsprop's mean_grad when not centered)
  std::vector<double> lr_scale, wds, scalars;
  bool flag = false;
  bool inplace = false;
  bool skip = false;  // a last operand: when true, the parameters and states stay as they are

  // Operands: lr, step, params (n), grads (n), each state list[, skip]; results: params, states.
  void operator()(dispatch::KernelCall& call) const {
    size_t states = 0;
    for (int64_t l : lists) states += static_cast<size_t>(l);
    if (skip && holds_true(call.in(2 + 2 * n + states))) {
      std::vector<DenseTensor> outs;
      for (size_t i = 0; i < n; ++i) outs.push_back(inplace ? call.in(2 + i) : copy_of(call.in(2 + i)));
      for (size_t i = 0; i < states; ++i)
        outs.push_back(inplace ? call.in(2 + 2 * n + i) : copy_of(call.in(2 + 2 * n + i)));
      call.outputs = std::move(outs);
      return;
    }
    double lr = 0;
    int64_t step = 0;
    const DenseTensor& lr_t = call.in(0);
    const DenseTensor& step_t = call.in(1);
    OAR_ENFORCE(lr_t.numel() == 1 && lr_t.dtype() == DataType::FLOAT64 && step_t.numel() == 1 &&
                    step_t.dtype() == DataType::INT64,
                InvalidArgument, "dist.", rule,
                "_update: the learning rate must be one float64 and the step one int64");
    copy_to_host(lr_t, &lr, sizeof lr);
    copy_to_host(step_t, &step, sizeof step);
    std::vector<DenseTensor> outs;
    size_t total = n;
    for (int64_t l : lists) total += static_cast<size_t>(l);
    outs.reserve(total);
    auto take = [&](size_t i) { outs.push_back(inplace ? call.in(i) : copy_of(call.in(i))); };
    for (size_t i = 0; i < n; ++i) take(2 + i);
    size_t at = 2 + 2 * n;
    for (int64_t l : lists)
      for (int64_t j = 0; j < l; ++j) take(at++);
    phi::UpdateArgs a;
    size_t k = 0;
    for (size_t i = 0; i < n; ++i) a.params.push_back(&outs[k++]);
    std::vector<DenseTensor> grads;
    grads.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      const DenseTensor& g = call.in(2 + n + i);
      grads.push_back(g.is_contiguous() ? g : contiguous(g));
      a.grads.push_back(&grads.back());
    }
    for (int64_t l : lists) {
      a.states.emplace_back();
      for (int64_t j = 0; j < l; ++j) a.states.back().push_back(&outs[k++]);
    }
    for (size_t i = 0; i < n; ++i) a.lrs.push_back(lr * lr_scale[i]);
    a.wds = wds;
    a.scalars = scalars;
    a.flag = flag;
    a.step = step;
    api::fused_update(rule, a);
    call.outputs = std::move(outs);
  }
};

UpdateStep from_op(const pir::Operation* op) {
  UpdateStep s;
  const std::string& name = op->name();
  OAR_ENFORCE(is_update_op(name), InvalidArgument, "lower_collectives: ", name, " is not an update op");
  s.rule = name.substr(5, name.size() - 5 - 7);  // dist.<rule>_update
  if (s.rule == "adamw") s.rule = "adam";
  s.lr_scale = floats_of(op, "lr_scale");
  s.wds = floats_of(op, "weight_decay");
  s.scalars = floats_of(op, "scalars");
  pir::Attribute lists = op->attr("state_lists"), flag = op->attr("flag");
  OAR_ENFORCE(lists && flag, InvalidArgument, name, ": attributes 'state_lists' and 'flag' are required");
  s.lists = lists.as_shape();
  s.flag = flag.as_bool();
  s.skip = skip_input(op);
  s.n = s.lr_scale.size();
  size_t states = 0;
  for (int64_t l : s.lists) {
    OAR_ENFORCE(l == 0 || l == static_cast<int64_t>(s.n), InvalidArgument, name, ": a state list of ", l,
                " tensors for ", s.n, " parameters");
    states += static_cast<size_t>(l);
  }
  size_t want_states = 0, want_scalars = 0;
  for (const auto& r : phi::update_rules()) {
    if (s.rule == r.name) {
      want_states = r.num_states;
      want_scalars = r.num_scalars;
    }
  }
  OAR_ENFORCE(s.lists.size() == want_states && s.scalars.size() == want_scalars && s.wds.size() == s.n, InvalidArgument,
              name, ": ", s.lists.size(), " state lists, ", s.scalars.size(), " scalars and ", s.wds.size(),
              " weight decays for ", s.n, " parameters (", s.rule, " takes ", want_states, " state lists and ",
              want_scalars, " scalars)");
  const size_t skip = s.skip ? 1 : 0;
  OAR_ENFORCE(op->num_operands() == 2 + 2 * s.n + states + skip && op->num_results() == s.n + states, InvalidArgument,
              name, ": ", op->num_operands(), " operands and ", op->num_results(), " results for ", s.n,
              " parameters and ", states, " states", s.skip ? " and a skip input" : "");
  return s;
}

pir::ProgramTracer* program_tracer() { return dynamic_cast<pir::ProgramTracer*>(trace::active()); }

}  // namespace

bool is_update_op(const std::string& name) {
  if (name == "dist.adamw_update") return true;
  for (const auto& r : phi::update_rules())
    if (name == op_name(r.name, false)) return true;
  return false;
}

void set_update_inputs(const Tensor& lr, const Tensor& step, const Tensor& skip) { g_inputs = {lr, step, skip}; }

bool record_update(const std::string& rule, const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                   const std::vector<std::vector<Tensor>>& states, const std::vector<double>& lrs,
                   const std::vector<double>& wds, const std::vector<double>& scalars, bool flag, int64_t step) {
  pir::ProgramTracer* tracer = program_tracer();
  if (tracer == nullptr || !g_inputs.lr.defined() || !g_inputs.step.defined()) return false;
  const size_t n = params.size();
  OAR_ENFORCE(grads.size() == n && lrs.size() == n && wds.size() == n, InvalidArgument, rule, "_update: ", n,
              " parameters, ", grads.size(), " gradients, ", lrs.size(), " learning rates");
  std::vector<Tensor> inputs = {g_inputs.lr, g_inputs.step}, written, results;
  inputs.insert(inputs.end(), params.begin(), params.end());
  inputs.insert(inputs.end(), grads.begin(), grads.end());
  std::vector<int64_t> lists;
  written = params;
  for (const auto& l : states) {
    OAR_ENFORCE(l.empty() || l.size() == n, InvalidArgument, rule, "_update: a state list of ", l.size(),
                " tensors for ", n, " parameters");
    lists.push_back(static_cast<int64_t>(l.size()));
    inputs.insert(inputs.end(), l.begin(), l.end());
    written.insert(written.end(), l.begin(), l.end());
  }
  const bool skip = g_inputs.skip.defined();
  if (skip) inputs.push_back(g_inputs.skip);
  {
    // The traced step's values: the update on copies (the eager tensors stay as they were).
    trace::TracerGuard pause(nullptr);
    std::vector<DenseTensor> outs;
    outs.reserve(written.size());
    for (const Tensor& t : written) outs.push_back(copy_of(t.dense()));
    const bool skipped = skip && holds_true(g_inputs.skip.dense());
    phi::UpdateArgs a;
    size_t k = 0;
    for (size_t i = 0; i < n; ++i) a.params.push_back(&outs[k++]);
    for (const Tensor& g : grads) a.grads.push_back(&g.dense());
    for (int64_t l : lists) {
      a.states.emplace_back();
      for (int64_t j = 0; j < l; ++j) a.states.back().push_back(&outs[k++]);
    }
    a.lrs = lrs;
    a.wds = wds;
    a.scalars = scalars;
    a.flag = flag;
    a.step = step;
    if (!skipped) api::fused_update(rule, a);
    for (DenseTensor& d : outs) results.emplace_back(std::move(d));
  }
  pir::IrContext* c = pir::IrContext::global();
  register_dist_dialect(c);
  std::vector<pir::NamedAttribute> attrs = {{"lr_scale", floats(c, lrs)},
                                            {"weight_decay", floats(c, wds)},
                                            {"scalars", floats(c, scalars)},
                                            {"flag", c->bool_attr(flag)},
                                            {"state_lists", c->shape_attr(lists)}};
  if (skip) attrs.push_back({"skip_input", c->bool_attr(true)});
  tracer->record_custom(op_name(rule, flag), inputs, std::move(attrs), results);
  for (size_t i = 0; i < written.size(); ++i) tracer->record_write(written[i], results[i]);
  return true;
}

void lower_update(pir::Operation* op, pir::Builder& b) {
  UpdateStep s = from_op(op);
  // In place when nothing after the op reads what it updates (each value read once by it).
  std::unordered_map<const pir::Operation*, size_t> order;
  size_t i = 0;
  for (pir::Operation* o : *op->parent_block()) order[o] = i++;
  const size_t here = order.at(op);
  const size_t first = 2, last = op->num_operands() - (s.skip ? 1 : 0);
  std::unordered_set<const void*> seen;
  bool inplace = true;
  for (size_t k = first; k < last && inplace; ++k) {
    if (k >= 2 + s.n && k < 2 + 2 * s.n) continue;  // gradients: only read
    pir::Value v = op->operand(k);
    inplace = seen.insert(v.impl()).second;
    for (pir::OpOperand* u = v.first_use(); u != nullptr && inplace; u = u->next_use()) {
      if (u->owner() == op) continue;
      auto it = order.find(u->owner());
      inplace = it != order.end() && it->second < here;
    }
  }
  s.inplace = inplace;
  std::string key = op->name() + (inplace ? " inplace" : "");
  for (const auto& a : op->attributes()) key += " " + std::string(a.name) + "=" + a.value.str();
  const std::string name = step_slot("dist_update", key, [&s] { return SlotFn(s); });
  pir::IrContext* ctx = op->info()->ctx;
  std::vector<pir::Type> types;
  for (size_t r = 0; r < op->num_results(); ++r) types.push_back(op->result(r).type());
  b.set_insertion_point(op);
  pir::Operation* n = b.build("kernel.compiled_kernel", op->operands(), {{"kernel_name", ctx->str_attr(name)}}, types);
  // The results alias the operands' memory when in place: a set_parameter writing result k
  // into the parameter operand k reads is a copy onto itself, dropped.
  std::vector<pir::Operation*> drop;
  for (size_t r = 0; r < op->num_results(); ++r) {
    pir::Value res = op->result(r);
    const size_t k = r < s.n ? 2 + r : 2 + 2 * s.n + (r - s.n);
    const pir::Operation* def = op->operand(k).defining_op();
    for (pir::OpOperand* u = res.first_use(); u != nullptr && inplace; u = u->next_use()) {
      pir::Operation* w = u->owner();
      if (w->name() == "builtin.set_parameter" && def != nullptr && def->name() == "builtin.parameter" &&
          w->attr("name").as_string() == def->attr("name").as_string())
        drop.push_back(w);
    }
  }
  for (pir::Operation* w : drop) w->erase();
  std::vector<pir::Value> rs;
  for (size_t r = 0; r < n->num_results(); ++r) rs.push_back(n->result(r));
  op->replace_all_uses_with(rs);
  op->erase();
}

}  // namespace oar::dist
