// layer_norm and group_norm: x as rows (RowNormView in infer_meta_cnn.h), each row
// normalized by its own mean and variance, then scaled and shifted per channel. The
// forward makes two reading passes and one writing pass over a row while it is in
// cache; statistics accumulate in double. The backward computes x's gradient per row
// (one parallel pass) and the scale/bias gradients per block of channels.
#include <algorithm>
#include <cmath>
#include <mutex>
#include <vector>

#include "oar_generated/kernel_signatures.h"
#include "paddle_core/meta/infer_meta_cnn.h"
#include "phi_kernels/cpu/parallel.h"
#include "phi_kernels/cpu/vec_math.h"
#include "phi_kernels/funcs/dense_copy.h"

namespace oar::phi {
namespace {

constexpr int64_t kChannelBlock = 64;

// Mean and sum of squared deviations of a float row on explicit vectors (GCC leaves the
// double-accumulating omp simd loops scalar): float lanes, 4 accumulators per pass (each
// lane sums L / (4 kF) values, few enough for float at the row lengths it is used for),
// the partial sums and the mean in double.
inline void row_moments_f32(const float* x, int64_t L, double* mean, double* ssd) {
#if OAR_VEC
  constexpr int W = vec::kF;
  vec::F a0 = vec::set1(0.0f), a1 = a0, a2 = a0, a3 = a0;
  int64_t i = 0;
  for (; i + 4 * W <= L; i += 4 * W) {
    a0 = vec::add(a0, vec::load(x + i));
    a1 = vec::add(a1, vec::load(x + i + W));
    a2 = vec::add(a2, vec::load(x + i + 2 * W));
    a3 = vec::add(a3, vec::load(x + i + 3 * W));
  }
  double sum = vec::hsum(vec::add(vec::add(a0, a1), vec::add(a2, a3)));
  for (int64_t k = i; k < L; ++k) sum += x[k];
  const double mu = L ? sum / L : 0.0;
  const vec::F m = vec::set1(static_cast<float>(mu));
  a0 = a1 = a2 = a3 = vec::set1(0.0f);
  for (i = 0; i + 4 * W <= L; i += 4 * W) {
    const vec::F d0 = vec::sub(vec::load(x + i), m), d1 = vec::sub(vec::load(x + i + W), m);
    const vec::F d2 = vec::sub(vec::load(x + i + 2 * W), m), d3 = vec::sub(vec::load(x + i + 3 * W), m);
    a0 = vec::fmadd(d0, d0, a0);
    a1 = vec::fmadd(d1, d1, a1);
    a2 = vec::fmadd(d2, d2, a2);
    a3 = vec::fmadd(d3, d3, a3);
  }
  double sq = vec::hsum(vec::add(vec::add(a0, a1), vec::add(a2, a3)));
  for (int64_t k = i; k < L; ++k) {
    const double d = static_cast<double>(x[k]) - mu;
    sq += d * d;
  }
  *mean = mu;
  *ssd = sq;
#endif
}

template <typename T>
void row_norm_forward(const RowNormView& v, const DenseTensor& x_in, const DenseTensor* scale,
                      const DenseTensor* bias, double eps, DenseTensor* out, DenseTensor* mean,
                      DenseTensor* rstd) {
  T* y = out->alloc<T>();
  T* mo = mean->alloc<T>();
  T* ro = rstd->alloc<T>();
  const DenseTensor x = dense_copy<T>(x_in);
  const DenseTensor sc = scale ? dense_copy<T>(*scale) : DenseTensor();
  const DenseTensor bi = bias ? dense_copy<T>(*bias) : DenseTensor();
  const T* xp = x.data<T>();
  const T* gp = scale ? sc.data<T>() : nullptr;
  const T* bp = bias ? bi.data<T>() : nullptr;
  const int64_t L = v.len(), S = v.s, K = v.k;
  parallel_for(v.rows(), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const T* xr = xp + r * L;
      T* yr = y + r * L;
      double sum = 0, sq = 0, mu = 0;
      if (std::is_same_v<T, float> && OAR_VEC && L <= 16384) {  // float lanes: short rows only
        row_moments_f32(reinterpret_cast<const float*>(xr), L, &mu, &sq);
      } else {
#pragma omp simd reduction(+ : sum)
        for (int64_t i = 0; i < L; ++i) sum += static_cast<double>(xr[i]);
        mu = L ? sum / L : 0.0;
#pragma omp simd reduction(+ : sq)
        for (int64_t i = 0; i < L; ++i) {
          const double d = static_cast<double>(xr[i]) - mu;
          sq += d * d;
        }
      }
      const double rs = 1.0 / std::sqrt((L ? sq / L : 0.0) + eps);
      mo[r] = static_cast<T>(mu);
      ro[r] = static_cast<T>(rs);
      const int64_t c0 = (r % v.g) * K;
      if (S == 1) {
        const T m = static_cast<T>(mu), s = static_cast<T>(rs);
#pragma omp simd
        for (int64_t i = 0; i < L; ++i) {
          const T gm = gp ? gp[c0 + i] : T(1), bt = bp ? bp[c0 + i] : T(0);
          yr[i] = (xr[i] - m) * s * gm + bt;
        }
        continue;
      }
      for (int64_t k = 0; k < K; ++k) {
        const T a = static_cast<T>(rs) * (gp ? gp[c0 + k] : T(1));
        const T b = (bp ? bp[c0 + k] : T(0)) - static_cast<T>(mu) * a;
        const T* xs = xr + k * S;
        T* ys = yr + k * S;
#pragma omp simd
        for (int64_t s = 0; s < S; ++s) ys[s] = xs[s] * a + b;
      }
    }
  }, x.numel() * 3);
}

