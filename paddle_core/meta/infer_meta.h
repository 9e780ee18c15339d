// Shape/dtype inference: one function per family of ops, named <Family>InferMeta.
// Each takes the op's inputs and attributes (as in its definition) and fills the
// outputs' dims and dtype, raising InvalidArgument/OutOfRange on bad inputs. The
// same functions will serve the IR's shape inference, so eager and static agree.
#pragma once

#include <string>
#include <vector>

#include "paddle_core/tensor/dense_tensor.h"
#include "paddle_core/tensor/scalar.h"

namespace oar::meta {

/// NumPy broadcasting of two shapes; `op` names the caller in the error.
Dims broadcast_dims(const Dims& a, const Dims& b, const char* op);
/// Normalized, sorted, de-duplicated reduction axes; empty `axis` means all.
std::vector<int> reduce_axes(const std::vector<int64_t>& axis, int rank, const char* op);
/// Validates a shape attribute (non-negative sizes) for creation ops.
Dims shape_from(const std::vector<int64_t>& shape, const char* op);

}  // namespace oar::meta

namespace oar {
using IntList = std::vector<int64_t>;

void UnchangedInferMeta(const DenseTensor& x, DenseTensor* out);
/// out has x's dims and the real dtype of x's (complex64 -> float32; real dtypes unchanged).
void RealInferMeta(const DenseTensor& x, DenseTensor* out);
void UnchangedFloatInferMeta(const DenseTensor& x, DenseTensor* out);  // ints -> default float
void BroadcastBinaryInferMeta(const DenseTensor& x, const DenseTensor& y, DenseTensor* out);
void CompareInferMeta(const DenseTensor& x, const DenseTensor& y, DenseTensor* out);
void LogicalUnaryInferMeta(const DenseTensor& x, DenseTensor* out);
void WhereInferMeta(const DenseTensor& cond, const DenseTensor& x, const DenseTensor& y,
                    DenseTensor* out);
void CastInferMeta(const DenseTensor& x, DataType dtype, DenseTensor* out);
void ScaleInferMeta(const DenseTensor& x, double scale, double bias, bool bias_after_scale,
                    DenseTensor* out);
void PowScalarInferMeta(const DenseTensor& x, double y, DenseTensor* out);
void ClipInferMeta(const DenseTensor& x, double min, double max, DenseTensor* out);
void ReduceInferMeta(const DenseTensor& x, const IntList& axis, bool keepdim, DenseTensor* out);
void SumInferMeta(const DenseTensor& x, const IntList& axis, DataType dtype, bool keepdim,
                  DenseTensor* out);
void MeanInferMeta(const DenseTensor& x, const IntList& axis, bool keepdim, DenseTensor* out);
void ProdInferMeta(const DenseTensor& x, const IntList& axis, bool keepdim, DataType dtype,
                   DenseTensor* out);
void ArgReduceInferMeta(const DenseTensor& x, int64_t axis, bool keepdim, bool flatten,
                        DataType dtype, DenseTensor* out);
void MatmulInferMeta(const DenseTensor& x, const DenseTensor& y, bool transpose_x,
                     bool transpose_y, DenseTensor* out);
void FullInferMeta(const IntList& shape, const Scalar& value, DataType dtype, const Place& place,
                   DenseTensor* out);
void FullLikeInferMeta(const DenseTensor& x, const Scalar& value, DataType dtype,
                       DenseTensor* out);
void SumToInferMeta(const DenseTensor& x, const IntList& shape, DenseTensor* out);
void ExpandInferMeta(const DenseTensor& x, const IntList& shape, DenseTensor* out);

}  // namespace oar

namespace oar {
void SliceGradInferMeta(const DenseTensor& x, const DenseTensor& grad_out, const IntList& axes,
                        const IntList& starts, const IntList& ends, const IntList& strides,
                        DenseTensor* out);
}  // namespace oar
