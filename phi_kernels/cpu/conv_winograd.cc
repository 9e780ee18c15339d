// Winograd F(2x2, 3x3) forward convolution (funcs/conv_winograd.h). The output is cut
// into 2x2 tiles; tile t of channel c reads a 4x4 input patch d and gives
//   V = B^T d B,  M = sum_c V_c U_c  (U = G w G^T per (in, out) channel),  Y = A^T M A,
// so the 16 elementwise sums over c are 16 GEMMs [tiles x in_c] x [in_c x out_c], with
// 16 products per tile instead of 36. The transforms run vectorized over the channels:
// a chunk of images is first copied channels-last with its zero padding (Xp), V and M are
// [16][tiles][channels], and the output goes through a channels-last buffer back to NCHW
// (tiles per image row are few, 8 at 16x16, so vectorizing over tiles would not pay).
// Images are processed in chunks that keep the buffers within kChunkBytes.
#include "phi_kernels/funcs/conv_winograd.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "paddle_core/base/errors.h"
#include "paddle_core/tensor/allocator.h"
#include "phi_kernels/cpu/parallel.h"
#include "phi_kernels/funcs/sgemm.h"

namespace oar::phi {
namespace {

constexpr int64_t kChunkBytes = 8 << 20;

struct WinogradTag;
float* workspace(int slot, size_t floats) {
  return static_cast<float*>(thread_workspace<WinogradTag>(slot, floats * sizeof(float)));
}

struct Tiles {
  int64_t H, W, OH, OW, pt, pl, TH, TW, PH, PW;
  explicit Tiles(const ConvGeometry& g)
      : H(g.in[0]), W(g.in[1]), OH(g.out[0]), OW(g.out[1]), pt(g.pad_l[0]), pl(g.pad_l[1]),
        TH((g.out[0] + 1) / 2), TW((g.out[1] + 1) / 2), PH(2 * TH + 2), PW(2 * TW + 2) {}
  int64_t per_image() const { return TH * TW; }
};

// Xp[n][y][x][c] = src[n][c][y - pt][x - pl] (0 outside) for y < PH, x < PW, images [0, m).
void pad_channels_last(const Tiles& tl, int64_t m, int64_t C, const float* src, float* Xp) {
  constexpr int64_t kB = 8;  // channels per pass: 8 input rows read side by side
  const int64_t cb = (C + kB - 1) / kB;
  parallel_for(m * cb, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t n = p / cb, c0 = p % cb * kB, nc = std::min(kB, C - c0);
      const float* plane = src + (n * C + c0) * tl.H * tl.W;
      for (int64_t y = 0; y < tl.PH; ++y) {
        float* drow = Xp + (n * tl.PH + y) * tl.PW * C + c0;
        const int64_t ih = y - tl.pt;
        for (int64_t x = 0; x < tl.PW; ++x) {
          const int64_t iw = x - tl.pl;
          float* d = drow + x * C;
          if (ih < 0 || ih >= tl.H || iw < 0 || iw >= tl.W) {
            for (int64_t k = 0; k < nc; ++k) d[k] = 0.f;
            continue;
          }
          const float* s0 = plane + ih * tl.W + iw;
          for (int64_t k = 0; k < nc; ++k) d[k] = s0[k * tl.H * tl.W];
        }
      }
    }
  }, m * C * tl.PH * tl.PW);
}

// V[16][T][C] from Xp, T = m * TH * TW tiles ordered (image, tile row, tile column);
// V[xi] starts at V + xi * step.
void input_transform(const Tiles& tl, int64_t m, int64_t C, const float* Xp, float* V, int64_t step) {
  const int64_t TT = tl.per_image(), T = m * TT;
  parallel_for(T, [&](int64_t b0, int64_t b1) {
    for (int64_t t = b0; t < b1; ++t) {
      const int64_t n = t / TT, th = t % TT / tl.TW, tw = t % tl.TW;
      const float* d[4];  // the 4 patch rows, each 4 consecutive pixels of C channels
      for (int i = 0; i < 4; ++i) d[i] = Xp + ((n * tl.PH + 2 * th + i) * tl.PW + 2 * tw) * C;
      float* v = V + t * C;
  #pragma omp simd
      for (int64_t c = 0; c < C; ++c) {
        float a[4][4];  // B^T d: the rows combined
        for (int j = 0; j < 4; ++j) {
          const float d0 = d[0][j * C + c], d1 = d[1][j * C + c], d2 = d[2][j * C + c], d3 = d[3][j * C + c];
          a[0][j] = d0 - d2, a[1][j] = d1 + d2, a[2][j] = d2 - d1, a[3][j] = d1 - d3;
        }
        for (int i = 0; i < 4; ++i) {  // (B^T d) B: the columns combined
          v[(4 * i + 0) * step + c] = a[i][0] - a[i][2];
          v[(4 * i + 1) * step + c] = a[i][1] + a[i][2];
          v[(4 * i + 2) * step + c] = a[i][2] - a[i][1];
          v[(4 * i + 3) * step + c] = a[i][1] - a[i][3];
        }
      }
    }
  }, T * C * 16);
}

