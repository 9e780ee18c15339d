// max_pool2d: max pooling without the argmax (the inference form of
// max_pool2d_with_index, chosen by the canonicalize pass when the mask is unused).
//
// Why not the with-index kernel: it walks every window element by element with a data
// dependent argmax (a loop-carried select of value and index), writes an int32 mask as
// large as the output and cannot vectorize; 32x6x28x28 + 32x16x10x10 took ~260 us.
//
// Channels first, per (n, c) plane and output row: first the rows of the window are
// combined elementwise into one row (contiguous, vectorized over W) that has -inf on
// both sides, then every output takes the max of its k columns, 8 outputs per step for
// strides 1 and 2 (float planes are done in registers instead where they can be, Note [Max
// pooling in registers]; 2x2 stride 2 windows tiling the input have their own one-pass loop;
// adaptive windows, of varying sizes, loop per output). Channels last:
// per output position, the window's elements are combined over the contiguous C.
//
// Values equal max_pool2d_with_index's out, whose rule is "start from the window's first
// element, take a later one when it is greater": NaN only when the first element is NaN
// (later NaNs are skipped). Combining rows first changes the order, so rows and columns
// are combined with a NaN-skipping max and the first element's NaN is restored at the end.
// (A plane without NaN takes the plain max.) The one difference left: a window whose
// maximum is a tie of -0 and +0 may give the other zero.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

#include "oar_generated/kernel_signatures.h"
#include "paddle_core/meta/infer_meta_cnn.h"
#include "phi_kernels/cpu/parallel.h"

namespace oar::phi {
namespace {

// NaN-skipping max: b when it is greater or a is NaN.
template <typename T>
inline T skip_nan_max(T a, T b) {
  return (b > a || a != a) ? b : a;
}

// The max of a plane's windows: NaN-skipping (kNaN) where the plane holds a NaN, plain
// elsewhere. A plane without NaN is the common case, and there the plain max, one
// instruction against skip_nan_max's four, gives the same values. With the NaN scan
// vectorized (any_nan) and done once per plane instead of per output row: ResNet-18's
// [1, 64, 32, 32] 3x3/2 pool 53-65 -> 26 us, one thread.
template <bool kNaN, typename T>
inline T window_max(T a, T b) {
  if constexpr (kNaN) return skip_nan_max(a, b);
  return b > a ? b : a;
}

// Whether p[0, n) holds a NaN. (An `||` reduction stays scalar under GCC: half of the
// pool's time went to this scan; a bitwise one vectorizes.)
template <typename T>
bool any_nan(const T* p, int64_t n) {
  int nan = 0;
#pragma omp simd reduction(| : nan)
  for (int64_t i = 0; i < n; ++i) nan |= p[i] != p[i];
  return nan != 0;
}

struct Rows {  // window bounds per output index along each (D, H, W) dim
  std::vector<int64_t> b[3], e[3];
  explicit Rows(const PoolGeometry& g) {
    for (int i = 0; i < 3; ++i) {
      b[i].resize(g.out[i]);
      e[i].resize(g.out[i]);
      for (int64_t o = 0; o < g.out[i]; ++o) g.window(i, o, &b[i][o], &e[i][o]);
    }
  }
};

// 2x2 windows, stride 2, no padding, the input tiled exactly (H = 2 OH, W = 2 OW): the
// planes are then one run of output rows, row r reading input rows 2r and 2r + 1 (of
// length W), so rows [r0, r1) of all planes go in one loop. Per output, in the
// reference's order a, b (first row), then c, d (second row): a NaN a or b, c NaN pair
// is skipped exactly as the reference does.
template <typename T>
inline T max_2x2(T a, T b, T c, T d) {
  const T h1 = b > a ? b : a;      // the reference's running max after the first row
  const T h2 = skip_nan_max(c, d);  // the second row, NaNs skipped
  return h2 > h1 ? h2 : h1;
}

template <typename T>
void max_rows_2x2(const T* src, T* dst, int64_t W, int64_t OW, int64_t r0, int64_t r1) {
  for (int64_t r = r0; r < r1; ++r) {
    const T* s0 = src + 2 * r * W;
    const T* s1 = s0 + W;
    T* out = dst + r * OW;
    for (int64_t ow = 0; ow < OW; ++ow)
      out[ow] = max_2x2(s0[2 * ow], s0[2 * ow + 1], s1[2 * ow], s1[2 * ow + 1]);
  }
}

#if defined(__AVX2__)
// Elements 0, 2, ..., 14 of the 16 floats (lo, hi), in order.
inline __m256 even8(__m256 lo, __m256 hi) {
  return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0))),
                                                _MM_SHUFFLE(3, 1, 2, 0)));
}
// Even and odd elements of the 16 floats (lo, hi), in order.
inline void deinterleave(__m256 lo, __m256 hi, __m256* even, __m256* odd) {
  *even = even8(lo, hi);
  *odd = _mm256_castpd_ps(_mm256_permute4x64_pd(
      _mm256_castps_pd(_mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(3, 1, 3, 1))), _MM_SHUFFLE(3, 1, 2, 0)));
}
// ... of 16 consecutive floats at p.
inline void deinterleave(const float* p, __m256* even, __m256* odd) {
  deinterleave(_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8), even, odd);
}

