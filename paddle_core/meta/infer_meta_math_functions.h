// Shape/dtype inference for math_functions.yaml (elementwise math beyond math.yaml) and
// stats.yaml (reductions, statistics, sorting and searching). Conventions as in
// infer_meta.h: fill the outputs, raise errors that name the op, argument and values.
#pragma once

#include <string>
#include <vector>

#include "paddle_core/meta/infer_meta.h"

namespace oar {

// ---- math_functions.yaml
void RoundInferMeta(const DenseTensor& x, int64_t decimals, DenseTensor* out);
void PolygammaInferMeta(const DenseTensor& x, int64_t n, DenseTensor* out);
void NanToNumInferMeta(const DenseTensor& x, double nan, double posinf, double neginf,
                       DenseTensor* out);
void LerpInferMeta(const DenseTensor& x, const DenseTensor& y, const DenseTensor& weight,
                   DenseTensor* out);
void IncrementInferMeta(const DenseTensor& x, double value, DenseTensor* out);


// ---- stats.yaml
void BoolReduceInferMeta(const DenseTensor& x, const IntList& axis, bool keepdim,
                         DenseTensor* out);
void VarInferMeta(const DenseTensor& x, const IntList& axis, bool unbiased, bool keepdim,
                  DenseTensor* out);
void LogsumexpInferMeta(const DenseTensor& x, const IntList& axis, bool keepdim, DenseTensor* out);
void PNormInferMeta(const DenseTensor& x, double porder, const IntList& axis, bool keepdim,
                    DenseTensor* out);
void CumInferMeta(const DenseTensor& x, int64_t axis, bool flatten, bool exclusive, bool reverse,
                  DenseTensor* out);
void CumprodInferMeta(const DenseTensor& x, int64_t axis, bool flatten, DenseTensor* out);
/// cum_extremum_index: int64 indices of x's shape (axis checked).
void CumExtremumInferMeta(const DenseTensor& x, int64_t axis, bool largest, DenseTensor* values, DenseTensor* indices);
void GatherAxisInferMeta(const DenseTensor& x, const DenseTensor& index, int64_t axis,
                         DenseTensor* out);
void ArgsortInferMeta(const DenseTensor& x, int64_t axis, bool descending, bool stable,
                      DenseTensor* out, DenseTensor* indices);
void TopkInferMeta(const DenseTensor& x, int64_t k, int64_t axis, bool largest, bool sorted,
                   DenseTensor* out, DenseTensor* indices);
void KthvalueInferMeta(const DenseTensor& x, int64_t k, int64_t axis, bool keepdim,
                       DenseTensor* out, DenseTensor* indices);
void ModeInferMeta(const DenseTensor& x, int64_t axis, bool keepdim, DenseTensor* out,
                   DenseTensor* indices);
void UniqueInferMeta(const DenseTensor& x, const IntList& axis, DataType dtype, DenseTensor* out,
                     DenseTensor* indices, DenseTensor* inverse, DenseTensor* counts);
void UniqueConsecutiveInferMeta(const DenseTensor& x, const IntList& axis, DataType dtype,
                                DenseTensor* out, DenseTensor* inverse, DenseTensor* counts);
void BincountInferMeta(const DenseTensor& x, const DenseTensor* weights, int64_t minlength,
                       DenseTensor* out);
void HistogramInferMeta(const DenseTensor& input, const DenseTensor* weight, int64_t bins,
                        double min, double max, bool density, DenseTensor* out);
/// nms: boxes [N, 4] of a float type; the kept indices, int64 [k] with k known after the run.
void NmsInferMeta(const DenseTensor& boxes, double threshold, DenseTensor* out);
void SearchsortedInferMeta(const DenseTensor& sorted_sequence, const DenseTensor& values,
                           bool out_int32, bool right, DenseTensor* out);
/// x's dims with grad_out's dtype, which must be x's (the *_grad kernels read both as one type).
void GradLikeInferMeta(const DenseTensor& x, const DenseTensor& grad_out, DenseTensor* out);
void CumprodGradInferMeta(const DenseTensor& x, const DenseTensor& out, const DenseTensor& grad_out,
                          DenseTensor* x_grad);
/// The diagonal of the (axis1, axis2) planes as a view; that pair of dims becomes the last.
DenseTensor DiagonalView(const DenseTensor& x, int64_t offset, int64_t axis1, int64_t axis2);

namespace meta {
/// `in` with the reduced `axes` removed (or kept as 1).
Dims reduce_dims_of(const Dims& in, const std::vector<int>& axes, bool keepdim);
}  // namespace meta

}  // namespace oar
