// Shape/dtype inference of the CNN ops in cnn.yaml: convolutions, pooling and the
// normalizations (see infer_meta.h for the conventions). Spatial attributes are
// explicit: `paddings` holds (before, after) per spatial dim, e.g. [top, bottom,
// left, right] for 2-D; the Python layer turns 'SAME'/'VALID'/ints into that form.
#pragma once

#include <string>
#include <vector>

#include "paddle_core/meta/infer_meta.h"

namespace oar {

/// Geometry of an N-d convolution (N = 1..3 spatial dims), in the conv's own terms:
/// `in` is the input of the forward conv, `out` its output. Transposed convs use the
/// same geometry with input and output exchanged.
struct ConvGeometry {
  int nd = 2;
  bool channels_last = false;
  int64_t batch = 0, in_c = 0, out_c = 0, groups = 1;
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, k[3] = {1, 1, 1};
  int64_t stride[3] = {1, 1, 1}, dil[3] = {1, 1, 1}, pad_l[3] = {0, 0, 0}, pad_r[3] = {0, 0, 0};
  /// Output size of dim i from the input size (floor division, as Paddle).
  int64_t out_size(int i) const {
    return (in[i] + pad_l[i] + pad_r[i] - dil[i] * (k[i] - 1) - 1) / stride[i] + 1;
  }
};

/// Parses data_format ("NCHW"/"NHWC", "NCDHW"/"NDHWC", "NCL"/"NLC") for `nd` spatial
/// dims; returns true for channels-last.
bool parse_channels_last(const std::string& data_format, int nd, const char* op);

/// Validates a conv's input/filter/attributes and returns its geometry; `x` is the
/// conv input (rank nd + 2), `filter` [out_c, in_c / groups, k...].
ConvGeometry conv_geometry(const DenseTensor& x, const DenseTensor& filter,
                           const IntList& strides, const IntList& paddings,
                           const IntList& dilations, int64_t groups,
                           const std::string& data_format, int nd, const char* op);
/// Geometry of a transposed conv: `x` is its input (the conv's output), `filter`
/// [in_c, out_c / groups, k...]; output sizes include output_padding.
ConvGeometry conv_transpose_geometry(const DenseTensor& x, const DenseTensor& filter,
                                     const IntList& strides, const IntList& paddings,
                                     const IntList& output_padding, const IntList& dilations,
                                     int64_t groups, const std::string& data_format, int nd,
                                     const char* op);
/// Dims of an activation tensor [N, C, spatial...] (or channels last) of the geometry.
Dims conv_act_dims(const ConvGeometry& g, int64_t c, const int64_t* spatial);

/// The output_padding that makes conv_transpose(y) have the spatial size of `x` (the
/// forward conv's input), used by conv's backward.
std::vector<int64_t> conv_output_padding(const Dims& x, const Dims& y, const Dims& filter,
                                         const IntList& strides, const IntList& paddings,
                                         const IntList& dilations,
                                         const std::string& data_format);

void Conv2dInferMeta(const DenseTensor& input, const DenseTensor& filter, const IntList& strides,
                     const IntList& paddings, const IntList& dilations, int64_t groups,
                     const std::string& data_format, DenseTensor* out);
/// fused_conv2d: conv2d's shape; bias (optional) holds out_c values of input's dtype;
/// activation is "" or "relu".
void FusedConv2dInferMeta(const DenseTensor& input, const DenseTensor& filter, const DenseTensor* bias,
                          const IntList& strides, const IntList& paddings, const IntList& dilations,
                          int64_t groups, const std::string& data_format, const std::string& activation,
                          DenseTensor* out);
void Conv3dInferMeta(const DenseTensor& input, const DenseTensor& filter, const IntList& strides,
                     const IntList& paddings, const IntList& dilations, int64_t groups,
                     const std::string& data_format, DenseTensor* out);
void Conv2dTransposeInferMeta(const DenseTensor& x, const DenseTensor& filter,
                              const IntList& strides, const IntList& paddings,
                              const IntList& output_padding, const IntList& dilations,
                              int64_t groups, const std::string& data_format, DenseTensor* out);
void Conv3dTransposeInferMeta(const DenseTensor& x, const DenseTensor& filter,
                              const IntList& strides, const IntList& paddings,
                              const IntList& output_padding, const IntList& dilations,
                              int64_t groups, const std::string& data_format, DenseTensor* out);
void Conv2dGradFilterInferMeta(const DenseTensor& input, const DenseTensor& filter,
                               const DenseTensor& grad_out, const IntList& strides,
                               const IntList& paddings, const IntList& dilations, int64_t groups,
                               const std::string& data_format, DenseTensor* filter_grad);
void Conv3dGradFilterInferMeta(const DenseTensor& input, const DenseTensor& filter,
                               const DenseTensor& grad_out, const IntList& strides,
                               const IntList& paddings, const IntList& dilations, int64_t groups,
                               const std::string& data_format, DenseTensor* filter_grad);

// ---- pooling
/// Geometry of an N-d pooling; windows along dim i start at o * stride - pad_l
/// (non-adaptive) or floor(o * in / out) (adaptive).
struct PoolGeometry {
  int nd = 2;
  bool channels_last = false, adaptive = false, exclusive = true;
  int64_t batch = 0, c = 0;
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, k[3] = {1, 1, 1};
  int64_t stride[3] = {1, 1, 1}, pad_l[3] = {0, 0, 0};
  int64_t in_numel() const { return in[0] * in[1] * in[2]; }
  int64_t out_numel() const { return out[0] * out[1] * out[2]; }
  /// Window [begin, end) along dim i for output index o, clipped to the input.
  void window(int i, int64_t o, int64_t* b, int64_t* e) const {
    if (adaptive) {
      *b = o * in[i] / out[i];
      *e = ((o + 1) * in[i] + out[i] - 1) / out[i];
    } else {
      const int64_t s = o * stride[i] - pad_l[i];
      *b = s < 0 ? 0 : s;
      *e = s + k[i] < in[i] ? s + k[i] : in[i];
    }
  }
};

/// Validates a pooling's input and attributes; with `adaptive`, kernel_size holds the
/// output size. Sets the output dims into `out_dims`.
PoolGeometry pool_geometry(const DenseTensor& x, const IntList& kernel_size,
                           const IntList& strides, const IntList& paddings, bool ceil_mode,
                           bool exclusive, bool adaptive, const std::string& data_format, int nd,
                           const char* op, Dims* out_dims);

void AvgPool2dInferMeta(const DenseTensor& x, const IntList& kernel_size, const IntList& strides,
                        const IntList& paddings, bool ceil_mode, bool exclusive, bool adaptive,
                        const std::string& data_format, DenseTensor* out);
void AvgPool3dInferMeta(const DenseTensor& x, const IntList& kernel_size, const IntList& strides,
                        const IntList& paddings, bool ceil_mode, bool exclusive, bool adaptive,
                        const std::string& data_format, DenseTensor* out);
void AvgPoolGradInferMeta(const DenseTensor& x, const DenseTensor& grad_out,
                          const IntList& kernel_size, const IntList& strides,
                          const IntList& paddings, bool ceil_mode, bool exclusive, bool adaptive,
                          const std::string& data_format, DenseTensor* x_grad);
void MaxPool2dWithIndexInferMeta(const DenseTensor& x, const IntList& kernel_size,
                                 const IntList& strides, const IntList& paddings, bool ceil_mode,
                                 bool adaptive, const std::string& data_format, DenseTensor* out,
                                 DenseTensor* mask);
/// max_pool2d: max_pool2d_with_index's out without the mask.
void MaxPool2dInferMeta(const DenseTensor& x, const IntList& kernel_size, const IntList& strides,
                        const IntList& paddings, bool ceil_mode, bool adaptive,
                        const std::string& data_format, DenseTensor* out);
void MaxPool3dWithIndexInferMeta(const DenseTensor& x, const IntList& kernel_size,
                                 const IntList& strides, const IntList& paddings, bool ceil_mode,
                                 bool adaptive, const std::string& data_format, DenseTensor* out,
                                 DenseTensor* mask);
void MaxPoolIndexGradInferMeta(const DenseTensor& x, const DenseTensor& mask,
                               const DenseTensor& grad_out, const std::string& data_format,
                               DenseTensor* x_grad);
void MaxPoolIndexGatherInferMeta(const DenseTensor& x, const DenseTensor& mask,
                                 const std::string& data_format, DenseTensor* out);

}  // namespace oar