// max_2x2 of 8 windows whose rows' 16 floats are (s0lo, s0hi) and (s1lo, s1hi): max_2x2's
// order and NaN rule (_mm256_max_ps(x, y) gives x only when x > y, else y, NaNs included).
inline __m256 max8_2x2(__m256 s0lo, __m256 s0hi, __m256 s1lo, __m256 s1hi) {
  __m256 a, b, c, d;
  deinterleave(s0lo, s0hi, &a, &b);
  deinterleave(s1lo, s1hi, &c, &d);
  const __m256 h1 = _mm256_max_ps(b, a);  // b > a ? b : a
  const __m256 take_d = _mm256_or_ps(_mm256_cmp_ps(d, c, _CMP_GT_OQ), _mm256_cmp_ps(c, c, _CMP_UNORD_Q));
  const __m256 h2 = _mm256_blendv_ps(c, d, take_d);  // skip_nan_max(c, d)
  return _mm256_max_ps(h2, h1);                      // h2 > h1 ? h2 : h1
}

// The float rows, 8 outputs per step; a row's last OW % 8 outputs are one more step through
// masked loads and a masked store (LeNet's 28 and 10 wide planes ran 6 and 5 of every row's
// outputs through the scalar max_2x2: [32, 6, 28, 28] 43 us, where [32, 6, 24, 24] took 18).
template <>
void max_rows_2x2<float>(const float* src, float* dst, int64_t W, int64_t OW, int64_t r0, int64_t r1) {
  const int64_t tail = OW % 8;
  auto lanes_below = [](int64_t n) {  // lanes i < n set
    const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), idx);
  };
  const __m256i in_lo = lanes_below(2 * tail), in_hi = lanes_below(2 * tail - 8), out_m = lanes_below(tail);
  for (int64_t r = r0; r < r1; ++r) {
    const float* s0 = src + 2 * r * W;
    const float* s1 = s0 + W;
    float* out = dst + r * OW;
    int64_t ow = 0;
    for (; ow + 8 <= OW; ow += 8) {
      const float* p0 = s0 + 2 * ow;
      const float* p1 = s1 + 2 * ow;
      _mm256_storeu_ps(out + ow, max8_2x2(_mm256_loadu_ps(p0), _mm256_loadu_ps(p0 + 8), _mm256_loadu_ps(p1),
                                          _mm256_loadu_ps(p1 + 8)));
    }
    if (tail > 0) {  // lanes past the row read nothing (masked) and are not stored
      const float* p0 = s0 + 2 * ow;
      const float* p1 = s1 + 2 * ow;
      _mm256_maskstore_ps(out + ow, out_m,
                          max8_2x2(_mm256_maskload_ps(p0, in_lo), _mm256_maskload_ps(p0 + 8, in_hi),
                                   _mm256_maskload_ps(p1, in_lo), _mm256_maskload_ps(p1 + 8, in_hi)));
    }
  }
}
#endif

// out[ow] = max over kx < k of row[ow * s + kx] (window_max<kNaN>) for every ow < OW:
// `row` holds the combined input row after pad_l -inf values and has -inf past its end as
// far as any window (and a vector step) reaches, so the edge windows need no bounds.
template <bool kNaN, typename T>
void all_windows_max(const T* row, int64_t k, int64_t s, int64_t OW, T* out) {
  for (int64_t ow = 0; ow < OW; ++ow) {
    const T* w = row + ow * s;
    T m = w[0];
    for (int64_t kx = 1; kx < k; ++kx) m = window_max<kNaN>(m, w[kx]);
    out[ow] = m;
  }
}

