// float32 forward convolution as im2col + one sgemm (phi_kernels/cpu/conv_im2col.cc), a
// candidate that conv_onednn.cc times against oneDNN's own convolutions per geometry.
#pragma once

#include "paddle_core/meta/infer_meta_cnn.h"

namespace oar::phi {

/// Whether conv_im2col_fwd handles `g`: channels first, one group, bounded workspace.
bool conv_im2col_fwd_supported(const ConvGeometry& g);
/// dst = conv(src, w) (NC... activations, [out_c, in_c, k...] filter): the columns of
/// all images side by side in a per-thread workspace, one sgemm, then the images apart.
void conv_im2col_fwd(const ConvGeometry& g, const float* src, const float* w, float* dst);
/// Frees the calling thread's workspace (after a geometry chose another algorithm).
void conv_im2col_release();

}  // namespace oar::phi
