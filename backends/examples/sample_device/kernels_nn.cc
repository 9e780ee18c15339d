// The sample device's matmul, softmax, log_softmax and cross-entropy kernels (with their
// gradients), for float32 and float64. Sums of a row are taken in double.
#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels.h"

namespace sample {
namespace {

// ---- matmul: batched, batch dims broadcast, 1-D operands as in Paddle

struct MatOperand {
  int64_t rows, cols, row_stride, col_stride;  // the (possibly transposed) matrix
  std::vector<int64_t> batch_strides;          // over the output's batch dims
};

MatOperand mat_operand(const View& v, bool transpose, bool is_left, const std::vector<int64_t>& batch) {
  MatOperand m;
  const int nd = v.ndim();
  if (nd == 1) {  // a vector: a row on the left, a column on the right
    m.rows = is_left ? 1 : v.dims[0];
    m.cols = is_left ? v.dims[0] : 1;
    m.row_stride = is_left ? 0 : v.strides[0];
    m.col_stride = is_left ? v.strides[0] : 0;
  } else {
    m.rows = v.dims[nd - 2];
    m.cols = v.dims[nd - 1];
    m.row_stride = v.strides[nd - 2];
    m.col_stride = v.strides[nd - 1];
    if (transpose) {
      std::swap(m.rows, m.cols);
      std::swap(m.row_stride, m.col_stride);
    }
  }
  m.batch_strides.assign(batch.size(), 0);
  const int vb = std::max(nd - 2, 0), shift = static_cast<int>(batch.size()) - vb;
  for (int i = 0; i < vb; ++i)
    if (v.dims[i] != 1) m.batch_strides[shift + i] = v.strides[i];
  return m;
}

// The matrix at `base` as a contiguous row-major array (itself when it already is one).
template <typename T>
const T* packed(const T* base, const MatOperand& m, std::vector<T>* buf) {
  if (m.col_stride == 1 && (m.row_stride == m.cols || m.rows == 1)) return base;
  buf->resize(m.rows * m.cols);
  for (int64_t r = 0; r < m.rows; ++r)
    for (int64_t c = 0; c < m.cols; ++c) (*buf)[r * m.cols + c] = base[r * m.row_stride + c * m.col_stride];
  return buf->data();
}

template <typename T>
void matmul(Call& c) {  // (x, y, transpose_x, transpose_y)
  const View x = c.input(0), y = c.input(1);
  const bool tx = c.attr_bool(0), ty = c.attr_bool(1);
  const View out = c.output(0);
  const int mat_dims = (x.ndim() > 1 ? 1 : 0) + (y.ndim() > 1 ? 1 : 0);
  const std::vector<int64_t> batch(out.dims.begin(), out.dims.end() - mat_dims);
  const MatOperand a = mat_operand(x, tx, true, batch), b = mat_operand(y, ty, false, batch);
  if (a.cols != b.rows)
    c.fail(OAR_ERROR_INVALID_ARGUMENT, "inner dimensions differ: x " + dims_str(x.dims) + ", y " + dims_str(y.dims));
  if (out.numel() == 0) return;
  c.launch([x, y, out, a, b, batch] {
    const int64_t M = a.rows, K = a.cols, N = b.cols;
    std::vector<T> abuf, bbuf;
    const std::array<std::vector<int64_t>, 2> st = {a.batch_strides, b.batch_strides};
    T* o = out.ptr<T>();
    int64_t k = 0;
    auto one = [&](int64_t xo, int64_t yo) {
      T* C = o + (k++) * M * N;
      if (K == 0) {
        std::fill(C, C + M * N, T(0));
        return;
      }
      const T* A = packed(x.ptr<T>() + xo, a, &abuf);
      if (b.row_stride == 1 && b.col_stride == K) {  // y^T of a row-major matrix
        gemm_nt<T>(M, N, K, A, y.ptr<T>() + yo, C, false);
      } else {
        gemm<T>(M, N, K, A, packed(y.ptr<T>() + yo, b, &bbuf), C, false);
      }
    };
    if (batch.empty()) {
      one(0, 0);
      return;
    }
    // Walk the batch dims (the last one as a row of matrices).
    for_rows<2>(batch, st, [&](int64_t n, std::array<int64_t, 2> off, std::array<int64_t, 2> s) {
      for (int64_t i = 0; i < n; ++i) one(off[0] + i * s[0], off[1] + i * s[1]);
    });
  });
}

// ---- rows along an axis: outer x C x inner over a contiguous tensor

struct Rows {
  int64_t outer = 1, C = 1, inner = 1;
};

Rows rows_at(Call& c, const std::vector<int64_t>& dims, int64_t axis) {
  const int nd = static_cast<int>(dims.size());
  const int64_t a = axis < 0 ? axis + std::max(nd, 1) : axis;
  if (a < 0 || a >= std::max(nd, 1))
    c.fail(OAR_ERROR_INVALID_ARGUMENT, "axis " + std::to_string(axis) + " is out of range for " + dims_str(dims));
  Rows r;
  if (nd == 0) return r;
  for (int i = 0; i < a; ++i) r.outer *= dims[i];
  r.C = dims[a];
  for (int i = a + 1; i < nd; ++i) r.inner *= dims[i];
  return r;
}

template <typename T, bool kLog>
void softmax(Call& c) {  // (x, axis)
  const View x = c.input(0);
  const Rows r = rows_at(c, x.dims, c.attr_int(0));
  const View out = c.output(0);
  if (out.numel() == 0) return;
  c.launch([x, out, r] {
    std::vector<T> buf;
    const T* xp = contiguous_data<T>(x, &buf);
    T* o = out.ptr<T>();
    for (int64_t p = 0; p < r.outer; ++p)
      for (int64_t q = 0; q < r.inner; ++q) {
        const T* row = xp + p * r.C * r.inner + q;
        T* orow = o + p * r.C * r.inner + q;
        T mx = row[0];
        for (int64_t k = 1; k < r.C; ++k) mx = std::max(mx, row[k * r.inner]);
        double s = 0;
        for (int64_t k = 0; k < r.C; ++k) s += std::exp(static_cast<double>(row[k * r.inner] - mx));
        const double ls = std::log(s);
        for (int64_t k = 0; k < r.C; ++k) {
          const double z = static_cast<double>(row[k * r.inner] - mx);
          orow[k * r.inner] = static_cast<T>(kLog ? z - ls : std::exp(z) / s);
        }
      }
  });
}

template <typename T, bool kLog>
void softmax_grad(Call& c) {  // (out, grad_out, axis)
  const View out = c.input(0), g = c.input(1);
  const Rows r = rows_at(c, out.dims, c.attr_int(0));
  const View dx = c.output(0);
  if (dx.numel() == 0) return;
  c.launch([out, g, dx, r] {
    std::vector<T> ob, gb;
    const T* op = contiguous_data<T>(out, &ob);
    const T* gp = contiguous_data<T>(g, &gb);
    T* d = dx.ptr<T>();
    for (int64_t p = 0; p < r.outer; ++p)
      for (int64_t q = 0; q < r.inner; ++q) {
        const int64_t base = p * r.C * r.inner + q;
        double s = 0;  // softmax: sum(g * out); log_softmax: sum(g)
        for (int64_t k = 0; k < r.C; ++k) {
          const int64_t i = base + k * r.inner;
          s += kLog ? static_cast<double>(gp[i]) : static_cast<double>(gp[i]) * static_cast<double>(op[i]);
        }
        for (int64_t k = 0; k < r.C; ++k) {
          const int64_t i = base + k * r.inner;
          const double v = kLog ? gp[i] - std::exp(static_cast<double>(op[i])) * s : op[i] * (gp[i] - s);
          d[i] = static_cast<T>(v);
        }
      }
  });
}

// ---- cross_entropy: log-softmax (or log) + NLL + class weights + smoothing + reduction,
// as Oar's CPU kernel (Note [cross_entropy] in paddle_core/meta/infer_meta_nn.cc)

struct CEArgs {
  View input, label, weight, grad;
  bool soft = false, use_softmax = true;
  int64_t ignore = -100;
  double eps = 0;
  int reduction = 1;  // 0 none, 1 mean, 2 sum
  Rows r;
};

CEArgs ce_args(Call& c, bool with_grad) {
  CEArgs a;
  a.input = c.input(0);
  a.label = c.input(1);
  a.weight = c.optional_input(2);
  size_t i = 0;
  if (with_grad) a.grad = c.input(3);
  a.soft = c.attr_bool(i++);
  a.use_softmax = c.attr_bool(i++);
  a.ignore = c.attr_int(i++);
  const int64_t axis = c.attr_int(i++);
  a.eps = c.attr_float(i++);
  const std::string red = c.attr_str(i++);
  a.reduction = red == "none" ? 0 : red == "mean" ? 1 : red == "sum" ? 2 : -1;
  if (a.reduction < 0)
    c.fail(OAR_ERROR_INVALID_ARGUMENT, "reduction must be 'none', 'mean' or 'sum', got '" + red + "'");
  if (!a.soft && a.label.dtype != OAR_DTYPE_INT64 && a.label.dtype != OAR_DTYPE_INT32)
    c.fail(OAR_ERROR_INVALID_ARGUMENT,
           std::string("hard labels must be int32 or int64, got ") + dtype_name(a.label.dtype));
  a.r = rows_at(c, a.input.dims, axis);
  return a;
}

// One call's problem in the queued work: contiguous operands and the per-sample terms.
template <typename T>
struct CE {
  const CEArgs& a;
  std::vector<T> xb, sb, wb;
  std::vector<int64_t> lb;
  const T* x;
  const T* soft = nullptr;
  const T* w = nullptr;
  const int64_t* hard = nullptr;
  double keep, spread, wsum = 0;

