// The CUDA C emitter (cuda_codegen.h). It walks the loop kernel exactly as the LLVM
// emitter (llvm_codegen.cc) does, so the two agree by construction:
//   - elementwise nodes are inlined where used (one local per node per loop body);
//   - row-level nodes (class row/scalar) are computed once per row, as soon as their
//     operands are known ("sweep"), and read by the column loops;
//   - only the nodes the outputs read are emitted (a rewrite such as one_pass_variance
//     leaves dead ones; a comment names them);
//   - reduction sweeps: every reduction whose operand is computable now joins one loop
//     over the row's columns (one accumulator per reduction per thread, the operands
//     inlined with one shared memo), then a combine across the threads of the row (a
//     block combines a sweep's reductions together: Note [CUDA block reductions]); the
//     next sweep takes the reductions that read the previous ones' results. A
//     transcendental reduction operand that is also computed by a full output
//     (softmax's exp(x - max)) is stored in that output's buffer and read back (each
//     thread reads back the columns it wrote: no barrier);
//   - erf's reciprocal is __frcp_rn's fast path alone (Note [CUDA erf reciprocal]);
//   - unary `first` (the one-pass variance's shift) is its operand at column 0 of the
//     row, 0 for an empty row;
//   - a division by a row-level value is a reciprocal per row and a multiply;
//   - float32 exp is the CPU's inlined Cephes polynomial (exp_f32 there, its FMAs as
//     fmaf, n rounded by adding 1.5 * 2^23), and erf Abramowitz & Stegun 7.1.26 with that
//     exp, as the CPU kernel;
//   - no FMA contraction (--fmad=false): a*b+c rounds twice, as LLVM's IR without
//     fast-math flags; IEEE division and square root (NVRTC's defaults).
// What differs: the order of a reduction's additions (per-thread strided partials and a
// shuffle tree on the GPU, vector lanes and a tree on the CPU) and the transcendental
// functions' last ulp (CUDA's libdevice vs SLEEF). The elementwise vector body keeps
// int indices (Note [CUDA 32-bit indices]).
#include "cinn/codegen/cuda_codegen.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <sstream>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "cinn/codegen/cuda_prelude.h"
#include "paddle_core/base/errors.h"

namespace oar::cinn {
namespace {

class CudaEmitter {
 public:
  explicit CudaEmitter(const LoopKernel& k) : k_(k), s_(gpu_schedule(k)) {
    f64_ = k.dtype == DataType::FLOAT64;
    bf16_ = k.dtype == DataType::BFLOAT16;  // stored as bf16 bits, computed in float32
    OAR_ENFORCE(f64_ || bf16_ || k.dtype == DataType::FLOAT32, Unimplemented, "cinn cuda codegen: dtype ",
                dtype_name(k.dtype), " (float32, float64 and bfloat16 only)");
    t_ = f64_ ? "double" : "float";
    mt_ = bf16_ ? "unsigned short" : t_;
  }

  std::string emit(const std::string& name) {
    mark_live();
    prelude();
    plan_output_caches();
    std::ostringstream sig;
    sig << "extern \"C\" __global__ void __launch_bounds__(" << s_.block << ") " << name
        << "(long long rows, long long cols";
    if (k_.col_outer) sig << ", long long inner";  // rows per index of the kept leading axes
    // Bool masks are bytes (Note [Select and masks]).
    for (size_t i = 0; i < k_.inputs.size(); ++i)
      sig << ", const " << (bool_in(i) ? "unsigned char" : mt_) << "* __restrict__ in" << i;
    for (size_t o = 0; o < k_.outputs.size(); ++o)
      sig << ", " << (bool_out(o) ? "unsigned char" : mt_) << "* __restrict__ out" << o;
    sig << ") {";
    os_ << "// schedule: " << s_.name() << ", block " << s_.block << "\n";
    for (size_t n = 0; n < k_.nodes.size(); ++n)
      if (!live_[n])
        os_ << "// n" << n << " dead (" << (k_.nodes[n].kind == Node::kReduce ? "reduce_" : "") << k_.nodes[n].op
            << "): no output reads it\n";
    line(sig.str());
    ++ind_;
    if (s_.strategy == GpuSchedule::kElementwise)
      elementwise_body();
    else if (s_.strategy == GpuSchedule::kColumns)
      columns_body();
    else
      row_body();
    --ind_;
    line("}");
    return os_.str();
  }

 private:
  void line(const std::string& s) { os_ << std::string(2 * static_cast<size_t>(ind_), ' ') << s << "\n"; }
  std::string fresh() {
    std::string t = "t";  // appended: GCC 12's -Wrestrict misfires on "t" + std::to_string(..)
    t += std::to_string(tmp_++);
    return t;
  }
  std::string one() const { return f64_ ? "1.0" : "1.0f"; }
  std::string fn(const char* f) const { return std::string(f) + (f64_ ? "" : "f"); }
  // A reduction's identity and combiner (row reductions, and the column ones a thread
  // combines in registers).
  static double identity_of(const std::string& op) { return op == "max" ? -INFINITY : op == "min" ? INFINITY : 0.0; }
  static const char* combiner_of(const std::string& op) {
    return op == "max" ? "OarMax()" : op == "min" ? "OarMin()" : "OarSum()";
  }
  // The outputs that are column reductions (sum, mean, max, min over the rows).
  std::vector<size_t> column_outputs() const {
    std::vector<size_t> outs;
    for (size_t o = 0; o < k_.outputs.size(); ++o)
      if (k_.nodes[k_.outputs[o]].cls == VClass::kCol) outs.push_back(o);
    return outs;
  }
  // make_<vt>(v0, ..., vV-1): a chunk's values as one vector (Note [CUDA vector accesses]).
  static std::string make_vector(const std::string& vt, const std::vector<std::string>& vals) {
    std::string e = "make_" + vt + "(";
    for (size_t j = 0; j < vals.size(); ++j) e += (j ? ", " : "") + vals[j];
    return e + ")";
  }
  // 1 / x, correctly rounded as the division (IEEE round to nearest) in fewer instructions.
  std::string rcp(const std::string& x) const { return (f64_ ? "__drcp_rn(" : "__frcp_rn(") + x + ")"; }

  // A constant of the kernel's dtype (cuda_prelude.h).
  std::string lit(double v) const { return cuda_literal(v, f64_); }

