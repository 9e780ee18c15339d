// F.interpolate (nearest, linear, bilinear, trilinear, bicubic) and F.grid_sample,
// forward and backward, on [N, C, spatial...] contiguous layouts.
//
// Interpolation is separable: every spatial dim gets a tap table (source index and
// weight for each output index; 1 tap for nearest, 2 for linear, 4 for cubic), built
// with Paddle's coordinate rules, and the kernels sum weight products over the taps.
// The backward scatters with the same tables.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include "oar_generated/kernel_signatures.h"
#include "phi_kernels/cpu/elementwise.h"
#include "phi_kernels/cpu/scratch.h"
#include "phi_kernels/cpu/transpose.h"
#include "phi_kernels/funcs/dense_copy.h"

namespace oar::phi {
namespace {

struct Taps {
  int t = 1;                 // taps per output index
  std::vector<int64_t> idx;  // [out * t]
  std::vector<double> w;     // [out * t]
};

double cubic1(double x, double a) { return ((a + 2) * x - (a + 3)) * x * x + 1; }
double cubic2(double x, double a) { return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a; }

Taps make_taps(int64_t in, int64_t out, double scale, const std::string& mode, bool align_corners,
               int64_t align_mode) {
  Taps tp;
  double ratio;
  if (align_corners) {
    ratio = out > 1 ? static_cast<double>(in - 1) / (out - 1) : 0.0;
  } else {
    ratio = scale > 0 ? 1.0 / scale : static_cast<double>(in) / out;
  }
  if (mode == "nearest") {
    tp.t = 1;
    tp.idx.resize(out);
    tp.w.assign(out, 1.0);
    for (int64_t o = 0; o < out; ++o) {
      int64_t j = align_corners ? static_cast<int64_t>(ratio * o + 0.5)
                                : static_cast<int64_t>(ratio * o);
      tp.idx[o] = std::min(j, in - 1);
    }
  } else if (mode == "bicubic") {
    tp.t = 4;
    tp.idx.resize(out * 4);
    tp.w.resize(out * 4);
    const double A = -0.75;
    for (int64_t o = 0; o < out; ++o) {
      const double src = align_corners ? ratio * o : ratio * (o + 0.5) - 0.5;
      const int64_t f = static_cast<int64_t>(std::floor(src));
      const double t = src - f;
      const double c[4] = {cubic2(t + 1, A), cubic1(t, A), cubic1(1 - t, A), cubic2(2 - t, A)};
      for (int k = 0; k < 4; ++k) {
        tp.idx[o * 4 + k] = std::clamp<int64_t>(f - 1 + k, 0, in - 1);
        tp.w[o * 4 + k] = c[k];
      }
    }
  } else {  // linear family
    tp.t = 2;
    tp.idx.resize(out * 2);
    tp.w.resize(out * 2);
    const bool half = !align_corners && align_mode == 0;
    for (int64_t o = 0; o < out; ++o) {
      double src = half ? ratio * (o + 0.5) - 0.5 : ratio * o;
      if (src < 0) src = 0;
      int64_t i0 = static_cast<int64_t>(src);
      if (i0 > in - 1) i0 = in - 1;
      const int64_t i1 = i0 < in - 1 ? i0 + 1 : i0;
      const double l = src - i0;
      tp.idx[o * 2] = i0;
      tp.idx[o * 2 + 1] = i1;
      tp.w[o * 2] = 1.0 - l;
      tp.w[o * 2 + 1] = l;
    }
  }
  return tp;
}

// Tap tables for 3 spatial dims (missing leading dims are size 1 with one unit tap).
struct InterpPlan {
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1};
  Taps taps[3];
  int64_t planes = 0;
};

InterpPlan make_plan(const Dims& xd, const std::vector<int64_t>& out_size,
                     const std::vector<double>& scales, const std::string& mode,
                     bool align_corners, int64_t align_mode) {
  InterpPlan p;
  const int sp = xd.size() - 2;
  p.planes = xd[0] * xd[1];
  for (int d = 0; d < 3; ++d) {
    const int k = d - (3 - sp);
    if (k < 0) {
      p.taps[d].idx = {0};
      p.taps[d].w = {1.0};
      continue;
    }
    p.in[d] = xd[2 + k];
    p.out[d] = out_size[k];
    const double s = scales.empty() ? 0.0 : scales[k];
    p.taps[d] = make_taps(p.in[d], p.out[d], s, mode, align_corners, align_mode);
  }
  return p;
}

// Source rows (pointers into a plane, or offsets) and weights of one output row:
// the products of the taps of the two leading dims (at most 16).
struct RowTaps {
  int n = 0;
  int64_t off[16];
  double w[16];
};

RowTaps row_taps(const InterpPlan& p, int64_t o0, int64_t o1) {
  RowTaps r;
  const Taps &t0 = p.taps[0], &t1 = p.taps[1];
  for (int a = 0; a < t0.t; ++a) {
    for (int b = 0; b < t1.t; ++b) {
      r.off[r.n] = (t0.idx[o0 * t0.t + a] * p.in[1] + t1.idx[o1 * t1.t + b]) * p.in[2];
      r.w[r.n++] = t0.w[o0 * t0.t + a] * t1.w[o1 * t1.t + b];
    }
  }
  return r;
}

// K taps along the last dim, known at compile time so the inner loops unroll.
template <typename T, int K>
void interp_forward(const InterpPlan& p, const T* xp, T* o) {
  using M = OpMath<T>;
  const Taps& t2 = p.taps[2];
  const int64_t W = p.out[2];
  const int64_t in_plane = p.in[0] * p.in[1] * p.in[2];
  const int64_t out_plane = p.out[0] * p.out[1] * W;
  const std::vector<int64_t>& idx = t2.idx;
  const std::vector<M> w2(t2.w.begin(), t2.w.end());
  const bool gather_only = K == 1 && p.taps[0].t == 1 && p.taps[1].t == 1;  // nearest
  const int64_t rows = p.planes * p.out[0] * p.out[1];
  parallel_for(rows, [&](int64_t r0, int64_t r1) {
    std::vector<M> acc(W);
    for (int64_t row = r0; row < r1; ++row) {
      const int64_t o1 = row % p.out[1], o0 = (row / p.out[1]) % p.out[0];
      const int64_t plane = row / (p.out[0] * p.out[1]);
      const T* src = xp + plane * in_plane;
      T* dst = o + plane * out_plane + (o0 * p.out[1] + o1) * W;
      const RowTaps rt = row_taps(p, o0, o1);
      if (gather_only) {
        const T* r = src + rt.off[0];
        for (int64_t j = 0; j < W; ++j) dst[j] = r[idx[j]];
        continue;
      }
      std::fill(acc.begin(), acc.end(), M(0));
      for (int q = 0; q < rt.n; ++q) {
        const T* r = src + rt.off[q];
        const M wq = static_cast<M>(rt.w[q]);
        for (int64_t j = 0; j < W; ++j) {
          M s = 0;
          for (int k = 0; k < K; ++k) s += w2[j * K + k] * M(r[idx[j * K + k]]);
          acc[j] += wq * s;
        }
      }
      for (int64_t j = 0; j < W; ++j) dst[j] = static_cast<T>(acc[j]);
    }
  }, rows * W * K * 2);
}

// The adjoint: planes are independent (parallel over them), taps scatter-add into a
// plane accumulator in OpMath precision.
template <typename T, int K>
void interp_backward(const InterpPlan& p, const T* gp, T* o) {
  using M = OpMath<T>;
  const Taps& t2 = p.taps[2];
  const int64_t W = p.out[2];
  const int64_t in_plane = p.in[0] * p.in[1] * p.in[2];
  const int64_t out_plane = p.out[0] * p.out[1] * W;
  const std::vector<int64_t>& idx = t2.idx;
  const std::vector<M> w2(t2.w.begin(), t2.w.end());
  parallel_for(p.planes, [&](int64_t q0, int64_t q1) {
    std::vector<M> acc(in_plane);
    for (int64_t plane = q0; plane < q1; ++plane) {
      std::fill(acc.begin(), acc.end(), M(0));
      const T* src = gp + plane * out_plane;
      for (int64_t o0 = 0; o0 < p.out[0]; ++o0) {
        for (int64_t o1 = 0; o1 < p.out[1]; ++o1) {
          const T* g = src + (o0 * p.out[1] + o1) * W;
          const RowTaps rt = row_taps(p, o0, o1);
          for (int q = 0; q < rt.n; ++q) {
            M* d = acc.data() + rt.off[q];
            const M wq = static_cast<M>(rt.w[q]);
            for (int64_t j = 0; j < W; ++j) {
              const M gv = wq * M(g[j]);
              for (int k = 0; k < K; ++k) d[idx[j * K + k]] += w2[j * K + k] * gv;
            }
          }
        }
      }
      T* dst = o + plane * in_plane;
      for (int64_t i = 0; i < in_plane; ++i) dst[i] = static_cast<T>(acc[i]);
    }
  }, p.planes * out_plane * K * 4);
}

template <typename T>
void InterpKernel(const DeviceContext&, const DenseTensor& x, const std::vector<int64_t>& out_size,
                  const std::vector<double>& scales, const std::string& mode, bool align_corners,
                  int64_t align_mode, DenseTensor* out) {
  T* o = out->alloc<T>();
  if (out->numel() == 0 || x.numel() == 0) {
    std::fill(o, o + out->numel(), T(0));
    return;
  }
  const InterpPlan p = make_plan(x.dims(), out_size, scales, mode, align_corners, align_mode);
  DenseTensor c = dense_copy<T>(x);
  auto run = [&p](const auto* xp, auto* op) {
    using E = std::remove_const_t<std::remove_pointer_t<decltype(xp)>>;
    switch (p.taps[2].t) {
      case 1:
        interp_forward<E, 1>(p, xp, op);
        break;
      case 2:
        interp_forward<E, 2>(p, xp, op);
        break;
      default:
        interp_forward<E, 4>(p, xp, op);
        break;
    }
  };
  if constexpr (detail::kIsHalf<T>) {
    // 16-bit: the input widened once into float and the output rounded once (F16C for
    // float16), rather than a conversion per tap and per store: [8, 64, 32, 32] bilinear x2
    // in float16 23.0 -> 4.8 ms at 1 thread (torch 4.4).
    const int64_t n = c.numel(), m = out->numel();
    thread_local Scratch scratch;
    float* xf = scratch.get<float>(n + m, "interpolate");
    float* of = xf + n;
    const T* xp = c.data<T>();
    parallel_for(n, [&](int64_t b, int64_t e) { detail::to_floats(xp + b, xf + b, e - b); });
    run(static_cast<const float*>(xf), of);
    parallel_for(m, [&](int64_t b, int64_t e) { detail::from_floats(of + b, o + b, e - b); });
    scratch.trim();
    return;
  }
  run(static_cast<const T*>(c.data<T>()), o);
}

template <typename T>
void InterpGradKernel(const DeviceContext&, const DenseTensor& x, const DenseTensor& grad_out,
                      const std::vector<int64_t>& out_size, const std::vector<double>& scales,
                      const std::string& mode, bool align_corners, int64_t align_mode,
                      DenseTensor* out) {
  T* o = out->alloc<T>();
  const int64_t total = out->numel();
  if (total == 0 || grad_out.numel() == 0) {
    std::fill(o, o + total, T(0));
    return;
  }
  const InterpPlan p = make_plan(x.dims(), out_size, scales, mode, align_corners, align_mode);
  DenseTensor g = dense_copy<T>(grad_out);
  const T* gp = g.data<T>();
  switch (p.taps[2].t) {
    case 1: interp_backward<T, 1>(p, gp, o); break;
    case 2: interp_backward<T, 2>(p, gp, o); break;
    default: interp_backward<T, 4>(p, gp, o); break;
  }
}

// ---- grid_sample (2-D): grid[..., 0] is x (width), grid[..., 1] is y (height).

// Source coordinate of a normalized grid value, with d(source)/d(grid) in *grad.
double source_index(double g, int64_t size, const std::string& padding, bool align, double* grad) {
  double x, d;
  if (align) {
    x = (g + 1) / 2 * (size - 1);
    d = (size - 1) / 2.0;
  } else {
    x = ((g + 1) * size - 1) / 2;
    d = size / 2.0;
  }
  if (padding == "border") {
    if (x <= 0) {
      x = 0;
      d = 0;
    } else if (x >= size - 1) {
      x = static_cast<double>(size - 1);
      d = 0;
    }
  } else if (padding == "reflection") {
    // Reflect about the borders: [0, size-1] (align) or [-0.5, size-0.5].
    const double lo = align ? 0.0 : -0.5, hi = align ? size - 1.0 : size - 0.5;
    const double span = hi - lo;
    if (span <= 0) {
      x = 0;
      d = 0;
    } else {
      double v = x - lo;
      double sign = 1;
      if (v < 0) {
        v = -v;
        sign = -sign;
      }
      const double flips = std::floor(v / span);
      double extra = std::fmod(v, span);
      if (std::fmod(flips, 2.0) == 0) {  // flips may be past int64 (or NaN): no integer cast
        x = lo + extra;
      } else {
        x = hi - extra;
        sign = -sign;
      }
      d *= sign;
    }
    if (x <= 0) {
      x = 0;
      d = 0;
    } else if (x >= size - 1) {
      x = static_cast<double>(size - 1);
      d = 0;
    }
  }
  *grad = d;
  return x;
}

// Note [grid_sample by planes]: (below 8 channels; Note [grid_sample in channels-last]
// above) the taps of every output point are computed once, not once per channel (the
// top-left source position, the four bilinear weights, whether all four taps lie inside the
// plane), then each (n, c) plane is read for all its points with the plane in cache: float
// eight points at a time by four masked gathers with AVX2 (a tap outside reads as 0, as the
// bounds test per tap of the scalar form gives). Points by points, every channel read a new
// cache line per tap: [16, 64, 32, 32] with a 32 x 32 grid took 3.5 ms at 1 thread (torch 1.4).
template <typename M>
struct GridTaps {
  std::vector<int64_t> x0, y0;
  std::vector<M> w[4];  // top-left, top-right, bottom-left, bottom-right
  std::vector<uint8_t> inside;
  std::vector<int32_t> xc, yc;  // x0, y0 clamped to [-2, W] / [-2, H]: the gathers' (same bounds tests)
  explicit GridTaps(int64_t n) : x0(n), y0(n), inside(n), xc(n), yc(n) {
    for (auto& v : w) v.resize(static_cast<size_t>(n));
  }
};

// Note [grid_sample in channels-last]: with 8 or more channels an image is turned to [H * W,
// C] (plus a zero row that taps outside the plane read), each point's output is then the
// weighted sum of four contiguous rows of C values, which vectorizes over the channels
// without gathers, and the [P, C] result is turned back to [C, P]. Both turns stay in L2 for
// one image at a time, through buffered tiles at power-of-two plane sizes (transpose_blocked).
// [16, 64, 32, 32] with a 32 x 32 grid at 1 thread on Zen 4: the gathers by planes 2.6 ms,
// this 0.88 (torch 1.75); nearest 1.16 -> 0.70 (0.87).
template <typename T, typename M>
void grid_sample_channels_last(const T* xp, const GridTaps<M>& taps, bool nearest, int64_t N, int64_t C, int64_t H,
                               int64_t W, int64_t P, T* o) {
  const int64_t HW = H * W;
  parallel_for(
      N,
      [&](int64_t n0, int64_t n1) {
    static thread_local Scratch in_buf, out_buf;
    T* in = in_buf.get<T>((HW + 1) * C, "grid_sample");
    T* out = out_buf.get<T>(P * C, "grid_sample");
    const T* zero = in + HW * C;
    std::fill(in + HW * C, in + (HW + 1) * C, T(M(0)));
    for (int64_t n = n0; n < n1; ++n) {
      transpose_blocked(xp + n * C * HW, HW, C, HW, in, C);
      for (int64_t q = 0; q < P; ++q) {
        const int64_t t = n * P + q, x0 = taps.x0[t], y0 = taps.y0[t];
        T* d = out + q * C;
        if (nearest) {
          const T* r = taps.inside[t] ? in + (y0 * W + x0) * C : zero;
          std::copy(r, r + C, d);
          continue;
        }
        const T *r00, *r01, *r10, *r11;
        if (taps.inside[t]) {
          r00 = in + (y0 * W + x0) * C, r01 = r00 + C, r10 = r00 + W * C, r11 = r10 + C;
        } else {  // a tap outside reads the zero row (a NaN grid value lands here too)
          const auto row = [&](int64_t yy, int64_t xx) {
            return yy >= 0 && yy < H && xx >= 0 && xx < W ? in + (yy * W + xx) * C : zero;
          };
          r00 = row(y0, x0), r01 = row(y0, x0 + 1), r10 = row(y0 + 1, x0), r11 = row(y0 + 1, x0 + 1);
        }
        const M w0 = taps.w[0][t], w1 = taps.w[1][t], w2 = taps.w[2][t], w3 = taps.w[3][t];
        for (int64_t c = 0; c < C; ++c) {
          d[c] = static_cast<T>(M(r00[c]) * w0 + M(r01[c]) * w1 + M(r10[c]) * w2 + M(r11[c]) * w3);
        }
      }
      transpose_blocked(out, C, P, C, o + n * C * P, P);
    }
    in_buf.trim();
    out_buf.trim();
      },
      N * C * P * 8);
}

template <typename T>
void GridSampleKernel(const DeviceContext&, const DenseTensor& x, const DenseTensor& grid,
                      const std::string& mode, const std::string& padding, bool align,
                      DenseTensor* out) {
  using M = OpMath<T>;
  T* o = out->alloc<T>();
  if (out->numel() == 0) return;
  DenseTensor xc = dense_copy<T>(x), gc = dense_copy<T>(grid);
  const T* xp = xc.data<T>();
  const T* gp = gc.data<T>();
  const int64_t N = x.dims()[0], C = x.dims()[1], H = x.dims()[2], W = x.dims()[3];
  const int64_t Ho = grid.dims()[1], Wo = grid.dims()[2], P = Ho * Wo;
  const bool nearest = mode == "nearest";
  const bool offsets32 = (H + 2) * (W + 2) < (int64_t{1} << 31);
  GridTaps<M> taps(N * P);
  parallel_for(
      N * P,
      [&](int64_t b0, int64_t b1) {
    for (int64_t np = b0; np < b1; ++np) {
      double dx, dy;
      const double ix = source_index(M(gp[np * 2]), W, padding, align, &dx);
      const double iy = source_index(M(gp[np * 2 + 1]), H, padding, align, &dy);
      int64_t x0, y0;
      bool in;
      if (nearest) {
        x0 = float_to_int<int64_t>(std::nearbyint(ix)), y0 = float_to_int<int64_t>(std::nearbyint(iy));
        in = y0 >= 0 && y0 < H && x0 >= 0 && x0 < W;
      } else {
        x0 = float_to_int<int64_t>(std::floor(ix)), y0 = float_to_int<int64_t>(std::floor(iy));
        const M wx = static_cast<M>(ix - x0), wy = static_cast<M>(iy - y0);
        taps.w[0][np] = (1 - wx) * (1 - wy), taps.w[1][np] = wx * (1 - wy);
        taps.w[2][np] = (1 - wx) * wy, taps.w[3][np] = wx * wy;
        in = x0 >= 0 && x0 + 1 < W && y0 >= 0 && y0 + 1 < H;
      }
      taps.x0[np] = x0, taps.y0[np] = y0, taps.inside[np] = in;
      taps.xc[np] = static_cast<int32_t>(std::clamp<int64_t>(x0, -2, W));
      taps.yc[np] = static_cast<int32_t>(std::clamp<int64_t>(y0, -2, H));
    }
      },
      N * P * 16);
  if (C >= 8) {
    grid_sample_channels_last(xp, taps, nearest, N, C, H, W, P, o);
    return;
  }
  parallel_for(
      N * C,
      [&](int64_t b0, int64_t b1) {
    for (int64_t nc = b0; nc < b1; ++nc) {
      const int64_t base = nc / C * P;  // this n's first point
      const T* plane = xp + nc * H * W;
      T* dst = o + nc * P;
      if (nearest) {
        for (int64_t q = 0; q < P; ++q) {
          const int64_t t = base + q;
          dst[q] = taps.inside[t] ? plane[taps.y0[t] * W + taps.x0[t]] : static_cast<T>(M(0));
        }
        continue;
      }
      auto point = [&](int64_t q) {
        const int64_t t = base + q, x0 = taps.x0[t], y0 = taps.y0[t];
        M v00, v01, v10, v11;
        if (taps.inside[t]) {
          const T* s = plane + y0 * W + x0;
          v00 = M(s[0]), v01 = M(s[1]), v10 = M(s[W]), v11 = M(s[W + 1]);
        } else {  // the bounds test per tap (a NaN grid value lands here: its weights carry it)
          auto at = [&](int64_t yy, int64_t xx) -> M {
            return (yy >= 0 && yy < H && xx >= 0 && xx < W) ? M(plane[yy * W + xx]) : M(0);
          };
          v00 = at(y0, x0), v01 = at(y0, x0 + 1), v10 = at(y0 + 1, x0), v11 = at(y0 + 1, x0 + 1);
        }
        dst[q] = static_cast<T>(v00 * taps.w[0][t] + v01 * taps.w[1][t] + v10 * taps.w[2][t] + v11 * taps.w[3][t]);
      };
      int64_t q = 0;
#ifdef __AVX2__
      if constexpr (std::is_same_v<T, float>) {
        if (offsets32) {
          // each tap gathered where it lies inside (masked gathers: the others read as 0, as
          // the bounds test gives), so border points stay on vectors too
          const __m256i one = _mm256_set1_epi32(1), wv = _mm256_set1_epi32(static_cast<int32_t>(W));
          const __m256i hv = _mm256_set1_epi32(static_cast<int32_t>(H)), neg = _mm256_set1_epi32(-1);
          const __m256 zero = _mm256_setzero_ps();
          auto tap = [&](__m256i off, __m256i ok, const float* wt) {
            return _mm256_mul_ps(_mm256_mask_i32gather_ps(zero, plane, off, _mm256_castsi256_ps(ok), 4),
                                 _mm256_loadu_ps(wt));
          };
          for (; q + 8 <= P; q += 8) {
            const int64_t t = base + q;
            const __m256i x0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(taps.xc.data() + t));
            const __m256i y0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(taps.yc.data() + t));
            const __m256i x1 = _mm256_add_epi32(x0, one), y1 = _mm256_add_epi32(y0, one);
            // 0 <= v < n as n > v > -1
            const __m256i okx0 = _mm256_and_si256(_mm256_cmpgt_epi32(wv, x0), _mm256_cmpgt_epi32(x0, neg));
            const __m256i okx1 = _mm256_and_si256(_mm256_cmpgt_epi32(wv, x1), _mm256_cmpgt_epi32(x1, neg));
            const __m256i oky0 = _mm256_and_si256(_mm256_cmpgt_epi32(hv, y0), _mm256_cmpgt_epi32(y0, neg));
            const __m256i oky1 = _mm256_and_si256(_mm256_cmpgt_epi32(hv, y1), _mm256_cmpgt_epi32(y1, neg));
            const __m256i o00 = _mm256_add_epi32(_mm256_mullo_epi32(y0, wv), x0);
            const __m256i o10 = _mm256_add_epi32(o00, wv);
            __m256 acc = tap(o00, _mm256_and_si256(oky0, okx0), taps.w[0].data() + t);
            acc =
                _mm256_add_ps(acc, tap(_mm256_add_epi32(o00, one), _mm256_and_si256(oky0, okx1), taps.w[1].data() + t));
            acc = _mm256_add_ps(acc, tap(o10, _mm256_and_si256(oky1, okx0), taps.w[2].data() + t));
            acc =
                _mm256_add_ps(acc, tap(_mm256_add_epi32(o10, one), _mm256_and_si256(oky1, okx1), taps.w[3].data() + t));
            _mm256_storeu_ps(dst + q, acc);
          }
        }
      }
#endif
      for (; q < P; ++q) point(q);
    }
      },
      N * C * P * 4);
}

