// Average and max pooling (2-D and 3-D, fixed or adaptive windows) and their
// gradients. Every pooling runs as 3-D with leading spatial dims of size 1. Channels
// first: one task per (n, c) plane. Channels last: one task per output position, the
// inner loop running over the contiguous channels.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "oar_generated/kernel_signatures.h"
#include "paddle_core/meta/infer_meta_cnn.h"
#include "phi_kernels/cpu/parallel.h"
#include "phi_kernels/cpu/reduce.h"

namespace oar::phi {
namespace {

struct Window {
  int64_t b[3], e[3];
  int64_t volume() const {
    int64_t v = 1;
    for (int i = 0; i < 3; ++i) v *= std::max<int64_t>(e[i] - b[i], 0);
    return v;
  }
};

// The windows of every output index along each dim, computed once per call.
struct Windows {
  std::vector<int64_t> b[3], e[3];
  explicit Windows(const PoolGeometry& g) {
    for (int i = 0; i < 3; ++i) {
      b[i].resize(g.out[i]);
      e[i].resize(g.out[i]);
      for (int64_t o = 0; o < g.out[i]; ++o) g.window(i, o, &b[i][o], &e[i][o]);
    }
  }
};

// Calls fn(out_index, window) for every output position of one plane.
template <typename F>
void for_windows(const PoolGeometry& g, const Windows& ws, F fn) {
  int64_t j = 0;
  Window w;
  for (int64_t od = 0; od < g.out[0]; ++od) {
    w.b[0] = ws.b[0][od], w.e[0] = ws.e[0][od];
    for (int64_t oh = 0; oh < g.out[1]; ++oh) {
      w.b[1] = ws.b[1][oh], w.e[1] = ws.e[1][oh];
      for (int64_t ow = 0; ow < g.out[2]; ++ow, ++j) {
        w.b[2] = ws.b[2][ow], w.e[2] = ws.e[2][ow];
        fn(j, w);
      }
    }
  }
}

// The divisor of an average window (Paddle: the clipped window when exclusive or
// adaptive, else the full kernel size).
int64_t divisor(const PoolGeometry& g, const Window& w) {
  return (g.exclusive || g.adaptive) ? w.volume() : g.k[0] * g.k[1] * g.k[2];
}

// Calls fn(offset) for each input element of the window (offset in the flattened plane).
template <typename F>
void for_elems(const PoolGeometry& g, const Window& w, F fn) {
  for (int64_t d = w.b[0]; d < w.e[0]; ++d)
    for (int64_t h = w.b[1]; h < w.e[1]; ++h) {
      const int64_t base = (d * g.in[1] + h) * g.in[2];
      for (int64_t x = w.b[2]; x < w.e[2]; ++x) fn(base + x);
    }
}

PoolGeometry geometry(const DenseTensor& x, const IntList& kernel_size, const IntList& strides,
                      const IntList& paddings, bool ceil_mode, bool exclusive, bool adaptive,
                      const std::string& data_format) {
  Dims unused;
  return pool_geometry(x, kernel_size, strides, paddings, ceil_mode, exclusive, adaptive,
                       data_format, x.rank() - 2, "pool", &unused);
}

// Average pooling of one channels-first plane.
template <typename T>
void avg_plane(const PoolGeometry& g, const Windows& ws, const T* src, T* dst) {
  const int64_t H = g.in[1], W = g.in[2], OD = g.out[0], OH = g.out[1], OW = g.out[2];
  const int64_t* wb = ws.b[2].data();
  const int64_t* we = ws.e[2].data();
  const bool clipped = g.exclusive || g.adaptive;
  const int64_t full = g.k[0] * g.k[1] * g.k[2];
  int64_t j = 0;
  for (int64_t od = 0; od < OD; ++od) {
    const int64_t db = ws.b[0][od], de = ws.e[0][od];
    for (int64_t oh = 0; oh < OH; ++oh) {
      const int64_t hb = ws.b[1][oh], he = ws.e[1][oh];
      for (int64_t ow = 0; ow < OW; ++ow, ++j) {
        T sum = 0;
        for (int64_t d = db; d < de; ++d) {
          for (int64_t h = hb; h < he; ++h) {
            const T* row = src + (d * H + h) * W;
            for (int64_t x = wb[ow]; x < we[ow]; ++x) sum += row[x];
          }
        }
        const int64_t n = clipped ? std::max<int64_t>(de - db, 0) * std::max<int64_t>(he - hb, 0) *
                                        std::max<int64_t>(we[ow] - wb[ow], 0)
                                  : full;
        dst[j] = n > 0 ? sum / static_cast<T>(n) : T(0);
      }
    }
  }
}

template <typename T>
void AvgPoolKernel(const DeviceContext&, const DenseTensor& x_in, const IntList& kernel_size,
                   const IntList& strides, const IntList& paddings, bool ceil_mode,
                   bool exclusive, bool adaptive, const std::string& data_format,
                   DenseTensor* out) {
  const PoolGeometry g =
      geometry(x_in, kernel_size, strides, paddings, ceil_mode, exclusive, adaptive, data_format);
  if (g.adaptive && !g.channels_last && g.out_numel() == 1 && g.in_numel() > 0) {
    // global average, channels first: the mean over the trailing axes (rows of H*W in vector
    // accumulators): [8, 512, 7, 7] to 1x1 31 -> 17 us at 1 thread on Zen 4, torch 30
    std::vector<int> axes(static_cast<size_t>(x_in.rank() - 2));
    for (size_t i = 0; i < axes.size(); ++i) axes[i] = static_cast<int>(i) + 2;
    sum_kernel<T, T, T>(x_in, axes, out, true);
    return;
  }
  const Windows ws(g);
  T* o = out->alloc<T>();
  if (out->numel() == 0) return;
  const DenseTensor x = contiguous(x_in);
  const T* xp = x.data<T>();
  const int64_t is = g.in_numel(), os = g.out_numel(), C = g.c;
  if (!g.channels_last) {
    parallel_for(g.batch * C, [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        const T* src = xp + p * is;
        T* dst = o + p * os;
        avg_plane(g, ws, src, dst);
      }
    }, x.numel());
    return;
  }
  parallel_for(g.batch, [&](int64_t n0, int64_t n1) {
    for (int64_t n = n0; n < n1; ++n) {
      for_windows(g, ws, [&](int64_t j, const Window& w) {
        T* dst = o + (n * os + j) * C;
        std::fill(dst, dst + C, T(0));
        for_elems(g, w, [&](int64_t i) {
          const T* src = xp + (n * is + i) * C;
#pragma omp simd
          for (int64_t c = 0; c < C; ++c) dst[c] += src[c];
        });
        const int64_t cnt = divisor(g, w);
        const T inv = cnt > 0 ? T(1) / static_cast<T>(cnt) : T(0);
#pragma omp simd
        for (int64_t c = 0; c < C; ++c) dst[c] *= inv;
      });
    }
  }, x.numel());
}

template <typename T>
void AvgPoolGradKernel(const DeviceContext&, const DenseTensor& x, const DenseTensor& grad_in,
                       const IntList& kernel_size, const IntList& strides,
                       const IntList& paddings, bool ceil_mode, bool exclusive, bool adaptive,
                       const std::string& data_format, DenseTensor* x_grad) {
  const PoolGeometry g =
      geometry(x, kernel_size, strides, paddings, ceil_mode, exclusive, adaptive, data_format);
  const Windows ws(g);
  T* dx = x_grad->alloc<T>();
  if (x_grad->numel() == 0) return;
  std::fill(dx, dx + x_grad->numel(), T(0));
  const DenseTensor grad = contiguous(grad_in);
  const T* gp = grad.data<T>();
  const int64_t is = g.in_numel(), os = g.out_numel(), C = g.c;
  if (!g.channels_last) {
    parallel_for(g.batch * C, [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        const T* src = gp + p * os;
        T* dst = dx + p * is;
        for_windows(g, ws, [&](int64_t j, const Window& w) {
          const int64_t n = divisor(g, w);
          if (n <= 0) return;
          const T v = src[j] / static_cast<T>(n);
          for_elems(g, w, [&](int64_t i) { dst[i] += v; });
        });
      }
    }, x.numel());
    return;
  }
  parallel_for(g.batch, [&](int64_t n0, int64_t n1) {
    for (int64_t n = n0; n < n1; ++n) {
      for_windows(g, ws, [&](int64_t j, const Window& w) {
        const int64_t cnt = divisor(g, w);
        if (cnt <= 0) return;
        const T inv = T(1) / static_cast<T>(cnt);
        const T* src = gp + (n * os + j) * C;
        for_elems(g, w, [&](int64_t i) {
          T* dst = dx + (n * is + i) * C;
#pragma omp simd
          for (int64_t c = 0; c < C; ++c) dst[c] += src[c] * inv;
        });
      });
    }
  }, x.numel());
}