  void prelude() {
    CudaPrelude p;
    p.f64 = f64_;
    p.bf16 = bf16_;
    p.block_reduce = s_.strategy == GpuSchedule::kBlockPerRow;
    for (size_t i = 0; i < k_.nodes.size(); ++i) {
      const Node& n = k_.nodes[i];
      p.column_extrema |= n.cls == VClass::kCol && (n.op == "max" || n.op == "min");
      if (f64_ || !live_[i]) continue;
      p.erf |= n.op == "erf" || n.op == "erfe";
      p.exp |= n.kind == Node::kUnary && (n.op == "exp" || n.op == "erf" || n.op == "sigmoid");
    }
    os_ << cuda_prelude(p);
  }

  bool row_level(const Node& n) const {
    return n.cls == VClass::kRow || n.cls == VClass::kScalar || n.cls == VClass::kBrow;
  }

  // The nodes the outputs read, as the LLVM emitter's mark_live.
  void mark_live() {
    live_.assign(k_.nodes.size(), false);
    std::vector<int> stack(k_.outputs.begin(), k_.outputs.end());
    while (!stack.empty()) {
      const int n = stack.back();
      stack.pop_back();
      if (live_[n]) continue;
      live_[n] = true;
      if (k_.nodes[n].a >= 0) stack.push_back(k_.nodes[n].a);
      if (k_.nodes[n].b >= 0) stack.push_back(k_.nodes[n].b);
      if (k_.nodes[n].c >= 0) stack.push_back(k_.nodes[n].c);
    }
  }

  // Whether node `n` can be evaluated now: every reduction it reads (not crossing into
  // another reduction's operand) has been computed for this row (the LLVM emitter's ready).
  bool ready(int n) const {
    if (!row_[n].empty()) return true;
    const Node& x = k_.nodes[n];
    if (x.kind == Node::kReduce) return false;
    if (x.kind == Node::kInput || x.kind == Node::kConst) return true;
    return (x.a < 0 || ready(x.a)) && (x.b < 0 || ready(x.b)) && (x.c < 0 || ready(x.c));
  }

  // The same output-cache plan as the LLVM emitter (plan_output_caches there).
  bool costly(int n) const {
    const Node& x = k_.nodes[n];
    if (x.kind == Node::kReduce || x.kind == Node::kInput || x.kind == Node::kConst) return false;
    if (x.kind == Node::kUnary && (x.op == "exp" || x.op == "log" || x.op == "tanh" || x.op == "erf" ||
                                   x.op == "sigmoid" || x.op == "log1p" || x.op == "expm1"))
      return true;
    return (x.a >= 0 && costly(x.a)) || (x.b >= 0 && costly(x.b)) || (x.c >= 0 && costly(x.c));
  }
  bool reaches(int of, int n) const {
    if (of == n) return true;
    const Node& x = k_.nodes[of];
    if (x.kind == Node::kReduce || x.kind == Node::kInput) return false;
    return (x.a >= 0 && reaches(x.a, n)) || (x.b >= 0 && reaches(x.b, n)) || (x.c >= 0 && reaches(x.c, n));
  }
  void plan_output_caches() {
    if (bf16_) return;  // a bf16 buffer would round the cached value: recompute in float32
    std::unordered_set<int> used;
    for (size_t i = 0; i < k_.nodes.size(); ++i) {
      const Node& n = k_.nodes[i];
      if (!live_[i] || n.kind != Node::kReduce || n.cls != VClass::kRow || k_.nodes[n.a].cls != VClass::kFull ||
          !costly(n.a) || cache_out_.count(n.a))
        continue;
      for (size_t o = 0; o < k_.outputs.size(); ++o) {
        if (used.count(static_cast<int>(o)) || k_.nodes[k_.outputs[o]].cls != VClass::kFull || bool_out(o) ||
            !reaches(k_.outputs[o], n.a))
          continue;
        cache_out_[n.a] = static_cast<int>(o);
        used.insert(static_cast<int>(o));
        break;
      }
    }
  }

  // Note [CUDA vector accesses]: a body runs twice in the source, with V-wide accesses
  // (16-byte float4 / double2, 8-byte ushort4 for bf16, uchar4 / uchar2 for masks) of
  // the column-varying inputs and the full outputs when `cols` is a multiple of V and
  // those pointers are aligned to their vector (a run-time test, uniform over the
  // launch), else element by element. The vector body evaluates each of a chunk's V
  // elements at column `(c + j)` with the same nodes; only the loads and stores widen.
  int vec_width() const { return f64_ ? 2 : 4; }
  std::string vec_type(bool mask) const {
    const std::string v = std::to_string(vec_width());
    return mask ? "uchar" + v : f64_ ? "double2" : bf16_ ? "ushort4" : "float4";
  }
  bool col_varying(VClass c) const { return c == VClass::kFull || c == VClass::kCol || c == VClass::kBcast; }
  // The run-time test for the vector body.
  std::string vec_test() const {
    const int V = vec_width();
    std::string t = "cols % " + std::to_string(V) + " == 0";
    std::vector<bool> used(k_.inputs.size(), false);
    for (size_t n = 0; n < k_.nodes.size(); ++n)
      if (live_[n] && k_.nodes[n].kind == Node::kInput && col_varying(k_.nodes[n].cls)) used[k_.nodes[n].input] = true;
    auto aligned = [&](const std::string& p, bool mask) {
      const int bytes = V * (mask ? 1 : f64_ ? 8 : bf16_ ? 2 : 4);
      return " && ((unsigned long long)" + p + " & " + std::to_string(bytes - 1) + "ULL) == 0";
    };
    for (size_t i = 0; i < used.size(); ++i)
      if (used[i]) t += aligned("in" + std::to_string(i), bool_in(i));
    for (size_t o = 0; o < k_.outputs.size(); ++o)
      if (k_.nodes[k_.outputs[o]].cls == VClass::kFull || vector_atomic(o))
        t += aligned("out" + std::to_string(o), bool_out(o));
    return t;
  }
  // Whether the elementwise body needs each element's row and column apart (else the
  // flat index is the offset: no division).
  bool needs_row_col() const {
    if (k_.col_outer) return true;
    for (size_t n = 0; n < k_.nodes.size(); ++n)
      if (live_[n] && k_.nodes[n].kind == Node::kInput && k_.nodes[n].cls != VClass::kFull &&
          k_.nodes[n].cls != VClass::kScalar)
        return true;
    for (int o : k_.outputs)
      if (k_.nodes[o].cls != VClass::kFull) return true;
    return false;
  }
  // Starts one emission of a body: per-row values and vector loads are the body's own.
  void begin_body(int width) {
    vec_ = width;
    row_.assign(k_.nodes.size(), "");
    cache_ready_.clear();
  }
  // `also`: a further condition for the vector body (the elementwise body's int indices).
  void vector_or_scalar(const std::function<void(int)>& body, const std::string& also = "") {
    line("if (" + vec_test() + also + ") {");
    ++ind_;
    body(vec_width());
    --ind_;
    line("} else {");
    ++ind_;
    body(1);
    --ind_;
    line("}");
    vec_ = 1;
  }

