// Kernels of stats.yaml's scans along one axis: cumsum, cumprod (+ its exact gradient),
// cummax/cummin (cum_extremum), logcumsumexp. Inputs are viewed as [outer, n, inner]
// (reduce.h); float/half scans accumulate in double, rows run in parallel.
#include <cmath>
#include <limits>
#include <vector>

#include "oar_generated/kernel_signatures.h"
#include "paddle_core/meta/infer_meta.h"
#include "phi_kernels/cpu/reduce.h"
#include "phi_kernels/cpu/vec_math.h"
#include "phi_kernels/funcs/softmax_rows.h"

namespace oar::phi {
namespace {

template <typename T>
using Acc = std::conditional_t<std::is_integral_v<T>, int64_t, double>;

// ---- scans along one axis: x viewed as [outer, n, inner]
ReduceShape scan_shape(const DenseTensor& x, int64_t axis, bool flatten, const char* op) {
  if (flatten || x.rank() == 0) {
    ReduceShape rs;
    rs.data = contiguous(x);
    rs.reduce = x.numel();
    return rs;
  }
  return make_reduce_shape(x, {wrap_axis(axis, x.rank(), op)});
}

// out[k] = combine(out[k-1], x[k]) along the axis (or reversed / exclusive).
template <typename T, typename A, typename Combine>
void scan(const DenseTensor& x, int64_t axis, bool flatten, bool exclusive, bool reverse, A init, DenseTensor* out,
          const char* op, Combine combine) {
  T* o = out->alloc<T>();
  if (out->numel() == 0) return;
  ReduceShape rs = scan_shape(x, axis, flatten, op);
  const T* p = rs.data.data<T>();
  const int64_t n = rs.reduce, inner = rs.inner;
  if (inner == 1) {
    // Rows: the running value stays in a register. (Through acc[0] below, each step waited
    // on the store of the one before: [1024, 1024] int64 cumsum 3.4 ms, torch 1.3.)
    parallel_for(
        rs.outer,
        [&](int64_t a0, int64_t a1) {
      for (int64_t a = a0; a < a1; ++a) {
        const T* src = p + a * n;
        T* dst = o + a * n;
        A acc = init;
        for (int64_t s = 0; s < n; ++s) {
          const int64_t k = reverse ? n - 1 - s : s;
          const A v = static_cast<A>(static_cast<OpMath<T>>(src[k]));
          if (exclusive) dst[k] = static_cast<T>(static_cast<OpMath<T>>(acc));
          acc = combine(acc, v);
          if (!exclusive) dst[k] = static_cast<T>(static_cast<OpMath<T>>(acc));
        }
      }
        },
        rs.outer * n);
    return;
  }
  parallel_for(
      rs.outer,
      [&](int64_t a0, int64_t a1) {
    std::vector<A> acc(inner);
    for (int64_t a = a0; a < a1; ++a) {
      std::fill(acc.begin(), acc.end(), init);
      for (int64_t s = 0; s < n; ++s) {
        const int64_t k = reverse ? n - 1 - s : s;
        const T* src = p + (a * n + k) * inner;
        T* dst = o + (a * n + k) * inner;
        for (int64_t i = 0; i < inner; ++i) {
          const A v = static_cast<A>(static_cast<OpMath<T>>(src[i]));
          if (exclusive) {
            dst[i] = static_cast<T>(static_cast<OpMath<T>>(acc[i]));
            acc[i] = combine(acc[i], v);
          } else {
            acc[i] = combine(acc[i], v);
            dst[i] = static_cast<T>(static_cast<OpMath<T>>(acc[i]));
          }
        }
      }
    }
      },
      rs.outer * n * inner);
}

// One scalar step of scan_rows_vec's ragged ends, in double as its lanes.
template <bool kMul, typename T>
inline double scan_step(double acc, T v) {
  return kMul ? acc * static_cast<double>(v) : acc + static_cast<double>(v);
}

#if OAR_VEC512
// Inclusive prefix sums (kMul: products) of contiguous rows, 8 lanes at a time in double: an
// in-register log-step scan (shift by 1, 2, 4 lanes, filling with the identity) plus a
// running carry, so the serial dependency is one add or multiply per 8 elements.
template <bool kMul>
inline __m512d op8(__m512d a, __m512d b) {
  return kMul ? _mm512_mul_pd(a, b) : _mm512_add_pd(a, b);
}
template <bool kMul>
inline __m512d prefix8(__m512d v) {
  const __m512i id = _mm512_castpd_si512(_mm512_set1_pd(kMul ? 1.0 : 0.0));
  v = op8<kMul>(v, _mm512_castsi512_pd(_mm512_alignr_epi64(_mm512_castpd_si512(v), id, 7)));
  v = op8<kMul>(v, _mm512_castsi512_pd(_mm512_alignr_epi64(_mm512_castpd_si512(v), id, 6)));
  v = op8<kMul>(v, _mm512_castsi512_pd(_mm512_alignr_epi64(_mm512_castpd_si512(v), id, 4)));
  return v;
}
// Suffix sums (or products) within the vector: lane j holds lanes j..7 combined.
template <bool kMul>
inline __m512d suffix8(__m512d v) {
  const __m512i id = _mm512_castpd_si512(_mm512_set1_pd(kMul ? 1.0 : 0.0));
  v = op8<kMul>(v, _mm512_castsi512_pd(_mm512_alignr_epi64(id, _mm512_castpd_si512(v), 1)));
  v = op8<kMul>(v, _mm512_castsi512_pd(_mm512_alignr_epi64(id, _mm512_castpd_si512(v), 2)));
  v = op8<kMul>(v, _mm512_castsi512_pd(_mm512_alignr_epi64(id, _mm512_castpd_si512(v), 4)));
  return v;
}
// kRev: the scan runs from the row's end (cumsum's reverse form, its backward): the ragged
// end first in scalars, then whole vectors down to the start with suffix sums.
template <typename T, bool kMul, bool kRev = false>
void scan_rows_vec(const T* p, T* o, int64_t rows, int64_t n) {
  parallel_for(
      rows,
      [&](int64_t r0, int64_t r1) {
    const __m512i last = _mm512_set1_epi64(kRev ? 0 : 7);
    for (int64_t r = r0; r < r1; ++r) {
      const T* x = p + r * n;
      T* y = o + r * n;
      const auto load = [&](int64_t i) {
        if constexpr (std::is_same_v<T, float>)
          return _mm512_cvtps_pd(_mm256_loadu_ps(x + i));
        else
          return _mm512_loadu_pd(x + i);
      };
      const auto store = [&](int64_t i, __m512d v) {
        if constexpr (std::is_same_v<T, float>)
          _mm256_storeu_ps(y + i, _mm512_cvtpd_ps(v));
        else
          _mm512_storeu_pd(y + i, v);
      };
      if constexpr (kRev) {
        const int64_t whole = n / 8 * 8;
        double acc = kMul ? 1.0 : 0.0;
        for (int64_t i = n - 1; i >= whole; --i) y[i] = static_cast<T>(acc = scan_step<kMul>(acc, x[i]));
        __m512d carry = _mm512_set1_pd(acc);
        for (int64_t i = whole - 8; i >= 0; i -= 8) {
          const __m512d s = suffix8<kMul>(load(i));
          store(i, op8<kMul>(s, carry));
          carry = op8<kMul>(carry, _mm512_permutexvar_pd(last, s));
        }
        continue;
      }
      __m512d carry = _mm512_set1_pd(kMul ? 1.0 : 0.0);
      int64_t i = 0;
      for (; i + 8 <= n; i += 8) {
        const __m512d s = prefix8<kMul>(load(i));
        const __m512d res = op8<kMul>(s, carry);
        // the carry's chain is one operation a vector (the broadcast of s is off it: taking
        // res's last lane instead made cumsum 7% slower)
        carry = op8<kMul>(carry, _mm512_permutexvar_pd(last, s));
        store(i, res);
      }
      double acc = _mm512_cvtsd_f64(carry);
      for (; i < n; ++i) y[i] = static_cast<T>(acc = scan_step<kMul>(acc, x[i]));
    }
      },
      rows * n);
}
#elif OAR_VEC256
// The AVX2 version: 4 double lanes, scan by shifts of 1 and 2 lanes plus a running carry.
template <bool kMul>
inline __m256d op4(__m256d a, __m256d b) {
  return kMul ? _mm256_mul_pd(a, b) : _mm256_add_pd(a, b);
}
template <bool kMul>
inline __m256d prefix4(__m256d v) {
  const __m256d id = _mm256_set1_pd(kMul ? 1.0 : 0.0);
  // [id, v0, v1, v2], then [id, id, v0', v1']
  v = op4<kMul>(v, _mm256_blend_pd(_mm256_permute4x64_pd(v, _MM_SHUFFLE(2, 1, 0, 0)), id, 0x1));
  v = op4<kMul>(v, _mm256_blend_pd(_mm256_permute4x64_pd(v, _MM_SHUFFLE(1, 0, 0, 0)), id, 0x3));
  return v;
}
// Suffix sums within the vector: [v0+v1+v2+v3, v1+v2+v3, v2+v3, v3].
template <bool kMul>
inline __m256d suffix4(__m256d v) {
  const __m256d id = _mm256_set1_pd(kMul ? 1.0 : 0.0);
  // v + [v1, v2, v3, id], then v' + [v2', v3', id, id]
  v = op4<kMul>(v, _mm256_blend_pd(_mm256_permute4x64_pd(v, _MM_SHUFFLE(3, 3, 2, 1)), id, 0x8));
  v = op4<kMul>(v, _mm256_blend_pd(_mm256_permute4x64_pd(v, _MM_SHUFFLE(3, 3, 3, 2)), id, 0xC));
  return v;
}
template <typename T, bool kMul, bool kRev = false>
void scan_rows_vec(const T* p, T* o, int64_t rows, int64_t n) {
  parallel_for(
      rows,
      [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const T* x = p + r * n;
      T* y = o + r * n;
      if constexpr (kRev) {  // as the AVX-512 form: the ragged end first, then whole vectors
        const int64_t whole = n / 4 * 4;
        double acc = kMul ? 1.0 : 0.0;
        for (int64_t i = n - 1; i >= whole; --i) y[i] = static_cast<T>(acc = scan_step<kMul>(acc, x[i]));
        __m256d carry = _mm256_set1_pd(acc);
        for (int64_t i = whole - 4; i >= 0; i -= 4) {
          const __m256d s = suffix4<kMul>(vec::widen(x + i));
          vec::narrow_store(y + i, op4<kMul>(s, carry));
          carry = op4<kMul>(carry, _mm256_permute4x64_pd(s, _MM_SHUFFLE(0, 0, 0, 0)));
        }
        continue;
      }
      __m256d carry = _mm256_set1_pd(kMul ? 1.0 : 0.0);
      int64_t i = 0;
      for (; i + 4 <= n; i += 4) {
        const __m256d s = prefix4<kMul>(vec::widen(x + i));
        const __m256d res = op4<kMul>(s, carry);
        carry = op4<kMul>(carry, _mm256_permute4x64_pd(s, _MM_SHUFFLE(3, 3, 3, 3)));
        vec::narrow_store(y + i, res);
      }
      double acc = _mm256_cvtsd_f64(carry);
      for (; i < n; ++i) y[i] = static_cast<T>(acc = scan_step<kMul>(acc, x[i]));
    }
      },
      rows * n);
}
#endif

template <typename T>
void CumsumKernel(const DeviceContext&, const DenseTensor& x, int64_t axis, bool flatten, bool exclusive, bool reverse,
                  DenseTensor* out) {
  using A = Acc<T>;
#if OAR_VEC
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    ReduceShape rs = scan_shape(x, axis, flatten, "cumsum");
    if (rs.inner == 1 && !exclusive) {
      T* o = out->alloc<T>();
      if (reverse) {  // the backward of a forward cumsum
        scan_rows_vec<T, false, true>(rs.data.data<T>(), o, rs.outer, rs.reduce);
      } else {
        scan_rows_vec<T, false>(rs.data.data<T>(), o, rs.outer, rs.reduce);
      }
      return;
    }
  } else if constexpr (detail::kIsHalf<T>) {
    // 16-bit rows: widened into a float row, float's vector scan (sums in double, each
    // rounded to float), rounded to T; the element loop's double -> float -> T conversions
    // ran a float16 rounding in software per element: [1024, 1024] float16 11.3 ms, bfloat16
    // 2.8 (torch 0.91).
    ReduceShape rs = scan_shape(x, axis, flatten, "cumsum");
    if (rs.inner == 1 && !exclusive && !reverse) {
      T* o = out->alloc<T>();
      const T* p = rs.data.data<T>();
      const int64_t n = rs.reduce;
      auto some_rows = [&](int64_t r0, int64_t r1) {
        std::vector<float> buf(n);
        for (int64_t r = r0; r < r1; ++r) {
          detail::to_floats(p + r * n, buf.data(), n);
          scan_rows_vec<float, false>(buf.data(), buf.data(), 1, n);
          detail::from_floats(buf.data(), o + r * n, n);
        }
      };
      parallel_for(rs.outer, some_rows, rs.outer * n);
      return;
    }
    if (rs.inner > 1 && out->numel() > 0) {
      // 16-bit columns (a scan over a leading axis), as the element loop below computes them
      // (double sums, each rounded to float, then to T), a row of the inner dims at a time:
      // widened into floats, added in one vector loop, rounded back. The element loop
      // converted each element in software: [1024, 1024] float16 down columns 15.5 ms,
      // torch 6.9.
      T* o = out->alloc<T>();
      const T* p = rs.data.data<T>();
      const int64_t n = rs.reduce, inner = rs.inner;
      parallel_for(
          rs.outer,
          [&](int64_t a0, int64_t a1) {
        std::vector<float> buf(inner);
        std::vector<double> acc(inner);
        for (int64_t a = a0; a < a1; ++a) {
          std::fill(acc.begin(), acc.end(), 0.0);
          for (int64_t s = 0; s < n; ++s) {
            const int64_t off = (a * n + (reverse ? n - 1 - s : s)) * inner;
            detail::to_floats(p + off, buf.data(), inner);
            if (exclusive) {
              for (int64_t i = 0; i < inner; ++i) {
                const double v = buf[i];
                buf[i] = static_cast<float>(acc[i]);
                acc[i] += v;
              }
            } else {
              for (int64_t i = 0; i < inner; ++i) buf[i] = static_cast<float>(acc[i] += buf[i]);
            }
            detail::from_floats(buf.data(), o + off, inner);
          }
        }
          },
          rs.outer * n * inner);
      return;
    }
  }
#endif
  scan<T, A>(x, axis, flatten, exclusive, reverse, A(0), out, "cumsum", [](A a, A v) { return a + v; });
}

