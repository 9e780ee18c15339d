// Note [Compile cache] (docs/notes/cinn.md). Key: the group's loop kernel text (its
// canonical form: ops, classes, constants, static and dynamic dims), the dtype, the
// group's symbolic signature (sym_shapes, Note [Symbolic shapes]), the codegen target
// (CPU, vector width, LLVM version) and kCompilerVersion. Memory: key -> kernel. Disk:
// <dir>/<fnv64(key)>.o holding a header (magic, the key, the object's length and FNV-64)
// and the object; written to a temporary file and renamed (atomic); an entry whose
// header or checksum does not match is counted corrupt and rebuilt; an unwritable folder
// logs one warning and the cache stays in memory.
#include "cinn/runtime/runtime.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cinn/codegen/codegen.h"
#include "cinn/dialect.h"
#include "cinn/pipeline.h"
#include "cinn/runtime/row_folds.h"
#include "cinn/schedule/loop_ir.h"
#include "paddle_core/base/errors.h"
#include "paddle_core/dispatch/dispatch.h"
#include "phi_kernels/cpu/parallel.h"
#include "pir/executor/executor.h"
#include "pir/ir/builder.h"
#include "pir/ir/program.h"
#include "pir/pass/pass.h"

namespace oar::cinn {

/// Compares a kernel run with its group's unfused ops (FLAGS_enable_cinn_accuracy_check).
void check_accuracy(size_t slot, const std::vector<DenseTensor>& ins, const std::vector<DenseTensor>& outs);

bool accuracy_differs(double got, double want, double rtol, double atol) {
  // NaN must meet NaN, and an infinity the same infinity: |inf - 1| > atol + rtol * inf is
  // false and inf - inf is NaN, so the relative test alone passed 1 against inf and inf
  // against -inf.
  if (std::isnan(got) || std::isnan(want)) return std::isnan(got) != std::isnan(want);
  if (std::isinf(got) || std::isinf(want)) return got != want;
  return std::abs(got - want) > atol + rtol * std::abs(want);
}

namespace {

// Bump when the loop IR's meaning or the codegen changes in a way the key text misses.
constexpr const char* kCompilerVersion = "oar-cinn-8";  // 8: 256-bit vectors without exp & co (Note [Vector width])
constexpr const char* kMagic = "OARCINN1";

struct Compiled {
  LoopKernel kernel;
  KernelFn fn = nullptr;
  std::string name;
  // FLAGS_enable_cinn_accuracy_check: the group's ops as a program of their own, and
  // its executor (made on the first check).
  std::shared_ptr<pir::Program> unfused;
  std::shared_ptr<pir::Executor> check;
  std::shared_ptr<pir::Executor> fallback;  // inputs that break an assumption (made once)
  bool warned_shapes = false;
  std::string ops;  // "exp, subtract, ..." for the warning
  bool reported = false;
  // Note [Symbolic shapes]: per input, its dims as the group's signature names them
  // ("S0", "64", or an expression: not checked), and the equalities the program assumed.
  std::vector<std::vector<std::string>> sym_inputs;
  std::string sym_assumed;
  // Note [Recompilation]: the compile-cache key and the fusion's operand types, from
  // which a new shape class's program is typed.
  std::string key;
  std::vector<pir::Type> in_types;
  pir::IrContext* ctx = nullptr;
  // Note [Input writes]: overwrite[o][i] when output o may be written into input i's
  // memory (overwrite_table).
  std::vector<std::vector<char>> overwrite;
};

// Note [Input writes] (docs/notes/jit.md): output o of a group may take the memory of
// its input i when the kernel reads element e of i only to compute element e of its
// outputs, before storing it: no node is a reduction or a per-row or per-column value
// (those read other elements of a row or column; broadcast inputs and scalars are
// other tensors and may stay), i is a full input, o
// a full output, and every output stored after o that reads i reads it through a load
// that the outputs stored up to o already made (the codegen evaluates a chunk's outputs
// in order with one memo, so such a load is not repeated after o's store).
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

// The memory output o is written into (Note [Input writes]): the executor's target when it
// fits the output and, where it is one of the group's inputs, overwrite_table allows it;
// else null (the output is allocated and the executor copies it back).
const DenseTensor* output_into(const Compiled& g, const dispatch::KernelCall& call, size_t o, const Dims& d) {
  const std::vector<const DenseTensor*>* into = pir::write_into_targets();
  if (into == nullptr || o >= into->size() || FLAGS_enable_cinn_accuracy_check) return nullptr;
  const DenseTensor* t = (*into)[o];
  if (t == nullptr || !t->initialized() || t->dims() != d || t->dtype() != g.kernel.dtype ||
      t->place() != call.ctx->place || !t->is_contiguous())
    return nullptr;
  for (size_t i = 0; i < g.kernel.inputs.size(); ++i) {
    const DenseTensor& in = call.in(i);
    if (in.storage() != t->storage()) continue;
    if (in.raw_data() != t->raw_data() || in.dims() != d || !in.is_contiguous() || !g.overwrite[o][i]) return nullptr;
  }
  return t;
}

// Kernel steps are plain function pointers (dispatch::KernelStep): step<I> runs slot I.
constexpr size_t kSlots = 1024;
std::array<Compiled, kSlots> g_slots;

struct State {
  std::mutex mu;
  std::unordered_map<std::string, size_t> by_key;  // key -> slot
  size_t used = 0;
  CacheStats stats;
  bool warned_dir = false;
};
State& state() {
  static State* s = new State();
  return *s;
}

uint64_t fnv64(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}
std::string hex(uint64_t v) {
  std::ostringstream os;
  os << std::hex << v;
  return os.str();
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

// The group's signature "S0x64, 64 -> S0x64" -> per input, its dims' names.
std::vector<std::vector<std::string>> parse_signature(const std::string& sig) {
  std::vector<std::vector<std::string>> out;
  const std::string ins = sig.substr(0, sig.find(" -> "));
  int depth = 0;
  std::vector<std::string> cur(1);
  for (size_t i = 0; i <= ins.size(); ++i) {
    const char c = i < ins.size() ? ins[i] : ',';
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (depth == 0 && c == ',') {
      if (cur.size() == 1 && cur[0] == "scalar") cur.clear();
      out.push_back(cur);
      cur.assign(1, "");
      if (i + 1 < ins.size() && ins[i + 1] == ' ') ++i;
    } else if (depth == 0 && c == 'x') {
      cur.emplace_back();
    } else {
      cur.back() += c;
    }
  }
  return out;
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

// The kernel step of slot I: checks the run-time dims against the classes the group
// was compiled for (dynamic dims assumed equal must be), allocates the outputs from
// Oar's allocator and splits the rows over the threads.
void run_slot(size_t slot, dispatch::KernelCall& call) {
  const Compiled& g = g_slots[slot];
  const LoopKernel& k = g.kernel;
  std::vector<DenseTensor> ins;
  for (size_t i = 0; i < k.inputs.size(); ++i) {
    const DenseTensor& t = call.in(i);
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
    OAR_ENFORCE(t.dtype() == k.dtype, InvalidArgument, "cinn kernel ", g.name, ": input ", i, " is ",
                dtype_name(t.dtype()), ", compiled for ", dtype_name(k.dtype));
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
    DenseTensor out(d, k.dtype, call.ctx->place);
    bufs.push_back(out.alloc());
    call.outputs.push_back(std::move(out));
  }
  bufs.push_back(kernel_flags(k, rows, cols, in_place));  // after the buffers (codegen.h)
  KernelFn fn = g.fn;
  if (col_outs.empty()) {
    void** b = bufs.data();
    phi::parallel_for(
        rows, [&](int64_t r0, int64_t r1) { fn(r0, r1, cols, b); }, kernel_cost(k, rows, cols));
  } else {
    int64_t outer = 1;
    for (int i = 0; i < k.col_outer; ++i) outer *= ref.dims()[i];
    run_column_sums(fn, rows, cols, outer, k, col_outs, col_ops, bufs, call.outputs);
  }
  for (size_t o = 0; o < k.outputs.size(); ++o)
    if (!chan_rows[o].empty()) fold_channel_rows(chan_rows[o].data(), rows, cols, k, o, call.outputs[o]);
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

/// The group's ops as a program: inputs in0..., outputs out0... (the accuracy check).
std::shared_ptr<pir::Program> unfused_program(const pir::Operation* fusion, std::string* ops) {
  pir::IrContext* ctx = fusion->info()->ctx;
  auto p = std::make_shared<pir::Program>(ctx);
  pir::Builder b(ctx, p->block());
  std::vector<pir::Value> args;
  for (size_t i = 0; i < fusion->num_operands(); ++i)
    args.push_back(
        b.build("builtin.input", {}, {{"name", ctx->str_attr("in" + std::to_string(i))}}, {fusion->operand(i).type()})
            ->result(0));
  std::vector<pir::Value> outs = clone_fusion_body(b, fusion, args);
  for (size_t i = 0; i < outs.size(); ++i)
    b.build("builtin.output", {outs[i]}, {{"name", ctx->str_attr("out" + std::to_string(i))}}, {});
  for (const pir::Operation* op : *fusion->region(0).front())
    if (op->name() != kYieldOp) *ops += (ops->empty() ? "" : ", ") + op->name();
  return p;
}

std::string resolve_dir() {
  if (!FLAGS_enable_cinn_compile_cache) return "";
  if (!FLAGS_cinn_cache_dir.empty()) return FLAGS_cinn_cache_dir;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/oar/cinn";
  if (const char* home = std::getenv("HOME"); home && *home) return std::string(home) + "/.cache/oar/cinn";
  return "";
}

// Reads a disk entry; empty when missing. `corrupt` is set when it exists but is bad.
std::string read_entry(const std::string& path, const std::string& key, bool* corrupt) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  *corrupt = true;
  std::istringstream is(data);
  std::string magic(8, '\0');
  uint64_t klen = 0, olen = 0, sum = 0;
  if (!is.read(magic.data(), 8) || magic != kMagic) return "";
  if (!is.read(reinterpret_cast<char*>(&klen), 8) || klen != key.size()) return "";
  std::string k(klen, '\0');
  if (!is.read(k.data(), static_cast<std::streamsize>(klen)) || k != key) return "";
  if (!is.read(reinterpret_cast<char*>(&olen), 8) || !is.read(reinterpret_cast<char*>(&sum), 8)) return "";
  if (olen == 0 || olen > data.size()) return "";
  std::string obj(olen, '\0');
  if (!is.read(obj.data(), static_cast<std::streamsize>(olen)) || fnv64(obj) != sum) return "";
  *corrupt = false;
  return obj;
}

bool write_entry(const std::string& dir, const std::string& path, const std::string& key, const std::string& obj) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  const std::string tmp = path + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return false;
    const uint64_t klen = key.size(), olen = obj.size(), sum = fnv64(obj);
    out.write(kMagic, 8);
    out.write(reinterpret_cast<const char*>(&klen), 8);
    out.write(key.data(), static_cast<std::streamsize>(klen));
    out.write(reinterpret_cast<const char*>(&olen), 8);
    out.write(reinterpret_cast<const char*>(&sum), 8);
    out.write(obj.data(), static_cast<std::streamsize>(olen));
    if (!out) return false;
  }
  std::filesystem::rename(tmp, path, ec);  // atomic: readers see the old entry or the new one
  if (ec) std::filesystem::remove(tmp, ec);
  return !ec;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

std::string cache_dir() { return resolve_dir(); }

PreparedGroup prepare_group(const pir::Operation* fusion) {
  OAR_ENFORCE(!FLAGS_cinn_test_fail_compile, PreconditionNotMet,
              "cinn: compilation failed (FLAGS_cinn_test_fail_compile)");
  PreparedGroup g;
  g.kernel = lower_fusion(fusion);
  const std::string target = codegen_target();
  OAR_ENFORCE(!target.empty(), Unimplemented, "cinn: Oar was built without LLVM 19 (OAR_WITH_CINN=OFF)");
  // The group's symbolic signature (the cinn_shape stage; symbols renamed canonically):
  // groups whose dims are proven equal share a kernel whatever the sizes.
  const pir::Attribute sig_attr = fusion->attr("sym_shapes"), assumed_attr = fusion->attr("sym_assumed");
  g.sym_shapes = sig_attr ? sig_attr.as_string() : "";
  g.sym_assumed = assumed_attr ? assumed_attr.as_string() : "";
  g.key = g.kernel.text() + "\nsym " + g.sym_shapes + "\n" + target + "\n" + kCompilerVersion;
  g.name = "cinn_" + hex(fnv64(g.key));
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  g.in_memory = s.by_key.count(g.key) > 0;
  return g;
}

// The object of a prepared group: from the disk cache, else compiled by LLVM (and written
// to the cache). Runs on compile threads: the state's lock is held only for the counters.
void build_object(PreparedGroup& g) {
  if (g.in_memory || !g.object.empty()) return;
  State& s = state();
  const std::string dir = resolve_dir();
  const std::string path = dir.empty() ? "" : dir + "/" + hex(fnv64(g.key)) + ".o";
  if (!path.empty()) {
    auto t0 = std::chrono::steady_clock::now();
    bool corrupt = false;
    g.object = read_entry(path, g.key, &corrupt);
    if (corrupt) {
      std::lock_guard<std::mutex> lock(s.mu);
      ++s.stats.corrupt;
      std::fprintf(stderr, "oar: warning: cinn: the compile cache entry %s is corrupt; rebuilding it\n", path.c_str());
    }
    if (!g.object.empty()) {
      g.from_disk = true;
      g.seconds = seconds_since(t0);
      return;
    }
  }
  auto t0 = std::chrono::steady_clock::now();
  g.object = compile_object(g.kernel, g.name);
  g.seconds = seconds_since(t0);
  if (path.empty()) return;
  const bool wrote = write_entry(dir, path, g.key, g.object);
  std::lock_guard<std::mutex> lock(s.mu);
  if (wrote) {
    ++s.stats.disk_writes;
  } else if (!s.warned_dir) {
    s.warned_dir = true;
    std::fprintf(stderr, "oar: warning: cinn: cannot write the compile cache in %s; caching in memory only\n",
                 dir.c_str());
  }
}

std::string install_group(const pir::Operation* fusion, PreparedGroup& g) {
  State& s = state();
  std::unique_lock<std::mutex> lock(s.mu);
  if (auto it = s.by_key.find(g.key); it != s.by_key.end()) {
    ++s.stats.memory_hits;
    return g_slots[it->second].name;
  }
  if (g.object.empty()) {  // in memory when prepared and forgotten since, or a duplicate: build it now
    lock.unlock();
    g.in_memory = false;
    build_object(g);
    lock.lock();
  }
  OAR_ENFORCE(s.used < kSlots, ResourceExhausted, "cinn: more than ", kSlots, " distinct fused kernels");
  auto t0 = std::chrono::steady_clock::now();
  KernelFn fn = load_object(g.object, g.name);
  if (g.from_disk) {
    ++s.stats.disk_hits;
    s.stats.load_seconds += g.seconds + seconds_since(t0);
  } else {
    ++s.stats.compiles;
    s.stats.compile_seconds += g.seconds + seconds_since(t0);
  }
  const size_t slot = s.used++;
  std::string ops;
  std::shared_ptr<pir::Program> unfused = unfused_program(fusion, &ops);
  Compiled& c = g_slots[slot];
  c = Compiled{};
  c.kernel = std::move(g.kernel);
  c.fn = fn;
  c.name = g.name;
  c.unfused = std::move(unfused);
  c.ops = std::move(ops);
  c.sym_inputs = parse_signature(g.sym_shapes);
  c.sym_assumed = g.sym_assumed;
  c.key = g.key;
  c.ctx = fusion->info()->ctx;
  c.overwrite = overwrite_table(c.kernel);
  for (size_t i = 0; i < fusion->num_operands(); ++i) c.in_types.push_back(fusion->operand(i).type());
  dispatch::register_kernel_step(g.name, {kSteps[slot]});
  s.by_key[g.key] = slot;
  ++s.stats.kernels;
  return g.name;
}

std::string compile_group(const pir::Operation* fusion) {
  PreparedGroup g = prepare_group(fusion);
  build_object(g);
  return install_group(fusion, g);
}

void note_parallel_compile(int threads) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  s.stats.compile_threads = std::max<int64_t>(s.stats.compile_threads, threads);
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

void note_fallback(const std::string& why) {
  State& s = state();
  static std::set<std::string>* logged = new std::set<std::string>();
  std::lock_guard<std::mutex> lock(s.mu);
  ++s.stats.fallbacks;
  if (logged->insert(why).second)
    std::fprintf(stderr, "oar: warning: cinn: a fused group runs unfused: %s\n", why.c_str());
}

CacheStats cache_stats() {
  std::lock_guard<std::mutex> lock(state().mu);
  return state().stats;
}

void reset_cache_stats() {
  std::lock_guard<std::mutex> lock(state().mu);
  state().stats = CacheStats{};
}

std::vector<std::pair<std::string, LoopKernel>> loaded_kernels() {
  std::lock_guard<std::mutex> lock(state().mu);
  std::vector<std::pair<std::string, LoopKernel>> out;
  for (size_t i = 0; i < state().used; ++i) out.emplace_back(g_slots[i].name, g_slots[i].kernel);
  return out;
}

void forget_memory_cache() {
  {
    std::lock_guard<std::mutex> lock(classes().mu);
    classes().by_key.clear();
  }
  std::lock_guard<std::mutex> lock(state().mu);
  state().by_key.clear();
}

}  // namespace oar::cinn