  // One thread per element (V elements) of the loop space, the row and column advanced
  // by the grid's stride rather than divided out of each index.
  void elementwise_body() {
    line("const long long n = rows * cols;");
    const bool rc = needs_row_col();
    // Note [CUDA 32-bit indices]: the vector body's indices are int, so it runs when the
    // loop space and the grid's overshoot stay under 2^31 elements; larger spaces take
    // the scalar body (long long).
    const std::string fits =
        " && n + (long long)gridDim.x * blockDim.x * " + std::to_string(vec_width()) + " <= 2147483647LL";
    vector_or_scalar([&](int V) { elementwise_loop(V, rc, V > 1); }, fits);
  }
  // One grid-stride loop over the elements, V at a time; its own indices (i, row, c, off)
  // in int when `narrow`, else long long.
  void elementwise_loop(int V, bool rc, bool narrow) {
    begin_body(V);
    const std::string w = std::to_string(V);
    const std::string ix = narrow ? "int" : "long long";
    const std::string C = narrow ? "cols32" : "cols", N = narrow ? "n32" : "n";
    if (narrow) {
      line("const int stride = (int)((long long)gridDim.x * blockDim.x * " + w + ");");
      line("int i = (int)(((long long)blockIdx.x * blockDim.x + threadIdx.x) * " + w + ");");
      line("const int cols32 = (int)cols, n32 = (int)n;");
    } else {
      line("const long long stride = (long long)gridDim.x * blockDim.x * " + w + ";");
      line("long long i = ((long long)blockIdx.x * blockDim.x + threadIdx.x) * " + w + ";");
    }
    if (rc) {
      line(ix + " row = i < " + N + " ? i / " + C + " : 0, c = i - row * " + C + ";");
      line("const " + ix + " drow = " + N + " > 0 ? stride / " + C + " : 0, dc = stride - drow * " + C + ";");
    }
    line("for (; i < " + N + "; i += stride) {");
    ++ind_;
    if (rc)
      line("const " + ix + " off = row * " + C + ";");
    else
      line("const " + ix + " off = 0, c = i;");
    row_.assign(k_.nodes.size(), "");
    sweep();
    store_outputs("c == 0", "c");
    if (rc) {
      line("c += dc;");
      line("row += drow;");
      line("if (c >= " + C + ") {");
      line("  c -= " + C + ";");
      line("  ++row;");
      line("}");
    }
    --ind_;
    line("}");
  }

  // Note [CUDA column reductions]: a thread owns V columns of a column block and a group
  // of rows (every groups-th row from rg); it stores the full outputs as it goes, keeps
  // each column reduction's V values in registers, and adds (compares) them into the
  // output once at the end, where the elementwise body made one atomic per element.
  void columns_body() {
    vector_or_scalar([&](int V) {
      begin_body(V);
      const std::string w = std::to_string(V);
      line("const long long span = (long long)blockDim.x * " + w + ", cblocks = (cols + span - 1) / span;");
      line("const long long groups = cblocks > 0 && gridDim.x >= cblocks ? gridDim.x / cblocks : 1;");
      line("for (long long item = blockIdx.x; item < cblocks * groups; item += gridDim.x) {");
      ++ind_;
      line("const long long cb = item % cblocks, rg = item / cblocks;");
      line("const long long c = (cb * blockDim.x + threadIdx.x) * " + w + ";");
      line("if (c >= cols) continue;");
      for (size_t o : column_outputs())
        for (int j = 0; j < V; ++j) line(t_ + " " + col_acc(o, j) + " = " + lit(col_ident(o)) + ";");
      line("#pragma unroll 4");
      line("for (long long row = rg; row < rows; row += groups) {");
      ++ind_;
      line("const long long off = row * cols;");
      row_.assign(k_.nodes.size(), "");
      sweep();
      col_accumulate_ = true;
      store_outputs("c == 0", "c");
      col_accumulate_ = false;
      --ind_;
      line("}");
      for (size_t o : column_outputs()) {
        std::vector<std::string> accs;
        for (int j = 0; j < V; ++j) accs.push_back(col_acc(o, j));
        add_columns(o, "c", accs);
      }
      --ind_;
      line("}");
    });
  }
  static std::string col_acc(size_t o, int j) { return indexed("cacc", static_cast<int64_t>(o), j); }

