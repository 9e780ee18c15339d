// Reductions over a set of axes, shared by sum/mean/prod/max/min and the
// broadcast-gradient reduction sum_to. Include only from kernel .cc files.
#pragma once

#include <omp.h>

#include <algorithm>
#include <vector>

#include "paddle_core/tensor/dense_tensor.h"
#include "phi_kernels/cpu/dispatch/isa_namespace.h"
#include "phi_kernels/cpu/elementwise.h"
#include "phi_kernels/cpu/vec_math.h"

namespace oar::phi {

/// The input viewed as [outer, reduce, inner] (contiguous), copying/permuting when the
/// reduced axes are not one contiguous block.
struct ReduceShape {
  DenseTensor data;
  int64_t outer = 1, reduce = 1, inner = 1;
};
ReduceShape make_reduce_shape(const DenseTensor& x, const std::vector<int>& axes);

// Per-ISA names for this header's inline code (isa_namespace.h).
inline namespace OAR_ISA_NS {

/// out[o, i] = post(fold(init, x[o, r, i] for r), reduce) with accumulator type Acc.
template <typename T, typename Acc, typename Out, typename Fold, typename Post>
void reduce_kernel(const DenseTensor& x, const std::vector<int>& axes, DenseTensor* out,
                   Acc init, Fold fold, Post post) {
  Out* o = out->alloc<Out>();
  if (out->numel() == 0) return;
  ReduceShape rs = make_reduce_shape(x, axes);
  const T* p = rs.data.data<T>();
  const int64_t outer = rs.outer, R = rs.reduce, inner = rs.inner;
  const int64_t cost = outer * R * inner;
  if (inner == 1) {
    parallel_for(outer, [&](int64_t a0, int64_t a1) {
      for (int64_t a = a0; a < a1; ++a) {
        const T* row = p + a * R;
        Acc acc = init;
        for (int64_t r = 0; r < R; ++r) acc = fold(acc, static_cast<Acc>(static_cast<OpMath<T>>(row[r])));
        o[a] = static_cast<Out>(post(acc, R));
      }
    }, cost);
    return;
  }
  parallel_for(
      outer,
      [&](int64_t a0, int64_t a1) {
    std::vector<Acc> buf(inner);
    // the pointers and sizes as locals: 1-byte accumulators or outputs (uint8 max) may alias anything
    // the closure holds (Note [Byte stores and captured pointers], elementwise.h): [1024,
    // 1024] uint8 max over axis 0 took 0.46 ms, 23x torch
    Acc* const acc = buf.data();
    Out* const po = o;
    const T* const px = p;
    const int64_t n = inner, rows = R;  // the loop bounds too
    for (int64_t a = a0; a < a1; ++a) {
      std::fill(acc, acc + n, init);
      for (int64_t r = 0; r < rows; ++r) {
        const T* row = px + (a * rows + r) * n;
        for (int64_t i = 0; i < n; ++i) acc[i] = fold(acc[i], static_cast<Acc>(static_cast<OpMath<T>>(row[i])));
      }
      for (int64_t i = 0; i < n; ++i) po[a * n + i] = static_cast<Out>(post(acc[i], rows));
    }
      },
      cost);
}

#if OAR_VEC
// Four independent vector accumulators: the adds pipeline instead of waiting on each other.
template <typename T>
struct VecSum4 {
  using V = typename vec::Of<T>::type;
  static constexpr int L = vec::Of<T>::lanes;
  V a0 = vec::set1(T(0)), a1 = a0, a2 = a0, a3 = a0;
  // Adds the longest prefix of p[0, n) that is a whole number of vectors (NaNs as 0 with
  // kSkipNan), four at a time, then one at a time; returns its length. The single vectors
  // (and add_tail's masked load) serve short rows: a [8, 512, 7, 7] mean over the 7x7 maps
  // added its rows of 49 one element at a time (68 us at 1 thread on Zen 4, torch 30).
  template <bool kSkipNan = false>
  int64_t add(const T* p, int64_t n) {
    auto ld = [p](int64_t i) {
      const V v = vec::load(p + i);
      if constexpr (kSkipNan) return vec::zero_nan(v);
      return v;
    };
    int64_t r = 0;
    for (; r + 4 * L <= n; r += 4 * L) {
      a0 = vec::add(a0, ld(r));
      a1 = vec::add(a1, ld(r + L));
      a2 = vec::add(a2, ld(r + 2 * L));
      a3 = vec::add(a3, ld(r + 3 * L));
    }
    if (r + L <= n) a0 = vec::add(a0, ld(r)), r += L;
    if (r + L <= n) a1 = vec::add(a1, ld(r)), r += L;
    if (r + L <= n) a2 = vec::add(a2, ld(r)), r += L;
    return r;
  }
  // Adds p[0, n), n < L, through a masked load (NaNs as 0 with kSkipNan).
  template <bool kSkipNan = false>
  void add_tail(const T* p, int64_t n) {
    V v = vec::load_first(p, n);
    if constexpr (kSkipNan) v = vec::zero_nan(v);
    a3 = vec::add(a3, v);
  }
  // The same for float16 at p, converted in registers by F16C (T = float): the same vector
  // sums, in the same order as add() over the converted floats (the caller adds the tail).
  template <bool kSkipNan = false>
  int64_t add_halves(const float16* p, int64_t n) {
    static_assert(std::is_same_v<T, float>, "add_halves: float sums");
    auto cvt = [p](int64_t i) {
#if defined(__AVX512F__)
      const V v = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i)));
#else
      const V v = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i)));
