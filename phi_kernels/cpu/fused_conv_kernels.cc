// fused_conv2d: activation(conv2d(input, filter) + bias), the op the conv fusion rules
// (pir/drr/fusion_rules.cc) produce for inference. float32 runs one oneDNN convolution
// with the bias and the relu as post-ops and the filter reordered once per filter buffer
// (onednn_conv_fwd_fused); float64 (tests) runs a direct loop.
#include <algorithm>
#include <vector>

#include "oar_generated/kernel_signatures.h"
#include "paddle_core/meta/infer_meta_cnn.h"
#include "phi_kernels/cpu/parallel.h"
#include "phi_kernels/funcs/conv_onednn.h"

namespace oar::phi {
namespace {

// Direct convolution in the geometry's layout, with the bias and relu applied per element.
template <typename T>
void direct_conv(const ConvGeometry& g, const T* x, const T* w, const T* b, bool relu, T* o) {
  const int64_t H = g.in[0], W = g.in[1], OH = g.out[0], OW = g.out[1];
  const int64_t KH = g.k[0], KW = g.k[1], C = g.in_c, OC = g.out_c;
  const int64_t cg = C / g.groups, ocg = OC / g.groups;
  auto xi = [&](int64_t n, int64_t c, int64_t h, int64_t ww) {
    return g.channels_last ? ((n * H + h) * W + ww) * C + c : ((n * C + c) * H + h) * W + ww;
  };
  auto oi = [&](int64_t n, int64_t c, int64_t h, int64_t ww) {
    return g.channels_last ? ((n * OH + h) * OW + ww) * OC + c : ((n * OC + c) * OH + h) * OW + ww;
  };
  parallel_for(g.batch * OC, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t n = p / OC, oc = p % OC, grp = oc / ocg;
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          T acc = b ? b[oc] : T(0);
          for (int64_t ic = 0; ic < cg; ++ic)
            for (int64_t kh = 0; kh < KH; ++kh) {
              const int64_t ih = oh * g.stride[0] - g.pad_l[0] + kh * g.dil[0];
              if (ih < 0 || ih >= H) continue;
              for (int64_t kw = 0; kw < KW; ++kw) {
                const int64_t iw = ow * g.stride[1] - g.pad_l[1] + kw * g.dil[1];
                if (iw < 0 || iw >= W) continue;
                acc += x[xi(n, grp * cg + ic, ih, iw)] * w[((oc * cg + ic) * KH + kh) * KW + kw];
              }
            }
          o[oi(n, oc, oh, ow)] = relu && !(acc >= T(0)) && acc == acc ? T(0) : acc;
        }
    }
  }, g.batch * OC * OH * OW * cg * KH * KW);
}

template <typename T>
void FusedConv2dKernel(const DeviceContext&, const DenseTensor& input, const DenseTensor& filter,
                       const DenseTensor* bias, const IntList& strides, const IntList& paddings,
                       const IntList& dilations, int64_t groups, const std::string& data_format,
                       const std::string& activation, DenseTensor* out) {
  const ConvGeometry g = conv_geometry(input, filter, strides, paddings, dilations, groups, data_format, 2,
                                       "fused_conv2d");
  const bool relu = activation == "relu";
  T* o = out->alloc<T>();
  if (out->numel() == 0) return;
  const DenseTensor x = contiguous(input), w = contiguous(filter);
  DenseTensor b;
  if (bias) b = contiguous(*bias);
  const T* bp = bias ? b.data<T>() : nullptr;
  if (x.numel() == 0 || w.numel() == 0) {  // no input channels: the bias alone
    const int64_t inner = g.channels_last ? 1 : out->numel() / (g.batch * g.out_c);
    for (int64_t i = 0; i < out->numel(); ++i) {
      const int64_t c = g.channels_last ? i % g.out_c : (i / inner) % g.out_c;
      const T v = bp ? bp[c] : T(0);
      o[i] = relu && v < T(0) ? T(0) : v;
    }
    return;
  }
  if constexpr (std::is_same_v<T, float>) {
    onednn_conv_fwd_fused(g, x.data<T>(), w.data<T>(), bp, relu, w.storage(), o);
  } else {
    direct_conv(g, x.data<T>(), w.data<T>(), bp, relu, o);
  }
}

}  // namespace
}  // namespace oar::phi

using namespace oar::phi;  // NOLINT

OAR_REGISTER_KERNEL(fused_conv2d, CPU, FusedConv2dKernel, float, double)