namespace oar {

// ---- normalizations
/// A normalization seen as rows: x is [N * G rows, K * S], row r normalized on its own
/// with channel g * K + k for element k * S + s (g = r % G). layer_norm: G = 1, K = row
/// length, S = 1. group_norm: G groups, K = C / G, S = spatial size.
struct RowNormView {
  int64_t n = 0, g = 1, k = 0, s = 1;
  int64_t rows() const { return n * g; }
  int64_t len() const { return k * s; }
};
RowNormView layer_norm_view(const DenseTensor& x, int64_t begin_norm_axis, const char* op);
RowNormView group_norm_view(const DenseTensor& x, int64_t groups, const char* op);

/// batch_norm's view of x: [n, c, s] with statistics per channel c.
struct BatchNormView {
  int64_t n = 0, c = 0, s = 1;
};
BatchNormView batch_norm_view(const DenseTensor& x, const std::string& data_format,
                              const char* op);

void LayerNormInferMeta(const DenseTensor& x, const DenseTensor* scale, const DenseTensor* bias,
                        double epsilon, int64_t begin_norm_axis, DenseTensor* out,
                        DenseTensor* mean, DenseTensor* rstd);
void LayerNormGradInferMeta(const DenseTensor& x, const DenseTensor* scale,
                            const DenseTensor& mean, const DenseTensor& rstd,
                            const DenseTensor& grad_out, int64_t begin_norm_axis,
                            DenseTensor* x_grad, DenseTensor* scale_grad,
                            DenseTensor* bias_grad);
void GroupNormInferMeta(const DenseTensor& x, const DenseTensor* scale, const DenseTensor* bias,
                        double epsilon, int64_t groups, DenseTensor* out, DenseTensor* mean,
                        DenseTensor* rstd);
void GroupNormGradInferMeta(const DenseTensor& x, const DenseTensor* scale,
                            const DenseTensor& mean, const DenseTensor& rstd,
                            const DenseTensor& grad_out, int64_t groups, DenseTensor* x_grad,
                            DenseTensor* scale_grad, DenseTensor* bias_grad);
void BatchNormInferMeta(const DenseTensor& x, const DenseTensor& running_mean,
                        const DenseTensor& running_var, const DenseTensor* scale,
                        const DenseTensor* bias, bool training, double momentum, double epsilon,
                        const std::string& data_format, bool use_global_stats, DenseTensor* out,
                        DenseTensor* mean_out, DenseTensor* variance_out,
                        DenseTensor* saved_mean, DenseTensor* saved_rstd);
void BatchNormGradInferMeta(const DenseTensor& x, const DenseTensor* scale,
                            const DenseTensor& saved_mean, const DenseTensor& saved_rstd,
                            const DenseTensor& grad_out, bool use_global_stats,
                            const std::string& data_format, DenseTensor* x_grad,
                            DenseTensor* scale_grad, DenseTensor* bias_grad);

}  // namespace oar