#endif
      if constexpr (kSkipNan) return vec::zero_nan(v);
      return v;
    };
    static_assert(std::is_same_v<decltype(cvt(0)), V>, "add_halves: one conversion a vector");
    int64_t r = 0;
    for (; r + 4 * L <= n; r += 4 * L) {
      a0 = vec::add(a0, cvt(r));
      a1 = vec::add(a1, cvt(r + L));
      a2 = vec::add(a2, cvt(r + 2 * L));
      a3 = vec::add(a3, cvt(r + 3 * L));
    }
    if (r + L <= n) a0 = vec::add(a0, cvt(r)), r += L;
    if (r + L <= n) a1 = vec::add(a1, cvt(r)), r += L;
    if (r + L <= n) a2 = vec::add(a2, cvt(r)), r += L;
    return r;
  }
  T total() const { return vec::hsum(vec::add(vec::add(a0, a1), vec::add(a2, a3))); }
};
#endif

// Note [Column sums in row order]: a sum over a middle axis of [outer, R, inner] (sum axis=0
// of a matrix) used to walk 256-column blocks down all R rows: each row a 1 KiB piece, 4 KiB
// or more from the next, which the hardware prefetcher followed worse than a stream ([1024,
// 1024] 0.175 ms on the Xeon, where a flat sum of the same 4 MiB takes 0.143). Rows up to
// kColumnSumRows elements long are now added whole, in memory order, into per-chunk sums.
constexpr int64_t kColumnSumRows = 8192;

// Note [Sums apart from their rows]: a column sum loads acc[j], a row's x[j] and stores
// acc[j] again. Where acc lies a little after the rows modulo 4 KiB, the next loads of x
// match the low 12 bits of stores still in flight, and the core waits on each as if they
// aliased. The sums' buffer comes from malloc, so a process either hit that or not: a
// [1024, 1024] float sum along axis 0 took 55 or 70 us at 1 thread on Zen 4 from one process
// to the next ([256, 4096]: 61 or 83). The sums are placed half a page from the rows' offset.
template <typename Acc>
Acc* apart_from(std::vector<Acc>& buf, size_t count, const void* rows) {
  constexpr size_t kPage = 4096, kLine = 64;
  buf.resize(count + (kPage + kLine) / sizeof(Acc));
  const auto base = reinterpret_cast<uintptr_t>(buf.data());
  const uintptr_t want = (reinterpret_cast<uintptr_t>(rows) + kPage / 2) % kPage / kLine * kLine;
  return reinterpret_cast<Acc*>(base + (want + kPage - base % kPage) % kPage);
}

