// batch_norm and batch_norm_grad: x as [n, c, s] (BatchNormView), statistics per channel
// over n and s. One task per channel: it reads its n runs of s contiguous values
// (channels-first) or n single values (channels-last), accumulating in double.
#include <cmath>

#include "oar_generated/kernel_signatures.h"
#include "paddle_core/meta/infer_meta_cnn.h"
#include "phi_kernels/cpu/parallel.h"

namespace oar::phi {
namespace {

template <typename T>
const T* data_or_null(const DenseTensor* t, DenseTensor* keep) {
  if (t == nullptr) return nullptr;
  *keep = contiguous(*t);
  return keep->data<T>();
}

template <typename T>
void BatchNormKernel(const DeviceContext&, const DenseTensor& x_in,
                     const DenseTensor& running_mean, const DenseTensor& running_var,
                     const DenseTensor* scale, const DenseTensor* bias, bool training,
                     double momentum, double epsilon, const std::string& data_format,
                     bool use_global_stats, DenseTensor* out, DenseTensor* mean_out,
                     DenseTensor* variance_out, DenseTensor* saved_mean,
                     DenseTensor* saved_rstd) {
  const BatchNormView v = batch_norm_view(x_in, data_format, "batch_norm");
  T* y = out->alloc<T>();
  T* mo = mean_out->alloc<T>();
  T* vo = variance_out->alloc<T>();
  T* sm = saved_mean->alloc<T>();
  T* sr = saved_rstd->alloc<T>();
  DenseTensor xk, rmk, rvk, gk, bk;
  const T* xp = data_or_null<T>(&x_in, &xk);
  const T* rm = data_or_null<T>(&running_mean, &rmk);
  const T* rv = data_or_null<T>(&running_var, &rvk);
  const T* gp = data_or_null<T>(scale, &gk);
  const T* bp = data_or_null<T>(bias, &bk);
  const bool batch_stats = training && !use_global_stats;
  const int64_t C = v.c, S = v.s, M = v.n * v.s;
  parallel_for(C, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      double mu, var;
      if (batch_stats && M > 0) {
        double sum = 0;
        for (int64_t n = 0; n < v.n; ++n) {
          const T* xr = xp + (n * C + c) * S;
#pragma omp simd reduction(+ : sum)
          for (int64_t s = 0; s < S; ++s) sum += static_cast<double>(xr[s]);
        }
        mu = sum / M;
        double sq = 0;
        for (int64_t n = 0; n < v.n; ++n) {
          const T* xr = xp + (n * C + c) * S;
#pragma omp simd reduction(+ : sq)
          for (int64_t s = 0; s < S; ++s) {
            const double d = static_cast<double>(xr[s]) - mu;
            sq += d * d;
          }
        }
        var = sq / M;
        mo[c] = static_cast<T>(momentum * rm[c] + (1.0 - momentum) * mu);
        vo[c] = static_cast<T>(momentum * rv[c] + (1.0 - momentum) * var);
      } else {
        mu = rm[c];
        var = rv[c];
        mo[c] = rm[c];
        vo[c] = rv[c];
      }
      const double rs = 1.0 / std::sqrt(var + epsilon);
      sm[c] = static_cast<T>(mu);
      sr[c] = static_cast<T>(rs);
      const T a = static_cast<T>(rs * (gp ? static_cast<double>(gp[c]) : 1.0));
      const T b = static_cast<T>((bp ? static_cast<double>(bp[c]) : 0.0) - mu * a);
      for (int64_t n = 0; n < v.n; ++n) {
        const T* xr = xp + (n * C + c) * S;
        T* yr = y + (n * C + c) * S;
#pragma omp simd
        for (int64_t s = 0; s < S; ++s) yr[s] = xr[s] * a + b;
      }
    }
  }, x_in.numel() * 3);
}

template <typename T>
void BatchNormGradKernel(const DeviceContext&, const DenseTensor& x_in, const DenseTensor* scale,
                         const DenseTensor& saved_mean, const DenseTensor& saved_rstd,
                         const DenseTensor& grad_out, bool use_global_stats,
                         const std::string& data_format, DenseTensor* x_grad,
                         DenseTensor* scale_grad, DenseTensor* bias_grad) {
  const BatchNormView v = batch_norm_view(x_in, data_format, "batch_norm_grad");
  T* dx = x_grad->alloc<T>();
  T* ds = scale_grad->alloc<T>();
  T* db = bias_grad->alloc<T>();
  DenseTensor xk, gk, mk, rk, wk;
  const T* xp = data_or_null<T>(&x_in, &xk);
  const T* gp = data_or_null<T>(&grad_out, &gk);
  const T* mp = data_or_null<T>(&saved_mean, &mk);
  const T* rp = data_or_null<T>(&saved_rstd, &rk);
  const T* wp = data_or_null<T>(scale, &wk);
  const int64_t C = v.c, S = v.s, M = v.n * v.s;
  parallel_for(C, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      const T mu = mp[c], rs = rp[c];
      double sg = 0, sgx = 0;
      for (int64_t n = 0; n < v.n; ++n) {
        const T* xr = xp + (n * C + c) * S;
        const T* gr = gp + (n * C + c) * S;
#pragma omp simd reduction(+ : sg, sgx)
        for (int64_t s = 0; s < S; ++s) {
          sg += static_cast<double>(gr[s]);
          sgx += static_cast<double>(gr[s] * (xr[s] - mu));
        }
      }
      db[c] = static_cast<T>(sg);
      ds[c] = static_cast<T>(sgx * rs);
      const T w = wp ? wp[c] : T(1);
      // global statistics: dx = g * w * rstd; batch statistics subtract the projections
      // on 1 and xhat (their means).
      const T k = w * rs;
      const T ma = use_global_stats || M == 0 ? T(0) : static_cast<T>(sg / M);
      const T mb = use_global_stats || M == 0 ? T(0) : static_cast<T>(sgx / M) * rs * rs;
      for (int64_t n = 0; n < v.n; ++n) {
        const T* xr = xp + (n * C + c) * S;
        const T* gr = gp + (n * C + c) * S;
        T* dr = dx + (n * C + c) * S;
#pragma omp simd
        for (int64_t s = 0; s < S; ++s) dr[s] = k * (gr[s] - ma - (xr[s] - mu) * mb);
      }
    }
  }, x_in.numel() * 3);
}

}  // namespace
}  // namespace oar::phi

using namespace oar::phi;  // NOLINT

OAR_REGISTER_KERNEL(batch_norm, CPU, BatchNormKernel, float, double)
OAR_REGISTER_KERNEL(batch_norm_grad, CPU, BatchNormGradKernel, float, double)
