// Pointwise kernels in one place: broadcasting, strided inputs, dimension
// coalescing and thread parallelism are handled here once, for every unary,
// binary and ternary elementwise kernel (the role of ATen's TensorIterator).
// Arithmetic happens in OpMath<T> (float for the 16-bit floats).
// Include only from kernel .cc files: the templates are heavy. The templates are in
// OAR_ISA_NS: a kernel source built once per ISA (OAR_ISA_KERNELS) gets its own copy of each
// loop, compiled for that ISA (Note [CPU dispatch], docs/notes/cpu_dispatch.md).
#pragma once

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <type_traits>
#include <utility>

#include "paddle_core/tensor/dense_tensor.h"
#include "phi_kernels/cpu/dispatch/cpu_capability.h"
#include "phi_kernels/cpu/dispatch/isa_namespace.h"
#include "phi_kernels/cpu/parallel.h"
#include "phi_kernels/cpu/transpose.h"

namespace oar::phi {
inline namespace OAR_ISA_NS {

// Stores v into *p as Out. A 16-bit float is written through its bits: assigning the struct
// itself inside an `omp simd` loop makes GCC keep a per-lane temporary array and give up
// vectorizing the loop (a bfloat16 add ran scalar, 6.5x torch's time on [784, 512]).
template <typename Out, typename V>
inline void store_elem(Out* p, V v) {
  if constexpr (std::is_same_v<Out, bfloat16> || std::is_same_v<Out, float16>) {
    p->bits = static_cast<Out>(v).bits;
  } else {
    *p = static_cast<Out>(v);
  }
}

// Note [Kernel closures in registers]
// A kernel's lambda (clip's [lo, hi], a scale) reaches the loops below by reference: the
// loop runs in an outlined parallel body and reads the captures through a pointer, which GCC
// cannot tell apart from the output it stores to. A capture read only on one side of a
// select (clip: v < lo ? lo : (v > hi ? hi : v)) is then a conditional load after a store,
// and the loop stays scalar with a branch per element: a bfloat16 clip of 1M random values
// took 3.3 ms against 0.19 in float32 (torch 0.38). Each loop reads the lambda from a local
// copy, LocalFn, whose captures GCC keeps in registers; closures too big to copy cheaply
// stay references.
template <typename F>
using LocalFn = std::conditional_t<std::is_trivially_copyable_v<F> && sizeof(F) <= 64, const F, const F&>;

// Note [Byte stores and captured pointers]
// A store through a 1-byte type (bool, int8, uint8) may alias any object, the parallel body's
// captures included: a loop writing o[i] through a captured `o` reloads o (and x, y) from the
// closure after every store and stays scalar. Copied into locals first, whose addresses are
// never taken, the pointers stay in registers and the loop vectorizes: uint8 add of 1M 0.95
// -> 0.03 ms, bool logical_not 0.29 -> 0.02 (torch 0.035 / 0.024). Wider stores cannot alias
// a pointer under strict aliasing, so the other dtypes were vectorized already.

namespace detail {

// Whether every element of t is its first one (more than one element, stride 0 on every axis
// longer than 1): the gradient of x.sum() or x.mean().
inline bool is_splat(const DenseTensor& t) {
  if (t.numel() < 2) return false;
  for (int64_t i = 0; i < t.rank(); ++i) {
    if (t.dims()[i] > 1 && t.strides()[i] != 0) return false;
  }
  return true;
}

// Strides (in elements) of `t` broadcast to `out` dims; 0 along broadcast dims.
inline Dims broadcast_strides(const DenseTensor& t, const Dims& out) {
  Dims s = Dims::filled(out.size(), 0);
  const int off = out.size() - t.rank();
  for (int i = 0; i < t.rank(); ++i) {
    s[i + off] = t.dims()[i] == 1 && out[i + off] != 1 ? 0 : t.strides()[i];
  }
  return s;
}

// Merges adjacent dims that are contiguous for every operand, so most loops run
// over one long inner dimension. strides[k] are the strides of operand k.
template <size_t N>
void coalesce(Dims* dims, std::array<Dims, N>* strides) {
  Dims d;
  std::array<Dims, N> s;
  for (int i = 0; i < dims->size(); ++i) {  // size-1 dims do not move any pointer
    if ((*dims)[i] == 1) continue;
    d.push_back((*dims)[i]);
    for (size_t k = 0; k < N; ++k) s[k].push_back((*strides)[k][i]);
  }
  if (d.empty()) {
    d.push_back(1);
    for (size_t k = 0; k < N; ++k) s[k].push_back(0);
  }
  int out = 0;
  for (int i = 1; i < d.size(); ++i) {
    bool merge = true;
    for (size_t k = 0; k < N; ++k) merge = merge && s[k][out] == s[k][i] * d[i];
    if (merge) {
      d[out] *= d[i];
      for (size_t k = 0; k < N; ++k) s[k][out] = s[k][i];
    } else {
      ++out;
      d[out] = d[i];
      for (size_t k = 0; k < N; ++k) s[k][out] = s[k][i];
    }
  }
  d.resize(out + 1);
  for (size_t k = 0; k < N; ++k) s[k].resize(out + 1);
  *dims = d;
  *strides = s;
}

// The step of one operand along an inner row: 0 (a broadcast operand: one value), 1
// (contiguous) or kAnyStep (a run-time stride, `s`). Chosen once per call by with_steps, so a
// kernel's row loop is compiled for its operands' steps and for_each_row calls it per row
// with nothing left to decide (Note [Pointwise rows], docs/notes/pointwise_rows.md).
constexpr int64_t kAnyStep = -1;
template <int64_t S>
struct Step {
  static constexpr bool kKnown = S != kAnyStep;
  int64_t s = S;
  int64_t operator()(int64_t i) const {
    if constexpr (S == 0) {
      return 0;
    } else if constexpr (S == 1) {
      return i;
    } else {
      return i * s;
    }
  }
};

template <size_t K, size_t N, typename Fn, typename... S>
void with_steps_from(const std::array<int64_t, N>& s, Fn& fn, S... steps) {
  if constexpr (K == N) {
    fn(steps...);
  } else if (s[K] == 0) {
    with_steps_from<K + 1>(s, fn, steps..., Step<0>{});
  } else {
    with_steps_from<K + 1>(s, fn, steps..., Step<1>{});
  }
}

template <size_t N, typename Fn, size_t... K>
void with_any_steps(const std::array<int64_t, N>& s, Fn& fn, std::index_sequence<K...>) {
  fn(Step<kAnyStep>{s[K + 1]}...);
}

// Calls fn(step_1, ..., step_{N-1}) with the steps of the input operands 1..N-1 (inner
// strides `s`; operand 0, the output, is contiguous). Broadcast and contiguous operands get
// compile-time steps (2^(N-1) row loops); when any operand has another stride, all get
// run-time ones (one more), not 3^(N-1) loops.
template <size_t N, typename Fn>
void with_steps(const std::array<int64_t, N>& s, Fn&& fn) {
  bool any = false;
  for (size_t k = 1; k < N; ++k) any = any || (s[k] != 0 && s[k] != 1);
  if (any) {
    with_any_steps(s, fn, std::make_index_sequence<N - 1>{});
  } else {
    with_steps_from<1>(s, fn);
  }
}

// The inner (last) stride of each operand of a coalesced iteration space.
template <size_t N>
std::array<int64_t, N> inner_strides(const Dims& dims, const std::array<Dims, N>& strides) {
  std::array<int64_t, N> s{};
  const int r = dims.size();
  for (size_t k = 0; k < N; ++k) s[k] = r ? strides[k][r - 1] : 0;
  return s;
}

// Note [float16 rows in blocks]: F16C converts eight halves an instruction, which GCC does not
// emit from a loop of scalar conversions (it vectorizes float16's integer form, Note [float16
// conversions in integers], at several times the cost: a float16 add under AVX2 ran 1.05 ms
// on 1M elements that way against 0.5 scalar). So rows whose inputs are float16 convert a
// block of kHalfBlock elements to float on the stack, apply f there in a vectorized loop, and
// store through F16C when the output is float16 too. Same bits as the element-wise form.
//
// The binary kernels' bfloat16 rows take the same blocks, and the float32 <-> bfloat16 cast
// the same conversions. Widening is a shift; rounding back is bfloat16(float)'s
// integer form in intrinsics (to nearest even, NaN quieted), sixteen lanes where the AVX-512
// copy is the active one. The binary kernels build for the baseline only, where GCC narrowed
// the element-wise form's 32-bit lanes with AVX2's packs, at about 45 instructions per 16
// elements. The unary kernels keep the element-wise form for bfloat16: their AVX-512 copy
// vectorizes it well (relu of 64K bfloat16 8.2 us, 11.3 through blocks; Xeon, 1 thread).
constexpr int64_t kHalfBlock = 256;

template <typename T>
constexpr bool kIsHalf = std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>;

// Eight 16-bit floats at p as floats in a register (exact): F16C, or a shift for bfloat16.
inline __m256 widen8(const float16* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
inline __m256 widen8(const bfloat16* p) {
  const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}

inline void to_floats(const float16* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, widen8(src + i));
  for (; i < n; ++i) dst[i] = static_cast<float>(src[i]);
}

inline void from_floats(const float* src, float16* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
  }
  for (; i < n; ++i) dst[i] = float16(src[i]);
}

inline void to_floats(const bfloat16* src, float* dst, int64_t n) {
  int64_t i = 0;
#if defined(__AVX512F__) && defined(__AVX512BW__)
  for (; i + 16 <= n; i += 16) {
    const __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i)));
    _mm512_storeu_ps(dst + i, _mm512_castsi512_ps(_mm512_slli_epi32(w, 16)));
  }
