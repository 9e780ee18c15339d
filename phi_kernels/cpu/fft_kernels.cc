// FFT kernels (fft.yaml) over FFTW's guru interface: one plan per call transforms every
// batch at once, over any set of axes of a contiguous tensor. Plans are made with
// FFTW_ESTIMATE (no timing runs, so planning is cheap and never touches the data) under
// one lock: FFTW's planner is not thread-safe, fftw_execute is.
#include <fftw3.h>

#include <complex>
#include <cstring>
#include <mutex>
#include <vector>

#include "oar_generated/kernel_signatures.h"
#include "paddle_core/meta/infer_meta_complex.h"
#include "phi_kernels/cpu/elementwise.h"

namespace oar::phi {
namespace {

std::mutex& planner_mutex() {
  static std::mutex m;
  return m;
}

// FFTW's single- and double-precision APIs under one name per call.
template <typename R>
struct Fftw;
template <>
struct Fftw<double> {
  using Plan = fftw_plan;
  using Dim = fftw_iodim64;
  static Plan c2c(int r, const Dim* d, int hr, const Dim* hd, std::complex<double>* in, std::complex<double>* out,
                  int sign) {
    return fftw_plan_guru64_dft(r, d, hr, hd, reinterpret_cast<fftw_complex*>(in), reinterpret_cast<fftw_complex*>(out),
                                sign, FFTW_ESTIMATE);
  }
  static Plan r2c(int r, const Dim* d, int hr, const Dim* hd, double* in, std::complex<double>* out) {
    return fftw_plan_guru64_dft_r2c(r, d, hr, hd, in, reinterpret_cast<fftw_complex*>(out), FFTW_ESTIMATE);
  }
  static Plan c2r(int r, const Dim* d, int hr, const Dim* hd, std::complex<double>* in, double* out) {
    return fftw_plan_guru64_dft_c2r(r, d, hr, hd, reinterpret_cast<fftw_complex*>(in), out, FFTW_ESTIMATE);
  }
  static void execute(Plan p) { fftw_execute(p); }
  static void destroy(Plan p) { fftw_destroy_plan(p); }
};
template <>
struct Fftw<float> {
  using Plan = fftwf_plan;
  using Dim = fftwf_iodim64;
  static Plan c2c(int r, const Dim* d, int hr, const Dim* hd, std::complex<float>* in, std::complex<float>* out,
                  int sign) {
    return fftwf_plan_guru64_dft(r, d, hr, hd, reinterpret_cast<fftwf_complex*>(in),
                                 reinterpret_cast<fftwf_complex*>(out), sign, FFTW_ESTIMATE);
  }
  static Plan r2c(int r, const Dim* d, int hr, const Dim* hd, float* in, std::complex<float>* out) {
    return fftwf_plan_guru64_dft_r2c(r, d, hr, hd, in, reinterpret_cast<fftwf_complex*>(out), FFTW_ESTIMATE);
  }
  static Plan c2r(int r, const Dim* d, int hr, const Dim* hd, std::complex<float>* in, float* out) {
    return fftwf_plan_guru64_dft_c2r(r, d, hr, hd, reinterpret_cast<fftwf_complex*>(in), out, FFTW_ESTIMATE);
  }
  static void execute(Plan p) { fftwf_execute(p); }
  static void destroy(Plan p) { fftwf_destroy_plan(p); }
};

// The transform dims (the axes, in order; `logical` gives each its logical length, the
// c2r/r2c last axis being the real one) and the batch dims (every other axis of
// non-zero extent), with the contiguous strides of the input and of the output.
template <typename Dim>
void guru_dims(const Dims& in_dims, const Dims& out_dims, const std::vector<int64_t>& axes,
               const std::vector<int64_t>& logical, std::vector<Dim>* dims, std::vector<Dim>* batch) {
  const Dims is = contiguous_strides(in_dims), os = contiguous_strides(out_dims);
  std::vector<bool> is_axis(in_dims.size(), false);
  for (size_t k = 0; k < axes.size(); ++k) {
    const int64_t a = axes[k];
    is_axis[a] = true;
    dims->push_back(Dim{logical[k], is[a], os[a]});
  }
  for (int i = 0; i < in_dims.size(); ++i) {
    if (!is_axis[i] && in_dims[i] != 1) batch->push_back(Dim{in_dims[i], is[i], os[i]});
  }
}

template <typename P, typename Make>
void run_plan(Make&& make, const char* op) {
  P plan;
  {
    std::lock_guard<std::mutex> lock(planner_mutex());
    plan = make();
  }
  OAR_ENFORCE(plan != nullptr, Internal, op, ": FFTW could not plan the transform");
  Fftw<std::conditional_t<std::is_same_v<P, fftw_plan>, double, float>>::execute(plan);
  std::lock_guard<std::mutex> lock(planner_mutex());
  Fftw<std::conditional_t<std::is_same_v<P, fftw_plan>, double, float>>::destroy(plan);
}

template <typename C>
void scale_in_place(C* p, int64_t n, double s) {
  if (s == 1.0) return;
  using R = typename C::value_type;
  const R f = static_cast<R>(s);
  parallel_for(n, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) p[i] *= f;
  });
}

int64_t transformed_size(const Dims& d, const std::vector<int64_t>& axes) {
  int64_t n = 1;
  for (int64_t a : axes) n *= d[a];
  return n;
}

