// conv{2,3}d, conv{2,3}d_transpose and conv{2,3}d_grad_filter. float32 runs on oneDNN
// (conv_onednn.cc); bfloat16 on oneDNN's bf16 kernels where the CPU has AMX, or
// AVX512-BF16 that outruns its float32 FMAs, elsewhere through float32 (Note [bf16
// convolution]); float64 (used for precise gradients) on im2col + BLAS dgemm, per image
// and group, in channels-first layout (channels-last inputs are transposed).
// A transposed conv is the data gradient of the conv with input and output exchanged.
#include <cblas.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "oar_generated/kernel_signatures.h"
#include "paddle_core/meta/infer_meta_cnn.h"
#include "phi_kernels/cpu/scratch.h"
#include "phi_kernels/funcs/conv_im2col.h"
#include "phi_kernels/funcs/conv_onednn.h"
#include "phi_kernels/funcs/lowp_gemm.h"

namespace oar::phi {
namespace {

// col[(c, kd, kh, kw), (od, oh, ow)] = src[c, od*s - p + kd*d, ...] (0 outside);
// with kAdd, the adjoint: src[...] += col[...].
template <bool kAdd>
void im2col(const Geo3& g, int64_t channels, double* src, double* col) {
  const int64_t os = g.out_numel();
  int64_t row = 0;
  for (int64_t c = 0; c < channels; ++c) {
    double* plane = src + c * g.in_numel();
    for (int64_t kd = 0; kd < g.k[0]; ++kd)
      for (int64_t kh = 0; kh < g.k[1]; ++kh)
        for (int64_t kw = 0; kw < g.k[2]; ++kw, ++row) {
          double* dst = col + row * os;
          for (int64_t od = 0; od < g.out[0]; ++od) {
            const int64_t id = od * g.s[0] - g.p[0] + kd * g.d[0];
            for (int64_t oh = 0; oh < g.out[1]; ++oh) {
              const int64_t ih = oh * g.s[1] - g.p[1] + kh * g.d[1];
              double* drow = dst + (od * g.out[1] + oh) * g.out[2];
              const bool inside = id >= 0 && id < g.in[0] && ih >= 0 && ih < g.in[1];
              double* srow = plane + (id * g.in[1] + ih) * g.in[2];
              for (int64_t ow = 0; ow < g.out[2]; ++ow) {
                const int64_t iw = ow * g.s[2] - g.p[2] + kw * g.d[2];
                const bool ok = inside && iw >= 0 && iw < g.in[2];
                if constexpr (kAdd) {
                  if (ok) srow[iw] += drow[ow];
                } else {
                  drow[ow] = ok ? srow[iw] : 0.0;
                }
              }
            }
          }
        }
  }
}

// [N, S, C] <-> [N, C, S]
template <typename T>
void transpose_sc(const T* src, T* dst, int64_t n, int64_t s, int64_t c, bool to_channels_first) {
  for (int64_t b = 0; b < n; ++b) {
    const T* sb = src + b * s * c;
    T* db = dst + b * s * c;
    for (int64_t i = 0; i < s; ++i)
      for (int64_t j = 0; j < c; ++j) {
        if (to_channels_first) db[j * s + i] = sb[i * c + j];
        else db[i * c + j] = sb[j * s + i];
      }
  }
}

enum class Pass { kFwd, kBwdData, kBwdWeights };

// float64: one of the three passes with im2col + dgemm, channels first.
// kFwd: a = src, b = w, c = dst. kBwdData: a = diff_dst, b = w, c = diff_src.
// kBwdWeights: a = src, b = diff_dst, c = diff_w.
void gemm_conv_cf(const ConvGeometry& cg, Pass pass, const double* a, const double* b, double* c) {
  const Geo3 g = geo3(cg);
  const int64_t G = cg.groups, cig = cg.in_c / G, cog = cg.out_c / G;
  const int64_t is = g.in_numel(), os = g.out_numel(), kk = cig * g.k_numel();
  std::vector<double> col(static_cast<size_t>(kk * os));
  if (pass == Pass::kBwdData) std::fill(c, c + cg.batch * cg.in_c * is, 0.0);
  if (pass == Pass::kBwdWeights) std::fill(c, c + cg.out_c * kk, 0.0);
  for (int64_t n = 0; n < cg.batch; ++n) {
    for (int64_t gi = 0; gi < G; ++gi) {
      const int64_t src_off = (n * cg.in_c + gi * cig) * is;
      const int64_t dst_off = (n * cg.out_c + gi * cog) * os;
      const int64_t w_off = gi * cog * kk;
      if (pass == Pass::kFwd) {
        im2col<false>(g, cig, const_cast<double*>(a) + src_off, col.data());
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, cog, os, kk, 1.0, b + w_off, kk,
                    col.data(), os, 0.0, c + dst_off, os);
      } else if (pass == Pass::kBwdData) {
        cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, kk, os, cog, 1.0, b + w_off, kk,
                    a + dst_off, os, 0.0, col.data(), os);
        im2col<true>(g, cig, c + src_off, col.data());
      } else {
        im2col<false>(g, cig, const_cast<double*>(a) + src_off, col.data());
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, cog, kk, os, 1.0, b + dst_off, os,
                    col.data(), os, 1.0, c + w_off, kk);
      }
    }
  }
}