template <typename T>
void CumprodKernel(const DeviceContext&, const DenseTensor& x, int64_t axis, bool flatten, DenseTensor* out) {
  using A = Acc<T>;
#if OAR_VEC
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    ReduceShape rs = scan_shape(x, axis, flatten, "cumprod");
    if (rs.inner == 1 && out->numel() > 0) {
      T* o = out->alloc<T>();
      scan_rows_vec<T, true>(rs.data.data<T>(), o, rs.outer, rs.reduce);
      return;
    }
  }
#endif
  scan<T, A>(x, axis, flatten, false, false, A(1), out, "cumprod", [](A a, A v) { return a * v; });
}

#if OAR_VEC512
// Note [Running extrema in registers]
// cummax/cummin of float32 rows, a vector of lanes at a time. The step takes `later` over
// `earlier` where it is NaN or not worse (ties go to the later index): a total preorder with
// NaN on top, so the step is associative and scans like a sum: a log-step scan inside each
// vector, then one compare and blend against the running extremum carried from the vectors
// before. Until a NaN shows in a row, "earlier wins" is one strict compare; from then on (the
// carry stays NaN) it takes the unordered test too. A row's tail continues in the scalar loop
// from the carry. The scalar loop waited ~4 cycles an element on its compare and select:
// [1024, 1024] 1.16 -> 0.50 ms on Zen 4 (torch 0.98).
namespace extremum {
constexpr int kW = 16;
using V = __m512;
using I = __m512i;
using K = __mmask16;
inline V load(const float* p) { return _mm512_loadu_ps(p); }
inline I lane_ids(int32_t k) {
  return _mm512_add_epi32(_mm512_set1_epi32(k),
                          _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
}
inline bool any_nan(V v) { return _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q) != 0; }
template <bool kLargest, bool kNaN>
inline K earlier_wins(V earlier, V later) {
  constexpr int kWorse = kLargest ? _CMP_LT_OQ : _CMP_GT_OQ;
  if constexpr (!kNaN) return _mm512_cmp_ps_mask(later, earlier, kWorse);
  // later is an ordered value and not as good; earlier may be NaN (then it wins)
  return _mm512_cmp_ps_mask(later, later, _CMP_ORD_Q) &
         _mm512_cmp_ps_mask(later, earlier, kLargest ? _CMP_NGE_UQ : _CMP_NLE_UQ);
}
inline V pick(K keep, V later, V earlier) { return _mm512_mask_blend_ps(keep, later, earlier); }
inline I pick(K keep, I later, I earlier) { return _mm512_mask_blend_epi32(keep, later, earlier); }
// lanes moved s up, `fill` in lanes 0..s-1
template <int s>
inline V shift(V v, V fill) {
  return _mm512_castsi512_ps(_mm512_alignr_epi32(_mm512_castps_si512(v), _mm512_castps_si512(fill), 16 - s));
}
template <int s>
inline I shift(I v, I fill) {
  return _mm512_alignr_epi32(v, fill, 16 - s);
}
inline V last(V v) { return _mm512_permutexvar_ps(_mm512_set1_epi32(15), v); }
inline I last(I v) { return _mm512_permutexvar_epi32(_mm512_set1_epi32(15), v); }
inline void store(float* y, int64_t* yi, V r, I ri) {
  _mm512_storeu_ps(y, r);
  _mm512_storeu_si512(yi, _mm512_cvtepi32_epi64(_mm512_castsi512_si256(ri)));
  _mm512_storeu_si512(yi + 8, _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(ri, 1)));
}
}  // namespace extremum
#elif OAR_VEC256
// The AVX2 version of Note [Running extrema in registers]: 8 lanes, compares into vectors.
namespace extremum {
constexpr int kW = 8;
using V = __m256;
using I = __m256i;
using K = __m256;
inline V load(const float* p) { return _mm256_loadu_ps(p); }
inline I lane_ids(int32_t k) {
  return _mm256_add_epi32(_mm256_set1_epi32(k), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
inline bool any_nan(V v) { return _mm256_movemask_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)) != 0; }
template <bool kLargest, bool kNaN>
inline K earlier_wins(V earlier, V later) {
  constexpr int kWorse = kLargest ? _CMP_LT_OQ : _CMP_GT_OQ;
  if constexpr (!kNaN) return _mm256_cmp_ps(later, earlier, kWorse);
  return _mm256_and_ps(_mm256_cmp_ps(later, later, _CMP_ORD_Q),
                       _mm256_cmp_ps(later, earlier, kLargest ? _CMP_NGE_UQ : _CMP_NLE_UQ));
}
inline V pick(K keep, V later, V earlier) { return _mm256_blendv_ps(later, earlier, keep); }
inline I pick(K keep, I later, I earlier) {
  return _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(later), _mm256_castsi256_ps(earlier), keep));
}
template <int s>
inline V shift(V v, V fill) {
  const __m256i up = _mm256_setr_epi32(0, 1 - s, 2 - s, 3 - s, 4 - s, 5 - s, 6 - s, 7 - s);
  return _mm256_blend_ps(_mm256_permutevar8x32_ps(v, _mm256_max_epi32(up, _mm256_setzero_si256())), fill, (1 << s) - 1);
}
template <int s>
inline I shift(I v, I fill) {
  return _mm256_castps_si256(shift<s>(_mm256_castsi256_ps(v), _mm256_castsi256_ps(fill)));
}
inline V last(V v) { return _mm256_permutevar8x32_ps(v, _mm256_set1_epi32(7)); }
inline I last(I v) { return _mm256_permutevar8x32_epi32(v, _mm256_set1_epi32(7)); }
inline void store(float* y, int64_t* yi, V r, I ri) {
  _mm256_storeu_ps(y, r);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(yi), _mm256_cvtepi32_epi64(_mm256_castsi256_si128(ri)));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(yi + 4), _mm256_cvtepi32_epi64(_mm256_extracti128_si256(ri, 1)));
}
}  // namespace extremum
#endif