// Max pooling of one channels-first plane (Paddle keeps the first maximum; a window
// without input elements gives 0 and mask -1).
template <typename T>
void max_plane(const PoolGeometry& g, const Windows& ws, const T* src, T* dst, int32_t* mask) {
  const int64_t H = g.in[1], W = g.in[2], OD = g.out[0], OH = g.out[1], OW = g.out[2];
  const int64_t* wb = ws.b[2].data();
  const int64_t* we = ws.e[2].data();
  int64_t j = 0;
  for (int64_t od = 0; od < OD; ++od) {
    const int64_t db = ws.b[0][od], de = ws.e[0][od];
    for (int64_t oh = 0; oh < OH; ++oh) {
      const int64_t hb = ws.b[1][oh], he = ws.e[1][oh];
      for (int64_t ow = 0; ow < OW; ++ow, ++j) {
        if (db >= de || hb >= he || wb[ow] >= we[ow]) {
          dst[j] = T(0);
          mask[j] = -1;
          continue;
        }
        int64_t arg = (db * H + hb) * W + wb[ow];
        T best = src[arg];
        for (int64_t d = db; d < de; ++d) {
          for (int64_t h = hb; h < he; ++h) {
            const int64_t base = (d * H + h) * W;
            for (int64_t x = wb[ow]; x < we[ow]; ++x) {
              const T v = src[base + x];
              const bool take = v > best;
              best = take ? v : best;
              arg = take ? base + x : arg;
            }
          }
        }
        dst[j] = best;
        mask[j] = static_cast<int32_t>(arg);
      }
    }
  }
}

