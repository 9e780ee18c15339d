#include "paddle_core/meta/infer_meta_manipulation.h"

#include <algorithm>

#include "paddle_core/meta/infer_meta.h"
#include "paddle_core/meta/shape_operand.h"
#include "paddle_core/meta/view_meta.h"

namespace oar {

namespace meta {

void check_assignable(const Dims& value, const Dims& target, const char* op) {
  bool ok = value.size() <= target.size();
  for (int i = 0; ok && i < value.size(); ++i) {
    const int64_t v = value[value.size() - 1 - i], t = target[target.size() - 1 - i];
    ok = v == t || v == 1;
  }
  OAR_ENFORCE(ok, InvalidArgument, op, ": value of shape ", value,
              " cannot be broadcast to the indexed shape ", target);
}

void check_index_dtype(const DenseTensor& index, const char* op, const char* arg,
                       bool allow_bool) {
  const DataType t = index.dtype();
  OAR_ENFORCE(t == DataType::INT32 || t == DataType::INT64 || (allow_bool && t == DataType::BOOL),
              InvalidType, op, ": ", arg, " must be an int32 or int64",
              allow_bool ? " (or bool)" : "", " tensor, got ", dtype_name(t));
}

}  // namespace meta

namespace {

void check_same_dtype(const DenseTensor& a, const DenseTensor& b, const char* op,
                      const char* a_name, const char* b_name) {
  OAR_ENFORCE(a.dtype() == b.dtype(), InvalidType, op, ": ", b_name, " must have the dtype of ",
              a_name, " (", dtype_name(a.dtype()), "), got ", dtype_name(b.dtype()));
}

std::vector<DenseTensor> sections_like(const DenseTensor& x, int axis,
                                       const std::vector<int64_t>& sizes) {
  std::vector<DenseTensor> out;
  out.reserve(sizes.size());
  for (int64_t s : sizes) {
    Dims d = x.dims();
    d[axis] = s;
    out.emplace_back(d, x.dtype(), x.place());
  }
  return out;
}

}  // namespace

void ConcatInferMeta(const TensorPtrList& x, int64_t axis, DenseTensor* out) {
  const DenseTensor& x0 = *x[0];
  OAR_ENFORCE(x0.rank() > 0, InvalidArgument, "concat: cannot concatenate 0-D tensors (x[0] has ",
              "shape [])");
  const int a = wrap_axis(axis, x0.rank(), "concat");
  Dims d = x0.dims();
  d[a] = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const DenseTensor& t = *x[i];
    OAR_ENFORCE(t.dtype() == x0.dtype(), InvalidType, "concat: all inputs must have the same ",
                "dtype, x[0] is ", dtype_name(x0.dtype()), " but x[", i, "] is ",
                dtype_name(t.dtype()));
    bool ok = t.rank() == x0.rank();
    for (int k = 0; ok && k < t.rank(); ++k) ok = k == a || t.dims()[k] == x0.dims()[k];
    OAR_ENFORCE(ok, InvalidArgument, "concat: x[", i, "] has shape ", t.dims(),
                " which does not match x[0]'s shape ", x0.dims(), " outside axis ", a);
    d[a] += t.dims()[a];
  }
  out->set_dtype(x0.dtype());
  out->set_dims(d);
}

void StackInferMeta(const TensorPtrList& x, int64_t axis, DenseTensor* out) {
  const DenseTensor& x0 = *x[0];
  const int a = wrap_axis(axis, x0.rank() + 1, "stack");
  for (size_t i = 0; i < x.size(); ++i) {
    const DenseTensor& t = *x[i];
    OAR_ENFORCE(t.dtype() == x0.dtype(), InvalidType, "stack: all inputs must have the same ",
                "dtype, x[0] is ", dtype_name(x0.dtype()), " but x[", i, "] is ",
                dtype_name(t.dtype()));
    OAR_ENFORCE(t.dims() == x0.dims(), InvalidArgument, "stack: all inputs must have the same ",
                "shape, x[0] is ", x0.dims(), " but x[", i, "] is ", t.dims());
  }
  Dims d = x0.dims();
  d.insert(a, static_cast<int64_t>(x.size()));
  out->set_dtype(x0.dtype());
  out->set_dims(d);
}

