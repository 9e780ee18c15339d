// float32 3x3 stride-1 convolution by Winograd F(2x2, 3x3) (phi_kernels/cpu/conv_winograd.cc),
// a candidate of the fused convolution's per-geometry tuning (conv_onednn.cc). oneDNN
// has Winograd kernels for AVX-512 only; on AVX2 its direct convolution does 2.25x the
// multiplications. The 16 products are GEMMs on OpenBLAS / oneDNN (funcs/sgemm.h).
#pragma once

#include <cstddef>

#include "paddle_core/meta/infer_meta_cnn.h"

namespace oar::phi {

/// Whether conv_winograd_fwd handles `g`: 2-D, channels first, one group, 3x3 filter,
/// stride 1, no dilation, padding at most 2 on each side.
bool conv_winograd_fwd_supported(const ConvGeometry& g);
/// Floats of the transformed filter: 16 * out_c * in_c.
size_t conv_winograd_filter_size(const ConvGeometry& g);
/// The filter [out_c, in_c, 3, 3] transformed (G w G^T) into `u`, [16][in_c][out_c].
void conv_winograd_transform_filter(const ConvGeometry& g, const float* w, float* u);
/// dst = act(conv(src, w) + bias) with `u` the transformed filter; bias out_c values or
/// null, act relu or none. Temporaries live in a per-thread workspace.
void conv_winograd_fwd(const ConvGeometry& g, const float* src, const float* u, float* dst,
                       const float* bias, bool relu);

}  // namespace oar::phi
