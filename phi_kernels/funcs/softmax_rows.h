// Building blocks of the row-wise softmax kernels (softmax, log_softmax, their
// gradients and the fused cross-entropy): an exp that vectorizes, and max /
// sum-of-exp reductions over one row (contiguous, or strided along `stride`).
// Include only from kernel .cc files.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "paddle_core/tensor/dims.h"
#include "paddle_core/tensor/dtype.h"
#include "phi_kernels/cpu/dispatch/isa_namespace.h"
#include "phi_kernels/cpu/vec_math.h"

namespace oar::phi {
// Per-ISA names for this header's inline code (isa_namespace.h).
inline namespace OAR_ISA_NS {

/// exp(x) for float, written branch-free so `omp simd` loops vectorize it (libm's
/// expf is an opaque call): vec::exp's arithmetic (its reduction x = n ln2 + r, |r| <=
/// ln2/2, and polynomial vec::kExpQ), so 0.891 ulp at worst where the ISA's build contracts
/// to FMAs (AVX2, AVX-512). exp(-inf) = 0, exp(nan) = nan; 0 below vec::kExpLo, whose
/// scaling stays above FLT_MIN (a subnormal product costs a microcode assist per vector on
/// Intel: Note [Subnormal results on Intel]).
[[gnu::always_inline]] inline float exp_simd(float x) {
  constexpr float kHi = vec::kExpHi, kLo = vec::kExpLo;
  // NaN clamps to kLo (every comparison with it is false), so t below is finite. The result
  // for a NaN input is NaN all the same (the last line).
  const float xc = x > kHi ? kHi : (x >= kLo ? x : kLo);
  // n rounded to nearest in the sum itself, whose low bits are n + 127 (vec::exp_reduce;
  // floorf does not vectorize without -ffast-math)
  const float t = xc * vec::kLog2e + vec::kExpBias;
  const float n = t - vec::kExpBias;
  const float r = xc - n * vec::kLn2Hi - n * vec::kLn2Lo;
  constexpr const auto& q = vec::kExpQ;
  float p = q[4];
  p = p * r + q[3];
  p = p * r + q[2];
  p = p * r + q[1];
  p = p * r + q[0];
  p = (p * r + 1.0f) * r + 1.0f;  // vec::exp_poly's form
  const float y = p * std::bit_cast<float>(std::bit_cast<uint32_t>(t) << 23);
  return x != x ? x : (x < kLo ? 0.0f : (x > kHi ? std::numeric_limits<float>::infinity() : y));
}
inline double exp_simd(double x) { return std::exp(x); }

/// A tensor viewed as [outer, n, inner] around one axis (rows of length n, stride inner).
struct AxisSplit {
  int64_t outer = 1, n = 1, inner = 1;
};
inline AxisSplit split_at_axis(const Dims& d, int axis) {
  AxisSplit s;
  for (int i = 0; i < d.size(); ++i) {
    if (i < axis) s.outer *= d[i];
    else if (i == axis) s.n = d[i];
    else s.inner *= d[i];
  }
  return s;
}

/// A row of `n` elements `stride` apart (stride 1: contiguous, the fast path).
template <typename T>
struct Row {
  const T* p;
  int64_t n;
  int64_t stride;
  OpMath<T> operator[](int64_t i) const { return static_cast<OpMath<T>>(p[i * stride]); }
};

/// max of a row (-inf for an empty row).
template <bool kUnit, typename T>
OpMath<T> row_max(const Row<T>& r) {
  using M = OpMath<T>;
  const T* p = r.p;  // locals: stores elsewhere cannot alias them, so loops vectorize
  const int64_t n = r.n;
  M m = -std::numeric_limits<M>::infinity();
#if OAR_VEC
  // max(v, m) == (v > m ? v : m), NaN skipped. Written with vectors for double too: gcc
  // leaves the `omp simd` loop below scalar, one vmaxss/vmaxsd per element, bound by its
  // latency (4 cycles on Intel's cores, 1M floats 1.5 ms; Note [Scalar max loops]).
  if constexpr (kUnit && (std::is_same_v<T, float> || std::is_same_v<T, double>)) {
    using V = typename vec::Of<T>::type;
    constexpr int L = vec::Of<T>::lanes;
    int64_t i = 0;
    if (n >= 4 * L) {  // four accumulators: vmaxps has a latency of 4 and a throughput of 1-2
      V m0 = vec::set1(m), m1 = m0, m2 = m0, m3 = m0;
      for (; i + 4 * L <= n; i += 4 * L) {
        m0 = vec::max(vec::load(p + i), m0);
        m1 = vec::max(vec::load(p + i + L), m1);
        m2 = vec::max(vec::load(p + i + 2 * L), m2);
        m3 = vec::max(vec::load(p + i + 3 * L), m3);
      }
      m = vec::hmax(vec::max(vec::max(m0, m1), vec::max(m2, m3)));
    }
    for (; i < n; ++i) m = p[i] > m ? p[i] : m;
    return m;
  }
#endif
  if constexpr (kUnit) {
#pragma omp simd reduction(max : m)
    for (int64_t i = 0; i < n; ++i) {
      const M v = static_cast<M>(p[i]);
      m = v > m ? v : m;
    }
  } else {
    for (int64_t i = 0; i < n; ++i) m = r[i] > m ? r[i] : m;
  }
  return m;
}

/// sum_i exp(x_i - shift) for the row's max `shift` (every x_i - shift is <= 0 or NaN:
/// vec::exp_nonpos); when `store` is given, also writes the exps there (with the row's
/// stride).
template <bool kUnit, typename T, typename M = OpMath<T>>
M row_sum_exp(const Row<T>& r, M shift, M* store = nullptr) {
  const T* p = r.p;
  const int64_t n = r.n, st = r.stride;
  M s = 0;
#if OAR_VEC
  if constexpr (kUnit && (std::is_same_v<T, float> || std::is_same_v<T, double>)) {
    // two accumulators; float on vec::exp_nonpos, double on SLEEF's exp (1 ulp: libm's is a
    // call per element)
    using V = typename vec::Of<T>::type;
    constexpr int L = vec::Of<T>::lanes;
    auto vexp = [](V v) {
      if constexpr (std::is_same_v<T, float>) {
        return vec::exp_nonpos(v);
      } else {
        return OAR_SLEEF_D(exp, u10)(v);
      }
    };
    const V vs = vec::set1(shift);
    V a0 = vec::set1(T(0)), a1 = a0;
    int64_t i = 0;
    for (; i + 2 * L <= n; i += 2 * L) {
      const V e0 = vexp(vec::sub(vec::load(p + i), vs));
      const V e1 = vexp(vec::sub(vec::load(p + i + L), vs));
      if (store) {
        vec::store(store + i, e0);
        vec::store(store + i + L, e1);
      }
      a0 = vec::add(a0, e0);
      a1 = vec::add(a1, e1);
    }
    s = vec::hsum(vec::add(a0, a1));
    for (; i < n; ++i) {
      const M e = exp_simd(static_cast<M>(p[i]) - shift);
      if (store) store[i] = e;
      s += e;
    }
    return s;
  }
#endif
  if constexpr (kUnit) {
    if (store) {
#pragma omp simd reduction(+ : s)
      for (int64_t i = 0; i < n; ++i) {
        const M e = exp_simd(static_cast<M>(p[i]) - shift);
        store[i] = e;
        s += e;
      }
    } else {
#pragma omp simd reduction(+ : s)
      for (int64_t i = 0; i < n; ++i) s += exp_simd(static_cast<M>(p[i]) - shift);
    }
  } else {
    for (int64_t i = 0; i < n; ++i) {
      const M e = exp_simd(static_cast<M>(p[i * st]) - shift);
      if (store) store[i * st] = e;
      s += e;
    }
  }
  return s;
}

/// Rows up to this length are processed a chunk of rows at a time: per-row loops
/// that short cost more in loop overhead than in arithmetic, so the exps of a whole
/// chunk (contiguous memory) are computed by one long vectorized loop instead.
constexpr int64_t kShortRow = 32;
/// Elements per chunk on the short-row path (the size of the caller's buffers).
constexpr int64_t kChunkElems = 1024;
/// Rows per chunk for rows of length n.
inline int64_t rows_per_chunk(int64_t n) {
  return n > 0 ? std::max<int64_t>(1, kChunkElems / n) : 1;
}

/// For `rows` contiguous rows of length n (rows * n <= kChunkElems): each row's max,
/// its sum of exp(x - max), and the exps themselves in e[rows * n].
template <typename T, typename M = OpMath<T>>
void short_rows_exp(const T* x, int64_t rows, int64_t n, M* mx, M* sum, M* e) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * n;
    M m = -std::numeric_limits<M>::infinity();
    for (int64_t i = 0; i < n; ++i) m = static_cast<M>(xr[i]) > m ? static_cast<M>(xr[i]) : m;
    mx[r] = m;
    for (int64_t i = 0; i < n; ++i) e[r * n + i] = static_cast<M>(xr[i]) - m;
  }
  const int64_t total = rows * n;
#pragma omp simd
  for (int64_t k = 0; k < total; ++k) e[k] = exp_simd(e[k]);
  for (int64_t r = 0; r < rows; ++r) {
    M s = 0;
    for (int64_t i = 0; i < n; ++i) s += e[r * n + i];
    sum[r] = s;
  }
}

}  // namespace OAR_ISA_NS
}  // namespace oar::phi
