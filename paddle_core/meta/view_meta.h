// View functions: ops whose output shares the input's storage and differs only in
// shape/strides/offset. ReshapeView copies when the strides do not allow a view
// (as Paddle's and PyTorch's reshape do).
#pragma once

#include <vector>

#include "paddle_core/tensor/dense_tensor.h"

namespace oar {

DenseTensor TransposeView(const DenseTensor& x, const std::vector<int64_t>& perm);
DenseTensor ReshapeView(const DenseTensor& x, const std::vector<int64_t>& shape);
/// The dims reshape(x, shape) gives: -1 inferred from x's element count, 0 copies x's
/// dim (Paddle); throws when the element counts differ.
Dims reshape_dims(const DenseTensor& x, const std::vector<int64_t>& shape);
DenseTensor SqueezeView(const DenseTensor& x, const std::vector<int64_t>& axis);
DenseTensor UnsqueezeView(const DenseTensor& x, const std::vector<int64_t>& axis);
DenseTensor FlattenView(const DenseTensor& x, int64_t start_axis, int64_t stop_axis);
DenseTensor ExpandView(const DenseTensor& x, const std::vector<int64_t>& shape);
/// x[starts:ends:strides] along `axes` (Python slice semantics, clamped; negative steps ok).
DenseTensor SliceView(const DenseTensor& x, const std::vector<int64_t>& axes,
                      const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
                      const std::vector<int64_t>& strides);
/// Selects index `index` along `axis` and drops that axis.
DenseTensor SelectView(const DenseTensor& x, int64_t axis, int64_t index);
/// split / split_with_num: consecutive parts of x along `axis`, each a view (as
/// PyTorch's split and Paddle's stride kernels), the sections checked as SplitInferMeta /
/// SplitWithNumInferMeta check them.
std::vector<DenseTensor> SplitView(const DenseTensor& x, const std::vector<int64_t>& num_or_sections, int64_t axis);
std::vector<DenseTensor> SplitWithNumView(const DenseTensor& x, int64_t num, int64_t axis);
/// unbind: SelectView(x, axis, i) for every i along `axis`.
std::vector<DenseTensor> UnbindView(const DenseTensor& x, int64_t axis);
/// x's bytes read as `dtype` (Paddle's view_dtype, PyTorch's view(dtype)): the last dim
/// grows or shrinks by the ratio of the element sizes (Note [Bit-cast views]).
DenseTensor ViewDtypeView(const DenseTensor& x, DataType dtype);

}  // namespace oar
