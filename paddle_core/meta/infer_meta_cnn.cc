#include "paddle_core/meta/infer_meta_cnn.h"

#include <algorithm>

namespace oar {
namespace {

const char* layout_name(int nd, bool last) {
  static const char* names[2][3] = {{"NCL", "NCHW", "NCDHW"}, {"NLC", "NHWC", "NDHWC"}};
  return names[last ? 1 : 0][nd - 1];
}

void check_float(const DenseTensor& x, const char* op, const char* arg) {
  OAR_ENFORCE(x.dtype() == DataType::FLOAT32 || x.dtype() == DataType::FLOAT64, InvalidType, op,
              ": ", arg, " must be float32 or float64, got ", dtype_name(x.dtype()));
}

// A per-spatial-dim attribute: nd values (or one value repeated), each >= lo.
void spatial_attr(const IntList& v, int nd, int64_t lo, const char* op, const char* name,
                  int64_t* dst) {
  OAR_ENFORCE(static_cast<int>(v.size()) == nd || v.size() == 1, InvalidArgument, op, ": ", name,
              " must have ", nd, " values (one per spatial dim), got ", Dims(v));
  for (int i = 0; i < nd; ++i) {
    dst[i] = v.size() == 1 ? v[0] : v[i];
    // At most 2^31: the window arithmetic (d * (k - 1), in + pad_l + pad_r, (out - 1) * s)
    // must not wrap int64 into a small size that a kernel then indexes past.
    OAR_ENFORCE(dst[i] >= lo && dst[i] <= (int64_t{1} << 31), InvalidArgument, op, ": ", name, " must be in [", lo,
                ", 2^31], got ", Dims(v));
  }
}

// paddings: 2 * nd values (before, after per dim), or nd values (symmetric), or one.
void pad_attr(const IntList& v, int nd, const char* op, int64_t* l, int64_t* r) {
  const int n = v.size();
  OAR_ENFORCE(n == 2 * nd || n == nd || n == 1, InvalidArgument, op, ": paddings must have ", nd,
              " or ", 2 * nd, " values, got ", Dims(v));
  for (int i = 0; i < nd; ++i) {
    l[i] = n == 2 * nd ? v[2 * i] : (n == 1 ? v[0] : v[i]);
    r[i] = n == 2 * nd ? v[2 * i + 1] : l[i];
    OAR_ENFORCE(l[i] >= 0 && r[i] >= 0 && l[i] <= (int64_t{1} << 31) && r[i] <= (int64_t{1} << 31), InvalidArgument, op,
                ": paddings must be in [0, 2^31], got ", Dims(v));
  }
}

// Reads [N, C, spatial...] (or channels last) of x into batch, c and sp.
void read_act(const DenseTensor& x, int nd, bool last, const char* op, const char* arg,
              int64_t* batch, int64_t* c, int64_t* sp) {
  OAR_ENFORCE(x.rank() == nd + 2, InvalidArgument, op, ": ", arg, " must be a ", nd + 2,
              "-D tensor in ", layout_name(nd, last), " layout, got shape ", x.dims());
  *batch = x.dims()[0];
  *c = last ? x.dims()[nd + 1] : x.dims()[1];
  for (int i = 0; i < nd; ++i) sp[i] = x.dims()[last ? 1 + i : 2 + i];
}

void set_like(DenseTensor* out, const Dims& dims, DataType dt) {
  out->set_dims(dims);
  out->set_dtype(dt);
}

}  // namespace

bool parse_channels_last(const std::string& f, int nd, const char* op) {
  if (f == layout_name(nd, false)) return false;
  if (f == layout_name(nd, true)) return true;
  OAR_THROW(InvalidArgument, op, ": data_format must be '", layout_name(nd, false), "' or '",
            layout_name(nd, true), "', got '", f, "'");
}

Dims conv_act_dims(const ConvGeometry& g, int64_t c, const int64_t* sp) {
  Dims d{g.batch};
  if (!g.channels_last) d.push_back(c);
  for (int i = 0; i < g.nd; ++i) d.push_back(sp[i]);
  if (g.channels_last) d.push_back(c);
  return d;
}

// Attributes common to conv and conv_transpose; `ch` is the filter's dim 0 / dim 1.
static void conv_common(const DenseTensor& x, const DenseTensor& filter, const IntList& strides,
                        const IntList& paddings, const IntList& dilations, int64_t groups,
                        const std::string& data_format, int nd, const char* op,
                        ConvGeometry* g) {
  g->nd = nd;
  g->channels_last = parse_channels_last(data_format, nd, op);
  // convolutions (not their fused inference form) also run in bfloat16 (Note [bf16 convolution])
  OAR_ENFORCE(x.dtype() == DataType::FLOAT32 || x.dtype() == DataType::FLOAT64 ||
                  (x.dtype() == DataType::BFLOAT16 && std::string(op) != "fused_conv2d"),
              InvalidType, op, ": input must be float32, float64",
              std::string(op) != "fused_conv2d" ? " or bfloat16" : "", ", got ", dtype_name(x.dtype()));
  OAR_ENFORCE(filter.dtype() == x.dtype(), InvalidType, op, ": filter dtype ",
              dtype_name(filter.dtype()), " differs from the input dtype ", dtype_name(x.dtype()));
  OAR_ENFORCE(filter.rank() == nd + 2, InvalidArgument, op, ": filter must be a ", nd + 2,
              "-D tensor, got shape ", filter.dims());
  OAR_ENFORCE(groups >= 1, InvalidArgument, op, ": groups must be >= 1, got ", groups);
  spatial_attr(strides, nd, 1, op, "strides", g->stride);
  spatial_attr(dilations, nd, 1, op, "dilations", g->dil);
  pad_attr(paddings, nd, op, g->pad_l, g->pad_r);
  g->groups = groups;
  for (int i = 0; i < nd; ++i) {
    g->k[i] = filter.dims()[2 + i];
    OAR_ENFORCE(g->k[i] >= 1, InvalidArgument, op, ": filter spatial sizes must be positive, got ",
                filter.dims());
  }
}

ConvGeometry conv_geometry(const DenseTensor& x, const DenseTensor& filter,
                           const IntList& strides, const IntList& paddings,
                           const IntList& dilations, int64_t groups,
                           const std::string& data_format, int nd, const char* op) {
  ConvGeometry g;
  conv_common(x, filter, strides, paddings, dilations, groups, data_format, nd, op, &g);
  read_act(x, nd, g.channels_last, op, "input", &g.batch, &g.in_c, g.in);
  g.out_c = filter.dims()[0];
  OAR_ENFORCE(g.in_c % groups == 0 && g.out_c % groups == 0, InvalidArgument, op,
              ": input channels (", g.in_c, ") and filter's output channels (", g.out_c,
              ") must be divisible by groups (", groups, ")");
  OAR_ENFORCE(filter.dims()[1] * groups == g.in_c, InvalidArgument, op, ": input has ", g.in_c,
              " channels but filter ", filter.dims(), " with groups=", groups, " expects ",
              filter.dims()[1] * groups);
  for (int i = 0; i < nd; ++i) {
    const int64_t span = g.dil[i] * (g.k[i] - 1) + 1;
    OAR_ENFORCE(span <= g.in[i] + g.pad_l[i] + g.pad_r[i], InvalidArgument, op,
                ": the (dilated) kernel size ", span, " along spatial dim ", i,
                " is larger than the padded input size ", g.in[i] + g.pad_l[i] + g.pad_r[i],
                " (input shape ", x.dims(), ", filter shape ", filter.dims(), ")");
    g.out[i] = g.out_size(i);
  }
  return g;
}

ConvGeometry conv_transpose_geometry(const DenseTensor& x, const DenseTensor& filter,
                                     const IntList& strides, const IntList& paddings,
                                     const IntList& output_padding, const IntList& dilations,
                                     int64_t groups, const std::string& data_format, int nd,
                                     const char* op) {
  ConvGeometry g;
  conv_common(x, filter, strides, paddings, dilations, groups, data_format, nd, op, &g);
  read_act(x, nd, g.channels_last, op, "x", &g.batch, &g.out_c, g.out);
  OAR_ENFORCE(filter.dims()[0] == g.out_c, InvalidArgument, op, ": x has ", g.out_c,
              " channels but filter ", filter.dims(), " expects ", filter.dims()[0],
              " (filter layout [in_channels, out_channels / groups, k...])");
  OAR_ENFORCE(g.out_c % groups == 0, InvalidArgument, op, ": input channels (", g.out_c,
              ") must be divisible by groups (", groups, ")");
  g.in_c = filter.dims()[1] * groups;
  int64_t op_pad[3] = {0, 0, 0};
  if (!output_padding.empty()) {
    spatial_attr(output_padding, nd, 0, op, "output_padding", op_pad);
  }
  for (int i = 0; i < nd; ++i) {
    OAR_ENFORCE(op_pad[i] < g.stride[i], InvalidArgument, op,
                ": output_padding must be smaller than the stride, got output_padding ",
                Dims(output_padding), " with strides ", Dims(strides));
    g.in[i] = (g.out[i] - 1) * g.stride[i] - g.pad_l[i] - g.pad_r[i] +
              g.dil[i] * (g.k[i] - 1) + 1 + op_pad[i];
    OAR_ENFORCE(g.in[i] >= 1, InvalidArgument, op, ": the output size along spatial dim ", i,
                " would be ", g.in[i], " (input shape ", x.dims(), ", filter ", filter.dims(),
                ", paddings ", Dims(paddings), ")");
  }
  return g;
}

std::vector<int64_t> conv_output_padding(const Dims& x, const Dims& y, const Dims& filter,
                                         const IntList& strides, const IntList& paddings,
                                         const IntList& dilations,
                                         const std::string& data_format) {
  const int nd = x.size() - 2;
  const bool last = parse_channels_last(data_format, nd, "conv_grad");
  int64_t s[3], d[3], pl[3], pr[3];
  spatial_attr(strides, nd, 1, "conv_grad", "strides", s);
  spatial_attr(dilations, nd, 1, "conv_grad", "dilations", d);
  pad_attr(paddings, nd, "conv_grad", pl, pr);
  std::vector<int64_t> r(nd);
  for (int i = 0; i < nd; ++i) {
    const int a = last ? 1 + i : 2 + i;
    r[i] = x[a] - ((y[a] - 1) * s[i] - pl[i] - pr[i] + d[i] * (filter[2 + i] - 1) + 1);
  }
  return r;
}

static void conv_meta(const DenseTensor& input, const DenseTensor& filter, const IntList& strides,
                      const IntList& paddings, const IntList& dilations, int64_t groups,
                      const std::string& data_format, int nd, const char* op, DenseTensor* out) {
  ConvGeometry g =
      conv_geometry(input, filter, strides, paddings, dilations, groups, data_format, nd, op);
  set_like(out, conv_act_dims(g, g.out_c, g.out), input.dtype());
}

void Conv2dInferMeta(const DenseTensor& input, const DenseTensor& filter, const IntList& strides,
                     const IntList& paddings, const IntList& dilations, int64_t groups,
                     const std::string& data_format, DenseTensor* out) {
  conv_meta(input, filter, strides, paddings, dilations, groups, data_format, 2, "conv2d", out);
}

void FusedConv2dInferMeta(const DenseTensor& input, const DenseTensor& filter, const DenseTensor* bias,
                          const IntList& strides, const IntList& paddings, const IntList& dilations,
                          int64_t groups, const std::string& data_format, const std::string& activation,
                          DenseTensor* out) {
  ConvGeometry g =
      conv_geometry(input, filter, strides, paddings, dilations, groups, data_format, 2, "fused_conv2d");
  if (bias != nullptr) {
    OAR_ENFORCE(bias->numel() == g.out_c, InvalidArgument, "fused_conv2d: bias must hold one value per output ",
                "channel (", g.out_c, "), got shape ", bias->dims());
    OAR_ENFORCE(bias->dtype() == input.dtype(), InvalidType, "fused_conv2d: bias must be ",
                dtype_name(input.dtype()), " like input, got ", dtype_name(bias->dtype()));
  }
  OAR_ENFORCE(activation.empty() || activation == "relu", InvalidArgument,
              "fused_conv2d: activation must be '' or 'relu', got '", activation, "'");
  set_like(out, conv_act_dims(g, g.out_c, g.out), input.dtype());
}

void Conv3dInferMeta(const DenseTensor& input, const DenseTensor& filter, const IntList& strides,
                     const IntList& paddings, const IntList& dilations, int64_t groups,
                     const std::string& data_format, DenseTensor* out) {
  conv_meta(input, filter, strides, paddings, dilations, groups, data_format, 3, "conv3d", out);
}

void Conv2dTransposeInferMeta(const DenseTensor& x, const DenseTensor& filter,
                              const IntList& strides, const IntList& paddings,
                              const IntList& output_padding, const IntList& dilations,
                              int64_t groups, const std::string& data_format, DenseTensor* out) {
  ConvGeometry g = conv_transpose_geometry(x, filter, strides, paddings, output_padding, dilations,
                                           groups, data_format, 2, "conv2d_transpose");
  set_like(out, conv_act_dims(g, g.in_c, g.in), x.dtype());
}

void Conv3dTransposeInferMeta(const DenseTensor& x, const DenseTensor& filter,
                              const IntList& strides, const IntList& paddings,
                              const IntList& output_padding, const IntList& dilations,
                              int64_t groups, const std::string& data_format, DenseTensor* out) {
  ConvGeometry g = conv_transpose_geometry(x, filter, strides, paddings, output_padding, dilations,
                                           groups, data_format, 3, "conv3d_transpose");
  set_like(out, conv_act_dims(g, g.in_c, g.in), x.dtype());
}

static void conv_grad_filter_meta(const DenseTensor& input, const DenseTensor& filter,
                                  const DenseTensor& grad_out, const IntList& strides,
                                  const IntList& paddings, const IntList& dilations,
                                  int64_t groups, const std::string& data_format, int nd,
                                  const char* op, DenseTensor* filter_grad) {
  ConvGeometry g =
      conv_geometry(input, filter, strides, paddings, dilations, groups, data_format, nd, op);
  const Dims expect = conv_act_dims(g, g.out_c, g.out);
  OAR_ENFORCE(grad_out.dims() == expect, InvalidArgument, op, ": grad_out shape ",
              grad_out.dims(), " does not match the conv output shape ", expect);
  OAR_ENFORCE(grad_out.dtype() == input.dtype(), InvalidType, op, ": grad_out dtype ",
              dtype_name(grad_out.dtype()), " differs from the input dtype ",
              dtype_name(input.dtype()));
  set_like(filter_grad, filter.dims(), input.dtype());
}

void Conv2dGradFilterInferMeta(const DenseTensor& input, const DenseTensor& filter,
                               const DenseTensor& grad_out, const IntList& strides,
                               const IntList& paddings, const IntList& dilations, int64_t groups,
                               const std::string& data_format, DenseTensor* filter_grad) {
  conv_grad_filter_meta(input, filter, grad_out, strides, paddings, dilations, groups,
                        data_format, 2, "conv2d_grad_filter", filter_grad);
}

void Conv3dGradFilterInferMeta(const DenseTensor& input, const DenseTensor& filter,
                               const DenseTensor& grad_out, const IntList& strides,
                               const IntList& paddings, const IntList& dilations, int64_t groups,
                               const std::string& data_format, DenseTensor* filter_grad) {
  conv_grad_filter_meta(input, filter, grad_out, strides, paddings, dilations, groups,
                        data_format, 3, "conv3d_grad_filter", filter_grad);
}

// ---------------------------------------------------------------- pooling
PoolGeometry pool_geometry(const DenseTensor& x, const IntList& kernel_size,
                           const IntList& strides, const IntList& paddings, bool ceil_mode,
                           bool exclusive, bool adaptive, const std::string& data_format, int nd,
                           const char* op, Dims* out_dims) {
  PoolGeometry g;
  g.nd = nd;
  g.adaptive = adaptive;
  g.exclusive = exclusive;
  g.channels_last = parse_channels_last(data_format, nd, op);
  check_float(x, op, "x");
  read_act(x, nd, g.channels_last, op, "x", &g.batch, &g.c, g.in);
  if (adaptive) {
    spatial_attr(kernel_size, nd, 1, op, "output_size", g.out);
  } else {
    spatial_attr(kernel_size, nd, 1, op, "kernel_size", g.k);
    spatial_attr(strides, nd, 1, op, "strides", g.stride);
    int64_t pr[3] = {0, 0, 0};
    pad_attr(paddings, nd, op, g.pad_l, pr);
    for (int i = 0; i < nd; ++i) {
      OAR_ENFORCE(2 * g.pad_l[i] <= g.k[i] && 2 * pr[i] <= g.k[i], InvalidArgument, op,
                  ": paddings must be at most half the kernel size, got paddings ",
                  Dims(paddings), " with kernel_size ", Dims(kernel_size));
      const int64_t span = g.in[i] + g.pad_l[i] + pr[i];
      OAR_ENFORCE(g.k[i] <= span, InvalidArgument, op, ": kernel_size ", Dims(kernel_size),
                  " is larger than the padded input (input shape ", x.dims(), ", paddings ",
                  Dims(paddings), ")");
      g.out[i] = (span - g.k[i] + (ceil_mode ? g.stride[i] - 1 : 0)) / g.stride[i] + 1;
    }
  }
  Dims d{g.batch};
  if (!g.channels_last) d.push_back(g.c);
  for (int i = 0; i < nd; ++i) d.push_back(g.out[i]);
  if (g.channels_last) d.push_back(g.c);
  *out_dims = d;
  // Kernels index 3 spatial dims: move the nd dims to the end ([1, H, W] for 2-D).
  const int sh = 3 - nd;
  for (int i = 2; i >= 0; --i) {
    const bool real = i >= sh;
    g.in[i] = real ? g.in[i - sh] : 1;
    g.out[i] = real ? g.out[i - sh] : 1;
    g.k[i] = real ? g.k[i - sh] : 1;
    g.stride[i] = real ? g.stride[i - sh] : 1;
    g.pad_l[i] = real ? g.pad_l[i - sh] : 0;
  }
  g.nd = 3;
  return g;
}

static void avg_pool_meta(const DenseTensor& x, const IntList& kernel_size,
                          const IntList& strides, const IntList& paddings, bool ceil_mode,
                          bool exclusive, bool adaptive, const std::string& data_format, int nd,
                          const char* op, DenseTensor* out) {
  Dims d;
  pool_geometry(x, kernel_size, strides, paddings, ceil_mode, exclusive, adaptive, data_format,
                nd, op, &d);
  set_like(out, d, x.dtype());
}

void AvgPool2dInferMeta(const DenseTensor& x, const IntList& kernel_size, const IntList& strides,
                        const IntList& paddings, bool ceil_mode, bool exclusive, bool adaptive,
                        const std::string& data_format, DenseTensor* out) {
  avg_pool_meta(x, kernel_size, strides, paddings, ceil_mode, exclusive, adaptive, data_format,
                2, adaptive ? "adaptive_avg_pool2d" : "avg_pool2d", out);
}

void AvgPool3dInferMeta(const DenseTensor& x, const IntList& kernel_size, const IntList& strides,
                        const IntList& paddings, bool ceil_mode, bool exclusive, bool adaptive,
                        const std::string& data_format, DenseTensor* out) {
  avg_pool_meta(x, kernel_size, strides, paddings, ceil_mode, exclusive, adaptive, data_format,
                3, adaptive ? "adaptive_avg_pool3d" : "avg_pool3d", out);
}

void AvgPoolGradInferMeta(const DenseTensor& x, const DenseTensor& grad_out,
                          const IntList& kernel_size, const IntList& strides,
                          const IntList& paddings, bool ceil_mode, bool exclusive, bool adaptive,
                          const std::string& data_format, DenseTensor* x_grad) {
  Dims d;
  const int nd = x.rank() - 2;
  OAR_ENFORCE(nd >= 1 && nd <= 3, InvalidArgument, "avg_pool_grad: x must be 3-D to 5-D, got ",
              x.dims());
  pool_geometry(x, kernel_size, strides, paddings, ceil_mode, exclusive, adaptive, data_format,
                nd, "avg_pool_grad", &d);
  OAR_ENFORCE(grad_out.dims() == d && grad_out.dtype() == x.dtype(), InvalidArgument,
              "avg_pool_grad: grad_out shape ", grad_out.dims(), " does not match the output ", d);
  set_like(x_grad, x.dims(), x.dtype());
}

static void max_pool_meta(const DenseTensor& x, const IntList& kernel_size,
                          const IntList& strides, const IntList& paddings, bool ceil_mode,
                          bool adaptive, const std::string& data_format, int nd, const char* op,
                          DenseTensor* out, DenseTensor* mask) {
  Dims d;
  pool_geometry(x, kernel_size, strides, paddings, ceil_mode, true, adaptive, data_format, nd, op,
                &d);
  set_like(out, d, x.dtype());
  set_like(mask, d, DataType::INT32);
}

void MaxPool2dWithIndexInferMeta(const DenseTensor& x, const IntList& kernel_size,
                                 const IntList& strides, const IntList& paddings, bool ceil_mode,
                                 bool adaptive, const std::string& data_format, DenseTensor* out,
                                 DenseTensor* mask) {
  max_pool_meta(x, kernel_size, strides, paddings, ceil_mode, adaptive, data_format, 2,
                adaptive ? "adaptive_max_pool2d" : "max_pool2d", out, mask);
}

void MaxPool2dInferMeta(const DenseTensor& x, const IntList& kernel_size, const IntList& strides,
                        const IntList& paddings, bool ceil_mode, bool adaptive,
                        const std::string& data_format, DenseTensor* out) {
  Dims d;
  pool_geometry(x, kernel_size, strides, paddings, ceil_mode, true, adaptive, data_format, 2,
                adaptive ? "adaptive_max_pool2d" : "max_pool2d", &d);
  set_like(out, d, x.dtype());
}

void MaxPool3dWithIndexInferMeta(const DenseTensor& x, const IntList& kernel_size,
                                 const IntList& strides, const IntList& paddings, bool ceil_mode,
                                 bool adaptive, const std::string& data_format, DenseTensor* out,
                                 DenseTensor* mask) {
  max_pool_meta(x, kernel_size, strides, paddings, ceil_mode, adaptive, data_format, 3,
                adaptive ? "adaptive_max_pool3d" : "max_pool3d", out, mask);
}

static void check_index_operands(const DenseTensor& x, const DenseTensor& mask,
                                 const DenseTensor* vals, const std::string& data_format,
                                 const char* op) {
  const int nd = x.rank() - 2;
  OAR_ENFORCE(nd >= 1 && nd <= 3, InvalidArgument, op, ": x must be 3-D to 5-D, got ", x.dims());
  const bool last = parse_channels_last(data_format, nd, op);
  OAR_ENFORCE(mask.dtype() == DataType::INT32, InvalidType, op, ": mask must be int32, got ",
              dtype_name(mask.dtype()));
  OAR_ENFORCE(mask.rank() == x.rank() && mask.dims()[0] == x.dims()[0] &&
                  (last ? mask.dims()[nd + 1] == x.dims()[nd + 1] : mask.dims()[1] == x.dims()[1]),
              InvalidArgument, op, ": mask shape ", mask.dims(), " does not match x shape ",
              x.dims());
  check_float(x, op, "x");
  if (vals == nullptr) return;
  OAR_ENFORCE(vals->dims() == mask.dims(), InvalidArgument, op, ": grad_out shape ",
              vals->dims(), " differs from the mask shape ", mask.dims());
  OAR_ENFORCE(vals->dtype() == x.dtype(), InvalidType, op, ": dtypes differ: ",
              dtype_name(vals->dtype()), " and ", dtype_name(x.dtype()));
}

void MaxPoolIndexGradInferMeta(const DenseTensor& x, const DenseTensor& mask,
                               const DenseTensor& grad_out, const std::string& data_format,
                               DenseTensor* x_grad) {
  check_index_operands(x, mask, &grad_out, data_format, "max_pool_index_grad");
  set_like(x_grad, x.dims(), x.dtype());
}

void MaxPoolIndexGatherInferMeta(const DenseTensor& x, const DenseTensor& mask,
                                 const std::string& data_format, DenseTensor* out) {
  check_index_operands(x, mask, nullptr, data_format, "max_pool_index_gather");
  set_like(out, mask.dims(), x.dtype());
}

}  // namespace oar