// Y[n][oh][ow][oc] (channels last, 2 TH x 2 TW pixels: whole tiles, so no bounds in the
// loop) = act(A^T M A + bias) from M[16][T][OC] (M[xi] at M + xi * step); bias has OC
// values (zeros for none).
template <bool kRelu>
void output_transform(const Tiles& tl, int64_t m, int64_t OC, const float* M, int64_t step, const float* bias,
                      float* Y) {
  const int64_t TT = tl.per_image(), T = m * TT, YW = 2 * tl.TW;
  parallel_for(T, [&](int64_t b0, int64_t b1) {
    for (int64_t t = b0; t < b1; ++t) {
      const int64_t n = t / TT, th = t % TT / tl.TW, tw = t % tl.TW;
      const float* q = M + t * OC;
      float* y0 = Y + ((n * 2 * tl.TH + 2 * th) * YW + 2 * tw) * OC;
      float* y1 = y0 + YW * OC;
  #pragma omp simd
      for (int64_t c = 0; c < OC; ++c) {
        float s[2][4];  // A^T M: the rows combined
        for (int j = 0; j < 4; ++j) {
          const float m0 = q[j * step + c], m1 = q[(4 + j) * step + c], m2 = q[(8 + j) * step + c],
                      m3 = q[(12 + j) * step + c];
          s[0][j] = m0 + m1 + m2, s[1][j] = m1 - m2 - m3;
        }
        float r[4];
        for (int i = 0; i < 2; ++i) {
          r[2 * i] = s[i][0] + s[i][1] + s[i][2] + bias[c];
          r[2 * i + 1] = s[i][1] - s[i][2] - s[i][3] + bias[c];
        }
        if (kRelu)
          for (float& v : r) v = v > 0.f ? v : 0.f;
        y0[c] = r[0], y0[OC + c] = r[1], y1[c] = r[2], y1[OC + c] = r[3];
      }
    }
  }, T * OC * 16);
}

// dst[n][c][oh][ow] = Y[n][oh][ow][c] for images [0, m), Y rows YW pixels wide.
void to_channels_first(const Tiles& tl, int64_t m, int64_t C, const float* Y, float* dst) {
  constexpr int64_t kB = 8;
  const int64_t cb = (C + kB - 1) / kB, YW = 2 * tl.TW, S = tl.OH * tl.OW;
  parallel_for(m * cb, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t n = p / cb, c0 = p % cb * kB, nc = std::min(kB, C - c0);
      float* d = dst + (n * C + c0) * S;
      for (int64_t oh = 0; oh < tl.OH; ++oh) {
        const float* y = Y + ((n * 2 * tl.TH + oh) * YW) * C + c0;
        for (int64_t ow = 0; ow < tl.OW; ++ow)
          for (int64_t k = 0; k < nc; ++k) d[k * S + oh * tl.OW + ow] = y[ow * C + k];
      }
    }
  }, m * S * C);
}

}  // namespace

bool conv_winograd_fwd_supported(const ConvGeometry& g) {
  if (g.nd != 2 || g.channels_last || g.groups != 1) return false;
  for (int i = 0; i < 2; ++i)
    if (g.k[i] != 3 || g.stride[i] != 1 || g.dil[i] != 1 || g.pad_l[i] > 2 || g.pad_r[i] > 2) return false;
  return g.out[0] > 0 && g.out[1] > 0 && g.in_c > 0;
}

size_t conv_winograd_filter_size(const ConvGeometry& g) { return static_cast<size_t>(16 * g.out_c * g.in_c); }

