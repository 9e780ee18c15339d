#include "paddle_core/meta/infer_meta_complex.h"

#include <cmath>

namespace oar {

namespace {
bool is_fft_real(DataType t) { return t == DataType::FLOAT32 || t == DataType::FLOAT64; }

void enforce_complex(const DenseTensor& x, const char* op) {
  OAR_ENFORCE(is_complex(x.dtype()), InvalidType, op, ": argument 'x' must be a complex64 or complex128 tensor, got ",
              dtype_name(x.dtype()));
}
}  // namespace

void ComplexInferMeta(const DenseTensor& real, const DenseTensor& imag, DenseTensor* out) {
  OAR_ENFORCE(is_fft_real(real.dtype()) && real.dtype() == imag.dtype(), InvalidType,
              "complex: arguments 'real' and 'imag' must be float32 or float64 tensors, got ", dtype_name(real.dtype()),
              " and ", dtype_name(imag.dtype()));
  out->set_dtype(real_to_complex(real.dtype()));
  out->set_dims(meta::broadcast_dims(real.dims(), imag.dims(), "complex"));
}

void AsComplexInferMeta(const DenseTensor& x, DenseTensor* out) {
  OAR_ENFORCE(is_fft_real(x.dtype()), InvalidType, "as_complex: argument 'x' must be a float32 or float64 tensor, got ",
              dtype_name(x.dtype()));
  OAR_ENFORCE(x.rank() >= 1 && x.dims()[x.rank() - 1] == 2, InvalidArgument,
              "as_complex: argument 'x' must have a last dimension of size 2, got shape ", x.dims());
  std::vector<int64_t> d = x.dims().vec();
  d.pop_back();
  out->set_dtype(real_to_complex(x.dtype()));
  out->set_dims(Dims(d));
}

void AsRealInferMeta(const DenseTensor& x, DenseTensor* out) {
  enforce_complex(x, "as_real");
  std::vector<int64_t> d = x.dims().vec();
  d.push_back(2);
  out->set_dtype(complex_to_real(x.dtype()));
  out->set_dims(Dims(d));
}

namespace meta {
std::vector<int64_t> fft_axes(const IntList& axes, int rank, const char* op) {
  OAR_ENFORCE(!axes.empty(), InvalidArgument, op, ": argument 'axes' must not be empty");
  std::vector<int64_t> out;
  for (int64_t a : axes) {
    OAR_ENFORCE(a >= -rank && a < rank, OutOfRange, op, ": axis ", a, " is out of range for a tensor of rank ", rank,
                " (expected [", -rank, ", ", rank, "))");
    const int64_t n = a < 0 ? a + rank : a;
    for (int64_t b : out) OAR_ENFORCE(b != n, InvalidArgument, op, ": argument 'axes' repeats axis ", a);
    out.push_back(n);
  }
  return out;
}

double fft_scale(const std::string& normalization, bool forward, int64_t n, const char* op) {
  OAR_ENFORCE(normalization == "backward" || normalization == "forward" || normalization == "ortho", InvalidArgument,
              op, ": argument 'norm' must be 'backward', 'forward' or 'ortho', got '", normalization, "'");
  if (n == 0) return 1.0;
  if (normalization == "ortho") return 1.0 / std::sqrt(static_cast<double>(n));
  const bool scaled = (normalization == "forward") == forward;  // forward+fwd or backward+inverse
  return scaled ? 1.0 / static_cast<double>(n) : 1.0;
}
}  // namespace meta

void FftC2CInferMeta(const DenseTensor& x, const IntList& axes, const std::string& normalization, bool,
                     DenseTensor* out) {
  enforce_complex(x, "fft_c2c");
  meta::fft_axes(axes, x.rank(), "fft_c2c");
  meta::fft_scale(normalization, true, 0, "fft_c2c");
  out->set_dtype(x.dtype());
  out->set_dims(x.dims());
}

void FftR2CInferMeta(const DenseTensor& x, const IntList& axes, const std::string& normalization, bool, bool onesided,
                     DenseTensor* out) {
  OAR_ENFORCE(is_fft_real(x.dtype()), InvalidType, "fft_r2c: argument 'x' must be a float32 or float64 tensor, got ",
              dtype_name(x.dtype()));
  auto ax = meta::fft_axes(axes, x.rank(), "fft_r2c");
  meta::fft_scale(normalization, true, 0, "fft_r2c");
  std::vector<int64_t> d = x.dims().vec();
  if (onesided) d[ax.back()] = d[ax.back()] / 2 + 1;
  out->set_dtype(real_to_complex(x.dtype()));
  out->set_dims(Dims(d));
}

void FftC2RInferMeta(const DenseTensor& x, const IntList& axes, const std::string& normalization, bool,
                     int64_t last_dim_size, DenseTensor* out) {
  enforce_complex(x, "fft_c2r");
  auto ax = meta::fft_axes(axes, x.rank(), "fft_c2r");
  meta::fft_scale(normalization, true, 0, "fft_c2r");
  std::vector<int64_t> d = x.dims().vec();
  const int64_t n = last_dim_size > 0 ? last_dim_size : 2 * (d[ax.back()] - 1);
  OAR_ENFORCE(n >= 1, InvalidArgument, "fft_c2r: the output length along axis ", ax.back(), " must be positive, got ",
              n, " (input length ", d[ax.back()], ", last_dim_size ", last_dim_size, ")");
  OAR_ENFORCE(n / 2 + 1 == d[ax.back()], InvalidArgument, "fft_c2r: the input length along axis ", ax.back(),
              " must be last_dim_size / 2 + 1 = ", n / 2 + 1, ", got ", d[ax.back()]);
  d[ax.back()] = n;
  out->set_dtype(complex_to_real(x.dtype()));
  out->set_dims(Dims(d));
}

}  // namespace oar
