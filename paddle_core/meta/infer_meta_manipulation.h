// Shape/dtype inference of the manipulation and indexing ops (see infer_meta.h for
// the conventions). Index tensors are int32/int64 (TypeError otherwise); index
// values are checked by the kernels, which alone see the data.
#pragma once

#include <vector>

#include "paddle_core/meta/infer_meta.h"

namespace oar {

using TensorPtrList = std::vector<const DenseTensor*>;

void ConcatInferMeta(const TensorPtrList& x, int64_t axis, DenseTensor* out);
void StackInferMeta(const TensorPtrList& x, int64_t axis, DenseTensor* out);
void UnstackInferMeta(const DenseTensor& x, int64_t axis, int64_t num,
                      std::vector<DenseTensor>* out);
/// Sections may hold one -1 (the rest of the axis).
void SplitInferMeta(const DenseTensor& x, const IntList& num_or_sections, int64_t axis,
                    std::vector<DenseTensor>* out);
void SplitWithNumInferMeta(const DenseTensor& x, int64_t num, int64_t axis,
                           std::vector<DenseTensor>* out);
void TileInferMeta(const DenseTensor& x, const IntList& repeat_times, DenseTensor* out);
void TileGradInferMeta(const DenseTensor& x, const DenseTensor& grad_out,
                       const IntList& repeat_times, DenseTensor* out);

/// out = x.shape[:axis] + index.shape + x.shape[axis+1:].
void GatherInferMeta(const DenseTensor& x, const DenseTensor& index, int64_t axis,
                     DenseTensor* out);
/// gather with a 1-D index.
void IndexSelectInferMeta(const DenseTensor& x, const DenseTensor& index, int64_t axis,
                          DenseTensor* out);
/// Gradient ops shaped like `x` with grad_out's dtype.
void GatherGradInferMeta(const DenseTensor& x, const DenseTensor& index,
                         const DenseTensor& grad_out, int64_t axis, DenseTensor* out);
void GatherNdInferMeta(const DenseTensor& x, const DenseTensor& index, DenseTensor* out);
void GatherNdGradInferMeta(const DenseTensor& x, const DenseTensor& index,
                           const DenseTensor& grad_out, DenseTensor* out);
void ScatterInferMeta(const DenseTensor& x, const DenseTensor& index, const DenseTensor& updates,
                      bool overwrite, DenseTensor* out);
void ScatterMaskInferMeta(const DenseTensor& index, DataType dtype, DenseTensor* out);

/// 1-D output whose length the kernel sets (data dependent).
void MaskedSelectInferMeta(const DenseTensor& x, const DenseTensor& mask, DenseTensor* out);
/// Shaped like broadcast(x, mask).
void MaskedSelectGradInferMeta(const DenseTensor& x, const DenseTensor& mask,
                               const DenseTensor& grad_out, DenseTensor* out);
void NonzeroInferMeta(const DenseTensor& x, DenseTensor* out);
/// append_row: [n + 1, x dims...]; buf must be [n, x dims...] unless n is 0.
void AppendRowInferMeta(const DenseTensor& buf, const DenseTensor& x, DenseTensor* out);
/// shape64: int64 [rank].
void Shape64InferMeta(const DenseTensor& input, DenseTensor* out);
/// dyn_reshape / dyn_expand: the target shape read from `shape` (1-D int32/int64) when it
/// holds data (eager and the executor); when it holds none (the IR's shape inference),
/// from `hint`, the sizes the tracer derived with every dynamic size standing as the
/// IR's sentinel, so that the result type keeps the sizes that are static (a reshape to
/// [x.shape[0], -1] of [?, 16, 5, 5] is [?, 400]); without a hint, every dim is dynamic.
void DynReshapeInferMeta(const DenseTensor& x, const DenseTensor& shape, const IntList& hint, DenseTensor* out);
void DynExpandInferMeta(const DenseTensor& x, const DenseTensor& shape, const IntList& hint, DenseTensor* out);
void IndexPutInferMeta(const DenseTensor& x, const TensorPtrList& indices,
                       const DenseTensor& value, bool accumulate, DenseTensor* out);
/// x[indices] for int/bool index tensors on the leading dims (bool: data-dependent size).
void IndexGetInferMeta(const DenseTensor& x, const TensorPtrList& indices, DenseTensor* out);
void SliceScatterInferMeta(const DenseTensor& x, const DenseTensor& value, const IntList& axes,
                           const IntList& starts, const IntList& ends, const IntList& strides,
                           DenseTensor* out);

namespace meta {
/// Checks that `value` broadcasts to `target` without changing it (assignment rules).
void check_assignable(const Dims& value, const Dims& target, const char* op);
/// Checks an index tensor's dtype (int32/int64, or bool when allow_bool).
void check_index_dtype(const DenseTensor& index, const char* op, const char* arg,
                       bool allow_bool = false);
}  // namespace meta

/// Sizes of each tensor along `axis` (concat's backward splits its gradient by them).
/// A template so it serves both Tensor and DenseTensor lists.
template <typename TensorList>
std::vector<int64_t> sizes_along(const TensorList& xs, int64_t axis) {
  std::vector<int64_t> out;
  out.reserve(xs.size());
  for (const auto& t : xs) out.push_back(t.dims()[wrap_axis(axis, t.dims().size(), "concat")]);
  return out;
}

/// {n, 1, ..., 1} (rank entries): reshapes a per-row mask to broadcast over rows.
inline std::vector<int64_t> row_shape(int64_t n, int rank) {
  std::vector<int64_t> s(rank > 0 ? rank : 1, 1);
  s[0] = n;
  return s;
}

}  // namespace oar
