// Direct float32 convolutions for small filters (funcs/conv_direct.h): a register tile of
// outputs accumulates over every tap (c, kh, kw) and is written once, bias and relu
// applied, straight into NCHW. Padded images are first copied into a per-thread
// workspace with their zero border, so the tap loops have no bounds checks.
#include "phi_kernels/funcs/conv_direct.h"

#include <algorithm>
#include <cstring>
#include <vector>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define OAR_CONV_DIRECT 1
#endif

#include "paddle_core/base/errors.h"
#include "paddle_core/tensor/allocator.h"
#include "phi_kernels/cpu/parallel.h"

namespace oar::phi {
namespace {

bool plain_2d(const ConvGeometry& g) { return g.nd == 2 && !g.channels_last && g.groups == 1; }

int64_t taps(const ConvGeometry& g) { return g.in_c * g.k[0] * g.k[1]; }

#if OAR_CONV_DIRECT

struct DirectConvTag;
float* workspace(int slot, size_t floats) {
  return static_cast<float*>(thread_workspace<DirectConvTag>(slot, floats * sizeof(float)));
}

// An image's planes with their padding: Hp x Wp each, the input at (pad_l[0], pad_l[1]).
struct Padded {
  int64_t C, H, W, Hp, Wp, pt, pl;
  bool any;
  explicit Padded(const ConvGeometry& g)
      : C(g.in_c), H(g.in[0]), W(g.in[1]), Hp(g.in[0] + g.pad_l[0] + g.pad_r[0]),
        Wp(g.in[1] + g.pad_l[1] + g.pad_r[1]), pt(g.pad_l[0]), pl(g.pad_l[1]),
        any(g.pad_l[0] || g.pad_r[0] || g.pad_l[1] || g.pad_r[1]) {}