  // One warp (kWarpPerRow) or one block (kBlockPerRow) per row.
  void row_body() {
    const bool block = s_.strategy == GpuSchedule::kBlockPerRow;
    if (block) {  // 33 values per reduction of one sweep (Note [CUDA block reductions])
      int reductions = 0;
      for (size_t n = 0; n < k_.nodes.size(); ++n)
        reductions += live_[n] && k_.nodes[n].kind == Node::kReduce && k_.nodes[n].cls == VClass::kRow;
      line("__shared__ " + t_ + " smem[" + std::to_string(33 * std::max(1, reductions)) + "];");
    }
    line(block ? "const int lane = threadIdx.x, group = blockDim.x;"
               : "const int lane = threadIdx.x & 31, group = 32;");
    vector_or_scalar([&](int V) {
      begin_body(V);
      const int K = V > 1 ? resident_chunks(block) : 0;
      if (K == 0) return row_loop(block);
      // Note [CUDA resident rows]: the static row in registers, when the launch is the
      // one it was planned for; else the same body with column loops.
      line("if (cols == " + std::to_string(k_.space.back()) + "LL" +
           (block ? " && blockDim.x == " + std::to_string(s_.block) : std::string()) + ") {");
      ++ind_;
      resident_ = K;
      row_loop(block);
      resident_ = 0;
      --ind_;
      line("} else {");
      ++ind_;
      begin_body(V);
      row_loop(block);
      --ind_;
      line("}");
    });
  }
  // The threads of a row (Note [CUDA resident rows]).
  int row_group(bool block) const { return block ? s_.block : 32; }
  // Chunks of V columns per thread when the row can stay in registers (0: it cannot):
  // static columns, at most 8 chunks per thread and 16 vectors of full inputs.
  int resident_chunks(bool block) const {
    const int64_t cols = k_.space.empty() ? -1 : k_.space.back();
    if (cols <= 0 || cols % vec_ != 0) return 0;
    const int64_t per = int64_t{row_group(block)} * vec_;
    const int64_t K = (cols + per - 1) / per;
    const int64_t full = static_cast<int64_t>(resident_inputs().size());
    return K <= 8 && K * std::max<int64_t>(1, full) <= 16 && held_values(K, 1) <= 128 ? static_cast<int>(K) : 0;
  }
  // Every value a thread keeps across a resident row of K chunks: `copies` of the inputs'
  // chunks (2 with the next row's), the cached operands' (softmax's exp) and the column
  // accumulators. Past 128 they would spill to local memory.
  int64_t held_values(int64_t K, int64_t copies) const {
    const int64_t full = static_cast<int64_t>(resident_inputs().size());
    const int64_t cols_out = k_.col_outer ? 0 : static_cast<int64_t>(column_outputs().size());
    return K * vec_ * (copies * full + static_cast<int64_t>(cache_out_.size()) + cols_out);
  }
  // The full inputs the kernel reads (held in registers by a resident row).
  std::vector<int> resident_inputs() const {
    std::vector<int> ins;
    for (size_t n = 0; n < k_.nodes.size(); ++n) {
      const Node& x = k_.nodes[n];
      if (live_[n] && x.kind == Node::kInput && x.cls == VClass::kFull &&
          std::find(ins.begin(), ins.end(), x.input) == ins.end())
        ins.push_back(x.input);
    }
    return ins;
  }
  // The first column of chunk k of this thread, and whether the chunk can pass the row's end.
  std::string chunk_col(int k, bool block) const {
    return "(long long)lane * " + std::to_string(vec_) + " + " + std::to_string(int64_t{k} * row_group(block) * vec_) +
           "LL";
  }
  bool chunk_partial(int k, bool block) const { return (int64_t{k} + 1) * row_group(block) * vec_ > k_.space.back(); }
  // A sweep over the row's columns: a strided loop, or a resident row's chunks.
  void column_chunks(bool block, const std::function<void()>& body) {
    if (resident_ == 0) {
      line("#pragma unroll 4");  // several loads in flight per thread
      line(col_loop());
      ++ind_;
      body();
      --ind_;
      line("}");
      return;
    }
    for (int k = 0; k < resident_; ++k) {
      line("{");
      ++ind_;
      line("const long long c = " + chunk_col(k, block) + ";");
      const bool guard = chunk_partial(k, block);
      if (guard) {
        line("if (c < cols) {");
        ++ind_;
      }
      chunk_ = k;
      body();
      chunk_ = -1;
      if (guard) {
        --ind_;
        line("}");
      }
      --ind_;
      line("}");
    }
  }
  // The columns a thread visits: c is the first of its V.
  std::string col_loop() const {
    if (vec_ == 1) return "for (long long c = lane; c < cols; c += group) {";
    const std::string w = std::to_string(vec_);
    return "for (long long c = (long long)lane * " + w + "; c < cols; c += (long long)group * " + w + ") {";
  }
  void row_loop(bool block) {
    const std::string rpb = std::to_string(s_.rows_per_block);
    // A resident row's threads keep their columns from row to row, so its column
    // reductions combine in registers and reach the output once (Note [CUDA column
    // reductions]); the strided body adds per element.
    const std::vector<size_t> col_outs = resident_ && !k_.col_outer ? column_outputs() : std::vector<size_t>{};
    for (size_t o : col_outs)
      for (int j = 0; j < resident_ * vec_; ++j) line(t_ + " " + col_acc(o, j) + " = " + lit(col_ident(o)) + ";");
    const std::string first =
        block ? std::string("blockIdx.x") : "(long long)blockIdx.x * " + rpb + " + (threadIdx.x >> 5)";
    const std::string step = block ? std::string("gridDim.x") : "(long long)gridDim.x * " + rpb;
    // Note [CUDA resident rows]: a block that takes several rows (for its column
    // accumulators) loads the next row's chunks before this row's reductions.
    const bool prefetch = !col_outs.empty() && held_values(resident_, 2) <= 128;
    // Chunk k of resident input i of the row at `off` (guarded past the row's end, and by `when`).
    auto chunk = [&](int i, int k, const std::string& off, const std::string& when) {
      const std::string vt = vec_type(bool_in(static_cast<size_t>(i)));
      std::string at = "*reinterpret_cast<const ";  // appended, as fresh() is
      at += vt + "*>(&in" + std::to_string(i) + "[" + off + " + " + chunk_col(k, block) + "])";
      std::string cond = when;
      if (chunk_partial(k, block)) cond += (cond.empty() ? "" : " && ") + chunk_col(k, block) + " < cols";
      return cond.empty() ? at : "(" + cond + ") ? " + at + " : " + vt + "{}";
    };
    if (prefetch) {
      line("const long long row0 = " + first + ";");
      for (int i : resident_inputs())
        for (int k = 0; k < resident_; ++k)
          line(vec_type(bool_in(static_cast<size_t>(i))) + " " + next_name(i, k) + " = " +
               chunk(i, k, "row0 * cols", "row0 < rows") + ";");
    }
    line("for (long long row = " + first + "; row < rows; row += " + step + ") {");
    ++ind_;
    line("const long long off = row * cols;");
    if (resident_) {
      line("// the row in registers: " + std::to_string(resident_) + " chunks of " + std::to_string(vec_) +
           " per thread");
      for (int i : resident_inputs())
        for (int k = 0; k < resident_; ++k)
          line("const " + vec_type(bool_in(static_cast<size_t>(i))) + " " + resident_name(i, k) + " = " +
               (prefetch ? next_name(i, k) : chunk(i, k, "off", "")) + ";");
    }
    if (prefetch) {
      line("if (row + " + step + " < rows) {");
      ++ind_;
      line("const long long next = (row + " + step + ") * cols;");
      for (int i : resident_inputs())
        for (int k = 0; k < resident_; ++k) line(next_name(i, k) + " = " + chunk(i, k, "next", "") + ";");
      --ind_;
      line("}");
    }
    row_.assign(k_.nodes.size(), "");
    sweep();
    for (;;) {
      std::vector<int> batch;
      for (size_t n = 0; n < k_.nodes.size(); ++n)
        if (k_.nodes[n].kind == Node::kReduce && k_.nodes[n].cls == VClass::kRow && live_[n] && row_[n].empty() &&
            ready(k_.nodes[n].a))
          batch.push_back(static_cast<int>(n));
      if (batch.empty()) break;
      reduce(batch, block);
      sweep();
    }
    for (size_t n = 0; n < k_.nodes.size(); ++n)
      OAR_ENFORCE(k_.nodes[n].kind != Node::kReduce || k_.nodes[n].cls == VClass::kCol || !live_[n] || !row_[n].empty(),
                  Internal, "cinn cuda codegen: reduction n", n, " never became computable");
    bool full = false;
    for (int o : k_.outputs) full |= k_.nodes[o].cls == VClass::kFull || k_.nodes[o].cls == VClass::kCol;
    store_outputs("lane == 0", "");
    col_accumulate_ = !col_outs.empty();
    if (full) column_chunks(block, [&] { store_full("c"); });
    col_accumulate_ = false;
    --ind_;
    line("}");
    if (col_outs.empty()) return;
    for (int k = 0; k < resident_; ++k) {
      line("{");
      ++ind_;
      line("const long long c = " + chunk_col(k, block) + ";");
      line(chunk_partial(k, block) ? "if (c < cols) {" : "{");
      ++ind_;
      for (size_t o : col_outs) {
        std::vector<std::string> accs;
        for (int j = 0; j < vec_; ++j) accs.push_back(col_acc(o, k * vec_ + j));
        add_columns(o, "c", accs);
      }
      --ind_;
      line("}");
      --ind_;
      line("}");
    }
  }
  double col_ident(size_t o) const { return identity_of(k_.nodes[k_.outputs[o]].op); }
  // Adds (compares) a value into element `at` of column-reduction output o (Note [Column
  // reductions]): the launcher zeroes a sum's or a mean's output first (a mean adds
  // value / rows, over middle axes / inner), fills a max's with -inf and a min's with inf.
  void add_column(size_t o, const std::string& at, const std::string& v) {
    const std::string& op = k_.nodes[k_.outputs[o]].op;
    const std::string dst = "&out" + std::to_string(o) + "[" + at + "]";
    if (op == "max" || op == "min")
      line("oar_atomic_" + op + "(" + dst + ", " + v + ");");
    else
      line("atomicAdd(" + dst + ", " + column_term(o, v) + ");");
  }
  // What a sum or mean adds for value v: a mean's share, v / rows (over middle axes, / inner).
  std::string column_term(size_t o, const std::string& v) const {
    if (k_.nodes[k_.outputs[o]].op != "mean") return v;
    return v + " / (" + t_ + ")" + (k_.col_outer ? "inner" : "rows");
  }
  // Adds a chunk's V values into the V columns of output o from element `at` (a multiple
  // of V): one float4 atomic on sm_90 and later for a float32 sum or mean (Note [CUDA
  // column reductions]), else one add (compare) per element.
  void add_columns(size_t o, const std::string& at, const std::vector<std::string>& vals) {
    if (!vector_atomic(o) || vals.size() != 4) {
      for (size_t j = 0; j < vals.size(); ++j) add_column(o, lane_col(at, static_cast<int>(j)), vals[j]);
      return;
    }
    std::vector<std::string> vs;
    for (const std::string& v : vals) vs.push_back(column_term(o, v));
    line("#if __CUDA_ARCH__ >= 900");
    line("atomicAdd(reinterpret_cast<float4*>(&out" + std::to_string(o) + "[" + at + "]), " +
         make_vector("float4", vs) + ");");
    line("#else");
    for (size_t j = 0; j < vals.size(); ++j) add_column(o, lane_col(at, static_cast<int>(j)), vals[j]);
    line("#endif");
  }
  // Whether the vector body adds into column output o with float4 atomics: float32 sums
  // and means (the vector test then checks the output's alignment too).
  bool vector_atomic(size_t o) const { return float4_column_atomic(k_, k_.nodes[k_.outputs[o]]); }