#if defined(__AVX2__)
// window_max on 8 lanes. skip_nan_max: b where b > a or a is NaN. Plain: vmaxps(b, a)
// is b where b > a, else a, as window_max<false> (a tie of -0 and +0 keeps a).
template <bool kNaN>
inline __m256 window_max8(__m256 a, __m256 b) {
  if constexpr (kNaN)
    return _mm256_blendv_ps(a, b, _mm256_or_ps(_mm256_cmp_ps(b, a, _CMP_GT_OQ), _mm256_cmp_ps(a, a, _CMP_UNORD_Q)));
  return _mm256_max_ps(b, a);
}

// Elements 0, 2, ..., 14 of p.
inline __m256 even8(const float* p) { return even8(_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)); }

// Stride 1 and 2 (3x3/2 is ResNet's stem pool): 8 windows per step, one load (stride 1)
// or one even-lane shuffle (stride 2) per window column. (Splitting the row's even and
// odd elements once into buffers, read back at offsets, was slower: 26 -> 33 us on
// [1, 64, 32, 32] 3x3/2, the reads straddling two stores that cannot forward.)
template <bool kNaN>
void all_windows_max_f32(const float* row, int64_t k, int64_t s, int64_t OW, float* out) {
  int64_t ow = 0;
  if (s == 1) {
    for (; ow + 8 <= OW; ow += 8) {
      __m256 m = _mm256_loadu_ps(row + ow);
      for (int64_t kx = 1; kx < k; ++kx) m = window_max8<kNaN>(m, _mm256_loadu_ps(row + ow + kx));
      _mm256_storeu_ps(out + ow, m);
    }
  } else if (s == 2) {
    for (; ow + 8 <= OW; ow += 8) {
      __m256 m = even8(row + 2 * ow);
      for (int64_t kx = 1; kx < k; ++kx) m = window_max8<kNaN>(m, even8(row + 2 * ow + kx));
      _mm256_storeu_ps(out + ow, m);
    }
  }
  for (; ow < OW; ++ow) {
    const float* w = row + ow * s;
    float m = w[0];
    for (int64_t kx = 1; kx < k; ++kx) m = window_max<kNaN>(m, w[kx]);
    out[ow] = m;
  }
}

template <>
void all_windows_max<false, float>(const float* row, int64_t k, int64_t s, int64_t OW, float* out) {
  all_windows_max_f32<false>(row, k, s, OW, out);
}

template <>
void all_windows_max<true, float>(const float* row, int64_t k, int64_t s, int64_t OW, float* out) {
  all_windows_max_f32<true>(row, k, s, OW, out);
}
#endif

// Floats of the padded row buffer all_windows_max reads (max_plane_rows).
inline int64_t padded_row_size(const PoolGeometry& g) {
  return g.pad_l[2] + std::max(g.in[2], (g.out[2] + 8) * g.stride[2] + g.k[2]) + 16;
}

