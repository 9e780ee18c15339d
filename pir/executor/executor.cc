#include "pir/executor/executor.h"

#include <algorithm>
#include <chrono>
#include <unordered_set>

#include <gflags/gflags.h>

#include "paddle_core/api/op_utils.h"
#include "paddle_core/base/host_tracer.h"
#include "paddle_core/dispatch/dispatch.h"
#include "paddle_core/dispatch/fallback.h"
#include "pir/dialect/op/op_support.h"
#include "pir/pass/pass.h"
#include "pir/pass/pattern_rewrite.h"
#include "pir/serialize/serialize.h"
#include "pir/transforms/passes.h"

// Note [Bounded loops] (docs/notes/robustness.md): a cf.while's trip count is the user's.
DEFINE_int64(oar_max_while_iterations, 10000000,
             "Most iterations of one run of a converted while loop (cf.while) before it is an error; "
             "0: no limit");

namespace oar::pir {

namespace {
/// One executor step on paddle.profiler's timeline, named like the eager op ("conv2d").
void trace_op(const std::string& name, uint64_t start_ns) {
  std::string_view n = name;
  if (n.rfind("pd_op.", 0) == 0) n.remove_prefix(6);
  profiler::record(std::string(n), profiler::EventType::kOperator, start_ns, profiler::now_ns());
}
}  // namespace

struct Executor::Step {
  enum Kind {
    kInput,
    kParam,
    kSetParam,
    kConst,
    kCombine,
    kSplit,
    kOutput,
    kWriteInput,
    kKernel,
    kIf,
    kWhile,
    kYield
  } kind = kKernel;
  const Operation* op = nullptr;
  std::vector<int> in;                // operand slots (-1: absent optional)
  std::vector<int> out;               // result slots
  std::vector<int> release;           // slots nothing reads after this step
  int index = 0;                      // kInput / kOutput: position
  int list_result = -1;               // kKernel: the result that is a list, if any
  int profile = -1;                   // kKernel: entry in profile_
  // kKernel: the op's kernel step, its resolved kernel, its attributes decoded once.
  dispatch::KernelStep kstep = nullptr;
  const OpInfo* eval_info = nullptr;  // the op-dialect op (differentiable runs call its eager API)
  void* kernel = nullptr;
  const DeviceContext* dctx = nullptr;
  std::vector<dispatch::AttrValue> attrs;
  // kKernel of an `inplace_kernel` op (scatter, slice_scatter, append_row): output 0
  // may take input 0's memory when this step is its last reader in the block (`donate`)
  // and, at run time, nothing else holds that tensor or its memory (Note [Donated
  // inputs]); `grows`: the output is larger (append_row).
  bool inplace_kernel = false;
  bool grows = false;
  bool donate = false;
  // kKernel lowered to the CPU kernel on a device place (Note [Lowering for a place]):
  // inputs are copied to the host for it and its outputs back to the place.
  bool fallback = false;
  bool compiled = false;  // kernel.compiled_kernel
  // Note [Input writes]: per result, the write step (index into steps_) whose target's
  // memory the result may be computed in, or -1.
  std::vector<int> write_into;
  std::string name;                   // kParam
  Tensor constant;                    // kConst
  std::vector<Steps> regions;         // kIf: then, else; kWhile: the body
  std::vector<int> args;              // kWhile: the body's block-argument slots
  std::string loop_name;              // kWhile: how errors name the loop
  bool fixed_cond = false;            // kWhile: the body's condition never changes
  std::vector<int> reads;             // every slot read, including by nested regions
  // kKernel, reused across runs: the call (its outputs keep their capacity) and the
  // slots it reads (a donated input 0 is moved into `donated`).
  mutable dispatch::KernelCall call;
  mutable std::vector<const std::vector<Tensor>*> in_ptrs;
  mutable std::vector<Tensor> donated;
  mutable std::vector<std::vector<Tensor>> host_in;  // a fallback step's host inputs
  mutable std::shared_ptr<DenseTensor> param_data;  // kParam/kSetParam: the program data last wrapped
  mutable Tensor param_tensor;                      // ... and its Tensor handle
};

namespace {
Tensor tensor_of(const DenseTensor& d) { return Tensor(DenseTensor(d)); }

/// A copy of `d` on `place` (through the devices' copy kernels and tables).
DenseTensor on_place(const DenseTensor& d, const Place& place) {
  DenseTensor out(d.dims(), d.dtype(), place);
  out.alloc();
  copy_into(d, &out);
  return out;
}

Tensor constant_tensor(Attribute dense) { return Tensor(dense.as_dense_tensor()); }
}  // namespace

Tensor Executor::parameter(const Step& st, const std::unordered_map<std::string, Tensor>* params) const {
  if (params != nullptr) {
    auto it = params->find(st.name);
    if (it != params->end()) {
      OAR_ENFORCE(it->second.place() == place_, InvalidArgument, "Executor.run: parameter '", st.name, "' is on ",
                  it->second.place().str(), " but the program runs on ", place_.str());
      return it->second;
    }
  }
  std::shared_ptr<DenseTensor> d = program_.parameter(st.name);
  OAR_ENFORCE(d != nullptr, NotFound, "Executor.run: the program has no data for parameter '", st.name, "'");
  if (d != st.param_data) {  // wrap the program's data once, not on every run
    st.param_data = d;
    // ... and move it to the run place once: later runs read (and set_parameter writes)
    // the executor's copy there.
    st.param_tensor = d->place() == place_ ? tensor_of(*d) : Tensor(on_place(*d, place_));
  }
  return st.param_tensor;
}

namespace {
bool holds_op_dialect(const Block* block) {
  for (const Operation* op : *block) {
    if (op->info()->dialect == "pd_op") return true;
    for (size_t r = 0; r < op->num_regions(); ++r)
      if (holds_op_dialect(op->region(r).front())) return true;
  }
  return false;
}
}  // namespace

Executor::Executor(const Program& program, const Place& place) : program_(program), place_(place) {
  const Program* run = &program;
  if (holds_op_dialect(program.block())) {
    // Note [Kernel-level programs]: the executor runs kernels only; a program of the op
    // dialect is lowered for this place on a copy (parameters are read from `program`).
    lowered_ = deserialize_program(program.context(), serialize_program(program, false), false);
    PassManager pm;
    pm.add_pass(create_lower_to_kernel_pass(place));
    pm.run(*lowered_);
    run = lowered_.get();
  }
  steps_ = plan_block(run->block());
  plan_liveness(steps_);
  plan_writes();
  slots_.resize(num_slots_);
}

// Note [Input writes] (docs/notes/jit.md): a value the program writes back into an
// input (output write_input:<name>) or a parameter (builtin.set_parameter) is computed
// straight into that tensor's memory when its producer is a compiled group
// (kernel.compiled_kernel, whose runtime decides whether the group may overwrite what
// it reads, cinn/runtime) and no step after the producer reads the tensor's old value;
// the write step then only bumps the version. Otherwise the write step copies. Only
// the module block's writes, each target written once.
void Executor::plan_writes() {
  std::unordered_map<std::string, int> writes;  // target -> number of write steps
  auto target_key = [](const Step& st) {
    return st.kind == Step::kSetParam ? "p:" + st.name : "i:" + std::to_string(st.index);
  };
  for (const Step& st : steps_)
    if (st.kind == Step::kSetParam || st.kind == Step::kWriteInput) ++writes[target_key(st)];
  for (size_t w = 0; w < steps_.size(); ++w) {
    const Step& ws = steps_[w];
    if ((ws.kind != Step::kSetParam && ws.kind != Step::kWriteInput) || writes[target_key(ws)] != 1) continue;
    const int v = ws.in[0];
    int old = -1;  // the slot of the target's old value
    for (const Step& st : steps_)
      if ((ws.kind == Step::kWriteInput && st.kind == Step::kInput && st.index == ws.index) ||
          (ws.kind == Step::kSetParam && st.kind == Step::kParam && st.name == ws.name))
        old = st.out[0];
    for (size_t p = 0; p < w; ++p) {
      Step& ps = steps_[p];
      auto r = std::find(ps.out.begin(), ps.out.end(), v);
      if (r == ps.out.end()) continue;
      if (ps.kind != Step::kKernel || !ps.compiled) break;
      bool read_after = false;
      for (size_t s2 = p + 1; s2 < steps_.size() && old >= 0 && !read_after; ++s2)
        read_after = std::count(steps_[s2].reads.begin(), steps_[s2].reads.end(), old) > 0;
      bool taken = false;  // another result of the step already writes this target
      for (int x : ps.write_into) taken |= x >= 0 && target_key(steps_[x]) == target_key(ws);
      if (read_after || taken) break;
      ps.write_into.resize(ps.out.size(), -1);
      ps.write_into[r - ps.out.begin()] = static_cast<int>(w);
      break;
    }
  }
}

const std::vector<const DenseTensor*>*& write_into_targets() {
  thread_local const std::vector<const DenseTensor*>* targets = nullptr;
  return targets;
}

Tensor Executor::write_target(const Step& st, const std::vector<Tensor>& inputs,
                              const std::unordered_map<std::string, Tensor>* params) const {
  return st.kind == Step::kSetParam ? parameter(st, params) : inputs[st.index];
}

bool Executor::writable_target(const Tensor& t, const std::vector<Tensor>& inputs,
                               const std::unordered_map<std::string, Tensor>* params) const {
  if (!t.defined() || t.place() != place_ || !t.dense().is_contiguous() || t.dense().storage() == nullptr ||
      t.dense().storage().use_count() != 1)
    return false;
  int same = 0;  // the target itself is one argument; any other on its memory forbids it
  for (const Tensor& x : inputs) same += x.defined() && x.dense().storage() == t.dense().storage();
  if (params != nullptr)
    for (const auto& [n, x] : *params) same += x.defined() && x.dense().storage() == t.dense().storage();
  return same <= 1;
}

// Liveness of one block: a slot defined in this block is dropped after the last step
// that reads it (a cf step reads whatever its regions read), or right after the step
// defining it when nothing does. Slots of enclosing blocks are left to those blocks.
//
// Note [Donated inputs]: ops whose definition says `inplace_kernel` (scatter and
// slice_scatter write a new version of their input 0 with its shape, append_row one row
// more) may give input 0's memory to their output (the step's donor, Note [Donated
// outputs] in paddle_core/api/op_utils.h)
// when the step is the last to read input 0: a value defined in this block or one of
// the block's arguments (slots of enclosing blocks are read again by later
// iterations), not also another operand, and at run time its TensorImpl and storage
// have no other owner (a constant, a parameter, an input or a view always has one). A
// cf.while carrying a buffer that each iteration writes one row of (the RNN time loop)
// or appends one to (a list, TensorList) then works in place instead of copying the
// whole buffer per iteration; append_row grows its memory by doubling. The first
// iteration still copies, as the initial value is also held outside the loop.
void Executor::plan_liveness(Steps& steps, const std::vector<int>& block_args) {
  {
    std::unordered_map<int, int> last_read;
    std::unordered_map<int, bool> own;
    for (int a : block_args) own[a] = true;
    for (size_t s = 0; s < steps.size(); ++s) {
      for (int i : steps[s].reads) last_read[i] = static_cast<int>(s);
      for (int o : steps[s].out) own[o] = true;
    }
    for (size_t s = 0; s < steps.size(); ++s) {
      Step& st = steps[s];
      if (!st.inplace_kernel || st.in.empty() || st.in[0] < 0) continue;
      const int x = st.in[0];
      st.donate = own.count(x) && last_read[x] == static_cast<int>(s) &&
                  std::count(st.in.begin(), st.in.end(), x) == 1;
    }
  }
  std::unordered_map<int, int> last;
  std::vector<int> defined;
  for (size_t s = 0; s < steps.size(); ++s) {
    for (int o : steps[s].out) {
      last[o] = static_cast<int>(s);
      defined.push_back(o);
    }
    for (int a : steps[s].args) defined.push_back(a);
  }
  for (size_t s = 0; s < steps.size(); ++s)
    for (int i : steps[s].reads)
      if (last.count(i)) last[i] = static_cast<int>(s);
  for (int slot : defined) {
    auto it = last.find(slot);
    if (it != last.end()) steps[it->second].release.push_back(slot);
  }
  for (Step& st : steps)
    for (Steps& r : st.regions) plan_liveness(r, st.kind == Step::kWhile ? st.args : std::vector<int>{});
}

Executor::~Executor() = default;

size_t Executor::num_steps() const { return steps_.size(); }

int Executor::slot_of(Value v) {
  auto it = slot_index_.find(v.impl());
  if (it != slot_index_.end()) return it->second;
  const int s = num_slots_++;
  slot_index_.emplace(v.impl(), s);
  return s;
}

Executor::Steps Executor::plan_block(const Block* block) {
  Steps steps;
  for (const Operation* op : *block) {
    Step st;
    st.op = op;
    const std::string& name = op->name();
    for (size_t i = 0; i < op->num_operands(); ++i) {
      Value v = op->operand(i);
      if (!v) {
        st.in.push_back(-1);
        continue;
      }
      auto it = slot_index_.find(v.impl());
      OAR_ENFORCE(it != slot_index_.end(), InvalidArgument, "Executor: ", name, " reads a value defined later");
      st.in.push_back(it->second);
    }
    for (size_t r = 0; r < op->num_results(); ++r) st.out.push_back(slot_of(op->result(r)));
    if (name == "builtin.input") {
      st.kind = Step::kInput;
      st.index = static_cast<int>(input_names_.size());
      input_names_.push_back(op->attr("name").as_string());
      input_values_.push_back(op->result(0));
    } else if (name == "builtin.parameter") {
      st.kind = Step::kParam;
      st.name = op->attr("name").as_string();
    } else if (name == "builtin.set_parameter") {
      st.kind = Step::kSetParam;
      st.name = op->attr("name").as_string();
    } else if (name == "builtin.constant") {
      st.kind = Step::kConst;
      st.constant = constant_tensor(op->attr("value"));
      if (st.constant.place() != place_) st.constant = Tensor(on_place(st.constant.dense(), place_));
    } else if (name == "builtin.combine") {
      st.kind = Step::kCombine;
    } else if (name == "builtin.split") {
      st.kind = Step::kSplit;
    } else if (name == "builtin.output" && op->attr("name").as_string().rfind("write_input:", 0) == 0) {
      // Note [Input writes]: the value the program leaves in input <name>.
      const std::string in = op->attr("name").as_string().substr(12);
      auto it = std::find(input_names_.begin(), input_names_.end(), in);
      OAR_ENFORCE(it != input_names_.end(), InvalidArgument, "Executor: output 'write_input:", in,
                  "' names no input of the program");
      st.kind = Step::kWriteInput;
      st.index = static_cast<int>(it - input_names_.begin());
      written_inputs_.push_back(st.index);
    } else if (name == "builtin.output") {
      st.kind = Step::kOutput;
      st.index = static_cast<int>(output_names_.size());
      output_names_.push_back(op->attr("name").as_string());
    } else if (name == "cf.yield") {
      st.kind = Step::kYield;
    } else if (name == "cf.if" || name == "cf.while") {
      st.kind = name == "cf.if" ? Step::kIf : Step::kWhile;
      if (st.kind == Step::kWhile) {
        const Attribute n = op->attr("name");
        st.loop_name =
            "cf.while " + (n && n.is(AttrKind::kString) && !n.as_string().empty() ? "'" + n.as_string() + "'"
                                                                                  : "#" + std::to_string(num_loops_));
        ++num_loops_;
        st.fixed_cond = loop_condition_is_fixed(op->region(0).front());
      }
      for (size_t r = 0; r < op->num_regions(); ++r) {
        const Block* b = op->region(r).front();
        for (size_t a = 0; a < b->num_arguments(); ++a) st.args.push_back(slot_of(b->argument(a)));
        st.regions.push_back(plan_block(b));
      }
    } else {
      plan_kernel(st, op);
    }
    // What the step reads: its operands, and whatever its regions read from outside them.
    st.reads = st.in;
    for (const Steps& r : st.regions) {
      std::unordered_map<int, bool> inner;
      for (int a : st.args) inner[a] = true;
      for (const Step& s2 : r)
        for (int o : s2.out) inner[o] = true;
      for (const Step& s2 : r)
        for (int i : s2.reads)
          if (i >= 0 && !inner.count(i)) st.reads.push_back(i);
    }
    steps.push_back(std::move(st));
  }
  return steps;
}

namespace {
/// An IR attribute as the boxed value of the op definition's type `type`.
dispatch::AttrValue attr_value(Attribute a, const OpInfo* info, size_t i) {
  const std::string& type = info->attrs[i].type;
  if (type == "int") return opgen::a_int(a, info, i);
  if (type == "float") return opgen::a_float(a, info, i);
  if (type == "bool") return opgen::a_bool(a, info, i);
  if (type == "str") return opgen::a_str(a, info, i);
  if (type == "int[]") return opgen::a_ints(a, info, i);
  if (type == "float[]") return opgen::a_floats(a, info, i);
  if (type == "DataType") return opgen::a_dtype(a, info, i);
  if (type == "Place") return opgen::a_place(a, info, i);
  if (type == "Scalar") return opgen::a_scalar(a, info, i);
  OAR_THROW(Internal, "Executor: ", info->name, ": attribute '", info->attrs[i].name, "' has unknown type ", type);
}
}  // namespace

// A kernel-dialect op becomes a step calling its op's kernel step with the kernel its
// key names, resolved now (Note [Kernel-level programs]).
void Executor::plan_kernel(Step& st, const Operation* op) {
  const std::string& name = op->name();
  IrContext* ctx = op->info()->ctx;
  st.kind = Step::kKernel;
  std::string profile_name = name;
  if (name == "kernel.phi_kernel") {
    const OpInfo* info = ctx->op_info(op->attr("op_name").as_string());
    const OpInfo* base = info->inplace_of.empty() ? info : ctx->op_info(info->inplace_of);
    OAR_ENFORCE(base->name.rfind("pd_op.", 0) == 0, Unimplemented, "Executor: ", info->name,
                " is not an op of the op dialect");
    const dispatch::KernelStepInfo k = dispatch::kernel_step(base->name.substr(6));
    OAR_ENFORCE(k.fn != nullptr, Unimplemented, "Executor: ", base->name, " has no kernel step");
    st.kstep = k.fn;
    st.inplace_kernel = k.inplace_kernel;
    st.grows = k.grows;
    for (size_t i = 0; i < info->attrs.size(); ++i)
      st.attrs.push_back(attr_value(lookup_attr(info, &op->attributes(), i), info, i));
    for (size_t o = 0; o < info->outputs.size(); ++o)
      if (info->outputs[o].is_list) st.list_result = static_cast<int>(o);
    if (base->view.empty()) {
      // The key's backend is the device type lower_to_kernel chose: the place's, or the
      // CPU's for an op the fallback runs (Note [Lowering for a place]).
      const Attribute key = op->attr("kernel_key");
      const std::string& kernel = op->attr("kernel_name").as_string();
      const auto device = static_cast<DeviceType>(key.backend());
      OAR_ENFORCE(device == place_.type() || device == DeviceType::kCPU, InvalidArgument, "Executor: ", info->name,
                  " was lowered for ", kernel_device_label(device), " kernels but the program runs on ", place_.str());
      st.fallback = device != place_.type();
      OAR_ENFORCE(!st.fallback || dispatch::fallback_allowed(place_), InvalidType, "Executor: ", info->name, " has no ",
                  kernel_device_label(place_.type()), " kernel for dtype ", dtype_name(key.as_dtype()),
                  " and FLAGS_enable_api_kernel_fallback is off, so it does not run on the CPU");
      if (st.fallback) dispatch::warn_fallback(base->name.substr(6), place_.type(), key.as_dtype());
      st.kernel = KernelRegistry::instance().find(kernel, device, key.as_dtype());
      OAR_ENFORCE(st.kernel != nullptr, NotFound, "Executor: no ", kernel_device_label(device), " kernel '", kernel,
                  "' for dtype ", dtype_name(key.as_dtype()), " (op ", info->name, ")");
    }
    profile_name = info->name;
    st.eval_info = info;
  } else if (name == "kernel.compiled_kernel") {
    // A kernel registered at run time (a compiled fusion): its step computes the results.
    const std::string& kernel = op->attr("kernel_name").as_string();
    const dispatch::KernelStepInfo k = dispatch::kernel_step(kernel);
    OAR_ENFORCE(k.fn != nullptr, NotFound, "Executor: no kernel step registered as '", kernel, "'");
    st.kstep = k.fn;
    st.compiled = true;
    profile_name = "kernel." + kernel;
    // A compiled fusion is host code (Note [Places the compiler serves] in cinn/pipeline.cc):
    // on a device it runs as a CPU kernel the fallback runs, on host copies of its inputs.
    // The distributed steps (transfers, optimizer updates) run where their tensors are:
    // an update on host copies would update the copies.
    st.fallback = !place_.is_cpu() && k.host_code;
    OAR_ENFORCE(!st.fallback || dispatch::fallback_allowed(place_), InvalidType, "Executor: the compiled kernel ",
                kernel, " is host code and FLAGS_enable_api_kernel_fallback is off, so it does not run on ",
                place_.str());
    if (st.fallback) {
      const Type t = op->num_results() > 0 ? op->result(0).type() : Type();
      dispatch::warn_fallback(kernel, place_.type(), t.is_tensor() ? t.dtype() : DataType::UNDEFINED);
    }
  } else {
    OAR_THROW(Unimplemented, "Executor: cannot run ", name,
              " (the executor runs kernel-dialect programs; lower_to_kernel leaves no op of this dialect)");
  }
  OAR_ENFORCE(op->num_regions() == 0, Unimplemented, "Executor: ", name, " has regions");
  st.dctx = &device_context(st.fallback ? CPUPlace() : place_);
  auto p = std::find_if(profile_.begin(), profile_.end(), [&](const OpProfile& e) { return e.name == profile_name; });
  if (p == profile_.end()) p = profile_.insert(profile_.end(), OpProfile{profile_name});
  st.profile = static_cast<int>(p - profile_.begin());
}

std::vector<Type> Executor::input_types() const {
  std::vector<Type> out;
  for (Value v : input_values_) out.push_back(v.type());
  return out;
}

namespace {
bool truth(const Tensor& t, const char* op) {
  OAR_ENFORCE(t.defined() && t.numel() == 1 && t.dtype() == DataType::BOOL, InvalidArgument, "Executor: ", op,
              " needs a one-element bool condition");
  bool v = false;  // one element: no stride matters; device memory is read through its table
  copy_to_host(t.dense(), &v, sizeof(bool));
  return v;
}
}  // namespace

std::vector<Tensor> Executor::run(const std::vector<Tensor>& inputs,
                                  const std::unordered_map<std::string, Tensor>* params) {
  OAR_ENFORCE(inputs.size() == input_names_.size(), InvalidArgument, "Executor.run: the program takes ",
              input_names_.size(), " inputs, got ", inputs.size());
  for (int w : written_inputs_) {  // Note [Input writes]
    const Tensor& t = inputs[w];
    if (!t.defined() || t.dense().storage() == nullptr) continue;
    for (size_t j = 0; j < inputs.size(); ++j)
      OAR_ENFORCE(
          static_cast<int>(j) == w || !inputs[j].defined() || inputs[j].dense().storage() != t.dense().storage(),
          InvalidArgument, "Executor.run: the program writes into input '", input_names_[w], "' (shape ", t.dims(),
          ") in place, and input '", input_names_[j],
          "' shares its memory (the same tensor passed twice, or views of one tensor); pass separate tensors");
  }
  std::vector<Tensor> results(output_names_.size());
  // On an error the slots are cleared so no buffer outlives the failed run.
  struct Clear {
    std::vector<std::vector<Tensor>>& s;
    size_t& live;
    ~Clear() {
      for (auto& v : s) v.clear();
      live = 0;
    }
  } clear{slots_, live_};
  run_steps(steps_, inputs, params, results);
  return results;
}

std::vector<Tensor> Executor::run_steps(const Steps& steps, const std::vector<Tensor>& inputs,
                                        const std::unordered_map<std::string, Tensor>* params,
                                        std::vector<Tensor>& results) {
  using Clock = std::chrono::steady_clock;
  std::vector<Tensor> yielded;
  for (const Step& st : steps) {
    switch (st.kind) {
      case Step::kInput: {
        Tensor t = inputs[st.index];
        const Type ty = input_values_[st.index].type();
        OAR_ENFORCE(t.defined(), InvalidArgument, "Executor.run: input '", input_names_[st.index], "' is undefined");
        bool ok = t.dtype() == ty.dtype() && static_cast<size_t>(t.rank()) == ty.dims().size();
        for (size_t i = 0; ok && i < ty.dims().size(); ++i) ok = ty.dims()[i] < 0 || ty.dims()[i] == t.dims()[i];
        OAR_ENFORCE(ok, InvalidArgument, "Executor.run: input '", input_names_[st.index], "' expects ", ty.str(),
                    ", got shape ", t.dims(), " ", dtype_name(t.dtype()));
        if (t.place() != place_) t = Tensor(on_place(t.dense(), place_));  // a host input of a device run
        slots_[st.out[0]] = {std::move(t)};
        break;
      }
      case Step::kParam: slots_[st.out[0]] = {parameter(st, params)}; break;
      case Step::kSetParam: {  // writes the parameter's memory, as the eager code did
        Tensor target = parameter(st, params);
        const Tensor& src = slots_[st.in[0]].at(0);
        OAR_ENFORCE(src.dims() == target.dims() && src.dtype() == target.dtype(), InvalidArgument,
                    "Executor: builtin.set_parameter '", st.name, "' writes shape ", src.dims(), " into ",
                    target.dims());
        ops::detail::write_back(target, src);  // no copy when computed in place (Note [Input writes])
        target.bump_version();
        break;
      }
      case Step::kWriteInput: {  // Note [Input writes]: the caller's tensor takes the value
        const Tensor& target = inputs[st.index];
        const Tensor& src = slots_[st.in[0]].at(0);
        OAR_ENFORCE(src.dims() == target.dims() && src.dtype() == target.dtype(), InvalidArgument,
                    "Executor: the program writes shape ", src.dims(), " ", dtype_name(src.dtype()), " into input '",
                    input_names_[st.index], "' of shape ", target.dims(), " ", dtype_name(target.dtype()));
        ops::detail::write_back(target, src);
        target.bump_version();
        break;
      }
      case Step::kConst: slots_[st.out[0]] = {st.constant}; break;
      case Step::kCombine: {
        std::vector<Tensor> all;
        for (int s : st.in) all.insert(all.end(), slots_[s].begin(), slots_[s].end());
        slots_[st.out[0]] = std::move(all);
        break;
      }
      case Step::kSplit: {
        const std::vector<Tensor>& l = slots_[st.in[0]];
        OAR_ENFORCE(l.size() == st.out.size(), Internal, "Executor: builtin.split of ", l.size(),
                    " tensors into ", st.out.size(), " values");
        for (size_t i = 0; i < st.out.size(); ++i) slots_[st.out[i]] = {l[i]};
        break;
      }
      case Step::kOutput: results[st.index] = slots_[st.in[0]].at(0); break;
      case Step::kYield:
        for (int s : st.in) yielded.push_back(slots_[s].at(0));
        break;
      case Step::kIf: {
        const bool c = truth(slots_[st.in[0]].at(0), "cf.if");
        std::vector<Tensor> r = run_steps(st.regions[c ? 0 : 1], inputs, params, results);
        for (size_t i = 0; i < st.out.size(); ++i) slots_[st.out[i]] = {std::move(r[i])};
        break;
      }
      case Step::kWhile: {
        std::vector<Tensor> vars;
        for (size_t i = 1; i < st.in.size(); ++i) vars.push_back(slots_[st.in[i]].at(0));
        bool c = truth(slots_[st.in[0]].at(0), "cf.while");
        const int64_t limit = FLAGS_oar_max_while_iterations;
        for (int64_t it = 0; c; ++it) {  // Note [Bounded loops]
          OAR_ENFORCE(limit <= 0 || it < limit, PreconditionNotMet, "Executor: ", st.loop_name, " ran ", it,
                      " iterations, the limit FLAGS_oar_max_while_iterations=", limit,
                      "; its condition may never become false (raise the flag, or 0 for no limit, if the loop "
                      "really needs more)");
          for (size_t i = 0; i < st.args.size(); ++i) slots_[st.args[i]] = {std::move(vars[i])};
          std::vector<Tensor> next = run_steps(st.regions[0], inputs, params, results);
          c = truth(next[0], "cf.while");
          OAR_ENFORCE(!(c && st.fixed_cond), InvalidArgument, "Executor: ", st.loop_name,
                      " would never end: its condition is true and is computed from values that no "
                      "iteration changes (update a value the condition reads in the loop body)");
          vars.assign(next.begin() + 1, next.end());
        }
        for (size_t i = 0; i < st.out.size(); ++i) slots_[st.out[i]] = {std::move(vars[i])};
        break;
      }
      case Step::kKernel: {
        static const std::vector<Tensor> kAbsent;
        bool donated = false;  // Note [Donated inputs]
        if (st.donate && !st.fallback) {
          const std::vector<Tensor>& x = slots_[st.in[0]];
          donated = x.size() == 1 && x[0].defined() && x[0].impl().use_count() == 1 &&
                    x[0].dense().storage() != nullptr && x[0].dense().storage().use_count() == 1;
        }
        std::vector<const std::vector<Tensor>*>& ins = st.in_ptrs;
        ins.resize(st.in.size());
        for (size_t j = 0; j < st.in.size(); ++j) ins[j] = st.in[j] < 0 ? &kAbsent : &slots_[st.in[j]];
        dispatch::KernelCall& call = st.call;
        call.ctx = st.dctx;
        call.fn = st.kernel;
        call.inputs = ins.data();
        call.attrs = &st.attrs;
        call.donor = nullptr;
        // Note [Input writes]: the memory each result may be computed in, for this call only
        // (`targets` keeps the tensors alive until the step ran).
        std::vector<const DenseTensor*> into_ptrs;
        std::vector<Tensor> targets;
        const std::vector<const DenseTensor*>* into = nullptr;
        if (!st.write_into.empty() && !st.fallback && !differentiable_) {
          into_ptrs.assign(st.write_into.size(), nullptr);
          targets.resize(st.write_into.size());
          for (size_t r = 0; r < st.write_into.size(); ++r) {
            if (st.write_into[r] < 0) continue;
            targets[r] = write_target(steps_[st.write_into[r]], inputs, params);
            if (writable_target(targets[r], inputs, params)) into_ptrs[r] = &targets[r].dense();
          }
          into = &into_ptrs;
        }
        if (donated) {  // the step owns input 0 now: the slot no longer holds it
          st.donated = std::move(slots_[st.in[0]]);
          slots_[st.in[0]].clear();
          if (live_ > 0) --live_;
          ins[0] = &st.donated;
          call.donor = &st.donated[0].dense();
        }
        const auto t0 = profiling_ ? Clock::now() : Clock::time_point();
        const uint64_t trace_t0 = profiler::recording() ? profiler::now_ns() : 0;  // Note [Profiler]
        if (differentiable_) {
          run_differentiable(st);
          if (trace_t0 != 0) trace_op(profile_[st.profile].name, trace_t0);
          if (profiling_) {
            OpProfile& p = profile_[st.profile];
            ++p.calls;
            p.seconds += std::chrono::duration<double>(Clock::now() - t0).count();
          }
          break;
        }
        if (st.fallback) {  // the CPU kernel reads host copies of the device inputs
          st.host_in.resize(st.in.size());
          for (size_t j = 0; j < st.in.size(); ++j) {
            st.host_in[j].clear();
            for (const Tensor& t : *ins[j])
              st.host_in[j].push_back(t.defined() && t.place() != CPUPlace() ? Tensor(on_place(t.dense(), CPUPlace()))
                                                                             : t);
            ins[j] = &st.host_in[j];
          }
        }
        try {
          struct Into {  // set for this step only, whatever it throws
            explicit Into(const std::vector<const DenseTensor*>* t) { write_into_targets() = t; }
            ~Into() { write_into_targets() = nullptr; }
          } guard(into);
          st.kstep(call);
        } catch (Error& e) {
          const std::string& n = profile_[st.profile].name;
          e.with_op(n.rfind("pd_op.", 0) == 0 ? std::string_view(n).substr(6) : std::string_view(n));
          call.outputs.clear();
          st.donated.clear();
          st.host_in.clear();
          throw;
        }
        if (st.fallback) {
          st.host_in.clear();
          for (DenseTensor& o : call.outputs)
            if (o.initialized() && o.place() != place_) o = on_place(o, place_);
        }
        if (profiling_) {
          OpProfile& p = profile_[st.profile];
          ++p.calls;
          p.seconds += std::chrono::duration<double>(Clock::now() - t0).count();
        }
        if (trace_t0 != 0) trace_op(profile_[st.profile].name, trace_t0);
        std::vector<DenseTensor>& outs = call.outputs;
        const size_t fixed = st.out.size() - (st.list_result >= 0 ? 1 : 0);
        OAR_ENFORCE(outs.size() >= fixed, Internal, "Executor: ", profile_[st.profile].name, " gave ", outs.size(),
                    " outputs for ", st.out.size(), " results");
        size_t k = 0;
        for (size_t r = 0; r < st.out.size(); ++r) {
          std::vector<Tensor>& slot = slots_[st.out[r]];
          if (static_cast<int>(r) == st.list_result) {
            const size_t n = outs.size() - fixed;
            slot.clear();
            for (size_t i = 0; i < n; ++i) slot.emplace_back(std::move(outs[k++]));
          } else {
            slot.assign(1, Tensor(std::move(outs[k++])));
          }
        }
        outs.clear();
        st.donated.clear();
        break;
      }
    }
    live_ += st.out.size();
    peak_live_ = std::max(peak_live_, live_);
    for (int s : st.release) {
      if (!slots_[s].empty() && live_ > 0) --live_;
      slots_[s].clear();
    }
  }
  return yielded;
}

// Differentiable runs (set_differentiable): the op's eager API instead of its kernel,
// so autograd records the step. Used when a loaded program is fine-tuned.
void Executor::run_differentiable(const Step& st) {
  OAR_ENFORCE(st.eval_info != nullptr && st.eval_info->eval != nullptr, Unimplemented,
              "Executor: ", profile_[st.profile].name,
              " cannot run differentiably (it is not an op of the op dialect)");
  EvalContext c;
  c.info = st.eval_info;
  c.attrs = &st.op->attributes();
  for (const std::vector<Tensor>* in : st.in_ptrs) c.inputs.push_back(*in);
  st.donated.clear();
  c.info->eval(c);
  const size_t fixed = st.out.size() - (st.list_result >= 0 ? 1 : 0);
  size_t k = 0;
  for (size_t r = 0; r < st.out.size(); ++r) {
    if (static_cast<int>(r) == st.list_result) {
      const size_t n = c.outputs.size() - fixed;
      slots_[st.out[r]].assign(c.outputs.begin() + k, c.outputs.begin() + k + n);
      k += n;
    } else {
      slots_[st.out[r]] = {std::move(c.outputs.at(k++))};
    }
  }
}

std::vector<OpProfile> Executor::profile() const {
  std::vector<OpProfile> out;
  for (const OpProfile& p : profile_)
    if (p.calls > 0) out.push_back(p);
  std::sort(out.begin(), out.end(), [](const OpProfile& a, const OpProfile& b) { return a.seconds > b.seconds; });
  return out;
}

void Executor::reset_profile() {
  for (OpProfile& p : profile_) {
    p.calls = 0;
    p.seconds = 0.0;
  }
}

}  // namespace oar::pir