#endif
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, widen8(src + i));
  for (; i < n; ++i) dst[i] = static_cast<float>(src[i]);
}

// bfloat16(float) on each lane, the bits in the low half of each 32-bit lane. zmm code of a
// baseline object stays in gated functions (HEADER_GATED, test_cpu_dispatch.py).
// GCC 12 warns that the intrinsics' undefined pass-through operand is uninitialized when
// they are compiled under a target attribute; it is never read.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
namespace {

inline __m256i bf16_bits(__m256 v) {
  const __m256i u = _mm256_castps_si256(v), hi = _mm256_srli_epi32(u, 16);
  const __m256i lsb = _mm256_and_si256(hi, _mm256_set1_epi32(1));
  const __m256i r = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), lsb), 16);
  const __m256i quiet = _mm256_or_si256(hi, _mm256_set1_epi32(0x40));
  return _mm256_blendv_epi8(r, quiet, _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)));
}

__attribute__((target("avx512f,avx512bw"))) inline __m512i bf16_bits(__m512 v) {
  const __m512i u = _mm512_castps_si512(v), hi = _mm512_srli_epi32(u, 16);
  const __m512i lsb = _mm512_and_si512(hi, _mm512_set1_epi32(1));
  const __m512i r = _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), lsb), 16);
  const __m512i quiet = _mm512_or_si512(hi, _mm512_set1_epi32(0x40));
  return _mm512_mask_blend_epi32(_mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), r, quiet);
}