template <bool kNaN, typename T>
void max_plane_rows(const PoolGeometry& g, const Rows& ws, const T* src, T* dst, T* row) {
  const int64_t H = g.in[1], W = g.in[2], OD = g.out[0], OH = g.out[1], OW = g.out[2];
  const int64_t* wb = ws.b[2].data();
  const int64_t* we = ws.e[2].data();
  // A window wholly in the padding (pad >= kernel) gives 0, as the reference.
  bool empty_windows = false;
  for (int64_t ow = 0; ow < OW; ++ow) empty_windows = empty_windows || wb[ow] >= we[ow];
  for (int64_t od = 0; od < OD; ++od) {
    const int64_t db = ws.b[0][od], de = ws.e[0][od];
    for (int64_t oh = 0; oh < OH; ++oh) {
      const int64_t hb = ws.b[1][oh], he = ws.e[1][oh];
      T* out = dst + (od * OH + oh) * OW;
      if (db >= de || hb >= he) {
        std::fill(out, out + OW, T(0));
        continue;
      }
      const T* first = src + (db * H + hb) * W;
      // The window's rows combined into one (for uniform windows, into the padded row
      // all_windows_max reads; adaptive ones read `first` itself when it is alone).
      T* rp = row + (g.adaptive ? 0 : g.pad_l[2]);
      const T* r = first;
      if (!g.adaptive || de - db > 1 || he - hb > 1) {
        // The first two rows (d, h order) in one pass, a row alone copied, then the others:
        // 25 against 28 us on ResNet-18's stem pool with a copy and a pass per row.
        const bool two = de - db > 1 || he - hb > 1;
        const int64_t d2 = he - hb > 1 ? db : db + 1, h2 = he - hb > 1 ? hb + 1 : hb;  // the second row
        const T* second = two ? src + (d2 * H + h2) * W : first;
#pragma omp simd
        for (int64_t x = 0; x < W; ++x) rp[x] = window_max<kNaN>(first[x], second[x]);
        for (int64_t d = db; d < de; ++d)
          for (int64_t h = (d == db ? hb + 1 : hb); h < he; ++h) {
            if (d == d2 && h == h2) continue;  // in the pass above
            const T* s = src + (d * H + h) * W;
#pragma omp simd
            for (int64_t x = 0; x < W; ++x) rp[x] = window_max<kNaN>(rp[x], s[x]);
          }
        r = rp;
      }
      if (!g.adaptive) {
        all_windows_max<kNaN>(row, g.k[2], g.stride[2], OW, out);
        if (empty_windows)
          for (int64_t ow = 0; ow < OW; ++ow)
            if (wb[ow] >= we[ow]) out[ow] = T(0);
      } else {
        for (int64_t ow = 0; ow < OW; ++ow) {
          const int64_t b = wb[ow], e = we[ow];
          if (b >= e) {
            out[ow] = T(0);
            continue;
          }
          T m = r[b];
          for (int64_t x = b + 1; x < e; ++x) m = window_max<kNaN>(m, r[x]);
          out[ow] = m;
        }
      }
      if (!kNaN || !any_nan(first, W)) continue;
      // The reference keeps a NaN only when it is the window's first element.
      for (int64_t ow = 0; ow < OW; ++ow) {
        if (wb[ow] >= we[ow]) continue;
        const T f = first[wb[ow]];
        if (f != f) out[ow] = f;
      }
    }
  }
}