/// Sum specialised for speed: vectorized row sums with several partial accumulators. With
/// kSkipNan (nansum), NaN entries add 0: one compare and mask a vector on the same passes.
template <typename T, typename Acc, typename Out, bool kSkipNan = false>
void sum_kernel(const DenseTensor& x, const std::vector<int>& axes, DenseTensor* out, bool mean) {
  Out* o = out->alloc<Out>();
  if (out->numel() == 0) return;
  ReduceShape rs = make_reduce_shape(x, axes);
  const T* p = rs.data.data<T>();
  const int64_t outer = rs.outer, R = rs.reduce, inner = rs.inner;
  const Acc scale = mean ? Acc(1) / static_cast<Acc>(R) : Acc(1);
  const int64_t cost = outer * R * inner;
  // an element as Acc (0 for a NaN with kSkipNan)
  auto val = [](T v) {
    const Acc a = static_cast<Acc>(static_cast<OpMath<T>>(v));
    if constexpr (kSkipNan) return a == a ? a : Acc(0);
    return a;
  };
  auto row_sum = [&val](const T* row, int64_t n) {
#if OAR_VEC
    if constexpr (std::is_same_v<T, float16> && std::is_same_v<Acc, float>) {
      // float16 converted by F16C in registers and added as float. (Through a stack block,
      // Note [float16 rows in blocks], 1M halves took 0.098 ms on the Xeon; now 0.039.)
      VecSum4<float> acc;
      float tail = 0;
      for (int64_t r = acc.template add_halves<kSkipNan>(row, n); r < n; ++r) tail += val(row[r]);
      return acc.total() + tail;
    }
    if constexpr (std::is_same_v<T, Acc> && (std::is_same_v<T, float> || std::is_same_v<T, double>)) {
      VecSum4<T> acc;
      const int64_t done = acc.template add<kSkipNan>(row, n);
      if (done < n) acc.template add_tail<kSkipNan>(row + done, n - done);
      return acc.total();
    }
#endif
    if constexpr (sizeof(T) == 1 && std::is_integral_v<T> && std::is_integral_v<Acc>) {
      // bool, int8, uint8: bytes read as bytes and added in 32-bit lanes over blocks too short
      // to overflow them, then into Acc. GCC kept the loop below scalar on `bool` loads (1M
      // bools into int64 0.43 ms, what count_nonzero and a mask's sum spend).
      using B = std::conditional_t<std::is_signed_v<T>, int8_t, uint8_t>;
      using L = std::conditional_t<std::is_signed_v<T>, int32_t, uint32_t>;
      const B* b = reinterpret_cast<const B*>(row);
      Acc acc = 0;
      for (int64_t s = 0; s < n; s += int64_t{1} << 16) {
        const int64_t e = std::min<int64_t>(n, s + (int64_t{1} << 16));
        L part = 0;
#pragma omp simd reduction(+ : part)
        for (int64_t r = s; r < e; ++r) part += static_cast<L>(b[r]);
        acc += static_cast<Acc>(part);
      }
      return acc;
    }
    Acc acc = 0;
#pragma omp simd reduction(+ : acc)
    for (int64_t r = 0; r < n; ++r) acc += val(row[r]);
    return acc;
  };
  if (inner == 1) {
    if (outer == 1) {  // one long row: partial sums per thread, added in a fixed order
      Acc partial[64] = {};
      const int64_t nchunks = std::min<int64_t>(64, std::max<int64_t>(1, R / kParallelGrain));
      const int64_t chunk = (R + nchunks - 1) / nchunks;
      parallel_for(nchunks, [&](int64_t c0, int64_t c1) {
        for (int64_t c = c0; c < c1; ++c) {
          const int64_t b = c * chunk, e = std::min(R, b + chunk);
          partial[c] = b < e ? row_sum(p + b, e - b) : Acc(0);
        }
      }, R);
      Acc total = 0;
      for (int64_t c = 0; c < nchunks; ++c) total += partial[c];
      o[0] = static_cast<Out>(total * scale);
      return;
    }
    parallel_for(outer, [&](int64_t a0, int64_t a1) {
      for (int64_t a = a0; a < a1; ++a) o[a] = static_cast<Out>(row_sum(p + a * R, R) * scale);
    }, cost);
    return;
  }
  // Column sums over rows short enough that a row's sums stay in L1/L2 (Note [Column sums in
  // row order]): each task adds whole rows, in memory order, into its own `inner` sums; R is
  // split into chunks fixed by the shape alone (so the bits do not depend on the thread
  // count), whose sums are added in chunk order.
  if (inner <= kColumnSumRows) {
    const int64_t nchunks = std::clamp<int64_t>(R * inner / (8 * kParallelGrain), 1, std::clamp<int64_t>(R, 1, 16));
    const int64_t chunk = (R + nchunks - 1) / nchunks;
    auto add_rows = [&](Acc* acc, int64_t a, int64_t r0, int64_t r1) {
      const int64_t m = inner;  // a local: the intrinsics' stores may alias the closure
      for (int64_t r = r0; r < r1; ++r) {
        const T* row = p + (a * R + r) * m;
        int64_t i = 0;
#if OAR_VEC
        if constexpr (std::is_same_v<T, float16> && std::is_same_v<Acc, float>) {
          // F16C, as row_sum: float16's own conversion is integer code, which made a
          // [1024, 1024] float16 sum along axis 0 2.0x torch's time on the Xeon.
#if defined(__AVX512F__)
          for (; i + 16 <= m; i += 16) {
            __m512 v = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + i)));
            if constexpr (kSkipNan) v = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(v, v, _CMP_ORD_Q), v);
            _mm512_storeu_ps(acc + i, _mm512_add_ps(_mm512_loadu_ps(acc + i), v));
          }
#endif
          for (; i + 8 <= m; i += 8) {
            __m256 v = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + i)));
            if constexpr (kSkipNan) v = _mm256_and_ps(v, _mm256_cmp_ps(v, v, _CMP_ORD_Q));
            _mm256_storeu_ps(acc + i, _mm256_add_ps(_mm256_loadu_ps(acc + i), v));
          }
        }