// ---------------------------------------------------------------- normalizations
namespace oar {
namespace {

// scale / bias: numel `n` elements of x's dtype (any shape with that many elements).
void check_affine(const DenseTensor* t, int64_t n, const DenseTensor& x, const char* op,
                  const char* arg) {
  if (t == nullptr) return;
  OAR_ENFORCE(t->numel() == n && t->rank() >= 1, InvalidArgument, op, ": ", arg, " must have ", n,
              " elements (one per normalized channel), got shape ", t->dims());
  OAR_ENFORCE(t->dtype() == x.dtype(), InvalidType, op, ": ", arg, " dtype ",
              dtype_name(t->dtype()), " differs from x's dtype ", dtype_name(x.dtype()));
}

void set_grads(const DenseTensor& x, const DenseTensor* scale, int64_t channels,
               DenseTensor* x_grad, DenseTensor* scale_grad, DenseTensor* bias_grad) {
  x_grad->set_dims(x.dims());
  x_grad->set_dtype(x.dtype());
  const Dims pd = scale ? scale->dims() : Dims{channels};
  scale_grad->set_dims(pd);
  scale_grad->set_dtype(x.dtype());
  bias_grad->set_dims(pd);
  bias_grad->set_dtype(x.dtype());
}

void check_stats(const DenseTensor& t, const Dims& want, const DenseTensor& x, const char* op,
                 const char* arg) {
  OAR_ENFORCE(t.dims() == want && t.dtype() == x.dtype(), InvalidArgument, op, ": ", arg,
              " must have shape ", want, " and dtype ", dtype_name(x.dtype()), ", got ", t.dims(),
              " ", dtype_name(t.dtype()));
}

}  // namespace

RowNormView layer_norm_view(const DenseTensor& x, int64_t begin, const char* op) {
  check_float(x, op, "x");
  OAR_ENFORCE(x.rank() >= 1, InvalidArgument, op, ": x must have at least one dimension");
  OAR_ENFORCE(begin >= 0 && begin < x.rank(), InvalidArgument, op, ": begin_norm_axis ", begin,
              " is out of range for x of shape ", x.dims());
  RowNormView v;
  v.n = 1;
  for (int i = 0; i < begin; ++i) v.n *= x.dims()[i];
  v.k = 1;
  for (int i = begin; i < x.rank(); ++i) v.k *= x.dims()[i];
  return v;
}

RowNormView group_norm_view(const DenseTensor& x, int64_t groups, const char* op) {
  check_float(x, op, "x");
  OAR_ENFORCE(x.rank() >= 2, InvalidArgument, op,
              ": x must be [N, C, ...] with at least 2 dims, got shape ", x.dims());
  const int64_t c = x.dims()[1];
  OAR_ENFORCE(groups >= 1 && c % groups == 0, InvalidArgument, op, ": the channel count ", c,
              " must be divisible by groups (", groups, ")");
  RowNormView v;
  v.n = x.dims()[0];
  v.g = groups;
  v.k = c / groups;
  v.s = x.numel() / std::max<int64_t>(v.n * c, 1);
  if (v.n * c == 0) v.s = 1;
  for (int i = 2; i < x.rank(); ++i) {
    if (x.dims()[i] == 0) v.s = 0;
  }
  return v;
}

BatchNormView batch_norm_view(const DenseTensor& x, const std::string& f, const char* op) {
  check_float(x, op, "x");
  OAR_ENFORCE(x.rank() >= 2 && x.rank() <= 5, InvalidArgument, op,
              ": x must be 2-D to 5-D [N, C, ...], got shape ", x.dims());
  const bool first = f == "NC" || f == "NCL" || f == "NCHW" || f == "NCDHW";
  const bool last = f == "NLC" || f == "NHWC" || f == "NDHWC";
  OAR_ENFORCE(first || last, InvalidArgument, op, ": data_format must be one of NC, NCL, NCHW, "
              "NCDHW, NLC, NHWC, NDHWC, got '", f, "'");
  BatchNormView v;
  const int ca = (last && x.rank() > 2) ? x.rank() - 1 : 1;
  v.c = x.dims()[ca];
  v.n = 1;
  for (int i = 0; i < ca; ++i) v.n *= x.dims()[i];
  v.s = 1;
  for (int i = ca + 1; i < x.rank(); ++i) v.s *= x.dims()[i];
  return v;
}

void LayerNormInferMeta(const DenseTensor& x, const DenseTensor* scale, const DenseTensor* bias,
                        double epsilon, int64_t begin_norm_axis, DenseTensor* out,
                        DenseTensor* mean, DenseTensor* rstd) {
  const char* op = "layer_norm";
  const RowNormView v = layer_norm_view(x, begin_norm_axis, op);
  OAR_ENFORCE(epsilon >= 0, InvalidArgument, op, ": epsilon must be >= 0, got ", epsilon);
  check_affine(scale, v.k, x, op, "weight");
  check_affine(bias, v.k, x, op, "bias");
  set_like(out, x.dims(), x.dtype());
  Dims sd(x.dims().begin(), x.dims().begin() + begin_norm_axis);
  set_like(mean, sd, x.dtype());
  set_like(rstd, sd, x.dtype());
}

void LayerNormGradInferMeta(const DenseTensor& x, const DenseTensor* scale,
                            const DenseTensor& mean, const DenseTensor& rstd,
                            const DenseTensor& grad_out, int64_t begin_norm_axis,
                            DenseTensor* x_grad, DenseTensor* scale_grad,
                            DenseTensor* bias_grad) {
  const char* op = "layer_norm_grad";
  const RowNormView v = layer_norm_view(x, begin_norm_axis, op);
  check_affine(scale, v.k, x, op, "weight");
  const Dims sd(x.dims().begin(), x.dims().begin() + begin_norm_axis);
  check_stats(mean, sd, x, op, "mean");
  check_stats(rstd, sd, x, op, "rstd");
  check_stats(grad_out, x.dims(), x, op, "grad_out");
  set_grads(x, scale, v.k, x_grad, scale_grad, bias_grad);
}

void GroupNormInferMeta(const DenseTensor& x, const DenseTensor* scale, const DenseTensor* bias,
                        double epsilon, int64_t groups, DenseTensor* out, DenseTensor* mean,
                        DenseTensor* rstd) {
  const char* op = "group_norm";
  const RowNormView v = group_norm_view(x, groups, op);
  OAR_ENFORCE(epsilon >= 0, InvalidArgument, op, ": epsilon must be >= 0, got ", epsilon);
  check_affine(scale, v.g * v.k, x, op, "weight");
  check_affine(bias, v.g * v.k, x, op, "bias");
  set_like(out, x.dims(), x.dtype());
  set_like(mean, Dims{v.n, v.g}, x.dtype());
  set_like(rstd, Dims{v.n, v.g}, x.dtype());
}

void GroupNormGradInferMeta(const DenseTensor& x, const DenseTensor* scale,
                            const DenseTensor& mean, const DenseTensor& rstd,
                            const DenseTensor& grad_out, int64_t groups, DenseTensor* x_grad,
                            DenseTensor* scale_grad, DenseTensor* bias_grad) {
  const char* op = "group_norm_grad";
  const RowNormView v = group_norm_view(x, groups, op);
  check_affine(scale, v.g * v.k, x, op, "weight");
  check_stats(mean, Dims{v.n, v.g}, x, op, "mean");
  check_stats(rstd, Dims{v.n, v.g}, x, op, "rstd");
  check_stats(grad_out, x.dims(), x, op, "grad_out");
  set_grads(x, scale, v.g * v.k, x_grad, scale_grad, bias_grad);
}

void BatchNormInferMeta(const DenseTensor& x, const DenseTensor& running_mean,
                        const DenseTensor& running_var, const DenseTensor* scale,
                        const DenseTensor* bias, bool training, double momentum, double epsilon,
                        const std::string& data_format, bool use_global_stats, DenseTensor* out,
                        DenseTensor* mean_out, DenseTensor* variance_out,
                        DenseTensor* saved_mean, DenseTensor* saved_rstd) {
  const char* op = "batch_norm";
  const BatchNormView v = batch_norm_view(x, data_format, op);
  OAR_ENFORCE(epsilon >= 0, InvalidArgument, op, ": epsilon must be >= 0, got ", epsilon);
  OAR_ENFORCE(momentum >= 0 && momentum <= 1, InvalidArgument, op,
              ": momentum must be in [0, 1], got ", momentum);
  check_stats(running_mean, Dims{v.c}, x, op, "running_mean");
  check_stats(running_var, Dims{v.c}, x, op, "running_var");
  check_affine(scale, v.c, x, op, "weight");
  check_affine(bias, v.c, x, op, "bias");
  set_like(out, x.dims(), x.dtype());
  for (DenseTensor* t : {mean_out, variance_out, saved_mean, saved_rstd}) {
    set_like(t, Dims{v.c}, x.dtype());
  }
}

void BatchNormGradInferMeta(const DenseTensor& x, const DenseTensor* scale,
                            const DenseTensor& saved_mean, const DenseTensor& saved_rstd,
                            const DenseTensor& grad_out, bool use_global_stats,
                            const std::string& data_format, DenseTensor* x_grad,
                            DenseTensor* scale_grad, DenseTensor* bias_grad) {
  const char* op = "batch_norm_grad";
  const BatchNormView v = batch_norm_view(x, data_format, op);
  check_affine(scale, v.c, x, op, "weight");
  check_stats(saved_mean, Dims{v.c}, x, op, "saved_mean");
  check_stats(saved_rstd, Dims{v.c}, x, op, "saved_rstd");
  check_stats(grad_out, x.dims(), x, op, "grad_out");
  set_grads(x, scale, v.c, x_grad, scale_grad, bias_grad);
}

}  // namespace oar
