// The kernel step of a compiled group (what the executor runs for kernel.compiled_kernel):
// checks the run-time dims against what the group was compiled for, allocates or reuses
// the outputs (Note [Input writes]), splits the rows over the pool, and sends inputs that
// break the kernel's assumptions to another shape class (Note [Recompilation]) or the
// group's unfused ops; and the accuracy check (FLAGS_enable_cinn_accuracy_check). The
// compile cache that fills the slots is runtime.cc.
#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "cinn/dialect.h"
#include "cinn/pipeline.h"
#include "cinn/runtime/row_folds.h"
#include "cinn/runtime/runtime_slots.h"
#include "paddle_core/base/errors.h"
#include "phi_kernels/cpu/parallel.h"
#include "pir/ir/builder.h"
#include "pir/pass/pass.h"

namespace oar::cinn {

std::array<Compiled, kSlots> g_slots;

std::vector<std::vector<char>> overwrite_table(const LoopKernel& k) {
  const size_t no = k.outputs.size(), ni = k.inputs.size();
  std::vector<std::vector<char>> ok(no, std::vector<char>(ni, 0));
  for (const Node& n : k.nodes)
    if (n.kind == Node::kReduce || n.cls == VClass::kRow || n.cls == VClass::kCol) return ok;
  for (const LoopKernel::ChanOut& ch : k.chan)
    if (!ch.keep.empty()) return ok;
  // The input-load nodes each output reaches.
  std::vector<std::vector<char>> reach(no, std::vector<char>(k.nodes.size(), 0));
  for (size_t o = 0; o < no; ++o) {
    std::vector<int> stack{k.outputs[o]};
    while (!stack.empty()) {
      const int n = stack.back();
      stack.pop_back();
      if (n < 0 || reach[o][n]) continue;
      reach[o][n] = 1;
      stack.push_back(k.nodes[n].a);
      stack.push_back(k.nodes[n].b);
      stack.push_back(k.nodes[n].c);
    }
  }
  for (size_t i = 0; i < ni; ++i) {
    if (k.inputs[i] != VClass::kFull) continue;
    std::vector<char> loaded(k.nodes.size(), 0);  // loads of i made by outputs 0..o
    for (size_t o = 0; o < no; ++o) {
      for (size_t n = 0; n < k.nodes.size(); ++n)
        if (reach[o][n] && k.nodes[n].kind == Node::kInput && k.nodes[n].input == static_cast<int>(i)) loaded[n] = 1;
      bool later_ok = true;
      for (size_t j = o + 1; j < no && later_ok; ++j)
        for (size_t n = 0; n < k.nodes.size(); ++n)
          if (reach[j][n] && k.nodes[n].kind == Node::kInput && k.nodes[n].input == static_cast<int>(i) && !loaded[n])
            later_ok = false;
      ok[o][i] = later_ok && k.nodes[k.outputs[o]].cls == VClass::kFull;
    }
  }
  return ok;
}

namespace {

// The dtype of input i / output o in memory: a bool mask's or the kernel's (Note [Select
// and masks]).
DataType in_dtype(const LoopKernel& k, size_t i) {
  return i < k.bool_in.size() && k.bool_in[i] ? DataType::BOOL : k.dtype;
}
DataType out_dtype(const LoopKernel& k, size_t o) {
  return o < k.bool_out.size() && k.bool_out[o] ? DataType::BOOL : k.dtype;
}

// The memory output o is written into (Note [Input writes]): the executor's target when it
// fits the output and, where it is one of the group's inputs, overwrite_table allows it;
// else null (the output is allocated and the executor copies it back).
const DenseTensor* output_into(const Compiled& g, const dispatch::KernelCall& call, size_t o, const Dims& d) {
  const std::vector<const DenseTensor*>* into = pir::write_into_targets();
  if (into == nullptr || o >= into->size() || FLAGS_enable_cinn_accuracy_check) return nullptr;
  const DenseTensor* t = (*into)[o];
  if (t == nullptr || !t->initialized() || t->dims() != d || t->dtype() != out_dtype(g.kernel, o) ||
      t->place() != call.ctx->place || !t->is_contiguous())
    return nullptr;
  for (size_t i = 0; i < g.kernel.inputs.size(); ++i) {
    const DenseTensor& in = call.in(i);
    if (in.storage() != t->storage()) continue;
    if (in.raw_data() != t->raw_data() || in.dims() != d || !in.is_contiguous() || !g.overwrite[o][i]) return nullptr;
  }
  return t;
}

// Binds the group's symbols to the inputs' dims: a symbol with two values (two `?` the
// program assumed equal that differ) gives what went wrong, naming the kernel, its ops,
// the symbol, the inputs and the assumption; empty when they bind.
std::string symbol_mismatch(const Compiled& g, const std::vector<DenseTensor>& ins) {
  std::unordered_map<std::string, std::pair<int64_t, size_t>> bound;
  for (size_t i = 0; i < ins.size() && i < g.sym_inputs.size(); ++i) {
    const std::vector<std::string>& syms = g.sym_inputs[i];
    if (syms.size() != ins[i].dims().size()) continue;
    for (size_t d = 0; d < syms.size(); ++d) {
      const std::string& s = syms[d];
      if (s.size() < 2 || s[0] != 'S' || s.find_first_not_of("0123456789", 1) != std::string::npos) continue;
      const int64_t v = ins[i].dims()[d];
      auto [it, fresh] = bound.emplace(s, std::make_pair(v, i));
      if (fresh || it->second.first == v) continue;
      std::ostringstream os;
      os << "cinn kernel " << g.name << " (" << g.ops
         << "): dynamic dims the program assumed equal differ at run time: symbolic dim " << s << " is "
         << it->second.first << " in input " << it->second.second << " (shape " << ins[it->second.second].dims()
         << ") but " << v << " in input " << i << " (shape " << ins[i].dims()
         << "); assumed: " << (g.sym_assumed.empty() ? "the same symbol" : g.sym_assumed);
      return os.str();
    }
  }
  return "";
}

// Note [Symbolic shapes], run time: inputs that break what the kernel was compiled for
// (an assumed equality of dynamic dims, or the loop space's classes) run through the
// group's own unfused ops, as the program without the compiler would: numpy broadcasting
// where the shapes allow it, the op's own error naming the op and the shapes where they
// do not. Warned once per kernel; counted in shape_fallbacks.
void run_unfused(Compiled& g, const std::vector<DenseTensor>& ins, dispatch::KernelCall& call, const std::string& why) {
  std::vector<Tensor> outs;
  bool warn = false;
  {
    static std::mutex mu;  // executors are not reentrant; a rare path
    std::lock_guard<std::mutex> lock(mu);
    if (!g.fallback) g.fallback = std::make_shared<pir::Executor>(*g.unfused);
    warn = !g.warned_shapes;
    g.warned_shapes = true;
    std::vector<Tensor> feeds;
    for (const DenseTensor& t : ins) feeds.emplace_back(t);
    outs = g.fallback->run(feeds);
  }
  {
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mu);
    ++s.stats.shape_fallbacks;
  }
  if (warn) std::fprintf(stderr, "oar: warning: %s; such calls run the group's unfused ops\n", why.c_str());
  for (Tensor& t : outs) call.outputs.push_back(t.dense());
}

// Note [Recompilation] (docs/notes/cinn.md). Inputs that break the kernel's assumptions
// belong to another shape class: the fusion's operand types with each dynamic dim that is
// 1 at run time made a static 1 (the only way dims assumed equal can differ and the ops
// still accept them is a broadcast of a 1). The group's ops are typed again for that
// class (shape inference), grouped, shaped and lowered by the cinn stages, and run by an
// executor kept under the key (the group's compile-cache key + the class's input types):
// later calls of the class reuse it, and its kernels go through the compile cache. Inputs
// that make no new class (no dynamic dim is 1), inference that rejects the class, and
// calls inside a recompiled program run the unfused ops (run_unfused). A group of the new
// program that fails to compile is inlined back by cinn_lower (one log line).
struct ClassEntry {
  std::mutex mu;  // executors are not reentrant
  std::shared_ptr<pir::Program> program;
  std::shared_ptr<pir::Executor> ex;
};
thread_local int t_class_depth = 0;
struct Classes {
  std::mutex mu;  // held while a class compiles: one compile per class
  std::unordered_map<std::string, std::shared_ptr<ClassEntry>> by_key;
};
Classes& classes() {
  static Classes* c = new Classes();
  return *c;
}

// The class's input types; empty when the inputs make no class other than the kernel's.
std::vector<pir::Type> shape_class(const Compiled& g, const std::vector<DenseTensor>& ins) {
  if (!g.ctx || g.in_types.size() != ins.size()) return {};
  std::vector<pir::Type> types;
  bool changed = false;
  for (size_t i = 0; i < ins.size(); ++i) {
    const pir::Type t = g.in_types[i];
    if (!t.is_tensor() || t.rank() != ins[i].rank()) return {};
    std::vector<int64_t> dims = t.dims();
    for (size_t d = 0; d < dims.size(); ++d)
      if (dims[d] < 0 && ins[i].dims()[d] == 1) {
        dims[d] = 1;
        changed = true;
      }
    types.push_back(g.ctx->tensor_type(t.dtype(), dims, t.layout()));
  }
  if (!changed) types.clear();
  return types;
}

// The group's ops typed for `types` and run through the cinn stages.
std::shared_ptr<pir::Program> class_program(const Compiled& g, const std::vector<pir::Type>& types) {
  auto p = std::make_shared<pir::Program>(g.ctx);
  pir::Builder b(g.ctx, p->block());
  std::unordered_map<const void*, pir::Value> map;
  size_t next_in = 0;
  for (pir::Operation* op : *g.unfused->block()) {
    std::vector<pir::Value> operands;
    for (pir::Value v : op->operands()) operands.push_back(v ? map.at(v.impl()) : pir::Value());
    std::vector<pir::Type> result_types;
    if (op->name() == "builtin.input")
      result_types.push_back(types.at(next_in++));
    else if (op->name() == "builtin.output")
      result_types = {};
    pir::Operation* c = b.build(op->info(), operands, op->attributes(), result_types);
    for (size_t i = 0; i < op->num_results(); ++i) map[op->result(i).impl()] = c->result(i);
  }
  pir::PassManager pm;
  for (const char* stage : {"cinn_fuse", "cinn_shape", "cinn_lower"}) pm.add_pass(stage);
  pm.run(*p);
  return p;
}

void run_other_class(Compiled& g, const std::vector<DenseTensor>& ins, dispatch::KernelCall& call,
                     const std::string& why) {
  if (t_class_depth > 0) return run_unfused(g, ins, call, why);
  const std::vector<pir::Type> types = shape_class(g, ins);
  if (types.empty()) return run_unfused(g, ins, call, why);
  std::string key = g.key + "\nclass";
  for (pir::Type t : types) key.append(1, ' ').append(t.str());
  Classes& cs = classes();
  std::shared_ptr<ClassEntry> e;
  bool fresh = false;
  {
    std::lock_guard<std::mutex> lock(cs.mu);
    auto it = cs.by_key.find(key);
    if (it == cs.by_key.end()) {
      std::shared_ptr<pir::Program> p;
      try {
        p = class_program(g, types);
      } catch (const std::exception&) {
        return run_unfused(g, ins, call, why);  // the ops reject the class: their own error
      }
      e = std::make_shared<ClassEntry>();
      e->program = std::move(p);
      e->ex = std::make_shared<pir::Executor>(*e->program);
      cs.by_key.emplace(key, e);
      fresh = true;
    } else {
      e = it->second;
    }
  }
  std::vector<Tensor> outs;
  {
    std::lock_guard<std::mutex> lock(e->mu);
    std::vector<Tensor> feeds;
    for (const DenseTensor& t : ins) feeds.emplace_back(t);
    ++t_class_depth;
    struct Exit {
      ~Exit() { --t_class_depth; }
    } exit;
    outs = e->ex->run(feeds);
  }
  {
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mu);
    ++(fresh ? s.stats.recompiles : s.stats.class_hits);
  }
  for (Tensor& t : outs) call.outputs.push_back(t.dense());
}