template <typename T>
void row_norm_backward(const RowNormView& v, const DenseTensor& x_in, const DenseTensor* scale,
                       const DenseTensor& mean_in, const DenseTensor& rstd_in,
                       const DenseTensor& g_in, DenseTensor* x_grad, DenseTensor* scale_grad,
                       DenseTensor* bias_grad) {
  T* dx = x_grad->alloc<T>();
  T* ds = scale_grad->alloc<T>();
  T* db = bias_grad->alloc<T>();
  const DenseTensor x = dense_copy<T>(x_in), g = dense_copy<T>(g_in);
  const DenseTensor mean = dense_copy<T>(mean_in), rstd = dense_copy<T>(rstd_in);
  const DenseTensor sc = scale ? dense_copy<T>(*scale) : DenseTensor();
  const T* xp = x.data<T>();
  const T* gp = g.data<T>();
  const T* mp = mean.data<T>();
  const T* rp = rstd.data<T>();
  const T* wp = scale ? sc.data<T>() : nullptr;
  const int64_t L = v.len(), S = v.s, K = v.k, C = v.g * v.k;
  // layer_norm (one group, S == 1): the scale/bias gradients are column sums, gathered
  // in the same pass into per-chunk accumulators and merged at the end.
  const bool fused_params = S == 1 && v.g == 1;
  std::mutex merge_mu;
  std::vector<T> ds_acc(fused_params ? L : 0, T(0)), db_acc(fused_params ? L : 0, T(0));
  // group_norm over spatial dims (S > 1): the per-(row, channel) sums of g and g (x - mu) that
  // dx needs are the scale/bias gradients' terms too; kept here (row r = n G + g, channel
  // g K + k at r K + k) they save the pass over x and g that summed them again.
  const bool row_params = S > 1;
  std::vector<T> chan_g(row_params ? v.rows() * K : 0), chan_gx(row_params ? v.rows() * K : 0);
  parallel_for(v.rows(), [&](int64_t r0, int64_t r1) {
    std::vector<T> as(fused_params ? L : 0, T(0)), ab(fused_params ? L : 0, T(0));
    for (int64_t r = r0; r < r1; ++r) {
      const T* xr = xp + r * L;
      const T* gr = gp + r * L;
      if (fused_params) {
        const T mu0 = mp[r], rs0 = rp[r];
        T* pa = as.data();
        T* pb = ab.data();
#pragma omp simd
        for (int64_t i = 0; i < L; ++i) {
          pa[i] += gr[i] * (xr[i] - mu0) * rs0;
          pb[i] += gr[i];
        }
      }
      T* dr = dx + r * L;
      const int64_t c0 = (r % v.g) * K;
      const T mu = mp[r], rs = rp[r];
      // sum(g * w) and sum(g * w * (x - mu)); w = 1 without scale
      T sg = 0, sgx = 0;
      if (S == 1) {
        if (wp) {
          const T* w = wp + c0;
#pragma omp simd reduction(+ : sg, sgx)
          for (int64_t i = 0; i < L; ++i) {
            const T gh = gr[i] * w[i];
            sg += gh;
            sgx += gh * (xr[i] - mu);
          }
        } else {
#pragma omp simd reduction(+ : sg, sgx)
          for (int64_t i = 0; i < L; ++i) {
            sg += gr[i];
            sgx += gr[i] * (xr[i] - mu);
          }
        }
      } else {
        for (int64_t k = 0; k < K; ++k) {
          const T w = wp ? wp[c0 + k] : T(1);
          T a = 0, b = 0;
#pragma omp simd reduction(+ : a, b)
          for (int64_t s = 0; s < S; ++s) {
            a += gr[k * S + s];
            b += gr[k * S + s] * (xr[k * S + s] - mu);
          }
          chan_g[r * K + k] = a;
          chan_gx[r * K + k] = b;
          sg += a * w;
          sgx += b * w;
        }
      }
      const T ma = L ? sg / static_cast<T>(L) : T(0);
      const T mb = L ? sgx / static_cast<T>(L) * rs * rs : T(0);
      // dx = rs * (g * w - mean(g * w) - xhat * mean(g * w * xhat))
      for (int64_t k = 0; k < (S == 1 ? 1 : K); ++k) {
        const int64_t n = S == 1 ? L : S, off = S == 1 ? 0 : k * S;
        const T* w = (wp && S == 1) ? wp + c0 : nullptr;
        const T wk = (wp && S > 1) ? wp[c0 + k] : T(1);
        if (w) {
#pragma omp simd
          for (int64_t i = 0; i < n; ++i) {
            dr[off + i] = rs * (gr[off + i] * w[i] - ma - (xr[off + i] - mu) * mb);
          }
        } else {
#pragma omp simd
          for (int64_t i = 0; i < n; ++i) {
            dr[off + i] = rs * (gr[off + i] * wk - ma - (xr[off + i] - mu) * mb);
          }
        }
      }
    }
    if (fused_params) {
      std::lock_guard<std::mutex> lock(merge_mu);
      for (int64_t i = 0; i < L; ++i) ds_acc[i] += as[i], db_acc[i] += ab[i];
    }
  }, x.numel() * 3);
  if (fused_params) {
    std::copy(ds_acc.begin(), ds_acc.end(), ds);
    std::copy(db_acc.begin(), db_acc.end(), db);
    return;
  }
  if (row_params) {  // ds[c] = sum over n of rstd * sum g (x - mu), db[c] = sum over n of sum g
    for (int64_t c = 0; c < C; ++c) {
      const int64_t gi = c / K, k = c % K;
      T a = 0, b = 0;
      for (int64_t n = 0; n < v.n; ++n) {
        const int64_t r = n * v.g + gi;
        a += chan_gx[r * K + k] * rp[r];
        b += chan_g[r * K + k];
      }
      ds[c] = a;
      db[c] = b;
    }
    return;
  }
  // scale / bias gradients: channel c = g * K + k sums over samples n the elements
  // k * S + s of row n * G + g. Blocks of channels run in parallel.
  const int64_t nb = (C + kChannelBlock - 1) / kChannelBlock;
  parallel_for(nb, [&](int64_t b0, int64_t b1) {
    T acc_s[kChannelBlock], acc_b[kChannelBlock];
    int64_t group[kChannelBlock];
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t c0 = b * kChannelBlock, c1 = std::min(C, c0 + kChannelBlock), nc = c1 - c0;
      std::fill(acc_s, acc_s + nc, T(0));
      std::fill(acc_b, acc_b + nc, T(0));
      for (int64_t c = c0; c < c1; ++c) group[c - c0] = c / K;
      for (int64_t n = 0; n < v.n; ++n) {
        if (S == 1) {  // element of channel c in sample n: n * C + c (contiguous block)
          const T* xs = xp + n * C + c0;
          const T* gs = gp + n * C + c0;
          if (v.g == 1) {
            const T mu = mp[n], rs = rp[n];
#pragma omp simd
            for (int64_t j = 0; j < nc; ++j) {
              acc_s[j] += gs[j] * (xs[j] - mu) * rs;
              acc_b[j] += gs[j];
            }
          } else {
            for (int64_t j = 0; j < nc; ++j) {
              const int64_t r = n * v.g + group[j];
              acc_s[j] += gs[j] * (xs[j] - mp[r]) * rp[r];
              acc_b[j] += gs[j];
            }
          }
          continue;
        }
        for (int64_t j = 0; j < nc; ++j) {
          const int64_t c = c0 + j, r = n * v.g + group[j];
          const int64_t off = r * L + (c - group[j] * K) * S;
          const T mu = mp[r], rs = rp[r];
          T a = 0, bb = 0;
#pragma omp simd reduction(+ : a, bb)
          for (int64_t s = 0; s < S; ++s) {
            a += gp[off + s] * (xp[off + s] - mu);
            bb += gp[off + s];
          }
          acc_s[j] += a * rs;
          acc_b[j] += bb;
        }
      }
      for (int64_t j = 0; j < nc; ++j) {
        ds[c0 + j] = acc_s[j];
        db[c0 + j] = acc_b[j];
      }
    }
  }, x.numel() * 2);
}

