#include "paddle_core/dispatch/trace.h"

namespace oar::trace {
namespace {
thread_local Tracer* t_active = nullptr;

void set_active(Tracer* t) {
  t_active = t;
  dispatch::set_thread_active(dispatch::Layer::kTrace, t != nullptr);
}

std::vector<Arg> args_of(const std::vector<dispatch::Value>& vs) {
  std::vector<Arg> out;
  out.reserve(vs.size());
  for (const dispatch::Value& v : vs) {
    if (v.is_list) {
      out.emplace_back(v.list);
    } else {
      out.emplace_back(v.tensor);
    }
  }
  return out;
}

// The trace layer: runs the layers below, then reports the call. A side-effect op
// (print_tensor) does not act while its program is being traced, only when the program
// runs: its output is its input 0 (the contract of `side_effect` in the op definitions).
void trace_layer(dispatch::OpCall& call) {
  if (call.op->side_effect) {
    const Tensor& x = call.inputs.at(0).tensor;
    call.outputs.assign(1, dispatch::Value(Tensor(std::make_shared<TensorImpl>(x.dense()))));
  } else {
    dispatch::call_next(call, dispatch::Layer::kTrace);
  }
  Tracer* tracer = t_active;
  if (tracer == nullptr) return;
  std::vector<NamedAttr> attrs;
  attrs.reserve(call.attrs.size());
  for (size_t i = 0; i < call.attrs.size(); ++i) attrs.emplace_back(call.op->attrs[i], call.attrs[i]);
  const std::vector<Arg> ins = args_of(call.inputs), outs = args_of(call.outputs);
  tracer->record(call.op->name, ins, attrs, outs);
}

void trace_alias(const Tensor& alias, const Tensor& of) {
  if (t_active != nullptr) t_active->record_alias(alias, of);
}

const bool registered = [] {
  dispatch::set_layer(dispatch::Layer::kTrace, trace_layer, trace_alias);
  return true;
}();
}  // namespace

Tracer* active() { return t_active; }

TracerGuard::TracerGuard(Tracer* t) : prev_(t_active) { set_active(t); }
TracerGuard::~TracerGuard() { set_active(prev_); }

}  // namespace oar::trace