template <typename T>
void MaxPoolKernel(const DeviceContext&, const DenseTensor& x_in, const IntList& kernel_size,
                   const IntList& strides, const IntList& paddings, bool ceil_mode,
                   bool adaptive, const std::string& data_format, DenseTensor* out,
                   DenseTensor* mask) {
  const PoolGeometry g =
      geometry(x_in, kernel_size, strides, paddings, ceil_mode, true, adaptive, data_format);
  const Windows ws(g);
  T* o = out->alloc<T>();
  int32_t* m = mask->alloc<int32_t>();
  if (out->numel() == 0) return;
  const DenseTensor x = contiguous(x_in);
  const T* xp = x.data<T>();
  const int64_t is = g.in_numel(), os = g.out_numel(), C = g.c;
  if (!g.channels_last) {
    parallel_for(g.batch * C, [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        const T* src = xp + p * is;
        max_plane(g, ws, src, o + p * os, m + p * os);
      }
    }, x.numel());
    return;
  }
  parallel_for(g.batch, [&](int64_t n0, int64_t n1) {
    for (int64_t n = n0; n < n1; ++n) {
      for_windows(g, ws, [&](int64_t j, const Window& w) {
        T* dst = o + (n * os + j) * C;
        int32_t* mi = m + (n * os + j) * C;
        std::fill(dst, dst + C, -std::numeric_limits<T>::infinity());
        std::fill(mi, mi + C, -1);
        for_elems(g, w, [&](int64_t i) {
          const T* src = xp + (n * is + i) * C;
          for (int64_t c = 0; c < C; ++c) {
            if (src[c] > dst[c] || mi[c] < 0) dst[c] = src[c], mi[c] = static_cast<int32_t>(i);
          }
        });
        if (w.volume() == 0) std::fill(dst, dst + C, T(0));
      });
    }
  }, x.numel());
}

