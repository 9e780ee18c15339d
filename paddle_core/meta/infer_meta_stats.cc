// Shape/dtype inference of stats.yaml (declared in infer_meta_math_functions.h).
#include <algorithm>

#include "paddle_core/meta/infer_meta_math_functions.h"

namespace oar {

namespace meta {
Dims reduce_dims_of(const Dims& in, const std::vector<int>& axes, bool keepdim) {
  Dims out;
  for (int i = 0; i < in.size(); ++i) {
    if (std::find(axes.begin(), axes.end(), i) == axes.end()) {
      out.push_back(in[i]);
    } else if (keepdim) {
      out.push_back(1);
    }
  }
  return out;
}
}  // namespace meta

namespace {
void reduce_meta(const DenseTensor& x, const IntList& axis, bool keepdim, DataType dtype,
                 const char* op, DenseTensor* out) {
  auto axes = meta::reduce_axes(axis, x.rank(), op);
  out->set_dtype(dtype);
  out->set_dims(meta::reduce_dims_of(x.dims(), axes, keepdim));
}

void check_float(const DenseTensor& x, const char* op) {
  OAR_ENFORCE(is_floating(x.dtype()), InvalidType, op, ": expected a float tensor, got ",
              dtype_name(x.dtype()));
}

// Output dims of a one-axis selection (kthvalue, mode) and the axis' size.
Dims select_dims(const DenseTensor& x, int64_t axis, bool keepdim, const char* op, int* a) {
  *a = wrap_axis(axis, x.rank(), op);
  Dims d;
  for (int i = 0; i < x.rank(); ++i) {
    if (i != *a) d.push_back(x.dims()[i]);
    else if (keepdim) d.push_back(1);
  }
  return d;
}
}  // namespace

void BoolReduceInferMeta(const DenseTensor& x, const IntList& axis, bool keepdim,
                         DenseTensor* out) {
  reduce_meta(x, axis, keepdim, DataType::BOOL, "all/any", out);
}

void VarInferMeta(const DenseTensor& x, const IntList& axis, bool, bool keepdim,
                  DenseTensor* out) {
  check_float(x, "var/std");
  reduce_meta(x, axis, keepdim, x.dtype(), "var/std", out);
}

void LogsumexpInferMeta(const DenseTensor& x, const IntList& axis, bool keepdim,
                        DenseTensor* out) {
  check_float(x, "logsumexp");
  reduce_meta(x, axis, keepdim, x.dtype(), "logsumexp", out);
}

void PNormInferMeta(const DenseTensor& x, double porder, const IntList& axis, bool keepdim,
                    DenseTensor* out) {
  check_float(x, "norm");
  OAR_ENFORCE(porder == porder, InvalidArgument, "norm: p must be a number, got nan");
  reduce_meta(x, axis, keepdim, x.dtype(), "norm", out);
}

void CumInferMeta(const DenseTensor& x, int64_t axis, bool flatten, bool, bool,
                  DenseTensor* out) {
  out->set_dtype(x.dtype());
  if (flatten) {
    out->set_dims(Dims{x.numel()});
    return;
  }
  wrap_axis(axis, x.rank(), "cumsum");
  out->set_dims(x.dims());
}

void CumprodInferMeta(const DenseTensor& x, int64_t axis, bool flatten, DenseTensor* out) {
  CumInferMeta(x, axis, flatten, false, false, out);
}

void CumExtremumInferMeta(const DenseTensor& x, int64_t axis, bool, DenseTensor* values, DenseTensor* indices) {
  OAR_ENFORCE(x.rank() >= 1, InvalidArgument, "cum_extremum: x must have rank >= 1, got shape ", x.dims());
  wrap_axis(axis, x.rank(), "cum_extremum");
  values->set_dtype(x.dtype());
  values->set_dims(x.dims());
  indices->set_dtype(DataType::INT64);
  indices->set_dims(x.dims());
}

void GatherAxisInferMeta(const DenseTensor& x, const DenseTensor& index, int64_t axis,
                         DenseTensor* out) {
  OAR_ENFORCE(index.dtype() == DataType::INT64 || index.dtype() == DataType::INT32, InvalidType,
              "gather_axis: index must be int32 or int64, got ", dtype_name(index.dtype()));
  OAR_ENFORCE(index.rank() == x.rank(), InvalidArgument, "gather_axis: index shape ",
              index.dims(), " must have the rank of x shape ", x.dims());
  const int a = wrap_axis(axis, x.rank(), "gather_axis");
  for (int i = 0; i < x.rank(); ++i) {
    OAR_ENFORCE(i == a || index.dims()[i] == x.dims()[i], InvalidArgument,
                "gather_axis: index shape ", index.dims(), " and x shape ", x.dims(),
                " differ at dimension ", i, " (only axis ", a, " may differ)");
  }
  out->set_dtype(x.dtype());
  out->set_dims(index.dims());
}

void ArgsortInferMeta(const DenseTensor& x, int64_t axis, bool, bool, DenseTensor* out,
                      DenseTensor* indices) {
  wrap_axis(axis, x.rank(), "argsort");
  out->set_dtype(x.dtype());
  out->set_dims(x.dims());
  indices->set_dtype(DataType::INT64);
  indices->set_dims(x.dims());
}

void TopkInferMeta(const DenseTensor& x, int64_t k, int64_t axis, bool, bool, DenseTensor* out,
                   DenseTensor* indices) {
  const int a = wrap_axis(axis, x.rank(), "topk");
  const int64_t n = x.rank() ? x.dims()[a] : 1;
  OAR_ENFORCE(k >= 0 && k <= n, InvalidArgument, "topk: k (", k, ") must be in [0, ", n,
              "] for axis ", a, " of input shape ", x.dims());
  Dims d = x.dims();
  if (x.rank()) d[a] = k;
  out->set_dtype(x.dtype());
  out->set_dims(d);
  indices->set_dtype(DataType::INT64);
  indices->set_dims(d);
}

void KthvalueInferMeta(const DenseTensor& x, int64_t k, int64_t axis, bool keepdim,
                       DenseTensor* out, DenseTensor* indices) {
  int a;
  Dims d = select_dims(x, axis, keepdim, "kthvalue", &a);
  const int64_t n = x.rank() ? x.dims()[a] : 1;
  OAR_ENFORCE(k >= 1 && k <= n, InvalidArgument, "kthvalue: k (", k, ") must be in [1, ", n,
              "] for axis ", a, " of input shape ", x.dims());
  out->set_dtype(x.dtype());
  out->set_dims(d);
  indices->set_dtype(DataType::INT64);
  indices->set_dims(d);
}

void ModeInferMeta(const DenseTensor& x, int64_t axis, bool keepdim, DenseTensor* out,
                   DenseTensor* indices) {
  int a;
  Dims d = select_dims(x, axis, keepdim, "mode", &a);
  OAR_ENFORCE(x.rank() == 0 || x.dims()[a] > 0, InvalidArgument, "mode: axis ", a,
              " of input shape ", x.dims(), " is empty");
  out->set_dtype(x.dtype());
  out->set_dims(d);
  indices->set_dtype(DataType::INT64);
  indices->set_dims(d);
}

void UniqueInferMeta(const DenseTensor& x, const IntList& axis, DataType dtype, DenseTensor* out,
                     DenseTensor* indices, DenseTensor* inverse, DenseTensor* counts) {
  OAR_ENFORCE(dtype == DataType::INT64 || dtype == DataType::INT32, InvalidType,
              "unique: dtype must be int32 or int64, got ", dtype_name(dtype));
  OAR_ENFORCE(axis.size() <= 1, InvalidArgument, "unique: axis must be None or one int, got ",
              axis);
  const int64_t ax = axis.empty() ? -1 : wrap_axis(axis[0], x.rank(), "unique");
  // The number of unique entries comes from the data: 0 placeholders, sized by the kernel
  // (data_dependent in stats.yaml: dynamic in the IR).
  Dims d = ax < 0 ? Dims{0} : x.dims();
  if (ax >= 0) d[ax] = 0;
  out->set_dtype(x.dtype());
  out->set_dims(d);
  for (DenseTensor* t : {indices, inverse, counts}) t->set_dtype(dtype);
  indices->set_dims(Dims{0});
  counts->set_dims(Dims{0});
  inverse->set_dims(Dims{ax < 0 ? x.numel() : x.dims()[ax]});
}

void UniqueConsecutiveInferMeta(const DenseTensor& x, const IntList& axis, DataType dtype,
                                DenseTensor* out, DenseTensor* inverse, DenseTensor* counts) {
  OAR_ENFORCE(dtype == DataType::INT64 || dtype == DataType::INT32, InvalidType,
              "unique_consecutive: dtype must be int32 or int64, got ", dtype_name(dtype));
  OAR_ENFORCE(axis.size() <= 1, InvalidArgument,
              "unique_consecutive: axis must be None or one int, got ", axis);
  const int64_t ax = axis.empty() ? -1 : wrap_axis(axis[0], x.rank(), "unique_consecutive");
  Dims d = ax < 0 ? Dims{0} : x.dims();  // data-dependent sizes: see UniqueInferMeta
  if (ax >= 0) d[ax] = 0;
  out->set_dtype(x.dtype());
  out->set_dims(d);
  inverse->set_dtype(dtype);
  inverse->set_dims(Dims{ax < 0 ? x.numel() : x.dims()[ax]});
  counts->set_dtype(dtype);
  counts->set_dims(Dims{0});
}

void BincountInferMeta(const DenseTensor& x, const DenseTensor* weights, int64_t minlength,
                       DenseTensor* out) {
  OAR_ENFORCE(is_integral(x.dtype(), false), InvalidType,
              "bincount: x must be an integer tensor, got ", dtype_name(x.dtype()));
  OAR_ENFORCE(x.rank() == 1, InvalidArgument, "bincount: x must be 1-D, got shape ", x.dims());
  OAR_ENFORCE(minlength >= 0, InvalidArgument, "bincount: minlength must be >= 0, got ",
              minlength);
  if (weights) {
    OAR_ENFORCE(weights->dims() == x.dims(), InvalidArgument, "bincount: weights shape ",
                weights->dims(), " must equal x shape ", x.dims());
  }
  out->set_dtype(weights ? (is_floating(weights->dtype()) ? weights->dtype() : DataType::INT64)
                         : DataType::INT64);
  out->set_dims(Dims{0});  // max(x) + 1 or minlength: from the data (data_dependent)
}

void HistogramInferMeta(const DenseTensor& input, const DenseTensor* weight, int64_t bins,
                        double min, double max, bool density, DenseTensor* out) {
  OAR_ENFORCE(bins >= 1, InvalidArgument, "histogram: bins must be >= 1, got ", bins);
  OAR_ENFORCE(min <= max, InvalidArgument, "histogram: max (", max, ") must be >= min (", min,
              ")");
  OAR_ENFORCE(input.dtype() != DataType::BOOL, InvalidType,
              "histogram: input must be an int or float tensor, got ", dtype_name(input.dtype()));
  if (weight) {
    OAR_ENFORCE(weight->dims() == input.dims(), InvalidArgument, "histogram: weight shape ",
                weight->dims(), " must equal input shape ", input.dims());
  }
  out->set_dtype(density || weight ? DataType::FLOAT32 : DataType::INT64);
  out->set_dims(Dims{bins});
}

void NmsInferMeta(const DenseTensor& boxes, double, DenseTensor* out) {
  OAR_ENFORCE(boxes.rank() == 2 && boxes.dims()[1] == 4, InvalidArgument,
              "nms: boxes must have shape [N, 4] (x1, y1, x2, y2), got ", boxes.dims());
  OAR_ENFORCE(is_floating(boxes.dtype()), InvalidType, "nms: boxes must be a float tensor, got ",
              dtype_name(boxes.dtype()));
  out->set_dtype(DataType::INT64);
  out->set_dims(Dims{0});
}

void SearchsortedInferMeta(const DenseTensor& seq, const DenseTensor& values, bool out_int32,
                           bool, DenseTensor* out) {
  OAR_ENFORCE(seq.rank() >= 1, InvalidArgument,
              "searchsorted: sorted_sequence must have rank >= 1, got shape ", seq.dims());
  if (seq.rank() > 1) {
    bool ok = values.rank() == seq.rank();
    for (int i = 0; ok && i + 1 < seq.rank(); ++i) ok = seq.dims()[i] == values.dims()[i];
    OAR_ENFORCE(ok, InvalidArgument, "searchsorted: sorted_sequence shape ", seq.dims(),
                " and values shape ", values.dims(), " must agree on all but the last dimension");
  }
  out->set_dtype(out_int32 ? DataType::INT32 : DataType::INT64);
  out->set_dims(values.dims());
}

void GradLikeInferMeta(const DenseTensor& x, const DenseTensor& grad_out, DenseTensor* out) {
  OAR_ENFORCE(grad_out.dtype() == x.dtype(), InvalidType, "grad: grad_out dtype ",
              dtype_name(grad_out.dtype()), " must equal x dtype ", dtype_name(x.dtype()));
  out->set_dtype(x.dtype());
  out->set_dims(x.dims());
}

void CumprodGradInferMeta(const DenseTensor& x, const DenseTensor& out, const DenseTensor& grad_out,
                          DenseTensor* x_grad) {
  OAR_ENFORCE(out.dtype() == x.dtype() && grad_out.dtype() == x.dtype(), InvalidType,
              "cumprod_grad: out (", dtype_name(out.dtype()), ") and grad_out (",
              dtype_name(grad_out.dtype()), ") must have x's dtype ", dtype_name(x.dtype()));
  OAR_ENFORCE(out.numel() == x.numel() && grad_out.numel() == x.numel(), InvalidArgument,
              "cumprod_grad: out ", out.dims(), " and grad_out ", grad_out.dims(),
              " must have as many elements as x ", x.dims());
  x_grad->set_dtype(x.dtype());
  x_grad->set_dims(x.dims());
}

DenseTensor DiagonalView(const DenseTensor& x, int64_t offset, int64_t axis1, int64_t axis2) {
  OAR_ENFORCE(x.rank() >= 2, InvalidArgument, "diagonal: x must have rank >= 2, got shape ",
              x.dims());
  const int a1 = wrap_axis(axis1, x.rank(), "diagonal");
  const int a2 = wrap_axis(axis2, x.rank(), "diagonal");
  OAR_ENFORCE(a1 != a2, InvalidArgument, "diagonal: axis1 (", axis1, ") and axis2 (", axis2,
              ") must be different axes");
  Dims d, s;
  for (int i = 0; i < x.rank(); ++i) {
    if (i == a1 || i == a2) continue;
    d.push_back(x.dims()[i]);
    s.push_back(x.strides()[i]);
  }
  const int64_t n1 = x.dims()[a1], n2 = x.dims()[a2];
  int64_t len = offset >= 0 ? std::min(n1, n2 - offset) : std::min(n1 + offset, n2);
  len = std::max<int64_t>(len, 0);
  int64_t off = x.offset();
  if (len > 0) off += offset >= 0 ? offset * x.strides()[a2] : -offset * x.strides()[a1];
  d.push_back(len);
  s.push_back(x.strides()[a1] + x.strides()[a2]);
  DenseTensor v = x;
  v.set_view(d, s, off);
  return v;
}

}  // namespace oar
