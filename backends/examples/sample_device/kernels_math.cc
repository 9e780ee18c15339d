// The sample device's elementwise, creation and reduction kernels: add, subtract,
// multiply, divide (broadcasting), neg, relu and relu_grad, scale, cast, full, full_like,
// assign, sum, mean, sum_to. Float kernels for float32 and float64; cast, full,
// full_like and assign for every dtype.
#include <algorithm>
#include <cmath>

#include "kernels.h"

namespace sample {
namespace {

constexpr OAR_DataType kF32 = OAR_DTYPE_FLOAT32, kF64 = OAR_DTYPE_FLOAT64;
constexpr OAR_DataType kAllTypes[] = {OAR_DTYPE_BOOL,    OAR_DTYPE_INT8,   OAR_DTYPE_UINT8,   OAR_DTYPE_INT16,
                                      OAR_DTYPE_INT32,   OAR_DTYPE_INT64,  OAR_DTYPE_FLOAT16, OAR_DTYPE_BFLOAT16,
                                      OAR_DTYPE_FLOAT32, OAR_DTYPE_FLOAT64};

// ---- binary elementwise, broadcasting x and y to the output's dims

struct Add {
  template <typename T>
  static T f(T a, T b) {
    return a + b;
  }
};
struct Sub {
  template <typename T>
  static T f(T a, T b) {
    return a - b;
  }
};
struct Mul {
  template <typename T>
  static T f(T a, T b) {
    return a * b;
  }
};
struct Div {
  template <typename T>
  static T f(T a, T b) {
    return a / b;
  }
};

template <typename T, typename Op>
void binary(Call& c) {
  // Same-shape contiguous operands, or one of them a single element: a flat loop whose
  // queued work captures three pointers (no dims or strides copied per launch).
  const Flat fx = c.flat_input(0), fy = c.flat_input(1);
  const bool xs = fx.numel == 1, ys = fy.numel == 1;
  const int64_t n = std::max(fx.numel, fy.numel);
  if (fx.contiguous && fy.contiguous && (fx.numel == n || xs) && (fy.numel == n || ys)) {
    const Flat fo = c.flat_output(0);
    if (fo.numel == 0) return;
    if (fo.contiguous && fo.numel == n) {
      T* o = fo.ptr<T>();
      const T* xp = fx.ptr<T>();
      const T* yp = fy.ptr<T>();
      c.launch([o, xp, yp, n, xs, ys] {
        if (!xs && !ys) {
          for (int64_t i = 0; i < n; ++i) o[i] = Op::f(xp[i], yp[i]);
        } else if (!xs) {
          const T b = yp[0];
          for (int64_t i = 0; i < n; ++i) o[i] = Op::f(xp[i], b);
        } else if (!ys) {
          const T a = xp[0];
          for (int64_t i = 0; i < n; ++i) o[i] = Op::f(a, yp[i]);
        } else {
          for (int64_t i = 0; i < n; ++i) o[i] = Op::f(xp[0], yp[0]);
        }
      });
      return;
    }
  }
  // The general walk (broadcasting, strided views); the output is allocated once.
  const View x = c.input(0), y = c.input(1);
  const View out = fx.contiguous && fy.contiguous && (fx.numel == n || xs) && (fy.numel == n || ys)
                       ? c.allocated_output(0)
                       : c.output(0);
  if (out.numel() == 0) return;
  const std::array<std::vector<int64_t>, 3> st = {out.strides, broadcast_strides(x, out.dims),
                                                  broadcast_strides(y, out.dims)};
  c.launch([x, y, out, st] {
    T* o = out.ptr<T>();
    const T* xp = x.ptr<T>();
    const T* yp = y.ptr<T>();
    for_rows<3>(out.dims, st, [&](int64_t n, std::array<int64_t, 3> off, std::array<int64_t, 3> s) {
      T* r = o + off[0];
      const T* a = xp + off[1];
      const T* b = yp + off[2];
      if (s[1] == 1 && s[2] == 1) {
        for (int64_t i = 0; i < n; ++i) r[i] = Op::f(a[i], b[i]);
      } else if (s[1] == 1 && s[2] == 0) {
        const T bv = b[0];
        for (int64_t i = 0; i < n; ++i) r[i] = Op::f(a[i], bv);
      } else if (s[1] == 0 && s[2] == 1) {
        const T av = a[0];
        for (int64_t i = 0; i < n; ++i) r[i] = Op::f(av, b[i]);
      } else {
        for (int64_t i = 0; i < n; ++i) r[i] = Op::f(a[i * s[1]], b[i * s[2]]);
      }
    });
  });
}

// ---- unary elementwise over a (possibly strided) input into a contiguous output

template <typename T, typename F>
void unary(Call& c, const View& x, const View& out, F f) {
  if (out.numel() == 0) return;
  if (x.contiguous() && x.numel() == out.numel()) {  // one flat loop the compiler vectorizes
    c.launch([x, out, f] {
      const T* xp = x.ptr<T>();
      T* o = out.ptr<T>();
      for (int64_t i = 0, n = out.numel(); i < n; ++i) o[i] = f(xp[i]);
    });
    return;
  }
  const std::array<std::vector<int64_t>, 2> st = {out.strides, broadcast_strides(x, out.dims)};
  c.launch([x, out, st, f] {
    T* o = out.ptr<T>();
    const T* xp = x.ptr<T>();
    for_rows<2>(out.dims, st, [&](int64_t n, std::array<int64_t, 2> off, std::array<int64_t, 2> s) {
      for (int64_t i = 0; i < n; ++i) o[off[0] + i] = f(xp[off[1] + i * s[1]]);
    });
  });
}

template <typename T>
void relu(Call& c) {
  const View x = c.input(0);
  unary<T>(c, x, c.output(0), [](T v) { return v > T(0) ? v : T(0); });
}

template <typename T>
void neg(Call& c) {
  const View x = c.input(0);
  unary<T>(c, x, c.output(0), [](T v) { return -v; });
}

template <typename T>
void relu_grad(Call& c) {  // (out, grad_out) -> grad_out * (out > 0)
  const View out = c.input(0), g = c.input(1), dx = c.output(0);
  if (dx.numel() == 0) return;
  const std::array<std::vector<int64_t>, 3> st = {dx.strides, broadcast_strides(out, dx.dims),
                                                  broadcast_strides(g, dx.dims)};
  c.launch([out, g, dx, st] {
    T* d = dx.ptr<T>();
    const T* op = out.ptr<T>();
    const T* gp = g.ptr<T>();
    for_rows<3>(dx.dims, st, [&](int64_t n, std::array<int64_t, 3> off, std::array<int64_t, 3> s) {
      T* dr = d + off[0];
      const T* orow = op + off[1];
      const T* grow = gp + off[2];
      if (s[1] == 1 && s[2] == 1) {
        for (int64_t i = 0; i < n; ++i) dr[i] = orow[i] > T(0) ? grow[i] : T(0);
      } else {
        for (int64_t i = 0; i < n; ++i) dr[i] = orow[i * s[1]] > T(0) ? grow[i * s[2]] : T(0);
      }
    });
  });
}

template <typename T>
void scale(Call& c) {  // (x, scale, bias, bias_after_scale)
  const View x = c.input(0);
  const T s = static_cast<T>(c.attr_float(0)), b = static_cast<T>(c.attr_float(1));
  const bool after = c.attr_bool(2);
  unary<T>(c, x, c.output(0), [s, b, after](T v) { return after ? v * s + b : (v + b) * s; });
}

// ---- cast, fill, copy (every dtype)

// Copies x (any strides) into the contiguous `out`, converting to out's dtype.
void copy_convert(Call& c, const View& x, const View& out) {
  if (out.numel() == 0) return;
  c.launch([x, out] {
    const size_t in_size = dtype_size(x.dtype), out_size = dtype_size(out.dtype);
    if (x.contiguous()) {
      convert(x.dtype, x.data, out.dtype, out.data, out.numel());
      return;
    }
    char* o = out.data;
    for_rows<1>(x.dims, {x.strides}, [&](int64_t n, std::array<int64_t, 1> off, std::array<int64_t, 1> s) {
      for (int64_t i = 0; i < n; ++i, o += out_size)
        convert(x.dtype, x.data + (off[0] + i * s[0]) * in_size, out.dtype, o, 1);
    });
  });
}

void cast(Call& c) {
  const View x = c.input(0);
  copy_convert(c, x, c.output(0));
}

void assign(Call& c) {
  const View x = c.input(0);
  copy_convert(c, x, c.output(0));
}

void fill(Call& c, const View& out, double value) {
  if (out.numel() == 0) return;
  c.launch([out, value] {
    const size_t size = dtype_size(out.dtype);
    char one[8];
    convert(OAR_DTYPE_FLOAT64, &value, out.dtype, one, 1);
    const int64_t n = out.numel();
    for (int64_t i = 0; i < n; ++i) std::memcpy(out.data + i * size, one, size);
  });
}

void full(Call& c) {  // (shape, fill_value, dtype, place): the output is already shaped
  const double value = c.attr_scalar(1);
  fill(c, c.output(0), value);
}

void full_like(Call& c) {  // (x, fill_value, dtype)
  const double value = c.attr_scalar(0);
  fill(c, c.output(0), value);
}

// ---- reductions: accumulate in double at each output element, then store

// Sums x into `out` (contiguous, any dtype), where `to_out` maps x's dims to out's
// element offsets (0 along reduced dims); divides by `divisor`.
template <typename T>
void reduce_sum(Call& c, const View& x, const View& out, std::vector<int64_t> to_out, double divisor) {
  if (out.numel() == 0) return;
  c.launch([x, out, to_out, divisor] {
    std::vector<double> acc(out.numel(), 0.0);
    const T* xp = x.ptr<T>();
    for_rows<2>(x.dims, {x.strides, to_out}, [&](int64_t n, std::array<int64_t, 2> off, std::array<int64_t, 2> s) {
      if (s[1] == 0) {
        double sum = 0;
        for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(xp[off[0] + i * s[0]]);
        acc[off[1]] += sum;
      } else {
        for (int64_t i = 0; i < n; ++i) acc[off[1] + i * s[1]] += static_cast<double>(xp[off[0] + i * s[0]]);
      }
    });
    if (divisor != 1.0)
      for (double& v : acc) v /= divisor;
    convert(OAR_DTYPE_FLOAT64, acc.data(), out.dtype, out.data, out.numel());
  });
}

// The reduced dims of x (all for an empty list), and out's offsets along x's dims.
std::vector<int64_t> reduction_map(Call& c, const View& x, const std::vector<int64_t>& axes, double* count) {
  std::vector<bool> reduced(x.ndim(), axes.empty());
  for (int64_t a : axes) {
    const int64_t r = a < 0 ? a + x.ndim() : a;
    if (r < 0 || r >= std::max(x.ndim(), 1))
      c.fail(OAR_ERROR_INVALID_ARGUMENT, "axis " + std::to_string(a) + " is out of range");
    if (r < x.ndim()) reduced[r] = true;
  }
  std::vector<int64_t> kept(x.ndim());
  *count = 1;
  for (int i = 0; i < x.ndim(); ++i) {
    kept[i] = reduced[i] ? 1 : x.dims[i];
    if (reduced[i]) *count *= static_cast<double>(x.dims[i]);
  }
  std::vector<int64_t> map = contiguous_strides(kept);
  for (int i = 0; i < x.ndim(); ++i)
    if (reduced[i]) map[i] = 0;
  return map;
}

template <typename T>
void sum(Call& c) {  // (x, axis, dtype, keepdim)
  const View x = c.input(0);
  double count;
  const std::vector<int64_t> map = reduction_map(c, x, c.attr_ints(0), &count);
  reduce_sum<T>(c, x, c.output(0), map, 1.0);
}

template <typename T>
void mean(Call& c) {  // (x, axis, keepdim)
  const View x = c.input(0);
  double count;
  const std::vector<int64_t> map = reduction_map(c, x, c.attr_ints(0), &count);
  reduce_sum<T>(c, x, c.output(0), map, count);
}

template <typename T>
void sum_to(Call& c) {  // (x, shape): out (shape) broadcasts to x
  const View x = c.input(0), out = c.output(0);
  reduce_sum<T>(c, x, out, broadcast_strides(out, x.dims), 1.0);
}

template <void (*Body)(Call&)>
struct K {
  template <const char* Op>
  static OAR_Status fn(const OAR_KernelApi* api, OAR_KernelContext ctx) {
    return run_kernel(api, ctx, Op, Body);
  }
};

#define SAMPLE_OP_NAME(name) constexpr char k_##name[] = #name;
SAMPLE_OP_NAME(add)
SAMPLE_OP_NAME(subtract)
SAMPLE_OP_NAME(multiply)
SAMPLE_OP_NAME(divide)
SAMPLE_OP_NAME(relu)
SAMPLE_OP_NAME(neg)
SAMPLE_OP_NAME(relu_grad)
SAMPLE_OP_NAME(scale)
SAMPLE_OP_NAME(cast)
SAMPLE_OP_NAME(assign)
SAMPLE_OP_NAME(full)
SAMPLE_OP_NAME(full_like)
SAMPLE_OP_NAME(sum)
SAMPLE_OP_NAME(mean)
SAMPLE_OP_NAME(sum_to)
#undef SAMPLE_OP_NAME

template <typename T>
void float_kernels(OAR_DataType t, std::vector<KernelDef>* d) {
  const char* bin = "(Tensor x, Tensor y) -> Tensor(out)";
  d->push_back({"add", t, bin, K<binary<T, Add>>::template fn<k_add>});
  d->push_back({"subtract", t, bin, K<binary<T, Sub>>::template fn<k_subtract>});
  d->push_back({"multiply", t, bin, K<binary<T, Mul>>::template fn<k_multiply>});
  d->push_back({"divide", t, bin, K<binary<T, Div>>::template fn<k_divide>});
  d->push_back({"relu", t, "(Tensor x) -> Tensor(out)", K<relu<T>>::template fn<k_relu>});
  d->push_back({"neg", t, "(Tensor x) -> Tensor(out)", K<neg<T>>::template fn<k_neg>});
  d->push_back(
      {"relu_grad", t, "(Tensor out, Tensor grad_out) -> Tensor(x_grad)", K<relu_grad<T>>::template fn<k_relu_grad>});
  d->push_back({"scale", t, "(Tensor x, float scale, float bias, bool bias_after_scale) -> Tensor(out)",
                K<scale<T>>::template fn<k_scale>});
  d->push_back(
      {"sum", t, "(Tensor x, int[] axis, DataType dtype, bool keepdim) -> Tensor(out)", K<sum<T>>::template fn<k_sum>});
  d->push_back({"mean", t, "(Tensor x, int[] axis, bool keepdim) -> Tensor(out)", K<mean<T>>::template fn<k_mean>});
  d->push_back({"sum_to", t, "(Tensor x, int[] shape) -> Tensor(out)", K<sum_to<T>>::template fn<k_sum_to>});
}

}  // namespace

void math_kernels(std::vector<KernelDef>* d) {
  float_kernels<float>(kF32, d);
  float_kernels<double>(kF64, d);
  for (OAR_DataType t : kAllTypes) {
    d->push_back({"cast", t, "(Tensor x, DataType dtype) -> Tensor(out)", K<cast>::fn<k_cast>});
    d->push_back({"assign", t, "(Tensor x) -> Tensor(out)", K<assign>::fn<k_assign>});
    d->push_back({"full", t, "(int[] shape, Scalar fill_value, DataType dtype, Place place) -> Tensor(out)",
                  K<full>::fn<k_full>});
    d->push_back({"full_like", t, "(Tensor x, Scalar fill_value, DataType dtype) -> Tensor(out)",
                  K<full_like>::fn<k_full_like>});
  }
}

}  // namespace sample