void UnstackInferMeta(const DenseTensor& x, int64_t axis, int64_t num,
                      std::vector<DenseTensor>* out) {
  OAR_ENFORCE(x.rank() > 0, InvalidArgument, "unstack: x must have rank >= 1, got shape []");
  const int a = wrap_axis(axis, x.rank(), "unstack");
  const int64_t n = x.dims()[a];
  OAR_ENFORCE(num <= 0 || num == n, InvalidArgument, "unstack: num (", num,
              ") must equal the size of axis ", a, " (", n, ")");
  Dims d = x.dims();
  d.erase(a);
  out->assign(n, DenseTensor(d, x.dtype(), x.place()));
}

void SplitInferMeta(const DenseTensor& x, const IntList& num_or_sections, int64_t axis,
                    std::vector<DenseTensor>* out) {
  OAR_ENFORCE(x.rank() > 0, InvalidArgument, "split: x must have rank >= 1, got shape []");
  const int a = wrap_axis(axis, x.rank(), "split");
  const int64_t n = x.dims()[a];
  OAR_ENFORCE(!num_or_sections.empty(), InvalidArgument, "split: num_or_sections must not be "
              "empty");
  std::vector<int64_t> sizes = num_or_sections;
  int infer = -1;
  int64_t known = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == -1) {
      OAR_ENFORCE(infer < 0, InvalidArgument, "split: num_or_sections ", num_or_sections,
                  " may contain at most one -1");
      infer = static_cast<int>(i);
    } else {
      OAR_ENFORCE(sizes[i] >= 0, InvalidArgument, "split: section sizes must be >= 0 (or one "
                  "-1), got ", num_or_sections);
      known += sizes[i];
    }
  }
  if (infer >= 0) {
    OAR_ENFORCE(known <= n, InvalidArgument, "split: sections ", num_or_sections, " sum to ",
                known, ", more than the size of axis ", a, " (", n, ")");
    sizes[infer] = n - known;
  } else {
    OAR_ENFORCE(known == n, InvalidArgument, "split: sections ", num_or_sections, " sum to ",
                known, " but axis ", a, " has size ", n);
  }
  *out = sections_like(x, a, sizes);
}

void SplitWithNumInferMeta(const DenseTensor& x, int64_t num, int64_t axis,
                           std::vector<DenseTensor>* out) {
  OAR_ENFORCE(x.rank() > 0, InvalidArgument, "split: x must have rank >= 1, got shape []");
  const int a = wrap_axis(axis, x.rank(), "split");
  const int64_t n = x.dims()[a];
  OAR_ENFORCE(num > 0, InvalidArgument, "split: num_or_sections must be a positive int, got ",
              num);
  OAR_ENFORCE(n % num == 0, InvalidArgument, "split: axis ", a, " of size ", n,
              " cannot be split into ", num, " equal sections");
  *out = sections_like(x, a, std::vector<int64_t>(num, n / num));
}

void TileInferMeta(const DenseTensor& x, const IntList& repeat_times, DenseTensor* out) {
  const int r = std::max<int>(x.rank(), static_cast<int>(repeat_times.size()));
  OAR_ENFORCE(r <= 6, InvalidArgument, "tile: the result rank (", r, ") must be <= 6");
  Dims d = Dims::filled(r, 1);
  for (int i = 0; i < x.rank(); ++i) d[r - x.rank() + i] = x.dims()[i];
  const int off = r - static_cast<int>(repeat_times.size());
  for (size_t i = 0; i < repeat_times.size(); ++i) {
    OAR_ENFORCE(repeat_times[i] >= 0, InvalidArgument, "tile: repeat_times must be >= 0, got ",
                repeat_times);
    d[off + i] *= repeat_times[i];
  }
  out->set_dtype(x.dtype());
  out->set_dims(d);
}

void TileGradInferMeta(const DenseTensor& x, const DenseTensor& grad_out,
                       const IntList& repeat_times, DenseTensor* out) {
  DenseTensor expect;
  TileInferMeta(x, repeat_times, &expect);
  OAR_ENFORCE(expect.dims() == grad_out.dims(), InvalidArgument, "tile_grad: grad_out has shape ",
              grad_out.dims(), ", expected ", expect.dims());
  out->set_dtype(grad_out.dtype());
  out->set_dims(x.dims());
}