  // Row outputs (when `row_guard`) and, in the elementwise body, full outputs at `col`.
  void store_outputs(const std::string& row_guard, const std::string& col) {
    for (size_t o = 0; o < k_.outputs.size(); ++o)
      if (k_.nodes[k_.outputs[o]].cls == VClass::kRow) {
        std::unordered_map<int, std::string> memo;
        const std::string v = eval(k_.outputs[o], "", memo);
        const LoopKernel::ChanOut* ch = o < k_.chan.size() && !k_.chan[o].keep.empty() ? &k_.chan[o] : nullptr;
        if (ch) {
          // A channel reduction (Note [Channel reductions]): the row's sum adds into the
          // element of its kept indices (the launcher zeroes the output; a mean adds
          // sum / the count of rows and columns per element).
          int64_t kept = 1;
          for (int64_t d : ch->keep) kept *= d;
          const std::string add =
              ch->mean ? "(" + v + ") / ((" + t_ + ")rows * cols / " + std::to_string(kept) + ")" : v;
          line("if (" + row_guard + ") atomicAdd(&out" + std::to_string(o) + "[" +
               row_index(row_terms(k_.space, ch->keep)) + "], " + add + ");");
          continue;
        }
        line("if (" + row_guard + ") out" + std::to_string(o) + "[row] = " + st(v, bool_out(o)) + ";");
      }
    if (!col.empty()) store_full(col);
  }
  // The column of element j of a chunk starting at `col` (Note [CUDA vector accesses]).
  std::string lane_col(const std::string& col, int j) const {
    return vec_ == 1 ? col : "(" + col + " + " + std::to_string(j) + ")";
  }
  void store_full(const std::string& col) {
    vloads_.clear();
    // Every element's values first, then the stores: an output written into an input's
    // memory (Note [Input writes]) is stored after the chunk's last load of it.
    std::vector<std::vector<std::string>> vals(k_.outputs.size(), std::vector<std::string>(vec_));
    for (int j = 0; j < vec_; ++j) {
      lane_ = vec_ == 1 ? -1 : j;
      std::unordered_map<int, std::string> memo;
      const std::string cj = lane_col(col, j);
      for (size_t o = 0; o < k_.outputs.size(); ++o) {
        const Node& n = k_.nodes[k_.outputs[o]];
        if (n.cls == VClass::kCol) {
          const std::string v = eval(n.a, cj, memo);
          if (col_accumulate_) {  // Note [CUDA column reductions]: into the thread's registers
            const std::string acc = col_acc(o, std::max(chunk_, 0) * vec_ + std::max(lane_, 0));
            line(acc + " = " + combiner_of(n.op) + "(" + acc + ", " + v + ");");
          } else {  // added below; over middle axes (col_outer) into output row `row / inner`
            vals[o][j] = v;
          }
          continue;
        }
        if (n.cls == VClass::kFull) vals[o][j] = eval(k_.outputs[o], cj, memo);
      }
    }
    lane_ = -1;
    if (!col_accumulate_)
      for (size_t o : column_outputs()) add_columns(o, k_.col_outer ? "(row / inner) * cols + " + col : col, vals[o]);
    for (size_t o = 0; o < k_.outputs.size(); ++o) {
      if (k_.nodes[k_.outputs[o]].cls != VClass::kFull) continue;
      const std::string dst = "out" + std::to_string(o) + "[off + " + col + "]";
      if (vec_ == 1) {
        line(dst + " = " + st(vals[o][0], bool_out(o)) + ";");
        continue;
      }
      const std::string vt = vec_type(bool_out(o));
      for (std::string& v : vals[o]) v = st(v, bool_out(o));
      line("*reinterpret_cast<" + vt + "*>(&" + dst + ") = " + make_vector(vt, vals[o]) + ";");
    }
  }