#endif
#pragma omp simd
        for (int64_t j = i; j < m; ++j) acc[j] += val(row[j]);
      }
    };
    if (nchunks == 1) {  // one task per output row, through one buffer per parallel chunk
      parallel_for(
          outer,
          [&](int64_t a0, int64_t a1) {
        std::vector<Acc> buf;
        Acc* acc = apart_from(buf, static_cast<size_t>(inner), p);
        for (int64_t a = a0; a < a1; ++a) {
          std::fill(acc, acc + inner, Acc(0));
          add_rows(acc, a, 0, R);
          for (int64_t i = 0; i < inner; ++i) o[a * inner + i] = static_cast<Out>(acc[i] * scale);
        }
          },
          cost);
      return;
    }
    std::vector<Acc> buf;
    Acc* partial = apart_from(buf, static_cast<size_t>(outer * nchunks * inner), p);
    std::fill(partial, partial + outer * nchunks * inner, Acc(0));
    parallel_for(
        outer * nchunks,
        [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t c = t % nchunks, r0 = c * chunk;
        add_rows(partial + t * inner, t / nchunks, r0, std::min(R, r0 + chunk));
      }
        },
        cost);
    parallel_for(
        outer,
        [&](int64_t a0, int64_t a1) {
      for (int64_t a = a0; a < a1; ++a) {
        const Acc* first = partial + a * nchunks * inner;
        for (int64_t i = 0; i < inner; ++i) {
          Acc v = first[i];
          for (int64_t c = 1; c < nchunks; ++c) v += first[c * inner + i];
          o[a * inner + i] = static_cast<Out>(v * scale);
        }
      }
        },
        outer * nchunks * inner);
    return;
  }
  // Longer rows: parallel over (outer, inner blocks), accumulate rows in order.
  const int64_t block = 256;
  const int64_t nblocks = (inner + block - 1) / block;
  parallel_for(outer * nblocks, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t a = t / nblocks, b = t % nblocks;
      const int64_t i0 = b * block, i1 = std::min(inner, i0 + block);
      Acc acc[256];
      for (int64_t i = i0; i < i1; ++i) acc[i - i0] = 0;
      for (int64_t r = 0; r < R; ++r) {
        const T* row = p + (a * R + r) * inner;
#pragma omp simd
        for (int64_t i = i0; i < i1; ++i) acc[i - i0] += val(row[i]);
      }
      for (int64_t i = i0; i < i1; ++i) o[a * inner + i] = static_cast<Out>(acc[i - i0] * scale);
    }
  }, cost);
}

}  // namespace OAR_ISA_NS
}  // namespace oar::phi