#if defined(__AVX2__)
// Note [Max pooling in registers]: each ISA copy's path for float planes, uniform windows
// of width k <= L + 1 and strides 1 and 2 (ResNet's 3x3/2 stem pool, 3x3/1, SPP's 5x5/1),
// L outputs a step (the vector's lanes: 16 on AVX-512, 8 on AVX2), with no store between
// the passes. The input row is cut into blocks of L columns from the first window's start;
// a block's window rows are combined once (masked loads, -inf outside [0, W), at the row's
// ends, so the padding and a ceil-mode window's end need no bounds), and a step's k window
// columns are then lane permutes of its 2 blocks (stride 1) or 3 (stride 2, after
// splitting them into even and odd columns), its last block being the next step's first.
// The order is max_plane_rows': rows first, earlier rows and columns kept on a tie. The
// loads also look for NaN: a plane that has one is redone by max_plane_rows with the NaN
// rule, so planes without NaN (nearly all) are read once, not scanned first. (The AVX2
// combined row of max_plane_rows, read back at odd offsets right after it is written,
// stalls on store forwarding: ResNet-18's [1, 64, 32, 32] 3x3/2 pool, 47-52 us there.)
#if defined(__AVX512F__)
struct Lanes {  // AVX-512: 16 lanes, mask registers
  using V = __m512;
  using Mask = __mmask16;
  static constexpr int L = 16;
  static V ninf() { return _mm512_set1_ps(-std::numeric_limits<float>::infinity()); }
  static Mask mask(unsigned bits) { return static_cast<Mask>(bits); }
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static V load(const float* p, Mask m) { return _mm512_mask_loadu_ps(ninf(), m, p); }
  // vmaxps: a where a > b, else b (window_max<false>(b, a)). Spelled with a full mask:
  // GCC 12's _mm512_max_ps passes _mm512_undefined_ps(), which -Wmaybe-uninitialized flags.
  static V max(V a, V b) { return _mm512_mask_max_ps(b, 0xFFFF, a, b); }
  using Nan = Mask;
  static Nan no_nan() { return 0; }
  static Nan nan_or(Nan n, V x) { return static_cast<Mask>(n | _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q)); }
  static bool any(Nan n) { return n != 0; }
  static __m512i iota() { return _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0); }
  // lanes t.. of the pair (lo, hi), t <= L
  static V shift(V lo, V hi, int t) {
    return _mm512_permutex2var_ps(lo, _mm512_add_epi32(iota(), _mm512_set1_epi32(t)), hi);
  }
  // the even and odd columns of the pair (a, b)
  static void split(V a, V b, V* even, V* odd) {
    const __m512i e = _mm512_add_epi32(iota(), iota());
    *even = _mm512_permutex2var_ps(a, e, b);
    *odd = _mm512_permutex2var_ps(a, _mm512_add_epi32(e, _mm512_set1_epi32(1)), b);
  }
  static void store(float* p, V v, int64_t n) {
    if (n >= L)
      _mm512_storeu_ps(p, v);
    else
      _mm512_mask_storeu_ps(p, static_cast<Mask>((1u << n) - 1u), v);
  }
};
#else
struct Lanes {  // AVX2: 8 lanes, masks as vectors
  using V = __m256;
  using Mask = __m256i;
  static constexpr int L = 8;
  static V ninf() { return _mm256_set1_ps(-std::numeric_limits<float>::infinity()); }
  static Mask mask(unsigned bits) {
    const __m256i lane = _mm256_set_epi32(128, 64, 32, 16, 8, 4, 2, 1);
    return _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32(static_cast<int>(bits)), lane), lane);
  }
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static V load(const float* p, Mask m) {
    return _mm256_blendv_ps(ninf(), _mm256_maskload_ps(p, m), _mm256_castsi256_ps(m));
  }
  static V max(V a, V b) { return _mm256_max_ps(a, b); }  // a where a > b, else b
  using Nan = V;
  static Nan no_nan() { return _mm256_setzero_ps(); }
  static Nan nan_or(Nan n, V x) { return _mm256_or_ps(n, _mm256_cmp_ps(x, x, _CMP_UNORD_Q)); }
  static bool any(Nan n) { return _mm256_movemask_ps(n) != 0; }
  static V shift(V lo, V hi, int t) {
    const __m256i idx = _mm256_add_epi32(_mm256_set_epi32(7, 6, 5, 4, 3, 2, 1, 0), _mm256_set1_epi32(t));
    const __m256 from_hi = _mm256_castsi256_ps(_mm256_cmpgt_epi32(idx, _mm256_set1_epi32(7)));
    // vpermps uses an index's low 3 bits: lane i takes lo[i + t] or hi[i + t - 8]
    return _mm256_blendv_ps(_mm256_permutevar8x32_ps(lo, idx), _mm256_permutevar8x32_ps(hi, idx), from_hi);
  }
  static void split(V a, V b, V* even, V* odd) { deinterleave(a, b, even, odd); }
  static void store(float* p, V v, int64_t n) {
    if (n >= L) return _mm256_storeu_ps(p, v);
    alignas(32) float buf[L];
    _mm256_store_ps(buf, v);
    std::copy(buf, buf + n, p);
  }
};
#endif

inline unsigned cols_bits(int64_t c, int64_t W) {  // lanes whose column c + i lies in [0, W)
  const int64_t lo = std::max<int64_t>(0, -c), hi = std::min<int64_t>(Lanes::L, W - c);
  if (hi <= lo) return 0;
  return ((1u << hi) - 1u) & ~((1u << lo) - 1u);
}

// Whether max_plane_vec serves g: its windows are uniform, none of them empty along W.
bool max_plane_vec_supported(const PoolGeometry& g, const Rows& ws) {
  if (g.adaptive || g.channels_last || (g.stride[2] != 1 && g.stride[2] != 2) || g.k[2] < 1 || g.k[2] > Lanes::L + 1)
    return false;
  for (int64_t ow = 0; ow < g.out[2]; ++ow)
    if (ws.b[2][ow] >= ws.e[2][ow]) return false;
  return true;
}

// Per block of L columns (column -pad_l + L b on): its load mask's lanes, and whether it
// reaches outside [0, W). The same for every row of every plane.
struct Blocks {
  std::vector<unsigned> mask;
  std::vector<char> edge;
  Blocks() = default;
  explicit Blocks(const PoolGeometry& g) {
    const int64_t n = (g.out[2] + Lanes::L - 1) / Lanes::L * g.stride[2] + 1;
    mask.resize(static_cast<size_t>(n));
    edge.resize(static_cast<size_t>(n));
    for (int64_t b = 0; b < n; ++b) {
      const int64_t c = Lanes::L * b - g.pad_l[2];
      mask[b] = cols_bits(c, g.in[2]);
      edge[b] = c < 0 || c + Lanes::L > g.in[2];
    }
  }
};