#if OAR_VEC
namespace extremum {
// The extremum of lanes 0..j and its index in lane j, `none` shifted in before lane 0.
template <bool kLargest, bool kNaN>
inline void scan(V& v, I& vi, V none) {
  const I zero = I{};
  const auto step = [&]<int s>() {
    const V e = shift<s>(v, none);
    const I ei = shift<s>(vi, zero);
    const K keep = earlier_wins<kLargest, kNaN>(e, v);
    v = pick(keep, v, e);
    vi = pick(keep, vi, ei);
  };
  step.template operator()<1>();
  step.template operator()<2>();
  step.template operator()<4>();
  if constexpr (kW == 16) step.template operator()<8>();
}

// Whole vectors of row x (n < 2^31 values: int32 lanes hold the indices); returns how many
// values it did, with the running extremum and its index in best/at.
template <bool kLargest>
int64_t rows_prefix(const float* x, float* y, int64_t* yi, int64_t n, float& best, int64_t& at) {
  constexpr float kNone = kLargest ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
  const V none = V{} + kNone;  // loses to everything
  V carry = none;              // the extremum so far and its index, in every lane
  I carry_i = I{};
  bool nan = false;  // once a NaN is the carry, every later vector takes the full compares
  int64_t k = 0;
  for (; k + kW <= n; k += kW) {
    V v = load(x + k);
    I vi = lane_ids(static_cast<int32_t>(k));
    nan = nan || any_nan(v);
    K from_carry;
    if (!nan) {
      scan<kLargest, false>(v, vi, none);
      from_carry = earlier_wins<kLargest, false>(carry, v);
    } else {
      scan<kLargest, true>(v, vi, none);
      from_carry = earlier_wins<kLargest, true>(carry, v);
    }
    store(y + k, yi + k, pick(from_carry, v, carry), pick(from_carry, vi, carry_i));
    // the carry's chain is one compare and blend a vector: v's last lane is broadcast off it
    const V b = last(v);
    const K keep = nan ? earlier_wins<kLargest, true>(carry, b) : earlier_wins<kLargest, false>(carry, b);
    carry = pick(keep, b, carry);
    carry_i = pick(keep, last(vi), carry_i);
  }
  if (k > 0) {
    best = y[k - 1];
    at = yi[k - 1];
  }
  return k;
}
}  // namespace extremum
#endif