// Shapes of the index ops: planes, channels, input and output spatial sizes.
struct IndexShape {
  bool last;
  int64_t n, c, is, os;
};

IndexShape index_shape(const DenseTensor& x, const DenseTensor& mask, const std::string& fmt) {
  const int nd = x.rank() - 2;
  IndexShape s;
  s.last = parse_channels_last(fmt, nd, "max_pool_index");
  s.n = x.dims()[0];
  s.c = s.last ? x.dims()[nd + 1] : x.dims()[1];
  s.is = x.numel() / std::max<int64_t>(s.n * s.c, 1);
  s.os = mask.numel() / std::max<int64_t>(s.n * s.c, 1);
  if (s.n * s.c == 0) s.is = s.os = 0;
  return s;
}

template <typename T>
void MaxPoolIndexGradKernel(const DeviceContext&, const DenseTensor& x, const DenseTensor& mask_in,
                            const DenseTensor& grad_in, const std::string& data_format,
                            DenseTensor* x_grad) {
  const IndexShape s = index_shape(x, mask_in, data_format);
  T* dx = x_grad->alloc<T>();
  if (x_grad->numel() == 0) return;
  std::fill(dx, dx + x_grad->numel(), T(0));
  const DenseTensor mask = contiguous(mask_in), grad = contiguous(grad_in);
  const int32_t* m = mask.data<int32_t>();
  const T* gp = grad.data<T>();
  parallel_for(s.n * s.c, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t n = p / s.c, c = p % s.c;
      for (int64_t j = 0; j < s.os; ++j) {
        const int64_t src = s.last ? (n * s.os + j) * s.c + c : p * s.os + j;
        const int64_t k = m[src];
        if (k < 0 || k >= s.is) continue;
        dx[s.last ? (n * s.is + k) * s.c + c : p * s.is + k] += gp[src];
      }
    }
  }, grad.numel() * 2);
}

template <typename T>
void MaxPoolIndexGatherKernel(const DeviceContext&, const DenseTensor& x_in,
                              const DenseTensor& mask_in, const std::string& data_format,
                              DenseTensor* out) {
  const IndexShape s = index_shape(x_in, mask_in, data_format);
  T* o = out->alloc<T>();
  if (out->numel() == 0) return;
  const DenseTensor mask = contiguous(mask_in), x = contiguous(x_in);
  const int32_t* m = mask.data<int32_t>();
  const T* xp = x.data<T>();
  parallel_for(s.n * s.c, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t n = p / s.c, c = p % s.c;
      for (int64_t j = 0; j < s.os; ++j) {
        const int64_t dst = s.last ? (n * s.os + j) * s.c + c : p * s.os + j;
        const int64_t k = m[dst];
        o[dst] = (k < 0 || k >= s.is) ? T(0) : xp[s.last ? (n * s.is + k) * s.c + c : p * s.is + k];
      }
    }
  }, out->numel() * 2);
}

}  // namespace
}  // namespace oar::phi

using namespace oar::phi;  // NOLINT

// One kernel serves both ranks on the CPU; the 3-D ops keep kernel names of their own, so
// a device kernel registered as avg_pool2d only ever gets 4-D tensors.
OAR_REGISTER_KERNEL(avg_pool2d, CPU, AvgPoolKernel, float, double)
OAR_REGISTER_KERNEL(avg_pool3d, CPU, AvgPoolKernel, float, double)
OAR_REGISTER_KERNEL(avg_pool_grad, CPU, AvgPoolGradKernel, float, double)
OAR_REGISTER_KERNEL(max_pool2d_with_index, CPU, MaxPoolKernel, float, double)
OAR_REGISTER_KERNEL(max_pool3d_with_index, CPU, MaxPoolKernel, float, double)
OAR_REGISTER_KERNEL(max_pool_index_grad, CPU, MaxPoolIndexGradKernel, float, double)
OAR_REGISTER_KERNEL(max_pool_index_gather, CPU, MaxPoolIndexGatherKernel, float, double)