void gemm_conv(const ConvGeometry& cg, Pass pass, const double* a, const double* b, double* c) {
  if (!cg.channels_last) return gemm_conv_cf(cg, pass, a, b, c);
  ConvGeometry g = cg;
  g.channels_last = false;
  const Geo3 g3 = geo3(cg);
  const int64_t is = g3.in_numel(), os = g3.out_numel();
  std::vector<double> src(cg.batch * cg.in_c * is), dst(cg.batch * cg.out_c * os);
  if (pass == Pass::kFwd) {
    transpose_sc(a, src.data(), cg.batch, is, cg.in_c, true);
    gemm_conv_cf(g, pass, src.data(), b, dst.data());
    transpose_sc(dst.data(), c, cg.batch, os, cg.out_c, false);
  } else if (pass == Pass::kBwdData) {
    transpose_sc(a, dst.data(), cg.batch, os, cg.out_c, true);
    gemm_conv_cf(g, pass, dst.data(), b, src.data());
    transpose_sc(src.data(), c, cg.batch, is, cg.in_c, false);
  } else {
    transpose_sc(a, src.data(), cg.batch, is, cg.in_c, true);
    transpose_sc(b, dst.data(), cg.batch, os, cg.out_c, true);
    gemm_conv_cf(g, pass, src.data(), dst.data(), c);
  }
}

// oneDNN's bf16 kernels where they pay on this CPU (bf16_onednn_pays: AMX, or a
// vdpbf16ps at least 0.75x as fast as float32 FMAs; Note [bf16 dot or widened float]), else
// through float32. OAR_BF16_CONV=float | onednn forces a path (onednn only where oneDNN
// runs bf16 at all); read at every call.
bool bf16_conv_onednn() {
  if (!onednn_conv_bf16_supported()) return false;
  const char* v = std::getenv("OAR_BF16_CONV");
  if (v && std::strcmp(v, "float") == 0) return false;
  if (v && std::strcmp(v, "onednn") == 0) return true;
  return bf16_onednn_pays();
}

// bfloat16 through float32: both operands widened (exact) into this thread's scratch, the
// float32 pass, the result rounded once to nearest even.
void bf16_via_float(const ConvGeometry& g, Pass pass, const bfloat16* a, int64_t na, const bfloat16* b, int64_t nb,
                    bfloat16* c, int64_t nc) {
  thread_local Scratch sa, sb, sc;
  float* fa = sa.get<float>(na, "conv (bf16)");
  float* fb = sb.get<float>(nb, "conv (bf16)");
  float* fc = sc.get<float>(nc, "conv (bf16)");
  bf16_to_float_rows(reinterpret_cast<const uint16_t*>(a), na, 1, na, fa, na);
  bf16_to_float_rows(reinterpret_cast<const uint16_t*>(b), nb, 1, nb, fb, nb);
  if (pass == Pass::kFwd)
    onednn_conv_fwd(g, fa, fb, fc);
  else if (pass == Pass::kBwdData)
    onednn_conv_bwd_data(g, fa, fb, fc);
  else
    onednn_conv_bwd_weights(g, fa, fb, fc);
  float_to_bf16_rows(fc, nc, 1, nc, reinterpret_cast<uint16_t*>(c), nc);
  sa.trim(), sb.trim(), sc.trim();
}