template <typename T>  // T: std::complex<R>
void FftC2CKernel(const DeviceContext&, const DenseTensor& x, const std::vector<int64_t>& axes_in,
                  const std::string& normalization, bool forward, DenseTensor* out) {
  using R = typename T::value_type;
  using F = Fftw<R>;
  const auto axes = meta::fft_axes(axes_in, x.rank(), "fft_c2c");
  T* o = out->alloc<T>();
  if (out->numel() == 0) return;
  DenseTensor c = contiguous(x);
  std::vector<int64_t> logical;
  for (int64_t a : axes) logical.push_back(x.dims()[a]);
  std::vector<typename F::Dim> dims, batch;
  guru_dims(x.dims(), out->dims(), axes, logical, &dims, &batch);
  T* in = c.data<T>();
  run_plan<typename F::Plan>(
      [&] {
    return F::c2c(dims.size(), dims.data(), batch.size(), batch.data(), in, o, forward ? FFTW_FORWARD : FFTW_BACKWARD);
      },
      "fft_c2c");
  scale_in_place(o, out->numel(), meta::fft_scale(normalization, forward, transformed_size(x.dims(), axes), "fft_c2c"));
}

template <typename R>
void FftR2CKernel(const DeviceContext& ctx, const DenseTensor& x, const std::vector<int64_t>& axes_in,
                  const std::string& normalization, bool forward, bool onesided, DenseTensor* out) {
  using C = std::complex<R>;
  using F = Fftw<R>;
  const auto axes = meta::fft_axes(axes_in, x.rank(), "fft_r2c");
  if (!onesided) {  // the full spectrum: the complex transform of x + 0i
    DenseTensor xc(x.dims(), real_to_complex(x.dtype()), CPUPlace());
    xc.alloc();
    copy_into(x, &xc);
    FftC2CKernel<C>(ctx, xc, axes, normalization, forward, out);
    return;
  }
  C* o = out->alloc<C>();
  if (out->numel() == 0) return;
  DenseTensor c = contiguous(x);
  std::vector<int64_t> logical;
  for (int64_t a : axes) logical.push_back(x.dims()[a]);
  std::vector<typename F::Dim> dims, batch;
  guru_dims(x.dims(), out->dims(), axes, logical, &dims, &batch);
  R* in = c.data<R>();
  run_plan<typename F::Plan>([&] { return F::r2c(dims.size(), dims.data(), batch.size(), batch.data(), in, o); },
                             "fft_r2c");
  const int64_t n = out->numel();
  if (!forward) {  // FFTW's r2c has the forward sign; the inverse one is its conjugate
    parallel_for(n, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) o[i] = std::conj(o[i]);
    });
  }
  scale_in_place(o, n, meta::fft_scale(normalization, forward, transformed_size(x.dims(), axes), "fft_r2c"));
}

template <typename T>  // T: std::complex<R>
void FftC2RKernel(const DeviceContext&, const DenseTensor& x, const std::vector<int64_t>& axes_in,
                  const std::string& normalization, bool forward, int64_t, DenseTensor* out) {
  using R = typename T::value_type;
  using F = Fftw<R>;
  const auto axes = meta::fft_axes(axes_in, x.rank(), "fft_c2r");
  R* o = out->alloc<R>();
  if (out->numel() == 0) return;
  // FFTW's c2r overwrites its input, so it gets its own copy; it has the inverse sign,
  // and the forward one is the transform of the conjugate (the result is real).
  DenseTensor c(x.dims(), x.dtype(), CPUPlace());
  T* in = c.alloc<T>();
  copy_into(x, &c);
  if (forward) {
    parallel_for(c.numel(), [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) in[i] = std::conj(in[i]);
    });
  }
  // Several axes: the complex transform over all but the last one first (in place), then
  // the one-axis c2r, as NumPy does; a multi-axis c2r of FFTW would assume the input
  // Hermitian-symmetric along the other axes too and is undefined when it is not.
  if (axes.size() > 1) {
    const std::vector<int64_t> lead(axes.begin(), axes.end() - 1);
    std::vector<int64_t> logical;
    for (int64_t a : lead) logical.push_back(x.dims()[a]);
    std::vector<typename F::Dim> dims, batch;
    guru_dims(x.dims(), x.dims(), lead, logical, &dims, &batch);
    run_plan<typename F::Plan>(
        [&] { return F::c2c(dims.size(), dims.data(), batch.size(), batch.data(), in, in, FFTW_BACKWARD); }, "fft_c2r");
  }
  const std::vector<int64_t> last = {axes.back()};
  std::vector<typename F::Dim> dims, batch;
  guru_dims(x.dims(), out->dims(), last, {out->dims()[axes.back()]}, &dims, &batch);
  run_plan<typename F::Plan>([&] { return F::c2r(dims.size(), dims.data(), batch.size(), batch.data(), in, o); },
                             "fft_c2r");
  const double s = meta::fft_scale(normalization, forward, transformed_size(out->dims(), axes), "fft_c2r");
  if (s != 1.0) {
    const R f = static_cast<R>(s);
    parallel_for(out->numel(), [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) o[i] *= f;
    });
  }
}

}  // namespace
}  // namespace oar::phi

using namespace oar::phi;  // NOLINT: registration macros name the kernels unqualified

OAR_REGISTER_KERNEL(fft_c2c, CPU, FftC2CKernel, OAR_COMPLEX_TYPES)
OAR_REGISTER_KERNEL(fft_r2c, CPU, FftR2CKernel, float, double)
OAR_REGISTER_KERNEL(fft_c2r, CPU, FftC2RKernel, OAR_COMPLEX_TYPES)