  void sweep() {
    for (size_t n = 0; n < k_.nodes.size(); ++n) {
      const Node& x = k_.nodes[n];
      if (!row_[n].empty() || !live_[n] || !row_level(x) || x.kind == Node::kReduce || !ready(static_cast<int>(n)))
        continue;
      std::unordered_map<int, std::string> memo;
      row_[n] = eval_node(static_cast<int>(n), "", memo);
    }
  }

  // One sweep over the row for the reductions `ids` (Note [Reduction sweeps]): one
  // strided loop, an accumulator per reduction, then each combined across the threads.
  void reduce(const std::vector<int>& ids, bool block) {
    auto ident = [&](int id) { return identity_of(k_.nodes[id].op); };
    auto combiner = [&](int id) { return combiner_of(k_.nodes[id].op); };
    std::vector<int> stores;  // cached operands this sweep writes
    for (int id : ids) {
      const int a = k_.nodes[id].a;
      if (cache_out_.count(a) && !cache_ready_.count(a) && std::find(stores.begin(), stores.end(), a) == stores.end())
        stores.push_back(a);
    }
    for (int id : ids) line(t_ + " acc" + std::to_string(id) + " = " + lit(ident(id)) + ";");
    if (resident_)  // a resident row keeps the cached operands in registers, not in the output
      for (int a : stores)
        for (int k = 0; k < resident_; ++k) line(vec_type(false) + " " + cached_name(a, k) + " = {};");
    column_chunks(block, [&] { reduce_chunk(ids, stores); });
    for (int a : stores) cache_ready_.insert(a);
    if (block && ids.size() > 1) return block_reduce_all(ids);
    for (int id : ids) {
      const std::string acc = "acc" + std::to_string(id), r = "r" + std::to_string(id);
      if (block)
        line("const " + t_ + " " + r + " = oar_block_reduce(" + acc + ", " + combiner(id) + ", " + lit(ident(id)) +
             ", smem);");
      else
        line("const " + t_ + " " + r + " = oar_warp_reduce(" + acc + ", " + combiner(id) + ");");
      row_[id] = r;
    }
  }
  // Note [CUDA block reductions]: a sweep's reductions combined across the block at once,
  // reduction i in smem[33 i, 33 i + 32]: one pair of barriers for all of them, where one
  // oar_block_reduce each made a pair per reduction.
  void block_reduce_all(const std::vector<int>& ids) {
    auto slot = [](size_t i, const std::string& at) { return "smem[" + std::to_string(33 * i) + " + " + at + "]"; };
    line("{");
    ++ind_;
    for (int id : ids) {
      const std::string acc = "acc" + std::to_string(id);
      line(acc + " = oar_warp_reduce(" + acc + ", " + combiner_of(k_.nodes[id].op) + ");");
    }
    line("if ((threadIdx.x & 31) == 0) {");
    ++ind_;
    for (size_t i = 0; i < ids.size(); ++i)
      line(slot(i, "(threadIdx.x >> 5)") + " = acc" + std::to_string(ids[i]) + ";");
    --ind_;
    line("}");
    line("__syncthreads();");
    line("if (threadIdx.x < 32) {");
    ++ind_;
    line("const bool warp = threadIdx.x < (blockDim.x >> 5);");
    for (size_t i = 0; i < ids.size(); ++i) {
      const int id = ids[i];
      const std::string acc = "acc" + std::to_string(id);
      line(acc + " = oar_warp_reduce(warp ? " + slot(i, "threadIdx.x") + " : " + lit(identity_of(k_.nodes[id].op)) +
           ", " + combiner_of(k_.nodes[id].op) + ");");
    }
    line("if (threadIdx.x == 0) {");
    ++ind_;
    for (size_t i = 0; i < ids.size(); ++i) line(slot(i, "32") + " = acc" + std::to_string(ids[i]) + ";");
    --ind_;
    line("}");
    --ind_;
    line("}");
    line("__syncthreads();");
    --ind_;
    line("}");
    for (size_t i = 0; i < ids.size(); ++i) {
      const std::string r = "r" + std::to_string(ids[i]);
      line("const " + t_ + " " + r + " = " + slot(i, "32") + ";");
      row_[ids[i]] = r;
    }
  }
  void reduce_chunk(const std::vector<int>& ids, const std::vector<int>& stores) {
    vloads_.clear();
    std::unordered_map<int, std::vector<std::string>> cached;  // operand -> its V values
    for (int j = 0; j < vec_; ++j) {
      lane_ = vec_ == 1 ? -1 : j;
      const std::string cj = lane_col("c", j);
      std::unordered_map<int, std::string> memo;  // a shared operand is computed once
      std::unordered_set<int> stored;
      for (int id : ids) {
        const int a = k_.nodes[id].a;
        const std::string v = eval(a, cj, memo);
        if (std::find(stores.begin(), stores.end(), a) != stores.end() && stored.insert(a).second) {
          if (vec_ == 1)
            line("out" + std::to_string(cache_out_.at(a)) + "[off + c] = " + st(v) + ";");
          else
            cached[a].push_back(st(v));
        }
        const std::string acc = "acc" + std::to_string(id);
        line(acc + " = " + combiner_of(k_.nodes[id].op) + "(" + acc + ", " + v + ");");
      }
    }
    lane_ = -1;
    for (int a : stores) {  // the vector body: one store of the chunk's values
      if (vec_ == 1) continue;
      const std::string vt = vec_type(false), e = make_vector(vt, cached.at(a));
      if (resident_)
        line(cached_name(a, chunk_) + " = " + e + ";");
      else
        line("*reinterpret_cast<" + vt + "*>(&out" + std::to_string(cache_out_.at(a)) + "[off + c]) = " + e + ";");
    }
  }
  // "<p><a>_<b>", appended as fresh() is.
  static std::string indexed(const char* p, int64_t a, int64_t b) {
    std::string s(p);
    s += std::to_string(a);
    s += '_';
    s += std::to_string(b);
    return s;
  }
  static std::string resident_name(int input, int k) { return indexed("x", input, k); }
  static std::string next_name(int input, int k) { return indexed("nx", input, k); }  // the next row's
  static std::string cached_name(int node, int k) { return indexed("q", node, k); }