// Rounds src[0, 16 * (n / 16)) to dst sixteen lanes at a time; returns how many it did.
__attribute__((target("avx512f,avx512bw"))) inline int64_t floats_to_bf16_x16(const float* src, bfloat16* dst,
                                                                              int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i),
                        _mm512_cvtepi32_epi16(bf16_bits(_mm512_loadu_ps(src + i))));
  }
  return i;
}

}  // namespace
#pragma GCC diagnostic pop

// The baseline objects (the binary kernels, the cast) take the sixteen-lane loop where the
// AVX-512 copy is the active one: 64K bfloat16 adds 16.9 -> 13.7 us on the Xeon (torch 13.9).
inline void from_floats(const float* src, bfloat16* dst, int64_t n) {
  int64_t i = 0;
#if defined(__AVX512F__) && defined(__AVX512BW__)
  i = floats_to_bf16_x16(src, dst, n);
#else
  if (n >= 16 && cpu::active_capability() == cpu::Capability::kAvx512) {
    i = floats_to_bf16_x16(src, dst, n);
  } else {
    for (; i + 16 <= n; i += 16) {  // packus keeps 0..0xffff as is; the permute undoes its lane order
      const __m256i lo = bf16_bits(_mm256_loadu_ps(src + i)), hi = bf16_bits(_mm256_loadu_ps(src + i + 8));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i),
                          _mm256_permute4x64_epi64(_mm256_packus_epi32(lo, hi), 0xd8));
    }
  }
#endif
  for (; i < n; ++i) dst[i] = bfloat16(src[i]);
}

// buf[i] = float(p[s(b + i)]) for i < k.
template <typename H, typename S>
inline void load_half_block(const H* p, S s, int64_t b, int64_t k, float* buf) {
  if constexpr (std::is_same_v<S, Step<1>>) {
    to_floats(p + b, buf, k);
  } else if constexpr (std::is_same_v<S, Step<0>>) {
    std::fill(buf, buf + k, static_cast<float>(p[0]));
  } else {
    for (int64_t i = 0; i < k; ++i) buf[i] = static_cast<float>(p[s(b + i)]);
  }
}