// cum_extremum along the last axis, rows [a0, a1) of [rows, n], one at a time (float32 rows
// start in vectors, Note [Running extrema in registers]). Everything the loop reads is a
// local or an argument: captured by reference, n and `largest` were reloaded after every
// store (Note [Kernel closures in registers]). The value stored is the extremum itself, whose
// bits are x's at the index (NaN payloads included). Interleaving 4 rows made float64 and
// int64 3x slower: rows 8 KiB apart alias in the store buffer's 4 KiB check.
template <typename T, bool kLargest>
void cum_extremum_rows(const T* p, T* vo, int64_t* o, int64_t n, int64_t a0, int64_t a1) {
  using M = OpMath<T>;
  for (int64_t a = a0; a < a1; ++a) {
    const T* x = p + a * n;
    T* y = vo + a * n;
    int64_t* yi = o + a * n;
    M best = static_cast<M>(x[0]);
    int64_t at = 0;
    int64_t k = 0;
#if OAR_VEC
    if constexpr (std::is_same_v<T, float>) {
      if (n <= std::numeric_limits<int32_t>::max()) k = extremum::rows_prefix<kLargest>(x, y, yi, n, best, at);
    }
#endif
    if (k == 0) {
      yi[0] = 0;
      y[0] = x[0];
      k = 1;
    }
    for (; k < n; ++k) {
      const M v = static_cast<M>(x[k]);
      const bool take = v != v || (kLargest ? v >= best : v <= best);
      best = take ? v : best;
      at = take ? k : at;
      yi[k] = at;
      y[k] = static_cast<T>(best);
    }
  }
}