  // The value of full node `a` at the row's column 0, 0 when the row is empty (unary
  // `first`: the shift of the one-pass variance, loop_ir.h).
  std::string first_of(int a) {
    const std::string v = "s" + fresh();
    line(t_ + " " + v + " = " + lit(0.0) + ";");
    line("if (cols > 0) {");
    ++ind_;
    std::unordered_map<int, std::string> memo;
    const int lane = std::exchange(lane_, -1);  // element loads inside the block
    const std::string x = eval(a, "0LL", memo);
    lane_ = lane;
    line(v + " = " + x + ";");
    --ind_;
    line("}");
    return v;
  }

  // Node `n` at column `col` ("" at row level): the name of a local holding it.
  std::string eval(int n, const std::string& col, std::unordered_map<int, std::string>& memo) {
    if (!row_[n].empty()) return row_[n];
    if (auto it = memo.find(n); it != memo.end()) return it->second;
    std::string v;
    if (!col.empty() && cache_ready_.count(n)) {
      const int o = cache_out_.at(n);
      v = fresh();
      if (lane_ >= 0 && resident_) {  // Note [CUDA resident rows]
        line("const " + t_ + " " + v + " = " + cached_name(n, chunk_) + "." + "xyzw"[lane_] + ";");
      } else if (lane_ >= 0) {  // the vector body: one load of the chunk (Note [CUDA vector accesses])
        auto it = vloads_.find(-1 - o);
        if (it == vloads_.end()) {
          const std::string w = "v" + fresh(), vt = vec_type(false);
          line("const " + vt + " " + w + " = *reinterpret_cast<const " + vt + "*>(&out" + std::to_string(o) +
               "[off + c]);");
          it = vloads_.emplace(-1 - o, w).first;
        }
        line("const " + t_ + " " + v + " = " + it->second + "." + "xyzw"[lane_] + ";");
      } else {
        line("const " + t_ + " " + v + " = " + ld("out" + std::to_string(o) + "[off + " + col + "]") + ";");
      }
    } else {
      v = eval_node(n, col, memo);
    }
    memo[n] = v;
    return v;
  }

  std::string eval_node(int id, const std::string& col, std::unordered_map<int, std::string>& memo) {
    const Node& n = k_.nodes[id];
    std::string e;
    switch (n.kind) {
      case Node::kConst:
        e = lit(n.value);
        break;
      case Node::kInput:
        e = load(n, col);
        break;
      case Node::kReduce:
        OAR_THROW(Internal, "cinn cuda codegen: reduction used before it is computed");
      case Node::kUnary:
        e = n.op == "first" ? first_of(n.a) : unary(n.op, eval(n.a, col, memo));
        break;
      case Node::kBinary:
        if (n.op == "div" && !col.empty() && !row_[n.b].empty()) {
          // As the CPU kernel: one reciprocal per row value, a multiply per element.
          const std::string a = eval(n.a, col, memo);
          e = a + " * " + rcp(row_[n.b]);
        } else {
          const std::string a = eval(n.a, col, memo), b = eval(n.b, col, memo);
          e = binary(n.op, a, b);
        }
        break;
      case Node::kSelect: {  // the mask is 1 or 0 (Note [Select and masks])
        const std::string m = eval(n.a, col, memo), a = eval(n.b, col, memo), b = eval(n.c, col, memo);
        e = "(" + m + " != " + lit(0.0) + ") ? " + a + " : " + b;
        break;
      }
    }
    const std::string v = (col.empty() ? "s" : "") + fresh();
    line("const " + t_ + " " + v + " = " + e + ";");
    return v;
  }