template <typename T>
void run_pass(const ConvGeometry& g, Pass pass, const DenseTensor& a, const DenseTensor& b,
              DenseTensor* c) {
  T* o = c->alloc<T>();
  if (c->numel() == 0) return;
  if (a.numel() == 0 || b.numel() == 0) {  // empty batch or channels: a zero result
    std::fill(o, o + c->numel(), T(0));
    return;
  }
  const DenseTensor ac = contiguous(a), bc = contiguous(b);
  const T* pa = ac.data<T>();
  const T* pb = bc.data<T>();
  if constexpr (std::is_same_v<T, float>) {
    if (pass == Pass::kFwd)
      onednn_conv_fwd(g, pa, pb, o, bc.storage());
    else if (pass == Pass::kBwdData) onednn_conv_bwd_data(g, pa, pb, o);
    else onednn_conv_bwd_weights(g, pa, pb, o);
  } else if constexpr (std::is_same_v<T, bfloat16>) {
    if (!bf16_conv_onednn()) return bf16_via_float(g, pass, pa, ac.numel(), pb, bc.numel(), o, c->numel());
    const auto* ua = reinterpret_cast<const uint16_t*>(pa);
    const auto* ub = reinterpret_cast<const uint16_t*>(pb);
    auto* uo = reinterpret_cast<uint16_t*>(o);
    if (pass == Pass::kFwd)
      onednn_conv_fwd_bf16(g, ua, ub, uo, bc.storage());
    else if (pass == Pass::kBwdData)
      onednn_conv_bwd_data_bf16(g, ua, ub, uo);
    else
      onednn_conv_bwd_weights_bf16(g, ua, ub, uo);
  } else {
    gemm_conv(g, pass, pa, pb, o);
  }
}

template <typename T>
void ConvKernel(const DeviceContext&, const DenseTensor& input, const DenseTensor& filter,
                const IntList& strides, const IntList& paddings, const IntList& dilations,
                int64_t groups, const std::string& data_format, DenseTensor* out) {
  const ConvGeometry g = conv_geometry(input, filter, strides, paddings, dilations, groups,
                                       data_format, input.rank() - 2, "conv");
  run_pass<T>(g, Pass::kFwd, input, filter, out);
}

template <typename T>
void ConvTransposeKernel(const DeviceContext&, const DenseTensor& x, const DenseTensor& filter,
                         const IntList& strides, const IntList& paddings,
                         const IntList& output_padding, const IntList& dilations, int64_t groups,
                         const std::string& data_format, DenseTensor* out) {
  const ConvGeometry g = conv_transpose_geometry(x, filter, strides, paddings, output_padding,
                                                 dilations, groups, data_format, x.rank() - 2,
                                                 "conv_transpose");
  run_pass<T>(g, Pass::kBwdData, x, filter, out);
}

template <typename T>
void ConvGradFilterKernel(const DeviceContext&, const DenseTensor& input,
                          const DenseTensor& filter, const DenseTensor& grad_out,
                          const IntList& strides, const IntList& paddings,
                          const IntList& dilations, int64_t groups,
                          const std::string& data_format, DenseTensor* filter_grad) {
  const ConvGeometry g = conv_geometry(input, filter, strides, paddings, dilations, groups,
                                       data_format, input.rank() - 2, "conv_grad_filter");
  run_pass<T>(g, Pass::kBwdWeights, input, grad_out, filter_grad);
}

}  // namespace
}  // namespace oar::phi

using namespace oar::phi;  // NOLINT

OAR_REGISTER_KERNEL(conv2d, CPU, ConvKernel, float, double, ::oar::bfloat16)
OAR_REGISTER_KERNEL(conv3d, CPU, ConvKernel, float, double, ::oar::bfloat16)
OAR_REGISTER_KERNEL(conv2d_transpose, CPU, ConvTransposeKernel, float, double, ::oar::bfloat16)
OAR_REGISTER_KERNEL(conv3d_transpose, CPU, ConvTransposeKernel, float, double, ::oar::bfloat16)
OAR_REGISTER_KERNEL(conv2d_grad_filter, CPU, ConvGradFilterKernel, float, double, ::oar::bfloat16)
OAR_REGISTER_KERNEL(conv3d_grad_filter, CPU, ConvGradFilterKernel, float, double, ::oar::bfloat16)

/// The bf16 convolution path on this CPU and setting, for tests and bench (ctypes on
/// liboar_core): "onednn" or "float".
extern "C" const char* oar_bf16_conv_path() { return bf16_conv_onednn() ? "onednn" : "float"; }