// po[i] = fn(i) for i < k, fn computing from the block's float buffers.
template <typename Out, typename Fn>
inline void store_half_block(Out* po, int64_t k, const Fn& fn) {
  if constexpr (kIsHalf<Out>) {
    alignas(64) float r[kHalfBlock];
#pragma omp simd
    for (int64_t i = 0; i < k; ++i) r[i] = static_cast<float>(fn(i));
    from_floats(r, po, k);
  } else {
#pragma omp simd
    for (int64_t i = 0; i < k; ++i) store_elem(&po[i], fn(i));
  }
}

// One row of m elements of a unary (f(a)) or binary (f(a, b)) kernel on 16-bit float inputs
// at steps sa, sb, in blocks (Note [float16 rows in blocks]).
template <typename Out, typename H, typename F, typename SA>
void unary_half_row(Out* po, const H* pa, SA sa, int64_t m, const F& f) {
  alignas(64) float xa[kHalfBlock];
  for (int64_t b = 0; b < m; b += kHalfBlock) {
    const int64_t k = std::min(kHalfBlock, m - b);
    load_half_block(pa, sa, b, k, xa);
    // Note [Kernel closures in registers]
    LocalFn<F> fn = f;
    store_half_block(po + b, k, [&](int64_t i) { return fn(xa[i]); });
  }
}
template <typename Out, typename H, typename F, typename SA, typename SB>
void binary_half_row(Out* po, const H* pa, SA sa, const H* pb, SB sb, int64_t m, const F& f) {
  alignas(64) float xa[kHalfBlock], xb[kHalfBlock];
  int64_t start = 0;
  if constexpr (std::is_same_v<H, float16> && std::is_same_v<Out, float16> && std::is_same_v<SA, Step<1>> &&
                std::is_same_v<SB, Step<1>>) {
    // Two dense float16 operands into float16: eight lanes at a time from F16C's widening
    // to its rounding in one pass, not four passes over the block's buffers ([1024, 1024]
    // multiply at 1 thread on Zen 4: 0.173 -> 0.066 ms, torch 0.119; bfloat16 below 0.207 ->
    // 0.167, torch 0.181).
    LocalFn<F> fn = f;  // Note [Kernel closures in registers]
    for (; start + 8 <= m; start += 8) {
      alignas(32) float a8[8], b8[8], r8[8];
      _mm256_store_ps(a8, widen8(pa + start));
      _mm256_store_ps(b8, widen8(pb + start));
#pragma omp simd
      for (int j = 0; j < 8; ++j) r8[j] = static_cast<float>(fn(a8[j], b8[j]));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(po + start),
                       _mm256_cvtps_ph(_mm256_load_ps(r8), _MM_FROUND_TO_NEAREST_INT));
    }
  } else if constexpr (std::is_same_v<H, bfloat16> && std::is_same_v<Out, bfloat16> && std::is_same_v<SA, Step<1>> &&
                       std::is_same_v<SB, Step<1>>) {
    // The same for bfloat16, sixteen lanes a step: widened by a shift, rounded by bf16_bits.
    LocalFn<F> fn = f;
    for (; start + 16 <= m; start += 16) {
      alignas(32) float a16[16], b16[16], r16[16];
      _mm256_store_ps(a16, widen8(pa + start));
      _mm256_store_ps(a16 + 8, widen8(pa + start + 8));
      _mm256_store_ps(b16, widen8(pb + start));
      _mm256_store_ps(b16 + 8, widen8(pb + start + 8));
#pragma omp simd
      for (int j = 0; j < 16; ++j) r16[j] = static_cast<float>(fn(a16[j], b16[j]));
      const __m256i lo = bf16_bits(_mm256_load_ps(r16)), hi = bf16_bits(_mm256_load_ps(r16 + 8));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(po + start),
                          _mm256_permute4x64_epi64(_mm256_packus_epi32(lo, hi), 0xd8));
    }
  }
  for (int64_t b = start; b < m; b += kHalfBlock) {
    const int64_t k = std::min(kHalfBlock, m - b);
    load_half_block(pa, sa, b, k, xa);
    load_half_block(pb, sb, b, k, xb);
    LocalFn<F> fn = f;
    store_half_block(po + b, k, [&](int64_t i) { return fn(xa[i], xb[i]); });
  }
}

// `count` rows of m elements from p, each row step[k] bytes after the last (per operand);
// `row` is the kernel's row loop (type-erased).
template <size_t N>
using RunRows = void (*)(const void* row, std::array<char*, N> p, const std::array<int64_t, N>& step, int64_t count,
                         int64_t m);