// One output row (window rows [db, de) x [hb, he)); K > 0 is k known at compile time (the
// loop unrolled). Returns false when an input it read holds a NaN.
template <int S, int K>
__attribute__((always_inline)) inline bool max_row_vec(const PoolGeometry& g, const Blocks& blocks, const float* src,
                                                       int64_t db, int64_t de, int64_t hb, int64_t he, float* out) {
  using V = Lanes::V;
  constexpr int L = Lanes::L;
  const int64_t H = g.in[1], W = g.in[2], OW = g.out[2], c_base = -g.pad_l[2];
  const int k = K > 0 ? K : static_cast<int>(g.k[2]);
  Lanes::Nan nan = Lanes::no_nan();
  auto block = [&](int64_t b) {  // the window rows of block b, combined
    const int64_t c = c_base + L * b;
    const bool edge = blocks.edge[b];
    const Lanes::Mask mask = Lanes::mask(blocks.mask[b]);
    V v = Lanes::ninf();
    for (int64_t d = db; d < de; ++d)
      for (int64_t h = hb; h < he; ++h) {
        const float* row = src + (d * H + h) * W;
        // Masked-off lanes are not read (no fault), so the address may lie outside the row.
        const V x =
            edge ? Lanes::load(reinterpret_cast<const float*>(reinterpret_cast<uintptr_t>(row) + c * int64_t{4}), mask)
                 : Lanes::load(row + c);
        nan = Lanes::nan_or(nan, x);
        v = Lanes::max(x, v);
      }
    return v;
  };
  V first = block(0);
  for (int64_t ow = 0, b = 0; ow < OW; ow += L, b += S) {
    V m;
    // Window column x of the step's outputs: lanes x / S.. of the pair (lo, hi).
    if constexpr (S == 1) {
      const V next = block(b + 1);
      m = first;
      if constexpr (K > 0) {
#pragma GCC unroll 17
        for (int x = 1; x < K; ++x) m = Lanes::max(Lanes::shift(first, next, x), m);
      } else {
        for (int x = 1; x < k; ++x) m = Lanes::max(Lanes::shift(first, next, x), m);
      }
      first = next;
    } else {
      const V mid = block(b + 1), last = block(b + 2);
      V e, o, e2, o2;
      Lanes::split(first, mid, &e, &o);
      Lanes::split(last, last, &e2, &o2);  // lanes below L / 2 used (k <= L + 1)
      m = e;
      auto step = [&](int x) { m = Lanes::max(x % 2 ? Lanes::shift(o, o2, x / 2) : Lanes::shift(e, e2, x / 2), m); };
      if constexpr (K > 0) {
#pragma GCC unroll 17
        for (int x = 1; x < K; ++x) step(x);
      } else {
        for (int x = 1; x < k; ++x) step(x);
      }
      first = last;
    }
    Lanes::store(out + ow, m, OW - ow);
  }
  return !Lanes::any(nan);
}

// The plane's output rows; false (dst then to be redone) when the plane holds a NaN.
template <int S, int K>
bool max_plane_vec(const PoolGeometry& g, const Rows& ws, const Blocks& blocks, const float* src, float* dst) {
  const int64_t OD = g.out[0], OH = g.out[1], OW = g.out[2];
  for (int64_t od = 0; od < OD; ++od)
    for (int64_t oh = 0; oh < OH; ++oh) {
      const int64_t db = ws.b[0][od], de = ws.e[0][od], hb = ws.b[1][oh], he = ws.e[1][oh];
      float* out = dst + (od * OH + oh) * OW;
      if (db >= de || hb >= he) {
        std::fill(out, out + OW, 0.0f);
      } else if (!max_row_vec<S, K>(g, blocks, src, db, de, hb, he, out)) {
        return false;
      }
    }
  return true;
}

bool max_plane_vec(const PoolGeometry& g, const Rows& ws, const Blocks& blocks, const float* src, float* dst) {
  const int64_t k = g.k[2];
  if (g.stride[2] == 1) {
    if (k == 3) return max_plane_vec<1, 3>(g, ws, blocks, src, dst);
    if (k == 5) return max_plane_vec<1, 5>(g, ws, blocks, src, dst);
    return max_plane_vec<1, 0>(g, ws, blocks, src, dst);
  }
  if (k == 3) return max_plane_vec<2, 3>(g, ws, blocks, src, dst);
  if (k == 2) return max_plane_vec<2, 2>(g, ws, blocks, src, dst);
  return max_plane_vec<2, 0>(g, ws, blocks, src, dst);
}
#endif

