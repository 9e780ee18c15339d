// float32 direct 2-D convolutions for small filters (phi_kernels/cpu/conv_direct.cc),
// candidates of the fused convolution's per-geometry tuning (conv_onednn.cc) beside
// oneDNN, im2col + GEMM and Winograd. Both keep a tile of outputs in registers over the
// whole reduction (in_c * kh * kw taps) and write NCHW directly, with the bias and relu:
//  - rows: 8 adjacent outputs of a row per vector, up to 6 output channels x 2 vectors
//    per tile, the filter taps broadcast. For few input channels on wide images (LeNet's
//    1->6 3x3 on 28x28), where im2col's column matrix is 9x the input and a blocked
//    layout pads the single channel to 8.
//  - channels: 8 output channels per vector, 16 channels x 6 outputs (or 8 x 12) per
//    tile, the inputs broadcast, any stride. For small images with a few input channels
//    (LeNet's 6->16 5x5 on 14x14), where rows of 10 waste vector lanes and per-image
//    GEMMs have few columns.
// Neither blocks the reduction for cache, so both are offered for small filters only.
#pragma once

#include "paddle_core/meta/infer_meta_cnn.h"

namespace oar::phi {

/// Whether conv_direct_rows_fwd handles `g`: 2-D, channels first, one group, stride 1,
/// output rows of at least 8, at most 256 taps per output (in_c * kh * kw), an AVX2 build.
bool conv_direct_rows_supported(const ConvGeometry& g);
/// Whether conv_direct_channels_fwd handles `g`: 2-D, channels first, one group, at most
/// 1024 taps per output and 64K filter values, an AVX2 build.
bool conv_direct_channels_supported(const ConvGeometry& g);

/// dst = act(conv(src, w) + bias): NCHW activations, [out_c, in_c, kh, kw] filter, bias
/// out_c values or null, act relu (NaN kept, as the reference) or none.
void conv_direct_rows_fwd(const ConvGeometry& g, const float* src, const float* w, float* dst,
                          const float* bias, bool relu);
void conv_direct_channels_fwd(const ConvGeometry& g, const float* src, const float* w, float* dst,
                              const float* bias, bool relu);

}  // namespace oar::phi