// for_each_row's walk over the rows, the same for every kernel: one copy per operand count,
// not one per kernel and step (Note [One copy of a loop]). It calls run once per run of
// rows along the second-innermost dim, so the call is amortized over the run.
template <size_t N>
__attribute__((noinline, noclone)) void walk_rows(const Dims& dims, const std::array<Dims, N>& strides,
                                                  const std::array<char*, N>& base, const std::array<size_t, N>& elem,
                                                  RunRows<N> run, const void* row) {
  const int r = dims.size();
  const int64_t inner = r ? dims[r - 1] : 1;
  int64_t rows = 1;
  for (int i = 0; i + 1 < r; ++i) rows *= dims[i];
  const std::array<int64_t, N> inner_stride = inner_strides(dims, strides);
  std::array<int64_t, N> step{};  // bytes between rows along dim r - 2
  for (size_t k = 0; k < N; ++k) step[k] = r >= 2 ? strides[k][r - 2] * static_cast<int64_t>(elem[k]) : 0;
  // Fewer rows than threads (a coalesced 1-D space has one): each row is cut into `parts`
  // pieces, so the threads share long rows instead of one thread taking them all.
  const int64_t threads = omp_get_max_threads();
  const int64_t parts = rows >= threads ? 1 : std::clamp<int64_t>(inner / kParallelGrain, 1, threads);
  auto pieces = [&](int64_t t0, int64_t t1) {
    if (parts == 1 && r <= 2) {  // one outer dim (the common case): one run
      std::array<char*, N> p = base;
      for (size_t k = 0; k < N; ++k) p[k] += t0 * step[k];
      run(row, p, step, t1 - t0, inner);
      return;
    }
    if (parts == 1) {  // whole rows: the outer index found once, then stepped like an odometer
      // a run at a time (two 64-bit divisions per row cost [1024, 1024] + [1024] 15% over a
      // flat loop)
      std::array<int64_t, kMaxRank> idx{};
      std::array<char*, N> p = base;
      int64_t rem = t0;
      for (int i = r - 2; i >= 0; --i) {
        idx[i] = rem % dims[i];
        rem /= dims[i];
        for (size_t k = 0; k < N; ++k) p[k] += idx[i] * strides[k][i] * static_cast<int64_t>(elem[k]);
      }
      for (int64_t t = t0; t < t1;) {
        const int64_t count = std::min(t1 - t, dims[r - 2] - idx[r - 2]);
        run(row, p, step, count, inner);
        t += count;
        idx[r - 2] += count;
        for (size_t k = 0; k < N; ++k) p[k] += count * step[k];
        for (int i = r - 2; i > 0 && idx[i] == dims[i]; --i) {  // carry into dim i - 1
          for (size_t k = 0; k < N; ++k) {
            p[k] += (strides[k][i - 1] - dims[i] * strides[k][i]) * static_cast<int64_t>(elem[k]);
          }
          idx[i] = 0;
          ++idx[i - 1];
        }
      }
      return;
    }
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t row_i = t / parts, part = t % parts;
      const int64_t lo = inner * part / parts, hi = inner * (part + 1) / parts;
      std::array<char*, N> p = base;
      for (size_t k = 0; k < N; ++k) p[k] += lo * inner_stride[k] * static_cast<int64_t>(elem[k]);
      int64_t rem = row_i;
      for (int i = r - 2; i >= 0; --i) {
        const int64_t idx = rem % dims[i];
        rem /= dims[i];
        for (size_t k = 0; k < N; ++k) p[k] += idx * strides[k][i] * static_cast<int64_t>(elem[k]);
      }
      run(row, p, step, 1, hi - lo);
    }
  };
  parallel_for(rows * parts, pieces, rows * inner);
}

// Runs row(ptrs, inner_count) over every inner row of an N-operand strided iteration space
// (operand 0 is the output). Every row has the same inner strides (inner_strides), so the
// caller picks its row loop for them once (with_steps) and `row` holds no dispatch; the outer
// index is stepped by walk_rows (Note [Pointwise rows]). The row loop is compiled once, in
// `run` (Note [One copy of a loop]).
template <size_t N, typename Row>
void for_each_row(const Dims& dims, const std::array<Dims, N>& strides, const std::array<char*, N>& base,
                  const std::array<size_t, N>& elem, const Row& row) {
  constexpr RunRows<N> run =
      [](const void* r, std::array<char*, N> p, const std::array<int64_t, N>& step, int64_t count, int64_t m) {
    const Row& row = *static_cast<const Row*>(r);
    for (int64_t t = 0; t < count; ++t) {
      row(p, m);
      for (size_t k = 0; k < N; ++k) p[k] += step[k];
    }
  };
  walk_rows<N>(dims, strides, base, elem, run, &row);
}

