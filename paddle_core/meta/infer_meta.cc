#include "paddle_core/meta/infer_meta.h"

#include <algorithm>

#include "paddle_core/tensor/checked.h"

namespace oar::meta {

Dims broadcast_dims(const Dims& a, const Dims& b, const char* op) {
  const int n = std::max(a.size(), b.size());
  Dims out = Dims::filled(n, 1);
  for (int i = 0; i < n; ++i) {
    int ia = a.size() - n + i, ib = b.size() - n + i;
    int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
    OAR_ENFORCE(da == db || da == 1 || db == 1, InvalidArgument, op,
                ": shapes ", a, " and ", b, " cannot be broadcast together (dimension ", i,
                ": ", da, " vs ", db, ")");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

std::vector<int> reduce_axes(const std::vector<int64_t>& axis, int rank, const char* op) {
  std::vector<int> out;
  if (axis.empty()) {
    for (int i = 0; i < rank; ++i) out.push_back(i);
    return out;
  }
  for (int64_t a : axis) out.push_back(rank == 0 ? (wrap_axis(a, 0, op), 0) : wrap_axis(a, rank, op));
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  if (rank == 0) out.clear();
  return out;
}

Dims shape_from(const std::vector<int64_t>& shape, const char* op) {
  for (size_t i = 0; i < shape.size(); ++i) {
    OAR_ENFORCE(shape[i] >= 0, InvalidArgument, op, ": shape ", shape,
                " has a negative size at dimension ", i);
  }
  Dims d(shape);
  // The element count is checked here, before the op's kernel sizes anything from it.
  checked::numel(d.data(), d.size(), shape);
  return d;
}

}  // namespace oar::meta

namespace oar {

void UnchangedInferMeta(const DenseTensor& x, DenseTensor* out) {
  out->set_dtype(x.dtype());
  out->set_dims(x.dims());
}

void UnchangedFloatInferMeta(const DenseTensor& x, DenseTensor* out) {
  out->set_dtype(is_integral(x.dtype(), true) ? default_float_dtype() : x.dtype());
  out->set_dims(x.dims());
}

void RealInferMeta(const DenseTensor& x, DenseTensor* out) {
  out->set_dtype(complex_to_real(x.dtype()));
  out->set_dims(x.dims());
}

void BroadcastBinaryInferMeta(const DenseTensor& x, const DenseTensor& y, DenseTensor* out) {
  out->set_dtype(x.dtype());
  out->set_dims(meta::broadcast_dims(x.dims(), y.dims(), "elementwise op"));
}

void CompareInferMeta(const DenseTensor& x, const DenseTensor& y, DenseTensor* out) {
  out->set_dtype(DataType::BOOL);
  out->set_dims(meta::broadcast_dims(x.dims(), y.dims(), "compare op"));
}

void LogicalUnaryInferMeta(const DenseTensor& x, DenseTensor* out) {
  out->set_dtype(DataType::BOOL);
  out->set_dims(x.dims());
}

void WhereInferMeta(const DenseTensor& cond, const DenseTensor& x, const DenseTensor& y,
                    DenseTensor* out) {
  OAR_ENFORCE(cond.dtype() == DataType::BOOL, InvalidType,
              "where: condition must be a bool tensor, got ", dtype_name(cond.dtype()));
  Dims d = meta::broadcast_dims(cond.dims(), x.dims(), "where");
  out->set_dtype(x.dtype());
  out->set_dims(meta::broadcast_dims(d, y.dims(), "where"));
}

void CastInferMeta(const DenseTensor& x, DataType dtype, DenseTensor* out) {
  OAR_ENFORCE(dtype != DataType::UNDEFINED, InvalidType, "cast: dtype must be given");
  out->set_dtype(dtype);
  out->set_dims(x.dims());
}

void ScaleInferMeta(const DenseTensor& x, double, double, bool, DenseTensor* out) {
  UnchangedInferMeta(x, out);
}

void PowScalarInferMeta(const DenseTensor& x, double, DenseTensor* out) {
  UnchangedInferMeta(x, out);
}

void ClipInferMeta(const DenseTensor& x, double min, double max, DenseTensor* out) {
  OAR_ENFORCE(min <= max, InvalidArgument, "clip: min (", min, ") must be <= max (", max, ")");
  UnchangedInferMeta(x, out);
}

static Dims reduced_dims(const Dims& in, const std::vector<int>& axes, bool keepdim) {
  Dims out;
  for (int i = 0; i < in.size(); ++i) {
    bool reduced = std::find(axes.begin(), axes.end(), i) != axes.end();
    if (!reduced) {
      out.push_back(in[i]);
    } else if (keepdim) {
      out.push_back(1);
    }
  }
  return out;
}

void ReduceInferMeta(const DenseTensor& x, const IntList& axis, bool keepdim, DenseTensor* out) {
  auto axes = meta::reduce_axes(axis, x.rank(), "reduce");
  out->set_dtype(x.dtype());
  out->set_dims(reduced_dims(x.dims(), axes, keepdim));
}

void SumInferMeta(const DenseTensor& x, const IntList& axis, DataType dtype, bool keepdim,
                  DenseTensor* out) {
  auto axes = meta::reduce_axes(axis, x.rank(), "sum");
  DataType t = dtype;
  if (t == DataType::UNDEFINED) {
    // Paddle: bool and int32 sums accumulate in int64.
    t = (x.dtype() == DataType::BOOL || x.dtype() == DataType::INT32) ? DataType::INT64
                                                                        : x.dtype();
  }
  out->set_dtype(t);
  out->set_dims(reduced_dims(x.dims(), axes, keepdim));
}

void MeanInferMeta(const DenseTensor& x, const IntList& axis, bool keepdim, DenseTensor* out) {
  OAR_ENFORCE(is_floating(x.dtype()) || is_complex(x.dtype()), InvalidType,
              "mean: expected a float or complex tensor, got ", dtype_name(x.dtype()), "; cast it first");
  auto axes = meta::reduce_axes(axis, x.rank(), "mean");
  out->set_dtype(x.dtype());
  out->set_dims(reduced_dims(x.dims(), axes, keepdim));
}

void ProdInferMeta(const DenseTensor& x, const IntList& axis, bool keepdim, DataType dtype,
                   DenseTensor* out) {
  auto axes = meta::reduce_axes(axis, x.rank(), "prod");
  // Unlike sum, int32 stays int32 (as Paddle). bool multiplies in int64, as sum and NumPy
  // (Paddle has no bool kernel, so prod(bool) raised even with dtype= given).
  DataType t = dtype;
  if (t == DataType::UNDEFINED) t = x.dtype() == DataType::BOOL ? DataType::INT64 : x.dtype();
  out->set_dtype(t);
  out->set_dims(reduced_dims(x.dims(), axes, keepdim));
}

void ArgReduceInferMeta(const DenseTensor& x, int64_t axis, bool keepdim, bool flatten,
                        DataType dtype, DenseTensor* out) {
  OAR_ENFORCE(dtype == DataType::INT64 || dtype == DataType::INT32, InvalidType,
              "argmax/argmin: dtype must be int32 or int64, got ", dtype_name(dtype));
  out->set_dtype(dtype);
  if (flatten) {
    OAR_ENFORCE(x.numel() > 0, InvalidArgument, "argmax/argmin: the input is empty (shape ", x.dims(), ")");
    out->set_dims(keepdim ? Dims::filled(x.rank(), 1) : Dims{});
    return;
  }
  int a = wrap_axis(axis, x.rank(), "argmax/argmin");
  // Only an empty reduced axis has no answer (as max/min); [0, 3] along axis 1 is [0].
  OAR_ENFORCE(x.rank() == 0 || x.dims()[a] > 0, InvalidArgument, "argmax/argmin: the input is empty along axis ", a,
              " (size 0, input shape ", x.dims(), ")");
  std::vector<int> axes;
  if (x.rank() > 0) axes.push_back(a);
  out->set_dims(reduced_dims(x.dims(), axes, keepdim));
}

void MatmulInferMeta(const DenseTensor& x, const DenseTensor& y, bool transpose_x,
                     bool transpose_y, DenseTensor* out) {
  Dims a = x.dims(), b = y.dims();
  OAR_ENFORCE(a.size() >= 1 && b.size() >= 1, InvalidArgument,
              "matmul: inputs must have rank >= 1, got shapes ", a, " and ", b);
  const bool vec_a = a.size() == 1, vec_b = b.size() == 1;
  if (vec_a) a.insert(0, 1);
  if (vec_b) b.push_back(1);
  if (transpose_x && !vec_a) std::swap(a[a.size() - 1], a[a.size() - 2]);
  if (transpose_y && !vec_b) std::swap(b[b.size() - 1], b[b.size() - 2]);
  const int64_t m = a[a.size() - 2], k = a.back(), k2 = b[b.size() - 2], n = b.back();
  OAR_ENFORCE(k == k2, InvalidArgument, "matmul: inner dimensions do not match: x shape ",
              x.dims(), (transpose_x ? " (transposed)" : ""), " and y shape ", y.dims(),
              (transpose_y ? " (transposed)" : ""), " give K=", k, " vs ", k2);
  Dims ba(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
  Dims batch = meta::broadcast_dims(ba, bb, "matmul");
  Dims od = batch;
  if (!vec_a) od.push_back(m);
  if (!vec_b) od.push_back(n);
  out->set_dtype(x.dtype());
  out->set_dims(od);
}

void FullInferMeta(const IntList& shape, const Scalar& value, DataType dtype, const Place& place,
                   DenseTensor* out) {
  out->set_dtype(dtype == DataType::UNDEFINED ? value.natural_dtype() : dtype);
  out->set_dims(meta::shape_from(shape, "full"));
}

void FullLikeInferMeta(const DenseTensor& x, const Scalar& value, DataType dtype,
                       DenseTensor* out) {
  out->set_dtype(dtype == DataType::UNDEFINED ? x.dtype() : dtype);
  out->set_dims(x.dims());
}

void SumToInferMeta(const DenseTensor& x, const IntList& shape, DenseTensor* out) {
  Dims target(shape);
  Dims b = meta::broadcast_dims(x.dims(), target, "sum_to");
  OAR_ENFORCE(b == x.dims(), InvalidArgument, "sum_to: shape ", target,
              " does not broadcast to ", x.dims());
  out->set_dtype(x.dtype());
  out->set_dims(target);
}

void ExpandInferMeta(const DenseTensor& x, const IntList& shape, DenseTensor* out) {
  const Dims& in = x.dims();
  OAR_ENFORCE(static_cast<int>(shape.size()) >= in.size(), InvalidArgument, "expand: shape ",
              shape, " has fewer dimensions than the input ", in);
  Dims od = Dims::filled(shape.size(), 1);
  const int off = shape.size() - in.size();
  for (int i = 0; i < od.size(); ++i) {
    int64_t s = shape[i];
    int64_t d = i >= off ? in[i - off] : 1;
    if (s == -1) {
      OAR_ENFORCE(i >= off, InvalidArgument, "expand: -1 is only allowed for existing dims, shape ",
                  shape);
      s = d;
    }
    OAR_ENFORCE(s >= 0, InvalidArgument, "expand: negative size in shape ", shape);
    OAR_ENFORCE(d == s || d == 1, InvalidArgument, "expand: cannot expand input of shape ", in,
                " to ", shape, " (dimension ", i, ": ", d, " -> ", s, ")");
    od[i] = s;
  }
  out->set_dtype(x.dtype());
  out->set_dims(od);
}

}  // namespace oar

namespace oar {
void SliceGradInferMeta(const DenseTensor& x, const DenseTensor& grad_out, const IntList&,
                        const IntList&, const IntList&, const IntList&, DenseTensor* out) {
  out->set_dtype(grad_out.dtype());
  out->set_dims(x.dims());
}
}  // namespace oar