// Whether the static dims of the loop space the kernel was compiled for hold for `ref`
// (kBrow inputs and channel reductions compute row indices from them).
// A tensor's dims in the kernel's space (LoopKernel::col_axes merged into one column axis).
std::vector<int64_t> space_dims(const LoopKernel& k, const DenseTensor& t) {
  const size_t rank = k.space.size() + k.col_axes - 1;
  if (static_cast<size_t>(t.rank()) > rank) return {};
  return merge_cols(std::vector<int64_t>(t.dims().begin(), t.dims().end()), rank, k.col_axes);
}
bool static_space_fits(const LoopKernel& k, const DenseTensor& ref) {
  if (static_cast<size_t>(ref.rank()) != k.space.size() + k.col_axes - 1) return false;
  const std::vector<int64_t> s = space_dims(k, ref);
  for (size_t i = 0; i < k.space.size(); ++i)
    if (k.space[i] >= 0 && s[i] != k.space[i]) return false;
  return true;
}
// A kBcast input (Note [Broadcast inputs]) has the dims it was compiled for (leading 1s
// aside), and the space is the static one its row offsets were computed from.
bool bcast_fits(const LoopKernel& k, size_t i, const DenseTensor& t, const DenseTensor& ref) {
  std::vector<int64_t> d = space_dims(k, t);
  if (d.empty() || d.size() > k.bcast[i].size()) return false;
  d.insert(d.begin(), k.bcast[i].size() - d.size(), 1);
  return d == k.bcast[i] && space_dims(k, ref) == k.space;
}
bool brow_fits(const LoopKernel& k, size_t i, const DenseTensor& t, const DenseTensor& ref) {
  std::vector<int64_t> d = space_dims(k, t);
  if (d.empty() || d.size() > k.bcast[i].size()) return false;
  d.insert(d.begin(), k.bcast[i].size() - d.size(), 1);
  return d == k.bcast[i] && static_space_fits(k, ref);
}