template <typename T>
void GridSampleGradKernel(const DeviceContext&, const DenseTensor& x, const DenseTensor& grid,
                          const DenseTensor& grad_out, const std::string& mode,
                          const std::string& padding, bool align, DenseTensor* grad_x,
                          DenseTensor* grad_grid) {
  using M = OpMath<T>;
  static_assert(std::is_same_v<M, T>, "float and double: the gradient's sums are turned back in place");
  T* gx = grad_x->alloc<T>();
  T* gg = grad_grid->alloc<T>();
  std::fill(gg, gg + grad_grid->numel(), T(0));  // nearest leaves it 0; grad_x is written whole
  if (grad_out.numel() == 0) {
    std::fill(gx, gx + grad_x->numel(), T(0));
    return;
  }
  DenseTensor xc = dense_copy<T>(x), gc = dense_copy<T>(grid), oc = dense_copy<T>(grad_out);
  const T* xp = xc.data<T>();
  const T* gp = gc.data<T>();
  const T* op = oc.data<T>();
  const int64_t N = x.dims()[0], C = x.dims()[1], H = x.dims()[2], W = x.dims()[3];
  const int64_t Ho = grid.dims()[1], Wo = grid.dims()[2], P = Ho * Wo;
  const bool nearest = mode == "nearest";
  const int64_t HW = H * W;
  // Samples scatter into their image: parallel over images only. Each image in channels-last
  // (Note [grid_sample in channels-last]): a tap's C values of x, of grad_out and of the
  // gradient it adds to are contiguous rows. Over planes every channel of every tap touched a
  // line of its own in three arrays: [16, 64, 32, 32] forward + backward 88.7 ms at 1 thread
  // on Zen 4 (torch 10.5), this 5.2 ms; 2.6 at 2 threads (torch 4.1).
  parallel_for(
      N,
      [&](int64_t n0, int64_t n1) {
    static thread_local Scratch x_buf, g_buf, acc_buf;
    T* xt = x_buf.get<T>(HW * C, "grid_sample_grad");     // x[n] as [H * W, C]
    T* gt = g_buf.get<T>(P * C, "grid_sample_grad");      // grad_out[n] as [P, C]
    M* acc = acc_buf.get<M>(HW * C, "grid_sample_grad");  // grad_x[n] as [H * W, C]
    for (int64_t n = n0; n < n1; ++n) {
      transpose_blocked(xp + n * C * HW, HW, C, HW, xt, C);
      transpose_blocked(op + n * C * P, P, C, P, gt, C);
      std::fill(acc, acc + HW * C, M(0));
      for (int64_t q = 0; q < P; ++q) {
        const int64_t np = n * P + q;
        double dxg, dyg;
        const double ix = source_index(M(gp[np * 2]), W, padding, align, &dxg);
        const double iy = source_index(M(gp[np * 2 + 1]), H, padding, align, &dyg);
        const T* g = gt + q * C;
        auto inb = [&](int64_t yy, int64_t xx) { return yy >= 0 && yy < H && xx >= 0 && xx < W; };
        if (nearest) {
          const int64_t xx = float_to_int<int64_t>(std::nearbyint(ix));
          const int64_t yy = float_to_int<int64_t>(std::nearbyint(iy));
          if (inb(yy, xx)) {
            M* a = acc + (yy * W + xx) * C;
            for (int64_t c = 0; c < C; ++c) a[c] += M(g[c]);
          }
          continue;
        }
        const int64_t x0 = float_to_int<int64_t>(std::floor(ix)), y0 = float_to_int<int64_t>(std::floor(iy));
        const M wx = static_cast<M>(ix - x0), wy = static_cast<M>(iy - y0);
        const int64_t ys[2] = {y0, y0 + 1}, xs[2] = {x0, x0 + 1};
        const M wys[2] = {1 - wy, wy}, wxs[2] = {1 - wx, wx};
        const M dwy[2] = {-1, 1}, dwx[2] = {-1, 1};
        M gix = 0, giy = 0;
        for (int a = 0; a < 2; ++a) {
          for (int b = 0; b < 2; ++b) {
            if (!inb(ys[a], xs[b])) continue;
            const int64_t at = (ys[a] * W + xs[b]) * C;
            const M w = wys[a] * wxs[b];
            const T* v = xt + at;
            M* d = acc + at;
            M dot = 0;  // sum_c x * grad_out at this tap, in vector lanes (a serial sum
                        // waited ~4 cycles a channel)
#pragma omp simd reduction(+ : dot)
            for (int64_t c = 0; c < C; ++c) {
              d[c] += w * M(g[c]);
              dot += M(v[c]) * M(g[c]);
            }
            gix += dot * wys[a] * dwx[b];
            giy += dot * dwy[a] * wxs[b];
          }
        }
        gg[np * 2] = static_cast<T>(gix * static_cast<M>(dxg));
        gg[np * 2 + 1] = static_cast<T>(giy * static_cast<M>(dyg));
      }
      transpose_blocked(acc, C, HW, C, gx + n * C * HW, HW);
    }
    x_buf.trim();
    g_buf.trim();
    acc_buf.trim();
      },
      N * P * C * 8);
}

}  // namespace
}  // namespace oar::phi

using namespace oar::phi;  // NOLINT

OAR_REGISTER_KERNEL(interp, CPU, InterpKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(interp_grad, CPU, InterpGradKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(grid_sample, CPU, GridSampleKernel, float, double)
OAR_REGISTER_KERNEL(grid_sample_grad, CPU, GridSampleGradKernel, float, double)