  // Image n of src, padded into this thread's workspace if it has a border.
  const float* image(const float* src, int64_t n) const {
    const float* img = src + n * C * H * W;
    if (!any) return img;
    float* xp = workspace(1, static_cast<size_t>(C * Hp * Wp));
    for (int64_t c = 0; c < C; ++c) {
      float* plane = xp + c * Hp * Wp;
      std::memset(plane, 0, pt * Wp * sizeof(float));
      for (int64_t y = 0; y < H; ++y) {
        float* row = plane + (pt + y) * Wp;
        std::memset(row, 0, pl * sizeof(float));
        std::memcpy(row + pl, img + (c * H + y) * W, W * sizeof(float));
        std::memset(row + pl + W, 0, (Wp - pl - W) * sizeof(float));
      }
      std::memset(plane + (pt + H) * Wp, 0, (Hp - pt - H) * Wp * sizeof(float));
    }
    return xp;
  }
};

// Offsets of the taps (c, kh, kw), in filter order, from an output's corner in the padded image.
std::vector<int64_t> tap_offsets(const ConvGeometry& g, const Padded& pad) {
  std::vector<int64_t> toff;
  toff.reserve(taps(g));
  for (int64_t c = 0; c < g.in_c; ++c)
    for (int64_t kh = 0; kh < g.k[0]; ++kh)
      for (int64_t kw = 0; kw < g.k[1]; ++kw)
        toff.push_back((c * pad.Hp + kh * g.dil[0]) * pad.Wp + kw * g.dil[1]);
  return toff;
}

// ---------------------------------------------------------------- rows
// The tiles name each accumulator (macros over the tile's rows): with arrays of __m256,
// GCC 12 stored every accumulator to the stack after each FMA (12 stores per tap, the
// tile ran at a quarter of the FMA peak).

// NO (<= 6) output channels x NV (<= 2) vectors of 8 adjacent outputs of one row. `x` is
// the padded image at the output row, `xo` the vectors' first columns, `toff` the K
// taps' offsets from there, `w` the first channel's K filter values (the next channel's
// `wstride` on).
template <int NO, int NV>
void rows_tile(const float* x, const int64_t* xo, const int64_t* toff, int64_t K, const float* w, int64_t wstride,
               const float* bias, bool relu, float* out, int64_t ostride) {
#define OAR_ROWS_INIT(o)                                                   \
  const __m256 b##o = _mm256_set1_ps(NO > o && bias ? bias[o] : 0.f); \
  __m256 c##o##0 = b##o, c##o##1 = b##o;
  OAR_ROWS_INIT(0) OAR_ROWS_INIT(1) OAR_ROWS_INIT(2) OAR_ROWS_INIT(3) OAR_ROWS_INIT(4) OAR_ROWS_INIT(5)
  const float* p0 = x + xo[0];
  const float* p1 = x + xo[NV - 1];
  for (int64_t t = 0; t < K; ++t) {
    const int64_t off = toff[t];
    const __m256 x0 = _mm256_loadu_ps(p0 + off);
    const __m256 x1 = NV > 1 ? _mm256_loadu_ps(p1 + off) : x0;
#define OAR_ROWS_FMA(o)                                                   \
  if constexpr (NO > o) {                                                 \
    const __m256 wv = _mm256_broadcast_ss(w + o * wstride + t);           \
    c##o##0 = _mm256_fmadd_ps(wv, x0, c##o##0);                           \
    if constexpr (NV > 1) c##o##1 = _mm256_fmadd_ps(wv, x1, c##o##1);     \
  }
    OAR_ROWS_FMA(0) OAR_ROWS_FMA(1) OAR_ROWS_FMA(2) OAR_ROWS_FMA(3) OAR_ROWS_FMA(4) OAR_ROWS_FMA(5)
  }
  const __m256 zero = _mm256_setzero_ps();  // max(0, NaN) is NaN: the second operand wins
#define OAR_ROWS_STORE(o)                                                                        \
  if constexpr (NO > o) {                                                                        \
    _mm256_storeu_ps(out + o * ostride + xo[0], relu ? _mm256_max_ps(zero, c##o##0) : c##o##0);   \
    if constexpr (NV > 1)                                                                        \
      _mm256_storeu_ps(out + o * ostride + xo[1], relu ? _mm256_max_ps(zero, c##o##1) : c##o##1); \
  }
  OAR_ROWS_STORE(0) OAR_ROWS_STORE(1) OAR_ROWS_STORE(2) OAR_ROWS_STORE(3) OAR_ROWS_STORE(4) OAR_ROWS_STORE(5)
#undef OAR_ROWS_INIT
#undef OAR_ROWS_FMA
#undef OAR_ROWS_STORE
}

using RowsTile = void (*)(const float*, const int64_t*, const int64_t*, int64_t, const float*, int64_t,
                          const float*, bool, float*, int64_t);

template <int NO>
constexpr RowsTile rows_tiles[2] = {rows_tile<NO, 1>, rows_tile<NO, 2>};
constexpr int kRowsChannels = 6;
constexpr const RowsTile* kRowsTiles[kRowsChannels] = {rows_tiles<1>, rows_tiles<2>, rows_tiles<3>,
                                                       rows_tiles<4>, rows_tiles<5>, rows_tiles<6>};

// ---------------------------------------------------------------- channels
// OB (<= 2) blocks of 8 output channels x P (<= 12, OB * P <= 12) outputs anywhere in the
// image (`base`: their offsets in the padded image), the taps at offsets `toff` from
// them; `wp` holds the filter as [block][tap][8], `bp` the bias as [block][8]. The tile
// lands in tmp[P][OB * 8].
template <int OB, int P>
void channels_tile(const float* x, const int64_t* base, const int64_t* toff, int64_t K, const float* wp,
                   const float* bp, bool relu, float* tmp) {
  static_assert(OB * P <= 12, "channels_tile: 12 accumulators at most");
  const __m256 bias0 = _mm256_load_ps(bp), bias1 = OB > 1 ? _mm256_load_ps(bp + 8) : bias0;
#define OAR_CH_INIT(j)                  \
  __m256 a##j##_0 = bias0, a##j##_1 = bias1; \
  const float* p##j = x + base[P > j ? j : 0];
  OAR_CH_INIT(0) OAR_CH_INIT(1) OAR_CH_INIT(2) OAR_CH_INIT(3) OAR_CH_INIT(4) OAR_CH_INIT(5)
  OAR_CH_INIT(6) OAR_CH_INIT(7) OAR_CH_INIT(8) OAR_CH_INIT(9) OAR_CH_INIT(10) OAR_CH_INIT(11)
  const float* w1 = wp + (OB > 1 ? K * 8 : 0);
  for (int64_t t = 0; t < K; ++t) {
    const __m256 w0v = _mm256_load_ps(wp + t * 8);
    const __m256 w1v = OB > 1 ? _mm256_load_ps(w1 + t * 8) : w0v;
    const int64_t off = toff[t];
#define OAR_CH_FMA(j)                                                  \
  if constexpr (P > j) {                                               \
    const __m256 xb = _mm256_broadcast_ss(p##j + off);                 \
    a##j##_0 = _mm256_fmadd_ps(w0v, xb, a##j##_0);                     \
    if constexpr (OB > 1) a##j##_1 = _mm256_fmadd_ps(w1v, xb, a##j##_1); \
  }
    OAR_CH_FMA(0) OAR_CH_FMA(1) OAR_CH_FMA(2) OAR_CH_FMA(3) OAR_CH_FMA(4) OAR_CH_FMA(5)
    OAR_CH_FMA(6) OAR_CH_FMA(7) OAR_CH_FMA(8) OAR_CH_FMA(9) OAR_CH_FMA(10) OAR_CH_FMA(11)
  }
  const __m256 zero = _mm256_setzero_ps();
#define OAR_CH_STORE(j)                                                                                  \
  if constexpr (P > j) {                                                                                 \
    _mm256_store_ps(tmp + j * OB * 8, relu ? _mm256_max_ps(zero, a##j##_0) : a##j##_0);                   \
    if constexpr (OB > 1) _mm256_store_ps(tmp + j * OB * 8 + 8, relu ? _mm256_max_ps(zero, a##j##_1) : a##j##_1); \
  }
  OAR_CH_STORE(0) OAR_CH_STORE(1) OAR_CH_STORE(2) OAR_CH_STORE(3) OAR_CH_STORE(4) OAR_CH_STORE(5)
  OAR_CH_STORE(6) OAR_CH_STORE(7) OAR_CH_STORE(8) OAR_CH_STORE(9) OAR_CH_STORE(10) OAR_CH_STORE(11)
#undef OAR_CH_INIT
#undef OAR_CH_FMA
#undef OAR_CH_STORE
}

#endif  // OAR_CONV_DIRECT

}  // namespace

bool conv_direct_rows_supported(const ConvGeometry& g) {
#if OAR_CONV_DIRECT
  return plain_2d(g) && g.stride[0] == 1 && g.stride[1] == 1 && g.out[1] >= 8 && taps(g) <= 256;
#else
  (void)g;
  return false;
#endif
}

bool conv_direct_channels_supported(const ConvGeometry& g) {
#if OAR_CONV_DIRECT
  return plain_2d(g) && taps(g) <= 1024 && taps(g) * g.out_c <= 65536;
#else
  (void)g;
  return false;
#endif
}

void conv_direct_rows_fwd(const ConvGeometry& g, const float* src, const float* w, float* dst, const float* bias,
                          bool relu) {
  OAR_ENFORCE(conv_direct_rows_supported(g), InvalidArgument, "conv_direct_rows_fwd: unsupported geometry");
#if OAR_CONV_DIRECT
  const Padded pad(g);
  const int64_t OC = g.out_c, OH = g.out[0], OW = g.out[1], K = taps(g);
  const std::vector<int64_t> toff = tap_offsets(g, pad);
  // The vectors of a row start every 8 columns; a last partial one is moved left to end
  // at the row's end (its overlap is written twice with the same values).
  std::vector<int64_t> xs;
  for (int64_t x0 = 0; x0 + 8 <= OW; x0 += 8) xs.push_back(x0);
  if (OW % 8) xs.push_back(OW - 8);
  const int64_t chunks = (OC + kRowsChannels - 1) / kRowsChannels, nx = static_cast<int64_t>(xs.size());
  parallel_for(g.batch * chunks, [&](int64_t p0, int64_t p1) {
    const float* img = nullptr;
    int64_t have = -1;
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t n = p / chunks, oc0 = p % chunks * kRowsChannels, no = std::min<int64_t>(kRowsChannels, OC - oc0);
      if (n != have) img = pad.image(src, n), have = n;
      const float* wo = w + oc0 * K;
      const float* bo = bias ? bias + oc0 : nullptr;
      for (int64_t oh = 0; oh < OH; ++oh) {
        float* orow = dst + ((n * OC + oc0) * OH + oh) * OW;
        for (int64_t i = 0; i < nx; i += 2) {
          const int64_t nv = std::min<int64_t>(2, nx - i);
          kRowsTiles[no - 1][nv - 1](img + oh * pad.Wp, xs.data() + i, toff.data(), K, wo, K, bo, relu, orow,
                                     OH * OW);
        }
      }
    }
  }, g.batch * OC * OH * OW * taps(g));
#else
  (void)src, (void)w, (void)dst, (void)bias, (void)relu;
#endif
}

void conv_direct_channels_fwd(const ConvGeometry& g, const float* src, const float* w, float* dst,
                              const float* bias, bool relu) {
  OAR_ENFORCE(conv_direct_channels_supported(g), InvalidArgument, "conv_direct_channels_fwd: unsupported geometry");
#if OAR_CONV_DIRECT
  const Padded pad(g);
  const int64_t OC = g.out_c, OH = g.out[0], OW = g.out[1], K = taps(g);
  const int64_t blocks = (OC + 7) / 8, OS = OH * OW;
  // The filter as [block][tap][8] and the bias as [block][8], zero past out_c.
  float* wp = workspace(0, static_cast<size_t>(blocks * (K + 1) * 8));
  float* bp = wp + blocks * K * 8;
  for (int64_t b = 0; b < blocks; ++b)
    for (int64_t l = 0; l < 8; ++l) {
      const int64_t oc = b * 8 + l;
      for (int64_t t = 0; t < K; ++t) wp[(b * K + t) * 8 + l] = oc < OC ? w[oc * K + t] : 0.f;
      bp[b * 8 + l] = oc < OC && bias ? bias[oc] : 0.f;
    }
  const std::vector<int64_t> toff = tap_offsets(g, pad);
  parallel_for(g.batch, [&](int64_t n0, int64_t n1) {
    alignas(32) float tmp[12 * 16];
    int64_t base[12];
    for (int64_t n = n0; n < n1; ++n) {
      const float* img = pad.image(src, n);
      float* out = dst + n * OC * OS;
      for (int64_t b = 0; b < blocks;) {
        // Two blocks by 6 outputs while two remain, else one block by 12.
        const int ob = blocks - b >= 2 ? 2 : 1, P = ob == 2 ? 6 : 12;
        const int64_t nc = std::min<int64_t>(ob * 8, OC - b * 8);
        for (int64_t s0 = 0; s0 < OS; s0 += P) {
          const int64_t np = std::min<int64_t>(P, OS - s0);
          for (int64_t j = 0; j < P; ++j) {
            const int64_t s = s0 + std::min<int64_t>(j, np - 1);  // past the end: the last output again
            base[j] = s / OW * g.stride[0] * pad.Wp + s % OW * g.stride[1];
          }
          if (ob == 2)
            channels_tile<2, 6>(img, base, toff.data(), K, wp + b * K * 8, bp + b * 8, relu, tmp);
          else
            channels_tile<1, 12>(img, base, toff.data(), K, wp + b * K * 8, bp + b * 8, relu, tmp);
          for (int64_t o = 0; o < nc; ++o) {
            float* orow = out + (b * 8 + o) * OS + s0;
            for (int64_t j = 0; j < np; ++j) orow[j] = tmp[j * ob * 8 + o];
          }
        }
        b += ob;
      }
    }
  }, g.batch * OC * OS * K);
#else
  (void)src, (void)w, (void)dst, (void)bias, (void)relu;
#endif
}

}  // namespace oar::phi