// A transposing unary op (the input's unit-stride dim j is not the output's inner dim,
// e.g. contiguous() of a transpose): row-by-row iteration would read the input with a
// large stride, one cache line per element. Instead, kT x kT tiles of the (j, inner)
// plane go through a small buffer: kT contiguous input runs are copied in, then kT
// contiguous output runs written out, so each cache line is touched once, whole (a
// direct tiled copy thrashes L1 when the strides are powers of two: every row of the
// tile maps to the same cache set). Returns false when the layout is not such a transpose.
template <typename In, typename Out, typename F>
bool unary_tiled(const Dims& dims, const std::array<Dims, 2>& st, const DenseTensor& a, Out* o,
                 F& f) {
  const int r = dims.size();
  if (r < 2 || st[0][r - 1] != 1 || st[1][r - 1] == 1) return false;
  int j = -1;
  for (int k = r - 2; k >= 0; --k) {
    if (st[1][k] == 1) {
      j = k;
      break;
    }
  }
  constexpr int64_t kT = 16;
  const int64_t nj = dims[j < 0 ? 0 : j], ni = dims[r - 1];
  if (j < 0 || nj < 8 || ni < 8) return false;
  const int64_t soj = st[0][j], sii = st[1][r - 1];
  Dims rd, ro, ri;  // the remaining dims and their strides
  int64_t rest = 1;
  for (int k = 0; k < r - 1; ++k) {
    if (k == j) continue;
    rd.push_back(dims[k]);
    ro.push_back(st[0][k]);
    ri.push_back(st[1][k]);
    rest *= dims[k];
  }
  const In* src = static_cast<const In*>(a.raw_data());
  const int64_t tj = (nj + kT - 1) / kT;
  parallel_for(rest * tj, [&](int64_t b, int64_t e) {
    In buf[kT][kT];  // buf[ii][jj]
    for (int64_t t = b; t < e; ++t) {
      int64_t q = t / tj, off_o = 0, off_i = 0;
      for (int k = rd.size() - 1; k >= 0; --k) {
        const int64_t idx = q % rd[k];
        q /= rd[k];
        off_o += idx * ro[k];
        off_i += idx * ri[k];
      }
      const int64_t jb = (t % tj) * kT, wj = std::min(kT, nj - jb);
      Out* po = o + off_o + jb * soj;
      const In* pa = src + off_i + jb;
      for (int64_t ib = 0; ib < ni; ib += kT) {
        const int64_t wi = std::min(kT, ni - ib);
        if (wi == kT && wj == kT) {  // full tile: fixed trip counts, unrolled vector moves
#if defined(__AVX2__)
          if constexpr (std::is_same_v<In, float>) {  // 8x8 register transposes into buf[jj][ii]
            for (int64_t i0 = 0; i0 < kT; i0 += 8) {
              for (int64_t j0 = 0; j0 < kT; j0 += 8) {
                __m256 v[8];
                for (int k = 0; k < 8; ++k) v[k] = _mm256_loadu_ps(pa + (ib + i0 + k) * sii + j0);
                transpose8x8(v);
                for (int k = 0; k < 8; ++k) _mm256_storeu_ps(&buf[j0 + k][i0], v[k]);
              }
            }
            for (int64_t jj = 0; jj < kT; ++jj) {
              Out* orow = po + jj * soj + ib;
              for (int64_t ii = 0; ii < kT; ++ii) store_elem(&orow[ii], f(buf[jj][ii]));
            }
            continue;
          }
#endif
          for (int64_t ii = 0; ii < kT; ++ii) {
            const In* row = pa + (ib + ii) * sii;
            for (int64_t jj = 0; jj < kT; ++jj) buf[ii][jj] = row[jj];
          }
          for (int64_t jj = 0; jj < kT; ++jj) {
            Out* orow = po + jj * soj + ib;
            for (int64_t ii = 0; ii < kT; ++ii) {
              store_elem(&orow[ii], f(static_cast<OpMath<In>>(buf[ii][jj])));
            }
          }
          continue;
        }
        for (int64_t ii = 0; ii < wi; ++ii) {
          const In* row = pa + (ib + ii) * sii;
          for (int64_t jj = 0; jj < wj; ++jj) buf[ii][jj] = row[jj];
        }
        for (int64_t jj = 0; jj < wj; ++jj) {
          Out* orow = po + jj * soj + ib;
          for (int64_t ii = 0; ii < wi; ++ii) {
            store_elem(&orow[ii], f(static_cast<OpMath<In>>(buf[ii][jj])));
          }
        }
      }
    }
  }, rest * nj * ni);
  return true;
}

}  // namespace detail