void GatherInferMeta(const DenseTensor& x, const DenseTensor& index, int64_t axis,
                     DenseTensor* out) {
  meta::check_index_dtype(index, "gather", "index");
  OAR_ENFORCE(x.rank() > 0, InvalidArgument, "gather: x must have rank >= 1, got shape []");
  const int a = wrap_axis(axis, x.rank(), "gather");
  Dims d;
  for (int i = 0; i < a; ++i) d.push_back(x.dims()[i]);
  for (int i = 0; i < index.rank(); ++i) d.push_back(index.dims()[i]);
  for (int i = a + 1; i < x.rank(); ++i) d.push_back(x.dims()[i]);
  out->set_dtype(x.dtype());
  out->set_dims(d);
}

void IndexSelectInferMeta(const DenseTensor& x, const DenseTensor& index, int64_t axis,
                          DenseTensor* out) {
  meta::check_index_dtype(index, "index_select", "index");
  OAR_ENFORCE(index.rank() == 1, InvalidArgument, "index_select: index must be 1-D, got shape ",
              index.dims());
  OAR_ENFORCE(x.rank() > 0, InvalidArgument, "index_select: x must have rank >= 1, got shape []");
  wrap_axis(axis, x.rank(), "index_select");
  GatherInferMeta(x, index, axis, out);
}

void GatherGradInferMeta(const DenseTensor& x, const DenseTensor& index,
                         const DenseTensor& grad_out, int64_t axis, DenseTensor* out) {
  DenseTensor expect;
  GatherInferMeta(x, index, axis, &expect);
  OAR_ENFORCE(expect.dims() == grad_out.dims(), InvalidArgument, "gather_grad: grad_out has ",
              "shape ", grad_out.dims(), ", expected ", expect.dims());
  out->set_dtype(grad_out.dtype());
  out->set_dims(x.dims());
}

void GatherNdInferMeta(const DenseTensor& x, const DenseTensor& index, DenseTensor* out) {
  meta::check_index_dtype(index, "gather_nd", "index");
  OAR_ENFORCE(index.rank() >= 1, InvalidArgument, "gather_nd: index must have rank >= 1, got ",
              "shape []");
  const int64_t k = index.dims()[index.rank() - 1];
  OAR_ENFORCE(k <= x.rank(), InvalidArgument, "gather_nd: the last dimension of index (", k,
              ") must not exceed the rank of x (", x.rank(), ")");
  Dims d;
  for (int i = 0; i + 1 < index.rank(); ++i) d.push_back(index.dims()[i]);
  for (int i = static_cast<int>(k); i < x.rank(); ++i) d.push_back(x.dims()[i]);
  out->set_dtype(x.dtype());
  out->set_dims(d);
}

void GatherNdGradInferMeta(const DenseTensor& x, const DenseTensor& index,
                           const DenseTensor& grad_out, DenseTensor* out) {
  DenseTensor expect;
  GatherNdInferMeta(x, index, &expect);
  OAR_ENFORCE(expect.dims() == grad_out.dims(), InvalidArgument, "gather_nd_grad: grad_out has ",
              "shape ", grad_out.dims(), ", expected ", expect.dims());
  out->set_dtype(grad_out.dtype());
  out->set_dims(x.dims());
}

void ScatterInferMeta(const DenseTensor& x, const DenseTensor& index, const DenseTensor& updates,
                      bool, DenseTensor* out) {
  meta::check_index_dtype(index, "scatter", "index");
  check_same_dtype(x, updates, "scatter", "x", "updates");
  OAR_ENFORCE(x.rank() > 0, InvalidArgument, "scatter: x must have rank >= 1, got shape []");
  OAR_ENFORCE(index.rank() <= 1, InvalidArgument, "scatter: index must be 0-D or 1-D, got shape ",
              index.dims());
  Dims expect = x.dims();
  if (index.rank() == 1) {
    expect[0] = index.dims()[0];
  } else {
    expect.erase(0);
  }
  OAR_ENFORCE(updates.dims() == expect, InvalidArgument, "scatter: updates has shape ",
              updates.dims(), " but x of shape ", x.dims(), " and index of shape ", index.dims(),
              " need ", expect);
  out->set_dtype(x.dtype());
  out->set_dims(x.dims());
}