// cummax / cummin (nn's cum_extremum): along the axis, the running extremum and the index of
// it, the latest one on ties, and the latest NaN once one is seen (NaN propagates). Lanes of
// [outer, n, inner] in row order. A log-depth scan of where/concat took 39 ms on [1024, 1024]
// against torch's 0.87; the indices alone here and the values gathered by take_along_axis,
// 6.4-7.2 ms.
template <typename T>
void CumExtremumKernel(const DeviceContext&, const DenseTensor& x, int64_t axis, bool largest, DenseTensor* values,
                       DenseTensor* out) {
  T* vo = values->alloc<T>();
  int64_t* o = out->alloc<int64_t>();
  if (out->numel() == 0) return;
  using M = OpMath<T>;
  ReduceShape rs = scan_shape(x, axis, false, "cum_extremum");
  const T* p = rs.data.data<T>();
  const int64_t n = rs.reduce, inner = rs.inner;
  // One step of the scan: a NaN is taken (and kept until the next NaN), ties go to the later k.
  const auto step = [largest](M v, int64_t k, M& best, int64_t& at) {
    const bool take = v != v || (largest ? v >= best : v <= best);
    best = take ? v : best;
    at = take ? k : at;
  };
  parallel_for(
      rs.outer,
      [&](int64_t a0, int64_t a1) {
    if (inner == 1) {  // along the last axis: the running extremum and its index in registers
      if (largest) {
        cum_extremum_rows<T, true>(p, vo, o, n, a0, a1);
      } else {
        cum_extremum_rows<T, false>(p, vo, o, n, a0, a1);
      }
      return;
    }
    std::vector<M> best(static_cast<size_t>(inner));
    std::vector<int64_t> at(static_cast<size_t>(inner));
    for (int64_t a = a0; a < a1; ++a) {
      const T* xa = p + a * n * inner;
      int64_t* oa = o + a * n * inner;
      T* va = vo + a * n * inner;
      for (int64_t i = 0; i < inner; ++i) {
        best[i] = static_cast<M>(xa[i]);
        at[i] = 0;
        oa[i] = 0;
        va[i] = xa[i];
      }
      for (int64_t k = 1; k < n; ++k) {
        for (int64_t i = 0; i < inner; ++i) {
          step(static_cast<M>(xa[k * inner + i]), k, best[i], at[i]);
          oa[k * inner + i] = at[i];
          va[k * inner + i] = xa[at[i] * inner + i];
        }
      }
    }
      },
      rs.outer * n * inner);
}