  static std::string row_index(const std::vector<BcastTerm>& terms) {
    std::string row = "0";
    for (const BcastTerm& t : terms)
      row += " + (row / " + std::to_string(t.div) + "LL % " + std::to_string(t.mod) + "LL) * " +
             std::to_string(t.stride) + "LL";
    return row;
  }
  std::string ld(const std::string& e) const { return bf16_ ? "oar_ld(" + e + ")" : e; }
  std::string st(const std::string& e, bool mask = false) const {
    if (mask) return "(unsigned char)(" + e + " != " + lit(0.0) + ")";
    return bf16_ ? "oar_st(" + e + ")" : e;
  }
  bool bool_in(size_t i) const { return i < k_.bool_in.size() && k_.bool_in[i]; }
  bool bool_out(size_t o) const { return o < k_.bool_out.size() && k_.bool_out[o]; }
  // Element lane_ of the chunk's vector load of input n (emitted on its first use in the
  // chunk): Note [CUDA vector accesses].
  std::string vector_element(const Node& n) {
    const std::string in = "in" + std::to_string(n.input);
    const bool mask = bool_in(static_cast<size_t>(n.input));
    if (resident_ && n.cls == VClass::kFull) {  // Note [CUDA resident rows]
      const std::string e = resident_name(n.input, chunk_) + "." + "xyzw"[lane_];
      return mask ? "(" + e + " ? " + one() + " : " + lit(0.0) + ")" : ld(e);
    }
    const std::string at = n.cls == VClass::kFull  ? "off + c"
                           : n.cls == VClass::kCol ? "c"
                                                   : "(" + row_index(bcast_terms(k_, n.input)) + ") * cols + c";
    auto it = vloads_.find(n.input);
    if (it == vloads_.end()) {
      const std::string v = "v" + fresh(), vt = vec_type(mask);
      line("const " + vt + " " + v + " = *reinterpret_cast<const " + vt + "*>(&" + in + "[" + at + "]);");
      it = vloads_.emplace(n.input, v).first;
    }
    const std::string e = it->second + "." + "xyzw"[lane_];
    return mask ? "(" + e + " ? " + one() + " : " + lit(0.0) + ")" : ld(e);
  }
  std::string load(const Node& n, const std::string& col) {
    if (lane_ >= 0 && col_varying(n.cls)) return vector_element(n);
    const std::string in = "in" + std::to_string(n.input);
    if (bool_in(static_cast<size_t>(n.input))) {
      // A bool mask byte as 1 or 0 of the compute type.
      const std::string at = n.cls == VClass::kFull  ? "[off + " + col + "]"
                             : n.cls == VClass::kCol ? "[" + col + "]"
                             : n.cls == VClass::kBcast
                                 ? "[(" + row_index(bcast_terms(k_, n.input)) + ") * cols + " + col + "]"
                             : n.cls == VClass::kBrow ? "[" + row_index(bcast_terms(k_, n.input)) + "]"
                             : n.cls == VClass::kRow  ? "[row]"
                                                      : "[0]";
      return "(" + in + at + " ? " + one() + " : " + lit(0.0) + ")";
    }
    switch (n.cls) {
      case VClass::kFull:
        return ld(in + "[off + " + col + "]");
      case VClass::kCol:
        return ld(in + "[" + col + "]");
      case VClass::kBcast:  // Note [Broadcast inputs]: the row from the loop row's index
        return ld(in + "[(" + row_index(bcast_terms(k_, n.input)) + ") * cols + " + col + "]");
      case VClass::kBrow:  // Note [Channel reductions]: one value per row's kept indices
        return ld(in + "[" + row_index(bcast_terms(k_, n.input)) + "]");
      case VClass::kRow:
        return ld(in + "[row]");
      default:
        return ld(in + "[0]");
    }
  }

  std::string unary(const std::string& op, const std::string& x) const {
    if (op == "id") return x;
    if (op == "erf" && !f64_) return "oar_erf(" + x + ")";
    if (op == "neg") return "-" + x;
    if (op == "exp" && !f64_) return "oar_exp(" + x + ")";
    if (op == "exp" || op == "log" || op == "tanh" || op == "erf" || op == "sqrt" || op == "log1p" || op == "expm1")
      return fn(op.c_str()) + "(" + x + ")";
    if (op == "rsqrt") return rcp(fn("sqrt") + "(" + x + ")");
    if (op == "reciprocal") return rcp(x);
    if (op == "abs") return fn("fabs") + "(" + x + ")";
    if (op == "relu") return "oar_relu(" + x + ")";
    if (op == "sigmoid") return rcp(one() + " + " + unary("exp", "-" + x));
    if (op == "divc") return x + " / (" + t_ + ")cols";
    OAR_THROW(Unimplemented, "cinn cuda codegen: unknown unary op ", op);
  }

  std::string binary(const std::string& op, const std::string& x, const std::string& y) const {
    if (op == "add") return x + " + " + y;
    if (op == "sub") return x + " - " + y;
    if (op == "mul") return x + " * " + y;
    if (op == "div") return x + " / " + y;
    if (op == "max" || op == "min") return "oar_" + op + "(" + x + ", " + y + ")";
    if (op == "erfe") return "oar_erf_e(" + x + ", " + y + ")";
    // Compares: 1 or 0 (NaN compares false but for `ne`, as the CPU code)
    static const std::unordered_map<std::string, const char*> cmp = {{"lt", " < "},  {"le", " <= "}, {"gt", " > "},
                                                                     {"ge", " >= "}, {"eq", " == "}, {"ne", " != "}};
    if (auto it = cmp.find(op); it != cmp.end())
      return "((" + x + it->second + y + ") ? " + one() + " : " + lit(0.0) + ")";
    OAR_THROW(Unimplemented, "cinn cuda codegen: unknown binary op ", op);
  }

  const LoopKernel& k_;
  GpuSchedule s_;
  bool f64_ = false;
  bool bf16_ = false;
  std::string t_;   // the compute type
  std::string mt_;  // the memory type (unsigned short for bf16)
  std::ostringstream os_;
  int ind_ = 0;
  int tmp_ = 0;
  std::vector<bool> live_;                  // nodes the outputs read
  std::vector<std::string> row_;            // node -> its row-level local ("" until computed)
  std::unordered_map<int, int> cache_out_;  // node -> the output whose buffer holds it
  std::unordered_set<int> cache_ready_;
  int vec_ = 1;                                  // the body's elements per access
  int lane_ = -1;                                // the chunk element being evaluated (-1: none)
  int resident_ = 0;                             // Note [CUDA resident rows]: chunks per thread (0: off)
  int chunk_ = -1;                               // the resident chunk being evaluated
  bool col_accumulate_ = false;                  // Note [CUDA column reductions]: into registers
  std::unordered_map<int, std::string> vloads_;  // input i (output o: -1 - o) -> the chunk's vector load
};

}  // namespace

std::string cuda_source(const LoopKernel& k, const std::string& name) { return CudaEmitter(k).emit(name); }

}  // namespace oar::cinn