void ScatterMaskInferMeta(const DenseTensor& index, DataType dtype, DenseTensor* out) {
  meta::check_index_dtype(index, "scatter", "index");
  out->set_dtype(dtype);
  out->set_dims(index.dims());
}

void MaskedSelectInferMeta(const DenseTensor& x, const DenseTensor& mask, DenseTensor* out) {
  OAR_ENFORCE(mask.dtype() == DataType::BOOL, InvalidType, "masked_select: mask must be a bool ",
              "tensor, got ", dtype_name(mask.dtype()));
  meta::broadcast_dims(x.dims(), mask.dims(), "masked_select");
  out->set_dtype(x.dtype());
  out->set_dims(Dims{0});
}

void MaskedSelectGradInferMeta(const DenseTensor& x, const DenseTensor& mask,
                               const DenseTensor& grad_out, DenseTensor* out) {
  OAR_ENFORCE(mask.dtype() == DataType::BOOL, InvalidType, "masked_select_grad: mask must be a ",
              "bool tensor, got ", dtype_name(mask.dtype()));
  OAR_ENFORCE(grad_out.rank() == 1, InvalidArgument, "masked_select_grad: grad_out must be 1-D, ",
              "got shape ", grad_out.dims());
  out->set_dtype(grad_out.dtype());
  out->set_dims(meta::broadcast_dims(x.dims(), mask.dims(), "masked_select"));
}

void AppendRowInferMeta(const DenseTensor& buf, const DenseTensor& x, DenseTensor* out) {
  OAR_ENFORCE(buf.rank() == x.rank() + 1, InvalidArgument, "append_row: buf must have one more dim than x, got ",
              "buf ", buf.dims(), " and x ", x.dims());
  bool same = true;  // the rows of buf are shaped like x (or buf has none)
  for (int i = 0; same && i < x.rank(); ++i) same = buf.dims()[i + 1] == x.dims()[i];
  same = same || buf.dims()[0] == 0;
  // Checked on data only: under the IR's shape inference (no data) the dims of a loop's
  // carried buffer stand for run-time sizes.
  OAR_ENFORCE(same || !buf.initialized(), InvalidArgument,
              "append_row: rows of buf ", buf.dims(), " and x ", x.dims(), " differ");
  Dims d{buf.dims()[0] + 1};
  for (int i = 0; i < x.rank(); ++i) d.push_back(x.dims()[i]);
  out->set_dtype(buf.dtype());
  out->set_dims(d);
}

void Shape64InferMeta(const DenseTensor& input, DenseTensor* out) {
  out->set_dtype(DataType::INT64);
  out->set_dims(Dims{input.rank()});
}

bool meta::shape_operand(const DenseTensor& shape, const IntList& hint, const char* op, std::vector<int64_t>* out) {
  OAR_ENFORCE(shape.dtype() == DataType::INT64 || shape.dtype() == DataType::INT32, InvalidType, op,
              ": argument 'shape' must be an int32 or int64 tensor, got ", dtype_name(shape.dtype()));
  OAR_ENFORCE(shape.rank() == 1, InvalidArgument, op, ": argument 'shape' must be 1-D, got shape ", shape.dims());
  if (!shape.initialized()) {
    if (static_cast<int64_t>(hint.size()) != shape.numel()) return false;
    *out = hint;
    return true;
  }
  OAR_ENFORCE(shape.place().is_cpu(), InvalidArgument, op, ": argument 'shape' must be on the CPU, got ",
              shape.place().str());
  const DenseTensor c = contiguous(shape);
  out->resize(c.numel());
  for (int64_t i = 0; i < c.numel(); ++i)
    (*out)[i] = c.dtype() == DataType::INT64 ? c.data<int64_t>()[i] : c.data<int32_t>()[i];
  return true;
}