// Kernel-call recording (runtime.h): the first call of each kernel, inputs before and
// outputs after the kernel ran.
struct Recorder {
  std::atomic<bool> on{false};
  std::mutex mu;
  int64_t max_bytes = 0;
  std::unordered_set<std::string> seen;
  std::vector<KernelCallRecord> calls;
};
Recorder& recorder() {
  static Recorder r;
  return r;
}
RecordedTensor record_tensor(const DenseTensor& t) {
  RecordedTensor r;
  r.dtype = t.dtype();
  r.dims.assign(t.dims().begin(), t.dims().end());
  r.bytes.resize(static_cast<size_t>(t.numel()) * size_of(t.dtype()));
  if (!r.bytes.empty()) copy_to_host(t, r.bytes.data(), r.bytes.size());
  return r;
}
// Copies the inputs of a call that is to be recorded into `out`; false when it is not.
bool start_record(const std::string& name, const std::vector<DenseTensor>& ins, std::vector<RecordedTensor>* out) {
  Recorder& r = recorder();
  if (!r.on.load(std::memory_order_relaxed)) return false;
  int64_t bytes = 0;
  for (const DenseTensor& t : ins) bytes += t.numel() * static_cast<int64_t>(size_of(t.dtype()));
  {
    std::lock_guard<std::mutex> lock(r.mu);
    if (bytes > r.max_bytes || r.seen.count(name)) return false;
  }
  for (const DenseTensor& t : ins) out->push_back(record_tensor(t));
  return true;
}
void finish_record(const std::string& name, int64_t rows, int64_t cols, int64_t inner, std::vector<RecordedTensor> ins,
                   const std::vector<DenseTensor>& outs) {
  Recorder& r = recorder();
  int64_t bytes = 0;
  for (const RecordedTensor& t : ins) bytes += static_cast<int64_t>(t.bytes.size());
  for (const DenseTensor& t : outs) bytes += t.numel() * static_cast<int64_t>(size_of(t.dtype()));
  std::lock_guard<std::mutex> lock(r.mu);
  if (bytes > r.max_bytes || !r.seen.insert(name).second) return;
  KernelCallRecord c;
  c.name = name;
  c.rows = rows;
  c.cols = cols;
  c.inner = inner;
  c.inputs = std::move(ins);
  for (const DenseTensor& t : outs) c.outputs.push_back(record_tensor(t));
  r.calls.push_back(std::move(c));
}