/// out = f(a) elementwise. `out` dims/dtype must be set (infer-meta did it).
template <typename In, typename Out, typename F>
void unary_kernel(const DenseTensor& a, DenseTensor* out, F f) {
  Out* o = out->alloc<Out>();
  const int64_t n = out->numel();
  if (n == 0) return;
  if (a.is_contiguous()) {
    const In* x = a.data<In>();
    parallel_for(n, [&](int64_t b, int64_t e) {
      if constexpr (std::is_same_v<In, float16>) {
        detail::unary_half_row(o + b, x + b, detail::Step<1>{}, e - b, f);
      } else {
        // Note [Kernel closures in registers]; the pointers as locals too (Note [Byte
        // stores and captured pointers])
        LocalFn<F> fn = f;
        Out* const po = o;
        const In* const px = x;
#pragma omp simd
        for (int64_t i = b; i < e; ++i) store_elem(&po[i], fn(static_cast<OpMath<In>>(px[i])));
      }
    });
    return;
  }
  Dims dims = out->dims();
  std::array<Dims, 2> st{out->strides(), detail::broadcast_strides(a, dims)};
  detail::coalesce(&dims, &st);
  if (detail::unary_tiled<In, Out>(dims, st, a, o, f)) return;
  const std::array<char*, 2> base{reinterpret_cast<char*>(o), static_cast<char*>(a.raw_data())};
  detail::with_steps(detail::inner_strides(dims, st), [&](auto sa) {
    using SA = decltype(sa);
    detail::for_each_row<2>(dims, st, base, {sizeof(Out), sizeof(In)}, [&](const auto& p, int64_t m) {
      Out* po = reinterpret_cast<Out*>(p[0]);
      const In* pa = reinterpret_cast<const In*>(p[1]);
      if constexpr (std::is_same_v<SA, detail::Step<0>>) {  // a broadcast row (an expanded gradient)
        const auto v = f(static_cast<OpMath<In>>(pa[0]));
#pragma omp simd
        for (int64_t i = 0; i < m; ++i) store_elem(&po[i], v);
      } else if constexpr (std::is_same_v<In, float16>) {
        detail::unary_half_row(po, pa, sa, m, f);
      } else if constexpr (SA::kKnown) {
        LocalFn<F> fn = f;
#pragma omp simd
        for (int64_t i = 0; i < m; ++i) store_elem(&po[i], fn(static_cast<OpMath<In>>(pa[i])));
      } else {
        for (int64_t i = 0; i < m; ++i) store_elem(&po[i], f(static_cast<OpMath<In>>(pa[sa(i)])));
      }
    });
  });
}