void conv_winograd_transform_filter(const ConvGeometry& g, const float* w, float* u) {
  const int64_t OC = g.out_c, C = g.in_c;
  static const float G[4][3] = {{1.f, 0.f, 0.f}, {.5f, .5f, .5f}, {.5f, -.5f, .5f}, {0.f, 0.f, 1.f}};
  // Per input channel, the 9 taps of every filter gathered as 9 rows over oc, so that
  // the transform (the same expression per value as a scalar loop) runs along oc in
  // vector registers and writes u's rows contiguously: one value at a time, a 512x512
  // filter took ~12 ms, which decided against Winograd wherever the filter is new.
  std::vector<float> k(static_cast<size_t>(9 * OC)), t(static_cast<size_t>(12 * OC));
  for (int64_t c = 0; c < C; ++c) {
    for (int64_t oc = 0; oc < OC; ++oc)
      for (int q = 0; q < 9; ++q) k[q * OC + oc] = w[(oc * C + c) * 9 + q];
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 3; ++j) {
        float* ti = t.data() + (3 * i + j) * OC;
        const float *k0 = k.data() + j * OC, *k1 = k0 + 3 * OC, *k2 = k0 + 6 * OC;
        for (int64_t oc = 0; oc < OC; ++oc) ti[oc] = G[i][0] * k0[oc] + G[i][1] * k1[oc] + G[i][2] * k2[oc];
      }
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j) {  // u[xi] is [C][OC]: the GEMM's untransposed B
        float* ui = u + ((4 * i + j) * C + c) * OC;
        const float *t0 = t.data() + 3 * i * OC, *t1 = t0 + OC, *t2 = t0 + 2 * OC;
        for (int64_t oc = 0; oc < OC; ++oc) ui[oc] = t0[oc] * G[j][0] + t1[oc] * G[j][1] + t2[oc] * G[j][2];
      }
  }
}

void conv_winograd_fwd(const ConvGeometry& g, const float* src, const float* u, float* dst, const float* bias,
                       bool relu) {
  const Tiles tl(g);
  const int64_t C = g.in_c, OC = g.out_c, TT = tl.per_image(), S = tl.OH * tl.OW;
  const int64_t per_image = 4 * (tl.PH * tl.PW * C + 16 * (C + OC) * TT + 4 * TT * OC);
  const int64_t chunk = std::clamp<int64_t>(kChunkBytes / per_image, 1, g.batch);
  float* Xp = workspace(0, static_cast<size_t>(chunk * tl.PH * tl.PW * C));
  // The 16 matrices of V and M lie a few cache lines more than a power of two apart, so
  // the transforms' 16 streams do not fall into the same cache sets (with T * C a large
  // power of two they did, and the output transform ran 4x slower).
  const int64_t sv = chunk * TT * C + 64, sm = chunk * TT * OC + 64;
  float* V = workspace(1, static_cast<size_t>(16 * sv));
  float* M = workspace(2, static_cast<size_t>(16 * sm));
  float* Y = workspace(3, static_cast<size_t>(chunk * 4 * TT * OC));
  std::vector<float> zeros;
  if (!bias) zeros.assign(static_cast<size_t>(OC), 0.f), bias = zeros.data();
  for (int64_t n0 = 0; n0 < g.batch; n0 += chunk) {
    const int64_t m = std::min(chunk, g.batch - n0), T = m * TT;
    pad_channels_last(tl, m, C, src + n0 * C * tl.H * tl.W, Xp);
    input_transform(tl, m, C, Xp, V, sv);
    auto gemms = [&](int64_t x0, int64_t x1) {
      for (int64_t xi = x0; xi < x1; ++xi)
        sgemm_rowmajor(false, false, T, OC, C, V + xi * sv, C, u + xi * C * OC, OC, M + xi * sm, OC);
    };
    // At t threads dividing 16, each thread takes 16 / t whole products (single-threaded,
    // one region for all), not 16 products each cut t ways (16 forks and joins, each
    // waiting for a woken worker: [8, 512, 7, 7] at 2 threads ran 1.55x faster than at 1,
    // not 2x).
    const int nt = omp_get_max_threads();
    if (nt > 1 && 16 % nt == 0 && !in_parallel_region()) {
      sgemm_serial_in_team();
      parallel_for(16, gemms, 16 * sgemm_cost(T, OC, C));
    } else {
      gemms(0, 16);
    }
    if (relu) output_transform<true>(tl, m, OC, M, sm, bias, Y);
    else output_transform<false>(tl, m, OC, M, sm, bias, Y);
    to_channels_first(tl, m, OC, Y, dst + n0 * OC * S);
  }
}

}  // namespace oar::phi
