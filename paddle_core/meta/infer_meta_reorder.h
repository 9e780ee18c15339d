// Shape/dtype inference of the ops that reorder, pick, pad or resample elements (flip, roll, as_strided,
// index_add, take/put_along_axis, scatter_nd_add, tril/triu, diag_embed, pad, im2col,
// interpolation, grid_sample); conventions as in infer_meta.h. Index values are
// checked by the kernels, which alone see the data.
#pragma once

#include <string>
#include <vector>

#include "paddle_core/meta/infer_meta.h"

namespace oar {

void FlipInferMeta(const DenseTensor& x, const IntList& axis, DenseTensor* out);
void RollInferMeta(const DenseTensor& x, const IntList& shifts, const IntList& axis,
                   DenseTensor* out);
/// A view of x's elements (x made contiguous first) with the given sizes and strides.
DenseTensor AsStridedView(const DenseTensor& x, const IntList& dims, const IntList& stride,
                          int64_t offset);
void AsStridedGradInferMeta(const DenseTensor& x, const DenseTensor& grad_out,
                            const IntList& dims, const IntList& stride, int64_t offset,
                            DenseTensor* out);
void IndexAddInferMeta(const DenseTensor& x, const DenseTensor& index, int64_t axis,
                       const DenseTensor& value, DenseTensor* out);
/// indices has arr's rank; out is shaped like indices.
void TakeAlongAxisInferMeta(const DenseTensor& arr, const DenseTensor& indices, int64_t axis,
                            DenseTensor* out);
/// values shaped like indices; reduce in assign/add/mul/multiply/mean/amin/amax.
void PutAlongAxisInferMeta(const DenseTensor& arr, const DenseTensor& indices,
                           const DenseTensor& values, int64_t axis, const std::string& reduce,
                           bool include_self, DenseTensor* out);
void ScatterNdAddInferMeta(const DenseTensor& x, const DenseTensor& index,
                           const DenseTensor& updates, DenseTensor* out);
void TrilTriuInferMeta(const DenseTensor& x, int64_t diagonal, bool lower, DenseTensor* out);
void DiagEmbedInferMeta(const DenseTensor& input, int64_t offset, int64_t dim1, int64_t dim2,
                        DenseTensor* out);
/// pads holds (before, after) for every dim of x, first dim first.
void PadNdInferMeta(const DenseTensor& x, const IntList& pads, const std::string& mode,
                    double value, DenseTensor* out);
void PadNdGradInferMeta(const DenseTensor& x, const DenseTensor& grad_out, const IntList& pads,
                        const std::string& mode, DenseTensor* out);
/// x [N, C, H, W] -> [N, C*kh*kw, L]; paddings are (top, left, bottom, right).
void Im2colInferMeta(const DenseTensor& x, const IntList& kernel_sizes, const IntList& strides,
                     const IntList& paddings, const IntList& dilations, DenseTensor* out);
/// x [N, C*kh*kw, L] -> [N, C, H, W] with (H, W) = output_sizes.
void Col2imInferMeta(const DenseTensor& x, const IntList& output_sizes,
                     const IntList& kernel_sizes, const IntList& strides,
                     const IntList& paddings, const IntList& dilations, DenseTensor* out);
/// x [N, C, *spatial] (1 to 3 spatial dims) -> [N, C, *out_size].
void InterpInferMeta(const DenseTensor& x, const IntList& out_size,
                     const std::vector<double>& scales, const std::string& mode,
                     bool align_corners, int64_t align_mode, DenseTensor* out);
void InterpGradInferMeta(const DenseTensor& x, const DenseTensor& grad_out,
                         const IntList& out_size, const std::vector<double>& scales,
                         const std::string& mode, bool align_corners, int64_t align_mode,
                         DenseTensor* out);
/// x [N, C, H, W], grid [N, Ho, Wo, 2] -> [N, C, Ho, Wo].
void GridSampleInferMeta(const DenseTensor& x, const DenseTensor& grid, const std::string& mode,
                         const std::string& padding_mode, bool align_corners, DenseTensor* out);
void GridSampleGradInferMeta(const DenseTensor& x, const DenseTensor& grid,
                             const DenseTensor& grad_out, const std::string& mode,
                             const std::string& padding_mode, bool align_corners,
                             DenseTensor* grad_x, DenseTensor* grad_grid);

}  // namespace oar