void DynReshapeInferMeta(const DenseTensor& x, const DenseTensor& shape, const IntList& hint, DenseTensor* out) {
  std::vector<int64_t> s;
  out->set_dtype(x.dtype());
  if (!meta::shape_operand(shape, hint, "reshape", &s)) {
    out->set_dims(Dims::filled(shape.numel(), 0));  // all dynamic (data_dependent)
    return;
  }
  if (!shape.initialized() && std::find(s.begin(), s.end(), -1) == s.end()) {
    // A hint without -1 is the result type as it stands (0 copies x's dim); element
    // counts of sentinel sizes would not compare (a list's buffer carried all dynamic).
    Dims d(s);
    for (int i = 0; i < d.size(); ++i)
      if (d[i] == 0 && i < x.rank()) d[i] = x.dims()[i];
    out->set_dims(d);
    return;
  }
  out->set_dims(reshape_dims(x, s));
}

void DynExpandInferMeta(const DenseTensor& x, const DenseTensor& shape, const IntList& hint, DenseTensor* out) {
  std::vector<int64_t> s;
  if (!meta::shape_operand(shape, hint, "expand", &s)) {
    out->set_dtype(x.dtype());
    out->set_dims(Dims::filled(shape.numel(), 0));
    return;
  }
  ExpandInferMeta(x, s, out);
}

void NonzeroInferMeta(const DenseTensor& x, DenseTensor* out) {
  out->set_dtype(DataType::INT64);
  out->set_dims(Dims{0, x.rank()});
}

namespace {
// Dims covered by `indices` (a bool index covers as many dims as it has) and, when
// no index is bool, the broadcast shape of the index tensors.
int covered_dims(const DenseTensor& x, const TensorPtrList& indices, const char* op,
                 bool* has_bool, Dims* bshape) {
  int k = 0;
  *has_bool = false;
  *bshape = Dims();
  for (size_t i = 0; i < indices.size(); ++i) {
    const DenseTensor& t = *indices[i];
    meta::check_index_dtype(t, op, "indices", true);
    if (t.dtype() == DataType::BOOL) {
      *has_bool = true;
      OAR_ENFORCE(k + t.rank() <= x.rank(), OutOfRange, op, ": too many indices for a tensor of ",
                  "rank ", x.rank(), " (bool index ", i, " of shape ", t.dims(), ")");
      for (int j = 0; j < t.rank(); ++j) {
        OAR_ENFORCE(t.dims()[j] == x.dims()[k + j], OutOfRange, op, ": bool index ", i,
                    " of shape ", t.dims(), " does not match the indexed dims of x ", x.dims(),
                    " at dim ", k + j);
      }
      k += t.rank();
    } else {
      OAR_ENFORCE(k + 1 <= x.rank(), OutOfRange, op, ": too many indices (", indices.size(),
                  ") for a tensor of rank ", x.rank());
      *bshape = meta::broadcast_dims(*bshape, t.dims(), op);
      k += 1;
    }
  }
  return k;
}
}  // namespace

void IndexPutInferMeta(const DenseTensor& x, const TensorPtrList& indices,
                       const DenseTensor& value, bool, DenseTensor* out) {
  check_same_dtype(x, value, "index_put", "x", "value");
  bool has_bool;
  Dims b;
  const int k = covered_dims(x, indices, "index_put", &has_bool, &b);
  if (!has_bool) {
    for (int i = k; i < x.rank(); ++i) b.push_back(x.dims()[i]);
    meta::check_assignable(value.dims(), b, "index_put");
  }
  out->set_dtype(x.dtype());
  out->set_dims(x.dims());
}

void IndexGetInferMeta(const DenseTensor& x, const TensorPtrList& indices, DenseTensor* out) {
  bool has_bool;
  Dims b;
  const int k = covered_dims(x, indices, "index_get", &has_bool, &b);
  if (has_bool) b = Dims{0};  // the kernel sets the true size
  for (int i = k; i < x.rank(); ++i) b.push_back(x.dims()[i]);
  out->set_dtype(x.dtype());
  out->set_dims(b);
}

void SliceScatterInferMeta(const DenseTensor& x, const DenseTensor& value, const IntList& axes,
                           const IntList& starts, const IntList& ends, const IntList& strides,
                           DenseTensor* out) {
  check_same_dtype(x, value, "slice_scatter", "x", "value");
  const DenseTensor region = SliceView(x, axes, starts, ends, strides);
  meta::check_assignable(value.dims(), region.dims(), "slice_scatter");
  out->set_dtype(x.dtype());
  out->set_dims(x.dims());
}

}  // namespace oar