double log_add_exp(double a, double b) {
  if (a == b) return a + 0.6931471805599453;  // also -inf + -inf and inf + inf
  const double m = std::max(a, b), d = std::min(a, b) - m;
  if (m != m || d != d) return std::numeric_limits<double>::quiet_NaN();
  return m + std::log1p(std::exp(d));
}

template <typename T>
void LogcumsumexpKernel(const DeviceContext&, const DenseTensor& x, int64_t axis, bool flatten, bool exclusive,
                        bool reverse, DenseTensor* out) {
  scan<T, double>(x, axis, flatten, exclusive, reverse, -std::numeric_limits<double>::infinity(), out, "logcumsumexp",
                  log_add_exp);
}

// d cumprod / dx_i = sum_{j >= i} g_j prod_{k <= j, k != i} x_k, exact with zeros: before
// the first zero z the usual (reverse cumsum of g * out) / x_i; at z a forward pass of
// prod_{k < z} x_k times running products after z; after z zero.
template <typename T>
void CumprodGradKernel(const DeviceContext&, const DenseTensor& x, const DenseTensor& out_t, const DenseTensor& grad,
                       int64_t axis, bool flatten, DenseTensor* dx) {
  T* d = dx->alloc<T>();
  if (dx->numel() == 0) return;
  ReduceShape rx = scan_shape(x, axis, flatten, "cumprod");
  // out and grad have x's dims (or are flat with flatten), so they share its [outer, n, inner] view.
  DenseTensor oc = contiguous(out_t), gc = contiguous(grad);
  ReduceShape ro = scan_shape(oc, axis, flatten, "cumprod"), rg = scan_shape(gc, axis, flatten, "cumprod");
  const T* px = rx.data.data<T>();
  const T* po = ro.data.data<T>();
  const T* pg = rg.data.data<T>();
  const int64_t n = rx.reduce, inner = rx.inner;
  std::vector<T> res(dx->numel());
  parallel_for(
      rx.outer * inner,
      [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      const int64_t a = t / inner, i = t % inner;
      auto at = [&](int64_t k) { return (a * n + k) * inner + i; };
      auto X = [&](int64_t k) { return static_cast<double>(static_cast<OpMath<T>>(px[at(k)])); };
      auto O = [&](int64_t k) { return static_cast<double>(static_cast<OpMath<T>>(po[at(k)])); };
      auto G = [&](int64_t k) { return static_cast<double>(static_cast<OpMath<T>>(pg[at(k)])); };
      int64_t z = n;
      for (int64_t k = 0; k < n; ++k) {
        if (X(k) == 0) {
          z = k;
          break;
        }
      }
      double rs = 0;  // sum_{j >= k, j < z} g_j out_j
      for (int64_t k = std::min(z, n) - 1; k >= 0; --k) {
        rs += G(k) * O(k);
        res[at(k)] = static_cast<T>(static_cast<OpMath<T>>(rs / X(k)));
      }
      if (z < n) {
        const double before = z > 0 ? O(z - 1) : 1.0;
        double run = before, s = 0;
        for (int64_t j = z; j < n; ++j) {
          if (j > z) run *= X(j);
          s += G(j) * run;
        }
        res[at(z)] = static_cast<T>(static_cast<OpMath<T>>(s));
        for (int64_t k = z + 1; k < n; ++k) res[at(k)] = static_cast<T>(static_cast<OpMath<T>>(0.0));
      }
    }
      },
      rx.outer * n * inner);
  // res is in the [outer, n, inner] layout of the reduced axis, which is x's own layout.
  std::copy(res.begin(), res.end(), d);
}

}  // namespace
}  // namespace oar::phi

using namespace oar::phi;  // NOLINT

OAR_REGISTER_KERNEL(cumsum, CPU, CumsumKernel, OAR_NUMERIC_TYPES)
OAR_REGISTER_KERNEL(cumprod, CPU, CumprodKernel, OAR_NUMERIC_TYPES)
OAR_REGISTER_KERNEL(cum_extremum, CPU, CumExtremumKernel, float, double, ::oar::float16, ::oar::bfloat16, int32_t,
                    int64_t)
OAR_REGISTER_KERNEL(cumprod_grad, CPU, CumprodGradKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(logcumsumexp, CPU, LogcumsumexpKernel, OAR_FLOAT_TYPES)