/// out = f(a, b) elementwise with NumPy broadcasting.
template <typename In, typename Out, typename F>
void binary_kernel(const DenseTensor& a, const DenseTensor& b, DenseTensor* out, F f) {
  using M = OpMath<In>;
  Out* o = out->alloc<Out>();
  const int64_t n = out->numel();
  if (n == 0) return;
  const In* x = a.data<In>();
  const In* y = b.data<In>();
  if constexpr (detail::kIsHalf<In>) {  // Note [float16 rows in blocks]
    if (a.is_contiguous() && b.is_contiguous() && (a.numel() == n || a.numel() == 1) &&
        (b.numel() == n || b.numel() == 1)) {
      const bool a_one = a.numel() == 1 && n > 1, b_one = b.numel() == 1 && n > 1;
      parallel_for(n, [&](int64_t lo, int64_t hi) {
        auto row = [&](auto sa, auto sb) {
          detail::binary_half_row(o + lo, a_one ? x : x + lo, sa, b_one ? y : y + lo, sb, hi - lo, f);
        };
        if (a_one) {
          row(detail::Step<0>{}, detail::Step<1>{});
        } else if (b_one) {
          row(detail::Step<1>{}, detail::Step<0>{});
        } else {
          row(detail::Step<1>{}, detail::Step<1>{});
        }
      });
      return;
    }
  }
  if (a.is_contiguous() && b.is_contiguous()) {
    // Note [Kernel closures in registers]; the pointers and values as locals too (Note [Byte
    // stores and captured pointers])
    if (a.numel() == n && b.numel() == n) {
      parallel_for(n, [&](int64_t lo, int64_t hi) {
        LocalFn<F> fn = f;
        Out* const po = o;
        const In *const px = x, *const py = y;
#pragma omp simd
        for (int64_t i = lo; i < hi; ++i) store_elem(&po[i], fn(M(px[i]), M(py[i])));
      });
      return;
    }
    if (b.numel() == 1 && a.numel() == n) {
      const M yv = M(y[0]);
      parallel_for(n, [&](int64_t lo, int64_t hi) {
        LocalFn<F> fn = f;
        Out* const po = o;
        const In* const px = x;
        const M v = yv;
#pragma omp simd
        for (int64_t i = lo; i < hi; ++i) store_elem(&po[i], fn(M(px[i]), v));
      });
      return;
    }
    if (a.numel() == 1 && b.numel() == n) {
      const M xv = M(x[0]);
      parallel_for(n, [&](int64_t lo, int64_t hi) {
        LocalFn<F> fn = f;
        Out* const po = o;
        const In* const py = y;
        const M v = xv;
#pragma omp simd
        for (int64_t i = lo; i < hi; ++i) store_elem(&po[i], fn(v, M(py[i])));
      });
      return;
    }
  }
  Dims dims = out->dims();
  std::array<Dims, 3> st{out->strides(), detail::broadcast_strides(a, dims),
                         detail::broadcast_strides(b, dims)};
  detail::coalesce(&dims, &st);
  const std::array<char*, 3> base{reinterpret_cast<char*>(o), static_cast<char*>(a.raw_data()),
                                  static_cast<char*>(b.raw_data())};
  detail::with_steps(detail::inner_strides(dims, st), [&](auto sa, auto sb) {
    detail::for_each_row<3>(dims, st, base, {sizeof(Out), sizeof(In), sizeof(In)}, [&](const auto& p, int64_t m) {
      Out* po = reinterpret_cast<Out*>(p[0]);
      const In* pa = reinterpret_cast<const In*>(p[1]);
      const In* pb = reinterpret_cast<const In*>(p[2]);
      if constexpr (detail::kIsHalf<In>) {
        detail::binary_half_row(po, pa, sa, pb, sb, m, f);
      } else if constexpr (decltype(sa)::kKnown) {  // contiguous or broadcast operands: vectorized
        // Note [Kernel closures in registers]
        LocalFn<F> fn = f;
#pragma omp simd
        for (int64_t i = 0; i < m; ++i) store_elem(&po[i], fn(M(pa[sa(i)]), M(pb[sb(i)])));
      } else {
        for (int64_t i = 0; i < m; ++i) store_elem(&po[i], f(M(pa[sa(i)]), M(pb[sb(i)])));
      }
    });
  });
}

/// out = f(c, a, b) elementwise with broadcasting; C is the condition's element type.
template <typename C, typename In, typename Out, typename F>
void ternary_kernel(const DenseTensor& c, const DenseTensor& a, const DenseTensor& b,
                    DenseTensor* out, F f) {
  using M = OpMath<In>;
  Out* o = out->alloc<Out>();
  if (out->numel() == 0) return;
  Dims dims = out->dims();
  std::array<Dims, 4> st{out->strides(), detail::broadcast_strides(c, dims),
                         detail::broadcast_strides(a, dims), detail::broadcast_strides(b, dims)};
  detail::coalesce(&dims, &st);
  const std::array<char*, 4> base{reinterpret_cast<char*>(o), static_cast<char*>(c.raw_data()),
                                  static_cast<char*>(a.raw_data()), static_cast<char*>(b.raw_data())};
  detail::with_steps(detail::inner_strides(dims, st), [&](auto sc, auto sa, auto sb) {
    detail::for_each_row<4>(dims, st, base, {sizeof(Out), sizeof(C), sizeof(In), sizeof(In)},
                            [&](const auto& p, int64_t m) {
      Out* po = reinterpret_cast<Out*>(p[0]);
      const C* pc = reinterpret_cast<const C*>(p[1]);
      const In* pa = reinterpret_cast<const In*>(p[2]);
      const In* pb = reinterpret_cast<const In*>(p[3]);
      if constexpr (decltype(sc)::kKnown) {  // contiguous or broadcast operands: vectorized
        // Note [Kernel closures in registers]
        LocalFn<F> fn = f;
#pragma omp simd
        for (int64_t i = 0; i < m; ++i) store_elem(&po[i], fn(pc[sc(i)], M(pa[sa(i)]), M(pb[sb(i)])));
      } else {
        for (int64_t i = 0; i < m; ++i) store_elem(&po[i], f(pc[sc(i)], M(pa[sa(i)]), M(pb[sb(i)])));
      }
    });
  });
}

}  // namespace OAR_ISA_NS
}  // namespace oar::phi
