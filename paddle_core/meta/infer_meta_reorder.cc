#include "paddle_core/meta/infer_meta_reorder.h"

#include <algorithm>

#include "paddle_core/meta/infer_meta_manipulation.h"
#include "paddle_core/tensor/checked.h"

namespace oar {

namespace {

void same_as(const DenseTensor& x, DenseTensor* out) {
  out->set_dtype(x.dtype());
  out->set_dims(x.dims());
}

void check_float(const DenseTensor& x, const char* op, const char* arg) {
  OAR_ENFORCE(is_floating(x.dtype()), InvalidType, op, ": ", arg,
              " must be a floating-point tensor, got ", dtype_name(x.dtype()));
}

}  // namespace

void FlipInferMeta(const DenseTensor& x, const IntList& axis, DenseTensor* out) {
  std::vector<bool> seen(std::max(x.rank(), 1), false);
  for (int64_t a : axis) {
    const int w = wrap_axis(a, x.rank(), "flip");
    OAR_ENFORCE(!seen[w], InvalidArgument, "flip: axis ", axis, " repeats axis ", w);
    seen[w] = true;
  }
  same_as(x, out);
}

void RollInferMeta(const DenseTensor& x, const IntList& shifts, const IntList& axis,
                   DenseTensor* out) {
  if (axis.empty()) {
    OAR_ENFORCE(shifts.size() == 1, InvalidArgument,
                "roll: shifts must have one entry when axis is None, got ", shifts);
  } else {
    OAR_ENFORCE(shifts.size() == axis.size(), InvalidArgument, "roll: shifts ", shifts,
                " and axis ", axis, " must have the same length");
    for (int64_t a : axis) wrap_axis(a, x.rank(), "roll");
  }
  same_as(x, out);
}

DenseTensor AsStridedView(const DenseTensor& x, const IntList& dims, const IntList& stride,
                          int64_t offset) {
  OAR_ENFORCE(dims.size() == stride.size(), InvalidArgument, "as_strided: shape ", dims,
              " and stride ", stride, " must have the same length");
  OAR_ENFORCE(offset >= 0, InvalidArgument, "as_strided: offset must be >= 0, got ", offset);
  int64_t last = offset;
  bool empty = false;
  for (size_t i = 0; i < dims.size(); ++i) {
    OAR_ENFORCE(dims[i] >= 0, InvalidArgument, "as_strided: shape ", dims,
                " has a negative size");
    OAR_ENFORCE(stride[i] >= 0, InvalidArgument, "as_strided: stride ", stride,
                " has a negative entry");
    if (dims[i] == 0) empty = true;
  }
  // Overflow-checked: a wrapped `last` would pass the bound below and the view would read
  // far outside x (checked.h).
  checked::numel(dims.data(), static_cast<int>(dims.size()), dims);
  bool overflow = false;
  for (size_t i = 0; i < dims.size() && !empty; ++i) {
    int64_t step = 0;
    overflow = overflow || !checked::mul(dims[i] - 1, stride[i], &step) || __builtin_add_overflow(last, step, &last);
  }
  OAR_ENFORCE(!overflow, OutOfRange, "as_strided: shape ", dims, ", stride ", stride, " and offset ", offset,
              " reach an element past 2^63 - 1, but the input has only ", x.numel(), " elements");
  OAR_ENFORCE(empty || last < x.numel(), OutOfRange, "as_strided: shape ", dims, ", stride ",
              stride, " and offset ", offset, " reach element ", last,
              " but the input has only ", x.numel(), " elements");
  DenseTensor c = contiguous(x);
  c.set_view(Dims(dims), Dims(stride), c.offset() + offset);
  return c;
}

void AsStridedGradInferMeta(const DenseTensor& x, const DenseTensor& grad_out, const IntList&,
                            const IntList&, int64_t, DenseTensor* out) {
  out->set_dtype(grad_out.dtype());
  out->set_dims(x.dims());
}

void IndexAddInferMeta(const DenseTensor& x, const DenseTensor& index, int64_t axis,
                       const DenseTensor& value, DenseTensor* out) {
  meta::check_index_dtype(index, "index_add", "index");
  OAR_ENFORCE(index.rank() == 1, InvalidArgument, "index_add: index must be 1-D, got shape ",
              index.dims());
  OAR_ENFORCE(x.rank() > 0, InvalidArgument, "index_add: x must have rank >= 1, got shape []");
  OAR_ENFORCE(value.dtype() == x.dtype(), InvalidType, "index_add: value must have the dtype of x (",
              dtype_name(x.dtype()), "), got ", dtype_name(value.dtype()));
  const int a = wrap_axis(axis, x.rank(), "index_add");
  Dims want = x.dims();
  want[a] = index.dims()[0];
  OAR_ENFORCE(value.dims() == want, InvalidArgument, "index_add: value must have shape ", want,
              " (x's shape with axis ", a, " of size len(index)), got ", value.dims());
  same_as(x, out);
}

namespace {
void check_along_axis(const DenseTensor& arr, const DenseTensor& indices, int64_t axis,
                      const char* op) {
  meta::check_index_dtype(indices, op, "indices");
  OAR_ENFORCE(arr.rank() > 0, InvalidArgument, op, ": arr must have rank >= 1, got shape []");
  OAR_ENFORCE(indices.rank() == arr.rank(), InvalidArgument, op,
              ": indices must have the rank of arr (", arr.rank(), "), got shape ",
              indices.dims());
  const int a = wrap_axis(axis, arr.rank(), op);
  for (int i = 0; i < arr.rank(); ++i) {
    OAR_ENFORCE(i == a || indices.dims()[i] <= arr.dims()[i], InvalidArgument, op,
                ": indices of shape ", indices.dims(), " do not fit arr of shape ", arr.dims(),
                " outside axis ", a);
  }
}
}  // namespace

void TakeAlongAxisInferMeta(const DenseTensor& arr, const DenseTensor& indices, int64_t axis,
                            DenseTensor* out) {
  check_along_axis(arr, indices, axis, "take_along_axis");
  out->set_dtype(arr.dtype());
  out->set_dims(indices.dims());
}

void PutAlongAxisInferMeta(const DenseTensor& arr, const DenseTensor& indices,
                           const DenseTensor& values, int64_t axis, const std::string& reduce,
                           bool, DenseTensor* out) {
  check_along_axis(arr, indices, axis, "put_along_axis");
  static const char* kModes[] = {"assign", "add", "mul", "multiply", "mean", "amin", "amax"};
  OAR_ENFORCE(std::find(std::begin(kModes), std::end(kModes), reduce) != std::end(kModes),
              InvalidArgument, "put_along_axis: reduce must be one of 'assign', 'add', 'mul', ",
              "'multiply', 'mean', 'amin', 'amax', got '", reduce, "'");
  OAR_ENFORCE(values.dims() == indices.dims(), InvalidArgument,
              "put_along_axis: values of shape ", values.dims(),
              " must have the shape of indices ", indices.dims());
  OAR_ENFORCE(values.dtype() == arr.dtype(), InvalidType,
              "put_along_axis: values must have the dtype of arr (", dtype_name(arr.dtype()),
              "), got ", dtype_name(values.dtype()));
  same_as(arr, out);
}

void ScatterNdAddInferMeta(const DenseTensor& x, const DenseTensor& index,
                           const DenseTensor& updates, DenseTensor* out) {
  meta::check_index_dtype(index, "scatter_nd_add", "index");
  OAR_ENFORCE(index.rank() >= 1, InvalidArgument,
              "scatter_nd_add: index must have rank >= 1, got shape []");
  const int64_t k = index.dims()[index.rank() - 1];
  OAR_ENFORCE(k <= x.rank(), InvalidArgument, "scatter_nd_add: index's last dim (", k,
              ") exceeds the rank of x (", x.rank(), ")");
  Dims want;
  for (int i = 0; i + 1 < index.rank(); ++i) want.push_back(index.dims()[i]);
  for (int i = static_cast<int>(k); i < x.rank(); ++i) want.push_back(x.dims()[i]);
  OAR_ENFORCE(updates.dims() == want, InvalidArgument, "scatter_nd_add: updates must have shape ",
              want, " (index.shape[:-1] + x.shape[index.shape[-1]:]), got ", updates.dims());
  OAR_ENFORCE(updates.dtype() == x.dtype(), InvalidType,
              "scatter_nd_add: updates must have the dtype of x (", dtype_name(x.dtype()),
              "), got ", dtype_name(updates.dtype()));
  same_as(x, out);
}

void TrilTriuInferMeta(const DenseTensor& x, int64_t, bool lower, DenseTensor* out) {
  OAR_ENFORCE(x.rank() >= 2, InvalidArgument, lower ? "tril" : "triu",
              ": x must have rank >= 2, got shape ", x.dims());
  same_as(x, out);
}

void DiagEmbedInferMeta(const DenseTensor& input, int64_t offset, int64_t dim1, int64_t dim2,
                        DenseTensor* out) {
  OAR_ENFORCE(input.rank() >= 1, InvalidArgument,
              "diag_embed: input must have rank >= 1, got shape []");
  const int r = input.rank() + 1;
  const int d1 = wrap_axis(dim1, r, "diag_embed"), d2 = wrap_axis(dim2, r, "diag_embed");
  OAR_ENFORCE(d1 != d2, InvalidArgument, "diag_embed: dim1 (", dim1, ") and dim2 (", dim2,
              ") must differ");
  const int64_t n = input.dims()[input.rank() - 1] + (offset < 0 ? -offset : offset);
  Dims d;
  int k = 0;
  for (int i = 0; i < r; ++i) {
    if (i == d1 || i == d2) {
      d.push_back(n);
    } else {
      d.push_back(input.dims()[k++]);
    }
  }
  out->set_dtype(input.dtype());
  out->set_dims(d);
}

void PadNdInferMeta(const DenseTensor& x, const IntList& pads, const std::string& mode, double,
                    DenseTensor* out) {
  OAR_ENFORCE(mode == "constant" || mode == "reflect" || mode == "replicate" ||
                  mode == "circular",
              InvalidArgument, "pad: mode must be 'constant', 'reflect', 'replicate' or ",
              "'circular', got '", mode, "'");
  OAR_ENFORCE(static_cast<int>(pads.size()) == 2 * x.rank(), InvalidArgument, "pad: pads ", pads,
              " must hold 2 entries per dim of x (shape ", x.dims(), ")");
  Dims d = x.dims();
  for (int i = 0; i < x.rank(); ++i) {
    const int64_t b = pads[2 * i], a = pads[2 * i + 1], n = x.dims()[i];
    OAR_ENFORCE(b >= 0 && a >= 0, InvalidArgument, "pad: paddings must be >= 0, got ", pads);
    if (b == 0 && a == 0) continue;
    if (mode == "reflect") {
      OAR_ENFORCE(b < n && a < n, InvalidArgument, "pad: reflect padding (", b, ", ", a,
                  ") must be smaller than the padded dim's size ", n, " (x shape ", x.dims(), ")");
    } else if (mode == "replicate") {
      OAR_ENFORCE(n > 0, InvalidArgument, "pad: replicate padding of an empty dim (x shape ",
                  x.dims(), ")");
    } else if (mode == "circular") {
      OAR_ENFORCE(b <= n && a <= n, InvalidArgument, "pad: circular padding (", b, ", ", a,
                  ") must not exceed the padded dim's size ", n, " (x shape ", x.dims(), ")");
    }
    // A sum that wraps int64 would give a small dim the kernel then writes far past.
    OAR_ENFORCE(!__builtin_add_overflow(n, b, &d[i]) && !__builtin_add_overflow(d[i], a, &d[i]), ResourceExhausted,
                "pad: padding ", pads, " makes dim ", i, " of x (shape ", x.dims(), ") larger than 2^63 - 1");
  }
  out->set_dtype(x.dtype());
  out->set_dims(d);
}

void PadNdGradInferMeta(const DenseTensor& x, const DenseTensor& grad_out, const IntList&,
                        const std::string&, DenseTensor* out) {
  out->set_dtype(grad_out.dtype());
  out->set_dims(x.dims());
}

namespace {
void check_conv_geometry(const IntList& kernel_sizes, const IntList& strides,
                         const IntList& paddings, const IntList& dilations, const char* op) {
  OAR_ENFORCE(kernel_sizes.size() == 2 && strides.size() == 2 && dilations.size() == 2 &&
                  paddings.size() == 4,
              InvalidArgument, op, ": kernel_sizes, strides, dilations need 2 entries and ",
              "paddings 4, got ", kernel_sizes, ", ", strides, ", ", dilations, ", ", paddings);
  for (int i = 0; i < 2; ++i) {
    OAR_ENFORCE(kernel_sizes[i] > 0, InvalidArgument, op, ": kernel_sizes must be > 0, got ",
                kernel_sizes);
    OAR_ENFORCE(strides[i] > 0, InvalidArgument, op, ": strides must be > 0, got ", strides);
    OAR_ENFORCE(dilations[i] > 0, InvalidArgument, op, ": dilations must be > 0, got ",
                dilations);
  }
  for (int64_t p : paddings) {
    OAR_ENFORCE(p >= 0, InvalidArgument, op, ": paddings must be >= 0, got ", paddings);
  }
  // Bounded so that the block arithmetic below (d * (k - 1), kh * kw, n + p0 + p1) cannot
  // wrap int64: a wrapped kernel area of 0 was a division by zero (SIGFPE).
  constexpr int64_t kMax = int64_t{1} << 31;
  for (const IntList* v : {&kernel_sizes, &strides, &dilations, &paddings}) {
    for (int64_t e : *v) {
      OAR_ENFORCE(e <= kMax, InvalidArgument, op,
                  ": kernel_sizes, strides, dilations and paddings must be at most 2^31, got ", kernel_sizes, ", ",
                  strides, ", ", dilations, ", ", paddings);
    }
  }
}
int64_t blocks_along(int64_t n, int64_t k, int64_t s, int64_t p0, int64_t p1, int64_t d) {
  return (n + p0 + p1 - (d * (k - 1) + 1)) / s + 1;
}
}  // namespace

void Im2colInferMeta(const DenseTensor& x, const IntList& kernel_sizes, const IntList& strides,
                     const IntList& paddings, const IntList& dilations, DenseTensor* out) {
  OAR_ENFORCE(x.rank() == 4, InvalidArgument, "unfold: x must be 4-D [N, C, H, W], got shape ",
              x.dims());
  check_conv_geometry(kernel_sizes, strides, paddings, dilations, "unfold");
  const int64_t oh = blocks_along(x.dims()[2], kernel_sizes[0], strides[0], paddings[0],
                                  paddings[2], dilations[0]);
  const int64_t ow = blocks_along(x.dims()[3], kernel_sizes[1], strides[1], paddings[1],
                                  paddings[3], dilations[1]);
  OAR_ENFORCE(oh > 0 && ow > 0, InvalidArgument, "unfold: the kernel ", kernel_sizes,
              " (dilations ", dilations, ") does not fit the padded input of shape ", x.dims(),
              " with paddings ", paddings);
  out->set_dtype(x.dtype());
  out->set_dims({x.dims()[0], x.dims()[1] * kernel_sizes[0] * kernel_sizes[1], oh * ow});
}

void Col2imInferMeta(const DenseTensor& x, const IntList& output_sizes,
                     const IntList& kernel_sizes, const IntList& strides,
                     const IntList& paddings, const IntList& dilations, DenseTensor* out) {
  OAR_ENFORCE(x.rank() == 3, InvalidArgument, "fold: x must be 3-D [N, C*kh*kw, L], got shape ",
              x.dims());
  OAR_ENFORCE(output_sizes.size() == 2 && output_sizes[0] > 0 && output_sizes[1] > 0 &&
                  output_sizes[0] <= (int64_t{1} << 62) && output_sizes[1] <= (int64_t{1} << 62),
              InvalidArgument, "fold: output_sizes must be 2 positive sizes (at most 2^62), got ", output_sizes);
  check_conv_geometry(kernel_sizes, strides, paddings, dilations, "fold");
  const int64_t kk = kernel_sizes[0] * kernel_sizes[1];
  OAR_ENFORCE(x.dims()[1] % kk == 0, InvalidArgument, "fold: x.shape[1] (", x.dims()[1],
              ") must be divisible by kernel_sizes[0] * kernel_sizes[1] (", kk, ")");
  const int64_t oh = blocks_along(output_sizes[0], kernel_sizes[0], strides[0], paddings[0],
                                  paddings[2], dilations[0]);
  const int64_t ow = blocks_along(output_sizes[1], kernel_sizes[1], strides[1], paddings[1],
                                  paddings[3], dilations[1]);
  int64_t blocks = 0;
  OAR_ENFORCE(oh > 0 && ow > 0 && checked::mul(oh, ow, &blocks) && blocks == x.dims()[2], InvalidArgument,
              "fold: x.shape[2] (", x.dims()[2], ") must equal the number of blocks (", oh, " * ", ow,
              ") for output_sizes ", output_sizes);
  out->set_dtype(x.dtype());
  out->set_dims({x.dims()[0], x.dims()[1] / kk, output_sizes[0], output_sizes[1]});
}

void InterpInferMeta(const DenseTensor& x, const IntList& out_size,
                     const std::vector<double>& scales, const std::string& mode, bool,
                     int64_t align_mode, DenseTensor* out) {
  check_float(x, "interpolate", "x");
  const int sp = x.rank() - 2;
  OAR_ENFORCE(sp >= 1 && sp <= 3, InvalidArgument,
              "interpolate: x must be 3-D, 4-D or 5-D (N, C, spatial...), got shape ", x.dims());
  OAR_ENFORCE(static_cast<int>(out_size.size()) == sp, InvalidArgument, "interpolate: size ",
              out_size, " must have ", sp, " entries for x of shape ", x.dims());
  OAR_ENFORCE(scales.empty() || static_cast<int>(scales.size()) == sp, InvalidArgument,
              "interpolate: scale_factor ", scales, " must have ", sp, " entries");
  const bool ok_mode = mode == "nearest" || (mode == "linear" && sp == 1) ||
                       (mode == "bilinear" && sp == 2) || (mode == "bicubic" && sp == 2) ||
                       (mode == "trilinear" && sp == 3);
  OAR_ENFORCE(ok_mode, InvalidArgument, "interpolate: mode '", mode,
              "' does not apply to x with ", sp, " spatial dims (shape ", x.dims(), ")");
  OAR_ENFORCE(align_mode == 0 || align_mode == 1, InvalidArgument,
              "interpolate: align_mode must be 0 or 1, got ", align_mode);
  Dims d = x.dims();
  for (int i = 0; i < sp; ++i) {
    OAR_ENFORCE(out_size[i] > 0, InvalidArgument, "interpolate: output size ", out_size,
                " must be positive");
    d[2 + i] = out_size[i];
  }
  out->set_dtype(x.dtype());
  out->set_dims(d);
}

void InterpGradInferMeta(const DenseTensor& x, const DenseTensor& grad_out, const IntList&,
                         const std::vector<double>&, const std::string&, bool, int64_t,
                         DenseTensor* out) {
  out->set_dtype(grad_out.dtype());
  out->set_dims(x.dims());
}

void GridSampleInferMeta(const DenseTensor& x, const DenseTensor& grid, const std::string& mode,
                         const std::string& padding_mode, bool, DenseTensor* out) {
  check_float(x, "grid_sample", "x");
  OAR_ENFORCE(x.rank() == 4, InvalidArgument, "grid_sample: x must be 4-D [N, C, H, W], got shape ",
              x.dims());
  OAR_ENFORCE(grid.rank() == 4 && grid.dims()[3] == 2 && grid.dims()[0] == x.dims()[0],
              InvalidArgument, "grid_sample: grid must have shape [N, H_out, W_out, 2] with N = ",
              x.dims()[0], ", got ", grid.dims());
  OAR_ENFORCE(grid.dtype() == x.dtype(), InvalidType, "grid_sample: grid must have the dtype of x (",
              dtype_name(x.dtype()), "), got ", dtype_name(grid.dtype()));
  OAR_ENFORCE(mode == "bilinear" || mode == "nearest", InvalidArgument,
              "grid_sample: mode must be 'bilinear' or 'nearest', got '", mode, "'");
  OAR_ENFORCE(padding_mode == "zeros" || padding_mode == "border" || padding_mode == "reflection",
              InvalidArgument, "grid_sample: padding_mode must be 'zeros', 'border' or ",
              "'reflection', got '", padding_mode, "'");
  out->set_dtype(x.dtype());
  out->set_dims({x.dims()[0], x.dims()[1], grid.dims()[1], grid.dims()[2]});
}

void GridSampleGradInferMeta(const DenseTensor& x, const DenseTensor& grid,
                             const DenseTensor& grad_out, const std::string&, const std::string&,
                             bool, DenseTensor* grad_x, DenseTensor* grad_grid) {
  grad_x->set_dtype(grad_out.dtype());
  grad_x->set_dims(x.dims());
  grad_grid->set_dtype(grad_out.dtype());
  grad_grid->set_dims(grid.dims());
}

}  // namespace oar