  explicit CE(const CEArgs& args) : a(args) {
    x = contiguous_data<T>(a.input, &xb);
    if (a.soft) {
      soft = contiguous_data<T>(a.label, &sb);
    } else {  // hard labels as int64
      lb.resize(a.label.numel());
      std::vector<int64_t> tmp;
      if (a.label.dtype == OAR_DTYPE_INT64) {
        const int64_t* l = contiguous_data<int64_t>(a.label, &tmp);
        std::copy(l, l + lb.size(), lb.begin());
      } else {
        std::vector<int32_t> t32;
        const int32_t* l = contiguous_data<int32_t>(a.label, &t32);
        std::copy(l, l + lb.size(), lb.begin());
      }
      hard = lb.data();
    }
    if (a.weight.present) {
      w = contiguous_data<T>(a.weight, &wb);
      for (int64_t c = 0; c < a.r.C; ++c) wsum += w[c];
    }
    keep = 1.0 - a.eps;
    spread = a.r.C > 0 ? a.eps / static_cast<double>(a.r.C) : 0.0;
  }
  int64_t samples() const { return a.r.outer * a.r.inner; }
  int64_t base(int64_t j) const { return (j / a.r.inner) * a.r.C * a.r.inner + j % a.r.inner; }
  double xv(int64_t j, int64_t c) const { return x[base(j) + c * a.r.inner]; }
  bool ignored(int64_t j) const { return !a.soft && hard[j] == a.ignore; }
  double soft_at(int64_t j, int64_t c) const {
    return keep * static_cast<double>(soft[base(j) + c * a.r.inner]) + spread;
  }
  // Paddle's TolerableValue: log(0) -> -1e20 (use_softmax = false).
  static double tolerable_log(double v) {
    const double l = std::log(v);
    return std::isinf(l) ? (l < 0 ? -1e20 : 1e20) : l;
  }
  double lse(int64_t j) const {
    double mx = -std::numeric_limits<double>::infinity();
    for (int64_t c = 0; c < a.r.C; ++c) mx = std::max(mx, xv(j, c));
    double s = 0;
    for (int64_t c = 0; c < a.r.C; ++c) s += std::exp(xv(j, c) - mx);
    return mx + std::log(s);
  }
  double log_prob(int64_t j, int64_t c, double z) const {
    return a.use_softmax ? xv(j, c) - z : tolerable_log(xv(j, c));
  }
  double weight_of(int64_t j) const {
    if (!a.soft) {
      if (hard[j] == a.ignore) return 0;
      return w == nullptr ? 1.0 : keep * static_cast<double>(w[hard[j]]) + spread * wsum;
    }
    if (w == nullptr) return 1;
    double s = 0;
    for (int64_t c = 0; c < a.r.C; ++c) s += soft_at(j, c) * static_cast<double>(w[c]);
    return s;
  }
  double ce(int64_t j) const {  // the unweighted loss of sample j
    if (ignored(j)) return 0;
    const double z = a.use_softmax ? lse(j) : 0.0;
    if (!a.soft) {
      double v = -keep * log_prob(j, hard[j], z);
      if (a.eps > 0) {
        double s = 0;
        for (int64_t c = 0; c < a.r.C; ++c) s += log_prob(j, c, z);
        v -= spread * s;
      }
      return v;
    }
    double v = 0;
    for (int64_t c = 0; c < a.r.C; ++c) v -= soft_at(j, c) * log_prob(j, c, z);
    return v;
  }
  double mean_denominator() const {
    const bool by_weight = w != nullptr || (!a.soft && (a.ignore >= 0 || a.eps > 0));
    if (!by_weight) return static_cast<double>(samples());
    double d = 0;
    for (int64_t j = 0; j < samples(); ++j) d += weight_of(j);
    return d == 0.0 ? 1.0 : d;
  }
};

// Hard labels must be classes or ignore_index: checked in the queued work, before any
// label is used as an index, so the host never waits for the stream to read them. A bad
// label is the kernel's failure, raised by the next call that waits for the device
// (loss.item(), numpy(), synchronize), as on a GPU; "" when every label is good.
template <typename T>
std::string bad_label(const CE<T>& p) {
  if (p.a.soft) return "";
  for (int64_t j = 0, n = static_cast<int64_t>(p.lb.size()); j < n; ++j) {
    const int64_t l = p.hard[j];
    if (l == p.a.ignore || (l >= 0 && l < p.a.r.C)) continue;
    const std::string C = std::to_string(p.a.r.C);
    return "label value " + std::to_string(l) + " at position " + std::to_string(j) + " is out of range for " + C +
           " classes (expected [0, " + C + ") or ignore_index=" + std::to_string(p.a.ignore) + ")";
  }
  return "";
}

template <typename T>
void cross_entropy(Call& c) {
  const CEArgs a = ce_args(c, false);
  const View loss = c.output(0);
  if (loss.numel() == 0) return;
  c.launch_checked(
      [a, loss]() -> std::string {
        const CE<T> p(a);
        if (std::string e = bad_label(p); !e.empty()) return e;
        const int64_t n = p.samples();
        T* out = loss.ptr<T>();
        double total = 0;
        for (int64_t j = 0; j < n; ++j) {
          const double v = p.ce(j) * p.weight_of(j);
          if (a.reduction == 0) {
            out[j] = static_cast<T>(v);
          } else {
            total += v;
          }
        }
        if (a.reduction == 1) total /= p.mean_denominator();
        if (a.reduction != 0) out[0] = static_cast<T>(total);
        return "";
      },
      OAR_ERROR_INVALID_ARGUMENT);
}

template <typename T>
void cross_entropy_grad(Call& c) {
  const CEArgs a = ce_args(c, true);
  const View dx = c.output(0);
  if (dx.numel() == 0) return;
  c.launch_checked(
      [a, dx]() -> std::string {
        const CE<T> p(a);
        if (std::string e = bad_label(p); !e.empty()) return e;
        std::vector<T> gb;
        const T* g = contiguous_data<T>(a.grad, &gb);
        const double k = a.reduction == 0 ? 0.0 : (a.reduction == 1 ? g[0] / p.mean_denominator() : g[0]);
        T* d = dx.ptr<T>();
        const int64_t C = a.r.C, st = a.r.inner;
        for (int64_t j = 0, n = p.samples(); j < n; ++j) {
          T* dr = d + p.base(j);
          const double scale = (a.reduction == 0 ? static_cast<double>(g[j]) : k) * p.weight_of(j);
          if (p.ignored(j) || scale == 0.0) {
            for (int64_t c2 = 0; c2 < C; ++c2) dr[c2 * st] = T(0);
            continue;
          }
          auto y = [&](int64_t c2) { return a.soft ? p.soft_at(j, c2) : p.spread + (c2 == p.hard[j] ? p.keep : 0.0); };
          if (!a.use_softmax) {  // loss = -sum_c y'_c log x_c
            for (int64_t c2 = 0; c2 < C; ++c2) dr[c2 * st] = static_cast<T>(-scale * y(c2) / p.xv(j, c2));
            continue;
          }
          const double z = p.lse(j);
          double ysum = 0;
          for (int64_t c2 = 0; c2 < C; ++c2) ysum += y(c2);
          for (int64_t c2 = 0; c2 < C; ++c2)
            dr[c2 * st] = static_cast<T>(scale * (std::exp(p.xv(j, c2) - z) * ysum - y(c2)));
        }
        return "";
      },
      OAR_ERROR_INVALID_ARGUMENT);
}

template <void (*Body)(Call&)>
struct K {
  template <const char* Op>
  static OAR_Status fn(const OAR_KernelApi* api, OAR_KernelContext ctx) {
    return run_kernel(api, ctx, Op, Body);
  }
};

constexpr char k_matmul[] = "matmul", k_softmax[] = "softmax", k_softmax_grad[] = "softmax_grad",
               k_log_softmax[] = "log_softmax", k_log_softmax_grad[] = "log_softmax_grad",
               k_cross_entropy[] = "cross_entropy", k_cross_entropy_grad[] = "cross_entropy_grad";

template <typename T>
void add_kernels(OAR_DataType t, std::vector<KernelDef>* d) {
  d->push_back({"matmul", t, "(Tensor x, Tensor y, bool transpose_x, bool transpose_y) -> Tensor(out)",
                K<matmul<T>>::template fn<k_matmul>});
  d->push_back({"softmax", t, "(Tensor x, int axis) -> Tensor(out)", K<softmax<T, false>>::template fn<k_softmax>});
  d->push_back(
      {"log_softmax", t, "(Tensor x, int axis) -> Tensor(out)", K<softmax<T, true>>::template fn<k_log_softmax>});
  d->push_back({"softmax_grad", t, "(Tensor out, Tensor grad_out, int axis) -> Tensor(x_grad)",
                K<softmax_grad<T, false>>::template fn<k_softmax_grad>});
  d->push_back({"log_softmax_grad", t, "(Tensor out, Tensor grad_out, int axis) -> Tensor(x_grad)",
                K<softmax_grad<T, true>>::template fn<k_log_softmax_grad>});
  d->push_back({"cross_entropy", t,
                "(Tensor input, Tensor label, Tensor? weight, bool soft_label, bool use_softmax, int ignore_index, "
                "int axis, float label_smoothing, str reduction) -> Tensor(loss)",
                K<cross_entropy<T>>::template fn<k_cross_entropy>});
  d->push_back({"cross_entropy_grad", t,
                "(Tensor input, Tensor label, Tensor? weight, Tensor grad_loss, bool soft_label, bool use_softmax, "
                "int ignore_index, int axis, float label_smoothing, str reduction) -> Tensor(input_grad)",
                K<cross_entropy_grad<T>>::template fn<k_cross_entropy_grad>});
}

}  // namespace

void nn_kernels(std::vector<KernelDef>* d) {
  add_kernels<float>(OAR_DTYPE_FLOAT32, d);
  add_kernels<double>(OAR_DTYPE_FLOAT64, d);
}

}  // namespace sample