// The kernel step of slot I: checks the run-time dims against the classes the group
// was compiled for (dynamic dims assumed equal must be), allocates the outputs from
// Oar's allocator and splits the rows over the threads.
void run_slot(size_t slot, dispatch::KernelCall& call) {
  const Compiled& g = g_slots[slot];
  const LoopKernel& k = g.kernel;
  std::vector<DenseTensor> ins;
  for (size_t i = 0; i < k.inputs.size(); ++i) {
    const DenseTensor& t = call.in(i);
    // Note [Places the compiler serves] (cinn/pipeline.cc): host code, host memory only.
    OAR_ENFORCE(t.place().is_cpu() && call.ctx->place.is_cpu(), InvalidArgument, "cinn kernel ", g.name, " (", g.ops,
                "): input ", i, " is on ", t.place().str(), " and the call on ", call.ctx->place.str(),
                "; the kernel is host code, compiled for the CPU");
    ins.push_back(t.is_contiguous() ? t : contiguous(t));
  }
  std::string why = symbol_mismatch(g, ins);
  if (!why.empty()) return run_other_class(g_slots[slot], ins, call, why);
  const DenseTensor& ref = ins[k.ref_input];
  int64_t cols = 1;  // the trailing col_axes dims (Note [Channel reductions]), else the last
  for (int64_t i = std::max<int64_t>(0, ref.rank() - k.col_axes); i < ref.rank(); ++i) cols *= ref.dims()[i];
  // The rows from the leading dims: with 0 columns the row outputs still have one element
  // per row (a sum over nothing is 0; the kernel runs its rows with empty sweeps).
  int64_t rows = 1;
  for (int64_t i = 0; i < ref.rank() - k.col_axes; ++i) rows *= ref.dims()[i];
  for (size_t i = 0; i < ins.size(); ++i) {
    const DenseTensor& t = ins[i];
    OAR_ENFORCE(t.dtype() == in_dtype(k, i), InvalidArgument, "cinn kernel ", g.name, ": input ", i, " is ",
                dtype_name(t.dtype()), ", compiled for ", dtype_name(in_dtype(k, i)));
    const VClass c = k.inputs[i];
    const bool ok = c == VClass::kFull    ? t.dims() == ref.dims()
                    : c == VClass::kRow   ? t.numel() == rows && (t.rank() == 0 || t.dims().back() == 1)
                    : c == VClass::kCol   ? t.numel() == cols
                    : c == VClass::kBcast ? bcast_fits(k, i, t, ref)
                    : c == VClass::kBrow  ? brow_fits(k, i, t, ref)
                                          : t.numel() == 1;
    if (!ok) {
      std::ostringstream os;
      os << "cinn kernel " << g.name << " (" << g.ops << "): input " << i << " has shape " << t.dims()
         << ", which does not fit the group's loop space (input " << k.ref_input << " has shape " << ref.dims()
         << "): dynamic dims the program assumed equal differ at run time";
      return run_other_class(g_slots[slot], ins, call, os.str());
    }
  }
  std::vector<void*> bufs;
  for (const DenseTensor& t : ins) bufs.push_back(t.raw_data());
  bool in_place = false;         // an output written into an input (no streaming: its lines are cached)
  std::vector<size_t> col_outs;  // column reductions (Note [Column reductions])
  std::vector<std::string> col_ops;
  for (size_t o = 0; o < k.outputs.size(); ++o) {
    const Node& on = k.nodes[k.outputs[o]];
    if (on.cls == VClass::kCol && rows == 0 && (on.op == "max" || on.op == "min"))
      // max/min over no rows: the unfused kernel raises its error (naming the op).
      return run_unfused(g_slots[slot], ins, call, "a column " + on.op + " over 0 rows");
  }
  for (const Node& n : k.nodes)  // likewise a row max/min over no columns
    if (n.kind == Node::kReduce && n.cls == VClass::kRow && cols == 0 && rows > 0 && n.op != "sum")
      return run_unfused(g_slots[slot], ins, call, "a row " + n.op + " over 0 columns");
  bool chans = false;
  for (const LoopKernel::ChanOut& ch : k.chan) chans |= !ch.keep.empty();
  if (chans && !static_space_fits(k, ref)) {
    std::ostringstream os;
    os << "cinn kernel " << g.name << " (" << g.ops << "): input " << k.ref_input << " has shape " << ref.dims()
       << ", the group's channel reductions were compiled for static dims of " << Dims(k.space);
    return run_other_class(g_slots[slot], ins, call, os.str());
  }
  const size_t es = k.dtype == DataType::FLOAT64 ? 8 : 4;      // channel reductions: float32/float64
  std::vector<std::vector<char>> chan_rows(k.outputs.size());  // per channel output: its row sums
  for (size_t o = 0; o < k.outputs.size(); ++o) {
    Dims d = ref.dims();
    if (o < k.chan.size() && !k.chan[o].keep.empty()) {
      chan_rows[o].resize(static_cast<size_t>(rows) * es + es);
      bufs.push_back(chan_rows[o].data());
      call.outputs.emplace_back(Dims(k.chan[o].shape), k.dtype, call.ctx->place);
      call.outputs.back().alloc();
      continue;
    }
    if (k.nodes[k.outputs[o]].cls == VClass::kCol) {
      col_ops.push_back(k.nodes[k.outputs[o]].op);
      const int64_t rank = std::max<int64_t>(1, static_cast<int64_t>(k.space.size()) - k.out_rank_drop[o]);
      std::vector<int64_t> v(rank, 1);
      for (int i = 0; i < k.col_outer && i + 1 < rank; ++i) v[i] = ref.dims()[i];  // kept leading axes
      v.back() = cols;
      d = Dims(v);
      col_outs.push_back(o);
    } else if (k.nodes[k.outputs[o]].cls == VClass::kRow) {
      std::vector<int64_t> v(d.begin(), d.end());
      if (k.out_rank_drop[o])
        v.pop_back();
      else if (!v.empty())
        v.back() = 1;
      d = Dims(v);
    }
    if (const DenseTensor* into = output_into(g, call, o, d)) {  // Note [Input writes]
      in_place = true;
      bufs.push_back(into->raw_data());
      call.outputs.push_back(*into);
      continue;
    }
    DenseTensor out(d, out_dtype(k, o), call.ctx->place);
    bufs.push_back(out.alloc());
    call.outputs.push_back(std::move(out));
  }
  bufs.push_back(kernel_flags(k, rows, cols, in_place));  // after the buffers (codegen.h)
  std::vector<RecordedTensor> recorded;
  const bool record = start_record(g.name, ins, &recorded);
  KernelFn fn = g.fn;
  int64_t outer = 1;
  for (int i = 0; i < k.col_outer; ++i) outer *= ref.dims()[i];
  if (col_outs.empty()) {
    void** b = bufs.data();
    phi::parallel_for(
        rows, [&](int64_t r0, int64_t r1) { fn(r0, r1, cols, b); }, kernel_cost(k, rows, cols));
  } else {
    run_column_sums(fn, rows, cols, outer, k, col_outs, col_ops, bufs, call.outputs);
  }
  for (size_t o = 0; o < k.outputs.size(); ++o)
    if (!chan_rows[o].empty()) fold_channel_rows(chan_rows[o].data(), rows, cols, k, o, call.outputs[o]);
  if (record)
    finish_record(g.name, rows, cols, k.col_outer && outer > 0 ? rows / outer : 0, std::move(recorded), call.outputs);
  if (FLAGS_enable_cinn_accuracy_check) check_accuracy(slot, ins, call.outputs);
}

