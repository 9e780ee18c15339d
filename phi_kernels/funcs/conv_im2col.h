// float32 forward convolution as im2col + one sgemm (phi_kernels/cpu/conv_im2col.cc), a
// candidate that conv_onednn.cc times against oneDNN's own convolutions per geometry.
#pragma once

#include "paddle_core/meta/infer_meta_cnn.h"

namespace oar::phi {

/// A conv geometry with its spatial dims moved to the end of 3 ([1, H, W] for 2-D), as
/// the im2col loops (float32 here, float64 in conv_kernels.cc) walk it.
struct Geo3 {
  int64_t in[3], out[3], k[3], s[3], d[3], p[3];
  int64_t in_numel() const { return in[0] * in[1] * in[2]; }
  int64_t out_numel() const { return out[0] * out[1] * out[2]; }
  int64_t k_numel() const { return k[0] * k[1] * k[2]; }
};

inline Geo3 geo3(const ConvGeometry& g) {
  Geo3 r;
  const int sh = 3 - g.nd;
  for (int i = 0; i < 3; ++i) {
    const bool real = i >= sh;
    r.in[i] = real ? g.in[i - sh] : 1;
    r.out[i] = real ? g.out[i - sh] : 1;
    r.k[i] = real ? g.k[i - sh] : 1;
    r.s[i] = real ? g.stride[i - sh] : 1;
    r.d[i] = real ? g.dil[i - sh] : 1;
    r.p[i] = real ? g.pad_l[i - sh] : 0;
  }
  return r;
}

/// Whether conv_im2col_fwd handles `g`: channels first, one group, bounded workspace.
bool conv_im2col_fwd_supported(const ConvGeometry& g);
/// dst = act(conv(src, w) + bias) (NC... activations, [out_c, in_c, k...] filter, bias
/// out_c values or null, act relu or none): the columns of all images side by side in a
/// per-thread workspace, one sgemm, then the images apart with the bias and relu.
void conv_im2col_fwd(const ConvGeometry& g, const float* src, const float* w, float* dst,
                     const float* bias = nullptr, bool relu = false);
/// Frees the calling thread's workspace (after a geometry chose another algorithm).
void conv_im2col_release();

}  // namespace oar::phi
