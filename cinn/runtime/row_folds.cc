// The run time's combination of rows (Notes [Column reductions] and [Channel
// reductions] in docs/notes/cinn.md): a column reduction's blocks of rows and their
// partial rows, a channel reduction's row sums folded per kept index.
#include "cinn/runtime/row_folds.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "cinn/pipeline.h"
#include "phi_kernels/cpu/parallel.h"

namespace oar::cinn {
namespace {

// Note [Column reductions] (docs/notes/cinn.md): the rows are cut into blocks of
// kColBlock; each block accumulates its column values into its own partial row (sum and
// mean from 0, max from -inf, min from inf), and the partial rows are combined in block
// order (a mean's sum then divided by the row count). The result depends on neither the
// thread count nor the schedule, and a sum's rounding error grows with kColBlock +
// rows / kColBlock instead of rows. max/min propagate NaN (Oar's reduce kernels do).
constexpr int64_t kColBlock = 64;
template <typename T>
T col_identity(const std::string& op) {
  return op == "max" ? -std::numeric_limits<T>::infinity() : op == "min" ? std::numeric_limits<T>::infinity() : T(0);
}
template <typename T>
void combine_partials(const std::string& op, const T* part, int64_t blocks, int64_t rows, int64_t cols, T* out) {
  const int kind = op == "max" ? 1 : op == "min" ? 2 : 0;
  phi::parallel_for(
      cols,
      [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) out[c] = col_identity<T>(op);
    for (int64_t j = 0; j < blocks; ++j)
      for (int64_t c = c0; c < c1; ++c) {
        const T v = part[j * cols + c];
        T& o = out[c];
        if (kind == 0)
          o += v;
        else if (std::isnan(v) || std::isnan(o))
          o = std::numeric_limits<T>::quiet_NaN();
        else
          o = kind == 1 ? std::max(o, v) : std::min(o, v);
      }
    if (op == "mean")  // 0 rows: 0 / 0 = NaN, as the kernel's mean of nothing
      for (int64_t c = c0; c < c1; ++c) out[c] /= static_cast<T>(rows);
      },
      blocks * cols);
}
template <typename T>
void fill_identity(std::vector<char>& buf, const std::string& op) {
  T* p = reinterpret_cast<T*>(buf.data());
  std::fill(p, p + buf.size() / sizeof(T), col_identity<T>(op));
}
// `outer` > 1: a reduction over middle axes (LoopKernel::col_outer): the rows are
// `outer` runs of `rows / outer`, each cut into its own blocks and combined into its own
// output row.
}  // namespace

void run_column_sums(KernelFn fn, int64_t rows, int64_t cols, int64_t outer, const LoopKernel& k,
                     const std::vector<size_t>& col_outs, const std::vector<std::string>& col_ops,
                     const std::vector<void*>& bufs, std::vector<DenseTensor>& outs) {
  const DataType dt = k.dtype;
  const size_t n_in = k.inputs.size();
  const int64_t inner = outer > 0 ? rows / outer : 0;
  const int64_t blocks = (inner + kColBlock - 1) / kColBlock;  // per outer index
  const size_t es = dt == DataType::FLOAT64 ? 8 : 4;           // column reductions are float32/float64 (loop_ir.cc)
  std::vector<std::vector<char>> parts;
  for (size_t i = 0; i < col_outs.size(); ++i) {
    parts.emplace_back(static_cast<size_t>(outer * blocks * cols) * es, 0);
    if (dt == DataType::FLOAT64)
      fill_identity<double>(parts.back(), col_ops[i]);
    else
      fill_identity<float>(parts.back(), col_ops[i]);
  }
  phi::parallel_for(
      outer * blocks,
      [&](int64_t j0, int64_t j1) {
    std::vector<void*> b = bufs;
    for (int64_t j = j0; j < j1; ++j) {
      const int64_t o = j / blocks, r0 = o * inner + (j - o * blocks) * kColBlock;
      for (size_t i = 0; i < col_outs.size(); ++i) b[n_in + col_outs[i]] = parts[i].data() + j * cols * es;
      fn(r0, std::min((o + 1) * inner, r0 + kColBlock), cols, b.data());
    }
      },
      kernel_cost(k, rows, cols));
  for (size_t i = 0; i < col_outs.size(); ++i) {
    DenseTensor& out = outs[col_outs[i]];
    for (int64_t o = 0; o < outer; ++o) {
      const size_t at = static_cast<size_t>(o * blocks * cols) * es;
      if (dt == DataType::FLOAT64)
        combine_partials(col_ops[i], reinterpret_cast<const double*>(parts[i].data() + at), blocks, inner, cols,
                         out.data<double>() + o * cols);
      else
        combine_partials(col_ops[i], reinterpret_cast<const float*>(parts[i].data() + at), blocks, inner, cols,
                         out.data<float>() + o * cols);
    }
  }
}

