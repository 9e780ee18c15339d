#include "pir/trace/program_tracer.h"

#include <algorithm>
#include <string>

#include "oar_generated/ops_api.h"
#include "paddle_core/autograd/grad_mode.h"
#include "pir/ir/verifier.h"
#include "pir/pass/pattern_rewrite.h"
#include "pir/pass/pipelines.h"

namespace oar::pir {

ProgramTracer::ProgramTracer(IrContext* ctx)
    : ctx_(ctx), program_(std::make_unique<Program>(ctx)), builder_(ctx, program_->block()) {}

ProgramTracer::~ProgramTracer() = default;

void ProgramTracer::bind(const Tensor& t, Value v) {
  map_[t.impl().get()] = Mapped{v, t.version(), scopes_.size()};
  keep_.push_back(t.impl());
  if (!scopes_.empty()) scopes_.back().bound.push_back(t.impl().get());
}

void ProgramTracer::add_input(const Tensor& t, const std::string& name, const std::vector<int64_t>& dims) {
  OAR_ENFORCE(program_ != nullptr, PreconditionNotMet, "to_static: the tracer has finished");
  OAR_ENFORCE(dims.size() == static_cast<size_t>(t.rank()), InvalidArgument, "to_static: input '", name,
              "' is declared with ", dims.size(), " dims but the tensor has shape ", t.dims());
  for (size_t i = 0; i < dims.size(); ++i)
    OAR_ENFORCE(dims[i] == -1 || dims[i] == t.dims()[i], InvalidArgument, "to_static: input '", name,
                "' is declared with size ", dims[i], " at dim ", i, " but the tensor has shape ", t.dims());
  Operation* op = builder_.build("builtin.input", {}, {{"name", ctx_->str_attr(name)}},
                                 {ctx_->tensor_type(t.dtype(), dims)});
  bind(t, op->result(0));
  declared_.push_back({t, op->result(0), name, false});
}

void ProgramTracer::add_parameter(const Tensor& t, const std::string& name) {
  OAR_ENFORCE(program_ != nullptr, PreconditionNotMet, "to_static: the tracer has finished");
  OAR_ENFORCE(program_->parameter(name) == nullptr, AlreadyExists, "to_static: parameter '", name,
              "' is declared twice");
  const auto& dims = t.dims();
  Value v = builder_.parameter(name, ctx_->tensor_type(t.dtype(), std::vector<int64_t>(dims.begin(), dims.end())));
  // Shares the tensor's storage: the program reads the parameter as it is when it runs.
  program_->set_parameter(name, std::shared_ptr<DenseTensor>(t.impl(), &t.impl()->dense));
  bind(t, v);
  declared_.push_back({t, v, name, true});
}

bool ProgramTracer::drop_parameter(const std::string& name) {
  OAR_ENFORCE(program_ != nullptr, PreconditionNotMet, "to_static: the tracer has finished");
  auto d = std::find_if(declared_.begin(), declared_.end(),
                        [&](const Declared& x) { return x.parameter && x.name == name; });
  if (d == declared_.end()) return true;
  if (!d->value.use_empty()) return false;
  map_.erase(d->tensor.impl().get());
  d->value.defining_op()->erase();
  program_->remove_parameter(name);
  declared_.erase(d);
  return true;
}

void ProgramTracer::note_capture(const Tensor& t, size_t depth) {
  // A value bound at depth d is defined in scope d-1; scopes d.. read it from outside.
  for (size_t i = depth; i < scopes_.size(); ++i) {
    if (scopes_[i].captured.insert(t.impl().get()).second) scopes_[i].captures.push_back(t);
  }
}

Value ProgramTracer::lookup(const Tensor& t, const char* op) {
  auto it = map_.find(t.impl().get());
  if (it != map_.end()) {
    OAR_ENFORCE(it->second.version == t.version(), Unimplemented, "to_static: ", op,
                " reads a tensor of shape ", t.dims(),
                " that was modified in place by an operation that cannot be converted (a write "
                "through another view of its memory, or a direct data write); use out-of-place ops");
    note_capture(t, it->second.depth);
    return it->second.value;
  }
  if (source_ == nullptr) return Value();
  auto src = source_->map_.find(t.impl().get());
  if (src == source_->map_.end() || src->second.version != t.version() || src->second.depth != 0) return Value();
  const Operation* def = src->second.value.defining_op();
  if (def != nullptr && def->name() == "builtin.constant") return Value();  // same data: a constant here too
  // Declared in the module block (a region being traced is not yet attached to its op).
  Builder top(ctx_, program_->block());
  Value v;
  if (def != nullptr && def->name() == "builtin.parameter") {
    const std::string name = def->attr("name").as_string();
    v = top.parameter(name, src->second.value.type());
    if (auto data = source_->program_ ? source_->program_->parameter(name) : nullptr) program_->set_parameter(name, data);
  } else {
    Operation* in = top.build("builtin.input", {}, {{"name", ctx_->str_attr("saved" + std::to_string(saved_.size()))}},
                              {src->second.value.type()});
    v = in->result(0);
    saved_.push_back(t);
  }
  map_[t.impl().get()] = Mapped{v, t.version(), 0};
  keep_.push_back(t.impl());
  note_capture(t, 0);
  return v;
}

std::vector<int64_t> ProgramTracer::dims_of(const Tensor& t) const {
  auto it = map_.find(t.impl().get());
  OAR_ENFORCE(it != map_.end(), InvalidArgument, "to_static: the tensor of shape ", t.dims(), " is not traced");
  return it->second.value.type().dims();
}

Value ProgramTracer::value_of(const Tensor& t, const char* op) {
  if (Value v = lookup(t, op)) return v;
  // A tensor the traced code did not compute and that is no input or parameter (a
  // captured tensor, or one made from Python data): its current value is a constant.
  Tensor data = t;
  if (!t.dense().is_contiguous()) {
    trace::TracerGuard pause(nullptr);
    data = ops::contiguous(t);
  }
  Value v = builder_.constant(data.dense());
  ++num_constants_;
  bind(t, v);
  return v;
}

bool ProgramTracer::is_traced(const Tensor& t) const {
  if (!t.defined()) return false;
  auto it = map_.find(t.impl().get());
  if (it == map_.end()) {
    // A backward trace reads the forward's computed values as saved<k> inputs.
    if (source_ == nullptr) return false;
    auto src = source_->map_.find(t.impl().get());
    if (src == source_->map_.end() || src->second.version != t.version() || src->second.depth != 0) return false;
    it = src;
  }
  const Operation* def = it->second.value.defining_op();
  return def == nullptr || def->name() != "builtin.constant";
}

Attribute ProgramTracer::to_attr(const trace::AttrValue& v) {
  struct Visit {
    IrContext* c;
    Attribute operator()(bool b) const { return c->bool_attr(b); }
    Attribute operator()(int64_t i) const { return c->int_attr(i); }
    Attribute operator()(double d) const { return c->float_attr(d); }
    Attribute operator()(const std::string& s) const { return c->str_attr(s); }
    Attribute operator()(const std::vector<int64_t>& v) const { return c->shape_attr(v); }
    Attribute operator()(const std::vector<double>& v) const {
      std::vector<Attribute> e;
      for (double d : v) e.push_back(c->float_attr(d));
      return c->array_attr(e);
    }
    Attribute operator()(DataType t) const { return c->dtype_attr(t); }
    Attribute operator()(const Place& p) const { return c->place_attr(p); }
    Attribute operator()(const Scalar& s) const { return c->scalar_attr(s); }
  };
  return std::visit(Visit{ctx_}, v);
}

void ProgramTracer::record(const char* op, std::span<const trace::Arg> inputs, std::span<const trace::NamedAttr> attrs,
                           std::span<const trace::Arg> outputs) {
  if (program_ == nullptr) return;
  const OpInfo* info = ctx_->op_info(std::string("pd_op.") + op);
  std::vector<Value> operands;
  for (const trace::Arg& a : inputs) {
    if (a.tensor != nullptr) {
      operands.push_back(value_of(*a.tensor, op));
    } else if (a.list != nullptr) {
      std::vector<Value> elems;
      for (const Tensor& t : *a.list) elems.push_back(value_of(t, op));
      operands.push_back(builder_.combine(elems));
    } else {
      operands.push_back(Value());
    }
  }
  std::vector<NamedAttribute> named;
  for (const auto& [name, value] : attrs) named.push_back({name, to_attr(value)});
  if (info != nullptr && info->has(kTraitRandom)) {
    for (Scope& s : scopes_) s.random = true;
  }
  Operation* o = nullptr;
  try {
    o = builder_.build(info, operands, std::move(named));
  } catch (const Error& e) {
    // The eager op accepted these tensors, so the IR op can only reject the declared
    // dynamic sizes (an attribute holding a size read in Python, say).
    OAR_THROW(Unimplemented, "to_static: pd_op.", op, " cannot take the dynamic sizes of its inputs: ", e.what());
  }
  size_t r = 0;
  auto check = [&](const Tensor& t, Value v) {
    // The IR's shape inference must agree with what the eager op produced.
    const Type ty = v.type();
    bool same = ty.is_tensor() && ty.dtype() == t.dtype() && ty.dims().size() == static_cast<size_t>(t.rank());
    for (size_t i = 0; same && i < ty.dims().size(); ++i) same = ty.dims()[i] == -1 || ty.dims()[i] == t.dims()[i];
    OAR_ENFORCE(same, Internal, "to_static: pd_op.", op, " infers ", ty.str(), " but the eager op gave shape ",
                t.dims(), " ", dtype_name(t.dtype()));
    bind(t, v);
  };
  for (const trace::Arg& a : outputs) {
    OAR_ENFORCE(r < o->num_results(), Internal, "to_static: pd_op.", op, " has fewer results than the eager op");
    if (a.tensor != nullptr) {
      check(*a.tensor, o->result(r++));
    } else if (a.list != nullptr) {
      std::vector<Value> parts = builder_.split(o->result(r++));
      OAR_ENFORCE(parts.size() == a.list->size(), Internal, "to_static: pd_op.", op, " infers ", parts.size(),
                  " list elements, the eager op gave ", a.list->size());
      for (size_t i = 0; i < parts.size(); ++i) check((*a.list)[i], parts[i]);
    }
  }
}

void ProgramTracer::record_inplace(const char* op, const Tensor& x, const Tensor& result) {
  if (program_ == nullptr) return;
  carry(x, op);
  auto it = map_.find(x.impl().get());
  OAR_ENFORCE(it == map_.end() || it->second.depth == scopes_.size(), Unimplemented, "to_static: ", op,
              " writes in place, inside a converted branch or loop body, to a tensor made outside it; "
              "return the new value instead");
  // The out-of-place op producing `result` was recorded just before; from now on x
  // holds that value.
  bind(x, value_of(result, op));
  write_ops_[x.impl().get()] = op;
}

void ProgramTracer::check_write(const Tensor& dst) {
  if (program_ == nullptr) return;
  OAR_ENFORCE(!(autograd::grad_enabled() && dst.requires_grad() && dst.is_leaf() && is_floating(dst.dtype())),
              Unimplemented, "to_static: the converted code writes into a tensor of shape ", dst.dims(),
              " that requires grad (copy_) while autograd records: the gradient would read the overwritten value. "
              "Update it under oar.no_grad() (then the program writes it in place), or outside the converted "
              "function");
  carry(dst, "copy_");  // as record_write does first (a loop variable written in the body)
  refuse_write(dst);
}

const ProgramTracer::Mapped& ProgramTracer::refuse_write(const Tensor& dst) {
  auto it = map_.find(dst.impl().get());
  OAR_ENFORCE(it != map_.end(), Unimplemented, "to_static: the converted code writes into a tensor of shape ",
              dst.dims(), " that is no input, parameter or buffer of the program and was not computed by it; "
              "register it as a buffer of the layer, or return the new value");
  const Operation* def = it->second.value.defining_op();
  OAR_ENFORCE(allow_input_writes_ || def == nullptr || def->name() != "builtin.input", Unimplemented,
              "to_static: the converted code writes into its input '", def ? def->attr("name").as_string() : "",
              "'; return the new value instead");
  OAR_ENFORCE(it->second.depth == scopes_.size(), Unimplemented,
              "to_static: a write inside a converted branch or loop body into a tensor made outside it");
  return it->second;
}

void ProgramTracer::record_write(const Tensor& dst, const Tensor& src) {
  if (program_ == nullptr) return;
  carry(dst, "copy_");
  const Mapped& b = refuse_write(dst);
  const Operation* def = b.value.defining_op();
  const std::vector<int64_t> typed = b.value.type().dims();  // dst in the program (-1: dynamic)
  Value v = value_of(src, "copy");
  const auto& d = dst.dims();
  std::vector<int64_t> dims(d.begin(), d.end());
  if (v.type().dims() != dims && v.type().dims() != typed)
    v = builder_.op("pd_op.reshape", {v}, {{"shape", ctx_->shape_attr(dims)}});
  if (def != nullptr && def->name() == "builtin.parameter") {
    builder_.set_parameter(v, def->attr("name").as_string());
    param_written_[def->attr("name").as_string()] = v;
  }
  bind(dst, v);
  write_ops_[dst.impl().get()] = "copy_";
}

std::string ProgramTracer::write_op(const Tensor& t) const {
  auto it = write_ops_.find(t.impl().get());
  return it == write_ops_.end() ? std::string() : it->second;
}

// Note [Input writes] (docs/notes/jit.md): an input the code wrote in place (x.add_(y),
// x.copy_(v)) holds a new value at the end: the output "write_input:<name>" carries it
// and the executor writes it into the caller's tensor. A parameter written by an
// in-place op gets its builtin.set_parameter here (copy_ records one as it happens). A
// declared tensor whose memory changed without the tracer seeing a write to it (a write
// through a view of it, or through another argument sharing its memory) is an error:
// the program could not reproduce it.
void ProgramTracer::finish_writes() {
  for (const Declared& d : declared_) {
    auto it = map_.find(d.tensor.impl().get());
    if (it == map_.end()) continue;
    OAR_ENFORCE(it->second.version == d.tensor.version(), Unimplemented,
                "to_static: ", d.parameter ? "parameter '" : "input '", d.name, "' of shape ", d.tensor.dims(),
                " was written through a view of its memory (a slice or reshape of it written in place, or the "
                "same tensor passed as two arguments); only writes into the tensor itself (x.add_(y), "
                "x.copy_(v), paddle.assign(v, output=x)) can be converted");
    Value now = it->second.value;
    // An annotation of a global program (dist.shard_annotate, Note [Static auto-parallel
    // passes] in docs/notes/distributed.md) rebinds the tensor to the same value: no write.
    Value base = now;
    while (base.defining_op() != nullptr && base.defining_op()->name() == "dist.shard_annotate")
      base = base.defining_op()->operand(0);
    if (now == d.value || base == d.value) continue;
    if (d.parameter) {
      auto w = param_written_.find(d.name);
      if (w == param_written_.end() || w->second != now) builder_.set_parameter(now, d.name);
      continue;
    }
    OAR_ENFORCE(now.type().dtype() == d.value.type().dtype(), Unimplemented, "to_static: input '", d.name,
                "' is written in place with dtype ", dtype_name(now.type().dtype()), " instead of its own ",
                dtype_name(d.value.type().dtype()));
    builder_.build("builtin.output", {now}, {{"name", ctx_->str_attr("write_input:" + d.name)}}, {});
  }
}

void ProgramTracer::record_alias(const Tensor& alias, const Tensor& of) {
  if (program_ == nullptr || !of.defined()) return;
  auto it = map_.find(of.impl().get());
  if (it != map_.end() && it->second.version != of.version()) return;
  if (Value v = lookup(of, "alias")) bind(alias, v);
}

void ProgramTracer::annotate(const Tensor& t, const std::string& name, const std::string& text) {
  if (program_ == nullptr || !t.defined()) return;
  auto it = map_.find(t.impl().get());
  if (it == map_.end()) return;
  Operation* def = it->second.value.defining_op();
  if (def != nullptr && def->info()->dialect == "pd_op") def->set_attr(name, ctx_->str_attr(text));
}

void ProgramTracer::record_custom(const std::string& name, const std::vector<Tensor>& inputs,
                                  std::vector<NamedAttribute> attrs, const std::vector<Tensor>& outputs) {
  if (program_ == nullptr) return;
  std::vector<Value> operands;
  for (const Tensor& t : inputs) operands.push_back(value_of(t, name.c_str()));
  std::vector<Type> types;
  for (const Tensor& t : outputs) {
    const auto& d = t.dims();
    types.push_back(ctx_->tensor_type(t.dtype(), std::vector<int64_t>(d.begin(), d.end())));
  }
  Operation* o = builder_.build(name, operands, std::move(attrs), std::move(types));
  for (size_t i = 0; i < outputs.size(); ++i) bind(outputs[i], o->result(i));
}

// ---- control flow
void ProgramTracer::push_scope() {
  Scope s;
  s.region = std::make_unique<Region>();
  Block* b = s.region->add_block();
  scopes_.push_back(std::move(s));
  builder_.set_insertion_point_to_end(b);
}

void ProgramTracer::pop_scope() {
  Scope& s = scopes_.back();
  last_captures_ = std::move(s.captures);
  last_random_ = s.random;
  for (const TensorImpl* k : s.bound) {
    auto it = map_.find(k);
    if (it != map_.end() && it->second.depth == scopes_.size()) map_.erase(it);
  }
  done_.push_back(std::move(s.region));
  scopes_.pop_back();
  builder_.set_insertion_point_to_end(scopes_.empty() ? program_->block() : scopes_.back().region->front());
}

Value ProgramTracer::cond_value(const Tensor& pred, const char* what) {
  OAR_ENFORCE(pred.dtype() == DataType::BOOL && pred.numel() == 1, InvalidArgument, what,
              ": the condition must be a bool tensor with one element, got shape ", pred.dims(), " ",
              dtype_name(pred.dtype()));
  return value_of(pred, what);
}

void ProgramTracer::discard_region() {
  OAR_ENFORCE(!done_.empty(), PreconditionNotMet, "to_static: no traced region to discard");
  done_.pop_back();
}

bool ProgramTracer::region_condition_fixed() const {
  OAR_ENFORCE(!done_.empty(), PreconditionNotMet, "while_loop: no traced loop body");
  return loop_condition_is_fixed(done_.back()->front());
}

void ProgramTracer::begin_branch() {
  OAR_ENFORCE(program_ != nullptr, PreconditionNotMet, "to_static: the tracer has finished");
  push_scope();
}

void ProgramTracer::end_branch(const std::vector<Tensor>& outs) {
  OAR_ENFORCE(!scopes_.empty(), PreconditionNotMet, "cond: end_branch without begin_branch");
  std::vector<Value> vals;
  for (const Tensor& t : outs) vals.push_back(value_of(t, "cond"));
  builder_.yield(vals);
  pop_scope();
}

void ProgramTracer::finish_if(const Tensor& pred, const std::vector<Tensor>& results) {
  OAR_ENFORCE(done_.size() >= 2, PreconditionNotMet, "cond: finish_if needs two traced branches");
  auto else_r = std::move(done_.back());
  done_.pop_back();
  auto then_r = std::move(done_.back());
  done_.pop_back();
  const Operation* ty = then_r->front()->back();
  const Operation* ey = else_r->front()->back();
  OAR_ENFORCE(ty->num_operands() == ey->num_operands() && ty->num_operands() == results.size(), InvalidArgument,
              "cond: true_fn returns ", ty->num_operands(), " tensors but false_fn returns ", ey->num_operands());
  std::vector<Type> types;
  for (size_t i = 0; i < ty->num_operands(); ++i) {
    OAR_ENFORCE(ty->operand(i).type() == ey->operand(i).type(), InvalidArgument, "cond: output ", i,
                " is ", ty->operand(i).type().str(), " in true_fn but ", ey->operand(i).type().str(),
                " in false_fn; both branches must return the same shapes and dtypes");
    types.push_back(ty->operand(i).type());
  }
  Value c = cond_value(pred, "cond");
  Operation* op = builder_.build("cf.if", {c}, {}, types, 2);
  op->region(0).take_body(*then_r);
  op->region(1).take_body(*else_r);
  for (size_t i = 0; i < results.size(); ++i) bind(results[i], op->result(i));
}

void ProgramTracer::begin_loop(const std::vector<Tensor>& init, const std::vector<Tensor>& placeholders,
                               const std::vector<std::vector<int64_t>>& dims) {
  OAR_ENFORCE(program_ != nullptr, PreconditionNotMet, "to_static: the tracer has finished");
  OAR_ENFORCE(init.size() == placeholders.size(), InvalidArgument, "while_loop: placeholders do not match loop_vars");
  OAR_ENFORCE(dims.empty() || dims.size() == init.size(), InvalidArgument, "while_loop: one shape per loop var");
  std::vector<Type> types;
  for (size_t i = 0; i < init.size(); ++i) {
    Type t = value_of(init[i], "while_loop").type();
    if (!dims.empty() && !dims[i].empty()) t = ctx_->tensor_type(t.dtype(), dims[i]);
    types.push_back(t);
  }
  push_scope();
  Block* body = scopes_.back().region->front();
  for (size_t i = 0; i < placeholders.size(); ++i) bind(placeholders[i], body->add_argument(types[i]));
}

void ProgramTracer::end_loop(const Tensor& next_cond, const std::vector<Tensor>& next) {
  OAR_ENFORCE(!scopes_.empty(), PreconditionNotMet, "while_loop: end_loop without begin_loop");
  Block* body = scopes_.back().region->front();
  OAR_ENFORCE(next.size() == body->num_arguments(), InvalidArgument, "while_loop: body returns ", next.size(),
              " values for ", body->num_arguments(), " loop_vars");
  std::vector<Value> vals{cond_value(next_cond, "while_loop")};
  for (size_t i = 0; i < next.size(); ++i) {
    Value v = value_of(next[i], "while_loop");
    OAR_ENFORCE(v.type().refines(body->argument(i).type()), InvalidArgument, "while_loop: loop_vars[", i, "] is ",
                body->argument(i).type().str(), " but the body returns ", v.type().str(),
                "; a loop variable must keep its shape and dtype");
    vals.push_back(v);
  }
  builder_.yield(vals);
  pop_scope();
}

void ProgramTracer::finish_while(const Tensor& cond, const std::vector<Tensor>& init,
                                 const std::vector<Tensor>& results, const std::string& name) {
  OAR_ENFORCE(!done_.empty(), PreconditionNotMet, "while_loop: finish_while needs a traced body");
  auto body = std::move(done_.back());
  done_.pop_back();
  std::vector<Value> operands{cond_value(cond, "while_loop")};
  std::vector<Type> types;
  const Block* b = body->front();
  OAR_ENFORCE(b->num_arguments() == init.size(), InvalidArgument, "while_loop: ", init.size(),
              " loop_vars for a body taking ", b->num_arguments());
  for (size_t i = 0; i < init.size(); ++i) {
    operands.push_back(value_of(init[i], "while_loop"));
    types.push_back(b->argument(i).type());  // the carried type (init may be more specific)
  }
  std::vector<NamedAttribute> attrs;
  if (!name.empty()) attrs.push_back({"name", ctx_->str_attr(name)});
  Operation* op = builder_.build("cf.while", operands, attrs, types, 1);
  op->region(0).take_body(*body);
  OAR_ENFORCE(results.size() == types.size(), InvalidArgument, "while_loop: ", results.size(), " results for ",
              types.size(), " loop_vars");
  for (size_t i = 0; i < results.size(); ++i) bind(results[i], op->result(i));
}

// ---- Note [Static While] (docs/notes/static.md)
void ProgramTracer::begin_open_loop() {
  OAR_ENFORCE(program_ != nullptr, PreconditionNotMet, "While: the tracer has finished");
  push_scope();
  scopes_.back().open = true;
}

void ProgramTracer::carry(const Tensor& t, const char* op) {
  if (scopes_.empty() || !scopes_.back().open) return;
  auto it = map_.find(t.impl().get());
  if (it == map_.end() || it->second.depth >= scopes_.size()) return;  // made inside the body
  OAR_ENFORCE(it->second.depth + 1 == scopes_.size(), Unimplemented, "While: ", op, " writes into a tensor of shape ",
              t.dims(),
              " made outside the enclosing loop or branch; only the block right outside a While "
              "holds its loop variables");
  const Value outer = it->second.value;
  const Operation* def = outer.defining_op();
  OAR_ENFORCE(def == nullptr || def->name() != "builtin.parameter", Unimplemented, "While: ", op,
              " writes into parameter '", def ? def->attr("name").as_string() : "",
              "' inside the loop; compute the new value in the loop and write it after");
  Scope& s = scopes_.back();
  Block* body = s.region->front();
  const Value arg = body->add_argument(outer.type());
  auto rewire = [&](Operation* o) {
    for (size_t i = 0; i < o->num_operands(); ++i)
      if (o->operand(i) == outer) o->set_operand(i, arg);
  };
  for (Operation* o : *body) {
    rewire(o);
    o->walk(rewire);
  }
  s.carried.emplace_back(t, outer);
  bind(t, arg);
}

void ProgramTracer::abandon_open_loop() {
  OAR_ENFORCE(!scopes_.empty() && scopes_.back().open, PreconditionNotMet, "While: no open loop body");
  const std::vector<std::pair<Tensor, Value>> carried = scopes_.back().carried;
  pop_scope();
  done_.pop_back();
  for (const auto& [t, outer] : carried) bind(t, outer);  // the values before the block
}

void ProgramTracer::end_open_loop(const Tensor& cond, const std::string& name) {
  OAR_ENFORCE(!scopes_.empty() && scopes_.back().open, PreconditionNotMet, "While: no open loop body");
  const std::vector<std::pair<Tensor, Value>> carried = scopes_.back().carried;
  size_t c = carried.size();
  for (size_t i = 0; i < carried.size(); ++i)
    if (carried[i].first.impl() == cond.impl()) c = i;
  if (c == carried.size()) {
    abandon_open_loop();
    OAR_THROW(InvalidArgument,
              "While: the block never writes the condition, so the loop would not end; "
              "write the next condition into it (paddle.assign(paddle.less_than(i, n), output=cond))");
  }
  Block* body = scopes_.back().region->front();
  std::vector<Value> vals{Value()};
  for (size_t i = 0; i < carried.size(); ++i) {
    Value v = value_of(carried[i].first, "While");
    if (!v.type().refines(body->argument(i).type())) {
      const std::string was = body->argument(i).type().str(), now = v.type().str();
      abandon_open_loop();
      OAR_THROW(InvalidArgument, "While: the block writes ", now, " into a loop variable of type ", was,
                "; a variable written in the block must keep its shape and dtype");
    }
    vals.push_back(v);
  }
  vals[0] = vals[c + 1];
  builder_.yield(vals);
  pop_scope();
  auto region = std::move(done_.back());
  done_.pop_back();
  std::vector<Value> operands{carried[c].second};
  std::vector<Type> types;
  for (size_t i = 0; i < carried.size(); ++i) {
    operands.push_back(carried[i].second);
    types.push_back(region->front()->argument(i).type());
  }
  std::vector<NamedAttribute> attrs;
  if (!name.empty()) attrs.push_back({"name", ctx_->str_attr(name)});
  Operation* op = builder_.build("cf.while", operands, attrs, types, 1);
  op->region(0).take_body(*region);
  for (size_t i = 0; i < carried.size(); ++i) bind(carried[i].first, op->result(i));
}

std::unique_ptr<Program> ProgramTracer::finish(const std::vector<Tensor>& outputs) {
  OAR_ENFORCE(program_ != nullptr, PreconditionNotMet, "to_static: the tracer has finished");
  OAR_ENFORCE(scopes_.empty(), PreconditionNotMet, "to_static: a branch or loop body is still being traced");
  for (size_t i = 0; i < outputs.size(); ++i) {
    OAR_ENFORCE(outputs[i].defined(), InvalidArgument, "to_static: output ", i, " is an undefined tensor");
    Value v = value_of(outputs[i], "output");
    builder_.build("builtin.output", {v}, {{"name", ctx_->str_attr("out" + std::to_string(i))}}, {});
  }
  finish_writes();
  verify_program(*program_);
  map_.clear();
  keep_.clear();
  declared_.clear();
  return std::move(program_);
}

namespace {

// Drops from `p`'s module block what the inference program does not need (snapshot's
// `prune`), last op first so a dropped op's operands may become unused in turn. With
// `writes_as_outputs` a parameter write becomes the output "write:<name>" instead.
void prune_for_inference(Program& p, const std::vector<std::string>& keep_inputs, bool writes_as_outputs) {
  std::vector<Operation*> ops;
  for (Operation* op : *p.block()) ops.push_back(op);
  for (auto it = ops.rbegin(); it != ops.rend(); ++it) {
    Operation* op = *it;
    const std::string& n = op->name();
    if (n == "builtin.set_parameter") {
      if (writes_as_outputs) {
        Builder b(p.context(), p.block());
        b.set_insertion_point(op);
        b.build("builtin.output", {op->operand(0)},
                {{"name", p.context()->str_attr("write:" + op->attr("name").as_string())}}, {});
      }
      op->erase();
      continue;
    }
    if (n == "builtin.output" || op->num_results() == 0) continue;
    if (!op->use_empty()) continue;
    bool droppable = is_pure(op) || n == "builtin.parameter" || n == "builtin.constant" || n == "builtin.combine" ||
                     n == "builtin.split";
    if (n == "builtin.input") {
      const std::string name = op->attr("name").as_string();
      droppable = std::find(keep_inputs.begin(), keep_inputs.end(), name) == keep_inputs.end();
    }
    if (droppable) op->erase();
  }
}

}  // namespace

std::unique_ptr<Program> ProgramTracer::snapshot(const std::vector<Tensor>& outputs,
                                                 const std::vector<std::string>& names, bool prune,
                                                 const std::vector<std::string>& keep_inputs, bool writes_as_outputs) {
  OAR_ENFORCE(program_ != nullptr, PreconditionNotMet, "static: the tracer has finished");
  OAR_ENFORCE(scopes_.empty(), PreconditionNotMet, "static: a branch or loop body is still being traced");
  OAR_ENFORCE(names.size() == outputs.size(), InvalidArgument, "static: ", outputs.size(), " outputs but ",
              names.size(), " names");
  std::vector<Operation*> added;
  for (size_t i = 0; i < outputs.size(); ++i) {
    OAR_ENFORCE(outputs[i].defined(), InvalidArgument, "static: output '", names[i], "' is an undefined tensor");
    Value v = value_of(outputs[i], "output");
    added.push_back(builder_.build("builtin.output", {v}, {{"name", ctx_->str_attr(names[i])}}, {}));
  }
  // The outputs belong to this run only: the program goes on growing without them.
  std::unique_ptr<Program> copy = clone_program(*program_);
  for (Operation* op : added) op->erase();
  if (prune) {
    prune_for_inference(*copy, keep_inputs, writes_as_outputs);
    // A program of its own, so its parameter table lists only the parameters it reads
    // (the clone's lists every one this program declared; a saved model would name them).
    auto own = std::make_unique<Program>(ctx_);
    std::vector<Operation*> ops;
    for (Operation* op : *copy->block()) ops.push_back(op);
    for (Operation* op : ops) {
      copy->block()->remove(op);
      own->block()->push_back(op);
      if (op->name() == "builtin.parameter") {
        const std::string name = op->attr("name").as_string();
        own->set_parameter(name, copy->parameter(name));
      }
    }
    copy = std::move(own);
  }
  verify_program(*copy);
  return copy;
}

}  // namespace oar::pir