template <size_t I>
void step(dispatch::KernelCall& call) {
  run_slot(I, call);
}
template <size_t... I>
constexpr std::array<dispatch::KernelStep, kSlots> make_steps(std::index_sequence<I...>) {
  return {&step<I>...};
}
constexpr std::array<dispatch::KernelStep, kSlots> kSteps = make_steps(std::make_index_sequence<kSlots>{});

}  // namespace

dispatch::KernelStep kernel_step(size_t slot) { return kSteps.at(slot); }

std::pair<bool, int64_t> record_kernel_calls(bool on, int64_t max_bytes) {
  Recorder& r = recorder();
  std::lock_guard<std::mutex> lock(r.mu);
  const std::pair<bool, int64_t> was{r.on.load(), r.max_bytes};
  r.max_bytes = max_bytes;
  r.on.store(on);
  return was;
}

std::vector<KernelCallRecord> take_kernel_calls() {
  Recorder& r = recorder();
  std::lock_guard<std::mutex> lock(r.mu);
  return std::exchange(r.calls, {});
}

void forget_classes() {
  std::lock_guard<std::mutex> lock(classes().mu);
  classes().by_key.clear();
}

// FLAGS_enable_cinn_accuracy_check: the group's unfused ops on the same inputs, compared
// with the kernel's outputs (float32: 1e-4 relative + 1e-5 absolute; float64: 1e-10).
void check_accuracy(size_t slot, const std::vector<DenseTensor>& ins, const std::vector<DenseTensor>& outs) {
  Compiled& g = g_slots[slot];
  std::vector<Tensor> want;
  {
    static std::mutex mu;  // one check at a time: executors are not reentrant
    std::lock_guard<std::mutex> lock(mu);
    if (!g.check) g.check = std::make_shared<pir::Executor>(*g.unfused);
    std::vector<Tensor> feeds;
    for (const DenseTensor& t : ins) feeds.emplace_back(t);
    want = g.check->run(feeds);
  }
  const DataType dt = g.kernel.dtype;
  const bool f32 = dt == DataType::FLOAT32, bf16 = dt == DataType::BFLOAT16;
  // bf16: the kernel computes in float32, the unfused ops round every step to bf16, so
  // their error follows the intermediates' magnitude, not the element's: LayerNorm's
  // `d * r * w + w` cancels to 0.0 or 0.03125 unfused where float32 (and float64) give
  // 0.0218 ([8, 4096], Zen 4 run in docs/notes/cinn.md). Its absolute tolerance is 2e-2
  // times the output's largest magnitude (at least 1).
  const double rtol = bf16 ? 2e-2 : f32 ? 1e-4 : 1e-10;
  auto at = [&](const DenseTensor& t, int64_t i) -> double {
    if (t.dtype() == DataType::BOOL) return t.data<bool>()[i] ? 1.0 : 0.0;  // a mask output
    return bf16 ? static_cast<float>(t.data<bfloat16>()[i]) : f32 ? t.data<float>()[i] : t.data<double>()[i];
  };
  std::string bad;
  for (size_t o = 0; o < outs.size() && bad.empty(); ++o) {
    const DenseTensor w = contiguous(want[o].dense());
    double atol = f32 ? 1e-5 : 1e-10;
    if (bf16) {
      double big = 1;
      for (int64_t i = 0; i < w.numel(); ++i)
        if (std::isfinite(at(w, i))) big = std::max(big, std::abs(at(w, i)));
      atol = 2e-2 * big;
    }
    for (int64_t i = 0; i < w.numel(); ++i) {
      const double a = at(outs[o], i);
      const double e = at(w, i);
      if (accuracy_differs(a, e, rtol, atol)) {
        bad = "output " + std::to_string(o) + " element " + std::to_string(i) + ": " + std::to_string(a) + " vs " +
              std::to_string(e);
        break;
      }
    }
  }
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  ++s.stats.accuracy_checks;
  if (bad.empty()) return;
  ++s.stats.accuracy_failures;
  if (!g.reported) {
    g.reported = true;
    std::fprintf(stderr, "oar: warning: cinn accuracy check: kernel %s (%s) differs from its unfused ops at %s\n",
                 g.name.c_str(), g.ops.c_str(), bad.c_str());
  }
}

}  // namespace oar::cinn