int64_t kernel_cost(const LoopKernel& k, int64_t rows, int64_t cols) {
  // Note [Fused kernels on the pool] (docs/notes/cinn.md): per element of the space, the
  // bytes of the full inputs and outputs / 8, plus each full-class node's arithmetic, in
  // the calibration's float adds (pool units; measured on the block's kernels).
  const double es = static_cast<double>(size_of(k.dtype));
  double bytes = 0;  // per element: a bool mask is one byte (Note [Select and masks])
  for (size_t i = 0; i < k.inputs.size(); ++i)
    if (k.inputs[i] == VClass::kFull) bytes += i < k.bool_in.size() && k.bool_in[i] ? 1 : es;
  for (size_t o = 0; o < k.outputs.size(); ++o)
    if (k.nodes[k.outputs[o]].cls == VClass::kFull) bytes += o < k.bool_out.size() && k.bool_out[o] ? 1 : es;
  double math = 0;
  for (const Node& n : k.nodes) {
    if (n.kind == Node::kInput || n.kind == Node::kConst || n.cls != VClass::kFull) continue;
    const std::string& op = n.op;
    math += op == "erf" || op == "erfe"                                          ? 1.5
            : op == "exp" || op == "log" || op == "tanh" || op == "sigmoid"      ? 0.5
            : op == "div" || op == "sqrt" || op == "rsqrt" || op == "reciprocal" ? 0.2
                                                                                 : 0.1;
  }
  // float64 math takes twice float32's time (half the lanes); bfloat16 computes in float32.
  // At least a lone full input's (a row sum of it: 0.5 add measured).
  const double per_element = std::max(0.5, bytes / 8 + math * (k.dtype == DataType::FLOAT64 ? 2 : 1));
  return static_cast<int64_t>(std::min(9e18, static_cast<double>(rows) * static_cast<double>(cols) * per_element));
}

void* kernel_flags(const LoopKernel& k, int64_t rows, int64_t cols, bool in_place) {
  int64_t full_bytes = 0;
  for (int o : k.outputs)
    if (k.nodes[o].cls == VClass::kFull) full_bytes += rows * cols * static_cast<int64_t>(size_of(k.dtype));
  const int64_t limit = int64_t{FLAGS_cinn_nontemporal_store_mb} << 20;
  const bool stream = !in_place && (FLAGS_cinn_nontemporal_store_mb < 0 || (limit > 0 && full_bytes > limit));
  return reinterpret_cast<void*>(static_cast<uintptr_t>(stream ? 1 : 0));
}

namespace {
// Note [Channel reductions] (docs/notes/cinn.md): the kernel wrote each row's sum at
// `rows`; the rows of one output element (the same kept indices) come in runs of the
// innermost kept axis's divisor, summed in row order, so the result depends on neither
// the thread count nor the schedule. A mean divides by the element's count of values
// (0 rows: NaN, as the kernel's mean of nothing).
template <typename T>
void fold_rows(const T* rows_v, int64_t rows, int64_t cols, const std::vector<int64_t>& space,
               const LoopKernel::ChanOut& ch, T* out) {
  const std::vector<BcastTerm> terms = row_terms(space, ch.keep);
  int64_t n = 1;
  for (int64_t d : ch.keep) n *= d;
  std::fill(out, out + n, T(0));
  const int64_t run = terms.back().div;
  for (int64_t r0 = 0; r0 < rows; r0 += run) {
    int64_t at = 0;
    for (const BcastTerm& t : terms) at += (r0 / t.div % t.mod) * t.stride;
    T acc = 0;
    for (int64_t r = r0; r < r0 + run; ++r) acc += rows_v[r];
    out[at] += acc;
  }
  if (ch.mean)
    for (int64_t i = 0; i < n; ++i) out[i] /= static_cast<T>(rows * cols / n);
}
}  // namespace

void fold_channel_rows(const void* row_sums, int64_t rows, int64_t cols, const LoopKernel& k, size_t o,
                       DenseTensor& out) {
  if (k.dtype == DataType::FLOAT64)
    fold_rows(static_cast<const double*>(row_sums), rows, cols, k.space, k.chan[o], out.data<double>());
  else
    fold_rows(static_cast<const float*>(row_sums), rows, cols, k.space, k.chan[o], out.data<float>());
}

}  // namespace oar::cinn