template <typename T>
void MaxPool2dKernel(const DeviceContext&, const DenseTensor& x_in, const IntList& kernel_size,
                     const IntList& strides, const IntList& paddings, bool ceil_mode, bool adaptive,
                     const std::string& data_format, DenseTensor* out) {
  Dims unused;
  const PoolGeometry g = pool_geometry(x_in, kernel_size, strides, paddings, ceil_mode, true, adaptive,
                                       data_format, x_in.rank() - 2, "max_pool2d", &unused);
  T* o = out->alloc<T>();
  if (out->numel() == 0) return;
  const Rows ws(g);
  const DenseTensor x = contiguous(x_in);
  const T* xp = x.data<T>();
  const int64_t is = g.in_numel(), os = g.out_numel(), C = g.c;
  if (!g.channels_last) {
    const bool tiled2 = !g.adaptive && g.k[0] == 1 && g.k[1] == 2 && g.k[2] == 2 && g.stride[1] == 2 &&
                        g.stride[2] == 2 && g.pad_l[1] == 0 && g.pad_l[2] == 0 && g.in[0] == g.out[0] &&
                        g.in[1] == 2 * g.out[1] && g.in[2] == 2 * g.out[2];
    if (tiled2) {
      const int64_t W = g.in[2], OW = g.out[2];
      parallel_for(g.batch * C * g.out[1], [&](int64_t r0, int64_t r1) { max_rows_2x2(xp, o, W, OW, r0, r1); },
                   x.numel());
      return;
    }
#if defined(__AVX2__)
    const bool fast = max_plane_vec_supported(g, ws);
    const Blocks blocks = fast ? Blocks(g) : Blocks();
#endif
    parallel_for(g.batch * C, [&](int64_t p0, int64_t p1) {
      // -inf around the combined row (all_windows_max); adaptive windows use [0, W) only
      std::vector<T> row(static_cast<size_t>(padded_row_size(g)), -std::numeric_limits<T>::infinity());
      for (int64_t p = p0; p < p1; ++p) {
        const T* plane = xp + p * is;
#if defined(__AVX2__)
        if constexpr (std::is_same_v<T, float>) {
          if (fast && max_plane_vec(g, ws, blocks, plane, o + p * os)) continue;
        }
#endif
        if (any_nan(plane, is))
          max_plane_rows<true>(g, ws, plane, o + p * os, row.data());
        else
          max_plane_rows<false>(g, ws, plane, o + p * os, row.data());
      }
    }, x.numel());
    return;
  }
  // Channels last: the reference's order (window row-major), vectorized over C.
  parallel_for(g.batch, [&](int64_t n0, int64_t n1) {
    for (int64_t n = n0; n < n1; ++n) {
      int64_t j = 0;
      for (int64_t od = 0; od < g.out[0]; ++od)
        for (int64_t oh = 0; oh < g.out[1]; ++oh)
          for (int64_t ow = 0; ow < g.out[2]; ++ow, ++j) {
            T* dst = o + (n * os + j) * C;
            const int64_t db = ws.b[0][od], de = ws.e[0][od], hb = ws.b[1][oh], he = ws.e[1][oh];
            const int64_t wb = ws.b[2][ow], we = ws.e[2][ow];
            if (db >= de || hb >= he || wb >= we) {
              std::fill(dst, dst + C, T(0));
              continue;
            }
            bool first = true;
            for (int64_t d = db; d < de; ++d)
              for (int64_t h = hb; h < he; ++h)
                for (int64_t w = wb; w < we; ++w) {
                  const T* s = xp + (n * is + (d * g.in[1] + h) * g.in[2] + w) * C;
                  if (first) {
                    std::copy(s, s + C, dst);
                    first = false;
                    continue;
                  }
#pragma omp simd
                  for (int64_t c = 0; c < C; ++c) dst[c] = s[c] > dst[c] ? s[c] : dst[c];
                }
          }
    }
  }, x.numel());
}

}  // namespace
}  // namespace oar::phi

using namespace oar::phi;  // NOLINT

OAR_REGISTER_KERNEL(max_pool2d, CPU, MaxPool2dKernel, float, double)