template <typename T>
void LayerNormKernel(const DeviceContext&, const DenseTensor& x, const DenseTensor* scale,
                     const DenseTensor* bias, double epsilon, int64_t begin_norm_axis,
                     DenseTensor* out, DenseTensor* mean, DenseTensor* rstd) {
  row_norm_forward<T>(layer_norm_view(x, begin_norm_axis, "layer_norm"), x, scale, bias, epsilon,
                      out, mean, rstd);
}

template <typename T>
void LayerNormGradKernel(const DeviceContext&, const DenseTensor& x, const DenseTensor* scale,
                         const DenseTensor& mean, const DenseTensor& rstd,
                         const DenseTensor& grad_out, int64_t begin_norm_axis,
                         DenseTensor* x_grad, DenseTensor* scale_grad, DenseTensor* bias_grad) {
  row_norm_backward<T>(layer_norm_view(x, begin_norm_axis, "layer_norm_grad"), x, scale, mean,
                       rstd, grad_out, x_grad, scale_grad, bias_grad);
}

template <typename T>
void GroupNormKernel(const DeviceContext&, const DenseTensor& x, const DenseTensor* scale,
                     const DenseTensor* bias, double epsilon, int64_t groups, DenseTensor* out,
                     DenseTensor* mean, DenseTensor* rstd) {
  row_norm_forward<T>(group_norm_view(x, groups, "group_norm"), x, scale, bias, epsilon, out,
                      mean, rstd);
}

template <typename T>
void GroupNormGradKernel(const DeviceContext&, const DenseTensor& x, const DenseTensor* scale,
                         const DenseTensor& mean, const DenseTensor& rstd,
                         const DenseTensor& grad_out, int64_t groups, DenseTensor* x_grad,
                         DenseTensor* scale_grad, DenseTensor* bias_grad) {
  row_norm_backward<T>(group_norm_view(x, groups, "group_norm_grad"), x, scale, mean, rstd,
                       grad_out, x_grad, scale_grad, bias_grad);
}

}  // namespace
}  // namespace oar::phi

using namespace oar::phi;  // NOLINT

OAR_REGISTER_KERNEL(layer_norm, CPU, LayerNormKernel, float, double)
OAR_REGISTER_KERNEL(layer_norm_grad, CPU, LayerNormGradKernel, float, double)
OAR_REGISTER_KERNEL(group_norm, CPU, GroupNormKernel, float, double)
OAR_REGISTER_KERNEL(group_norm_grad, CPU, GroupNormGradKernel, float, double)
