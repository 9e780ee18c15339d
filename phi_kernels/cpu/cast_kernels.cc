// cast, assign and the fills: data movement with at most a conversion, bound by memory. They
// build once, for the baseline ISA, not per ISA copy. The cast and logical_not convert
// contiguous data only: a strided or expanded input is first made contiguous by assign's
// loops (unary_kernel: tiled transposes, broadcast rows), then converted in one flat loop.
// The cast's 144 dtype pairs are one loop each; through unary_kernel's strided, tiled and
// broadcast paths in both ISA copies they were half of unary_kernels.cc's compile (Note [One
// copy of a loop], docs/notes/cpu_dispatch.md).
#include <immintrin.h>

#include <algorithm>
#include <type_traits>

#include "oar_generated/kernel_signatures.h"
#include "phi_kernels/cpu/dispatch/cpu_capability.h"
#include "phi_kernels/cpu/elementwise.h"

namespace oar::phi {
namespace {

// float <-> float16 through F16C (every x86-64-v3 CPU has it), eight lanes an instruction;
// the same bits as float16's own conversions (Note [float16 conversions in integers],
// paddle_core/tensor/float16.h), which take about twice as long. o and a are arguments, not
// reference captures: the intrinsics' stores may alias anything, and through a reference
// the loop reloaded both pointers after every store (1M halves to float32 on Zen 3 0.21 ->
// 0.14 ms, to float16 0.21 -> 0.12).
template <typename In, typename Out>
void cast_half_f16c8(const In* a, Out* o, int64_t i, int64_t e) {
  for (; i + 8 <= e; i += 8) {
    if constexpr (std::is_same_v<In, float>) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(o + i),
                       _mm256_cvtps_ph(_mm256_loadu_ps(a + i), _MM_FROUND_TO_NEAREST_INT));
    } else {
      _mm256_storeu_ps(o + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i))));
    }
  }
  for (; i < e; ++i) o[i] = static_cast<Out>(static_cast<float>(a[i]));
}

// Sixteen lanes where the AVX-512 copy is the active one (Zen 5, 1M to float32: 0.084 ->
// 0.067 ms), gated as RUNTIME_GATED in tests/python/ops/test_cpu_dispatch.py says. The
// bfloat16 pair's sixteen lanes are elementwise.h's from_floats (HEADER_GATED there).
// (GCC 12 warns that the intrinsics' undefined pass-through operand is uninitialized under a
// target attribute; it is never read.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
template <typename In, typename Out>
__attribute__((target("avx512f,avx512vl"))) void cast_half_f16c16(const In* a, Out* o, int64_t i, int64_t e) {
  for (; i + 16 <= e; i += 16) {
    if constexpr (std::is_same_v<In, float>) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(o + i),
                          _mm512_cvtps_ph(_mm512_loadu_ps(a + i), _MM_FROUND_TO_NEAREST_INT));
    } else {
      _mm512_storeu_ps(o + i, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + i))));
    }
  }
  for (; i < e; ++i) o[i] = static_cast<Out>(static_cast<float>(a[i]));
}
#pragma GCC diagnostic pop

template <typename In, typename Out>
void cast_half_f16c(const In* a, Out* o, int64_t n) {
  const bool wide = cpu::active_capability() == cpu::Capability::kAvx512;
  parallel_for(n, [o, a, wide](int64_t b, int64_t e) {
    if (wide) {
      cast_half_f16c16(a, o, b, e);
    } else {
      cast_half_f16c8(a, o, b, e);
    }
  });
}

// out = x, contiguous, through the copy kernel (Note [Strided copies], copy_kernel.cc): bytes,
// so every value keeps its bits (unary_kernel's float16 and bfloat16 lanes went through float,
// which quiets a signalling NaN), dense copies split over the pool, transposes in tiles.
template <typename T>
void assign(const DenseTensor& x, DenseTensor* out) {
  out->alloc<T>();
  copy_into(x, out);
}

// x itself when contiguous, else a contiguous copy of it.
template <typename T>
DenseTensor dense(const DenseTensor& x) {
  if (x.is_contiguous()) return x;
  DenseTensor c(x.dims(), x.dtype(), x.place());
  assign<T>(x, &c);
  return c;
}

// o[i] = a[i] converted, one element at a time: a function of its pointers, so the stores
// (bytes for bool, int8 and uint8, which may alias anything) cannot alias pointers kept in a
// closure and the loop vectorizes (int32 -> uint8 of 1M 0.42 -> 0.07 ms on Zen 4).
template <typename In, typename Out>
void cast_elements(const In* a, Out* o, int64_t n) {
  if constexpr (std::is_same_v<In, bool> && !is_complex_v<Out>) {
    // as bytes (GCC does not widen bool lanes: bool -> int32 of 1M 0.29 ms, torch 0.07)
    const auto* u = reinterpret_cast<const uint8_t*>(a);
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) store_elem(&o[i], static_cast<OpMath<Out>>(u[i] != 0));
    return;
  }
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    const OpMath<In> v = static_cast<OpMath<In>>(a[i]);
    if constexpr (is_complex_v<In> || is_complex_v<Out>) {
      store_elem(&o[i], convert_element<Out>(v));
    } else if constexpr (std::is_same_v<Out, bool>) {
      store_elem(&o[i], v != OpMath<In>(0));
    } else {
      store_elem(&o[i], convert_element<OpMath<Out>>(v));  // float -> int of NaN/inf/huge: defined
    }
  }
}

// float_to_int (paddle_core/tensor/float_to_int.h) is x86's truncating conversion, which
// gives the type's minimum for NaN and out-of-range values: the same instructions, in
// vectors. GCC leaves its range test scalar (float32 -> int32 of 1M 0.24 ms against torch's
// 0.09).
inline void to_int32(const float* a, int32_t* o, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(o + i), _mm256_cvttps_epi32(_mm256_loadu_ps(a + i)));
  }
  for (; i < n; ++i) o[i] = float_to_int<int32_t>(a[i]);
}
inline void to_int32(const double* a, int32_t* o, int64_t n) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(o + i), _mm256_cvttpd_epi32(_mm256_loadu_pd(a + i)));
  }
  for (; i < n; ++i) o[i] = float_to_int<int32_t>(a[i]);
}
template <typename H, typename = std::enable_if_t<std::is_same_v<H, float16> || std::is_same_v<H, bfloat16>>>
void to_int32(const H* a, int32_t* o, int64_t n) {  // widened exactly
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(o + i), _mm256_cvttps_epi32(detail::widen8(a + i)));
  }
  for (; i < n; ++i) o[i] = float_to_int<int32_t>(static_cast<float>(a[i]));
}
// float -> int8, uint8, int16: the low bits of to_int32's lanes (masked, so the unsigned
// saturating packs keep them), packed in registers; the packs interleave 128-bit halves,
// which the permutes put back in order.
template <typename Out>
void to_narrow(const float* a, Out* o, int64_t n) {
  int64_t i = 0;
  if constexpr (sizeof(Out) == 1) {
    const __m256i m = _mm256_set1_epi32(0xff), order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    for (; i + 32 <= n; i += 32) {
      __m256i q[4];
      for (int k = 0; k < 4; ++k) q[k] = _mm256_and_si256(_mm256_cvttps_epi32(_mm256_loadu_ps(a + i + 8 * k)), m);
      const __m256i b = _mm256_packus_epi16(_mm256_packus_epi32(q[0], q[1]), _mm256_packus_epi32(q[2], q[3]));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(o + i), _mm256_permutevar8x32_epi32(b, order));
    }
  } else {
    const __m256i m = _mm256_set1_epi32(0xffff);
    for (; i + 16 <= n; i += 16) {
      const __m256i lo = _mm256_and_si256(_mm256_cvttps_epi32(_mm256_loadu_ps(a + i)), m);
      const __m256i hi = _mm256_and_si256(_mm256_cvttps_epi32(_mm256_loadu_ps(a + i + 8)), m);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(o + i),
                          _mm256_permute4x64_epi64(_mm256_packus_epi32(lo, hi), 0xd8));
    }
  }
  for (; i < n; ++i) o[i] = float_to_int<Out>(a[i]);
}
template <typename F>
void to_int64(const F* a, int64_t* o, int64_t n) {
  for (int64_t i = 0; i < n; ++i) o[i] = _mm_cvttsd_si64(_mm_set_sd(static_cast<double>(a[i])));
}

template <typename T>
constexpr bool kHalf = std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>;

// A chunk of the cast. The pairs GCC does not vectorize element by element go through a block
// of floats or int32 on the stack, each step a vector loop: a 16-bit float is widened to float
// first (float16 -> int8 of 1M 3.1 -> 0.2 ms) or rounded from float last (the bits of the
// element loop, which converts through float too), and a float becomes an integer through
// to_int32 / to_int64.
template <typename In, typename Out>
void cast_chunk(const In* a, Out* o, int64_t n) {
  constexpr bool kFloatIn = std::is_same_v<In, float> || std::is_same_v<In, double>;
  constexpr bool kIntOut = std::is_integral_v<Out> && !std::is_same_v<Out, bool>;
  constexpr int64_t kBlock = 512;
  if constexpr (is_complex_v<In> || is_complex_v<Out>) {
    cast_elements(a, o, n);
  } else if constexpr (kHalf<In> && std::is_same_v<Out, int32_t>) {
    to_int32(a, o, n);
  } else if constexpr (kHalf<In> && kIntOut && sizeof(Out) < 4) {
    alignas(64) int32_t buf[kBlock];
    for (int64_t s = 0; s < n; s += kBlock) {
      const int64_t m = std::min(kBlock, n - s);
      to_int32(a + s, buf, m);
      cast_elements(buf, o + s, m);
    }
  } else if constexpr (kHalf<In> && !kHalf<Out> && !std::is_same_v<Out, float>) {
    alignas(64) float buf[kBlock];
    for (int64_t s = 0; s < n; s += kBlock) {
      const int64_t m = std::min(kBlock, n - s);
      detail::to_floats(a + s, buf, m);
      cast_chunk(buf, o + s, m);
    }
  } else if constexpr (std::is_same_v<In, double> && std::is_same_v<Out, float16>) {
    int64_t i = 0;  // the element loop's double -> float -> float16, in registers
    for (; i + 8 <= n; i += 8) {
      const __m256 f =
          _mm256_set_m128(_mm256_cvtpd_ps(_mm256_loadu_pd(a + i + 4)), _mm256_cvtpd_ps(_mm256_loadu_pd(a + i)));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(o + i), _mm256_cvtps_ph(f, _MM_FROUND_TO_NEAREST_INT));
    }
    cast_elements(a + i, o + i, n - i);
  } else if constexpr (kHalf<Out> && !kHalf<In> && !std::is_same_v<In, float>) {
    alignas(64) float buf[kBlock];
    for (int64_t s = 0; s < n; s += kBlock) {
      const int64_t m = std::min(kBlock, n - s);
      cast_elements(a + s, buf, m);
      detail::from_floats(buf, o + s, m);
    }
  } else if constexpr (kFloatIn && std::is_same_v<Out, int32_t>) {
    to_int32(a, o, n);
  } else if constexpr (kFloatIn && std::is_same_v<Out, int64_t>) {
    to_int64(a, o, n);
  } else if constexpr (std::is_same_v<In, float> && kIntOut) {  // int8, uint8, int16
    to_narrow(a, o, n);
  } else if constexpr (kFloatIn && kIntOut) {  // double -> int8, uint8, int16: the low bits of int32
    alignas(64) int32_t buf[kBlock];
    for (int64_t s = 0; s < n; s += kBlock) {
      const int64_t m = std::min(kBlock, n - s);
      to_int32(a + s, buf, m);
      cast_elements(buf, o + s, m);
    }
  } else {
    cast_elements(a, o, n);
  }
}

template <typename In, typename Out>
void cast_contiguous(const In* a, Out* o, int64_t n) {
  parallel_for(n, [o, a](int64_t b, int64_t e) { cast_chunk(a + b, o + b, e - b); });
}

template <typename T>
void CastKernel(const DeviceContext&, const DenseTensor& x, DataType dtype, DenseTensor* out) {
  visit_dtype_all(dtype, "cast", [&](auto tag) {
    using Out = typename decltype(tag)::type;
    Out* const o = out->alloc<Out>();
    const int64_t n = out->numel();
    if (n == 0) return;
    constexpr bool kHalfPair = (std::is_same_v<T, float> && std::is_same_v<Out, float16>) ||
                               (std::is_same_v<T, float16> && std::is_same_v<Out, float>);
    constexpr bool kBf16Pair = (std::is_same_v<T, float> && std::is_same_v<Out, bfloat16>) ||
                               (std::is_same_v<T, bfloat16> && std::is_same_v<Out, float>);
    const auto convert = [](const T* a, Out* to, int64_t m) {
      if constexpr (kHalfPair) {
        cast_half_f16c(a, to, m);
      } else if constexpr (kBf16Pair) {  // Note [float16 rows in blocks]: intrinsics, same bits
        parallel_for(m, [to, a](int64_t b, int64_t e) {
          if constexpr (std::is_same_v<T, float>) {
            detail::from_floats(a + b, to + b, e - b);
          } else {
            detail::to_floats(a + b, to + b, e - b);
          }
        });
      } else {
        cast_contiguous(a, to, m);
      }
    };
    if (detail::is_splat(x)) {  // one value everywhere (a loss's gradient): convert it once, fill
      convert(x.data<T>(), o, 1);
      const Out v = o[0];
      parallel_for(n, [o, v](int64_t b, int64_t e) { std::fill(o + b, o + e, v); });
      return;
    }
    const DenseTensor c = dense<T>(x);
    convert(c.data<T>(), o, n);
  });
}

template <typename T>
void AssignKernel(const DeviceContext&, const DenseTensor& x, DenseTensor* out) {
  assign<T>(x, out);
}

template <typename T>
void LogicalNotKernel(const DeviceContext&, const DenseTensor& x, DenseTensor* out) {
  bool* const o = out->alloc<bool>();
  const DenseTensor c = dense<T>(x);
  const T* const a = c.data<T>();
  parallel_for(out->numel(), [o, a](int64_t b, int64_t e) {
    bool* const po = o;                       // Note [Byte stores and captured pointers] (elementwise.h)
    if constexpr (std::is_same_v<T, bool>) {  // as bytes: GCC does not vectorize bool loads
      const auto* u = reinterpret_cast<const uint8_t*>(a);
#pragma omp simd
      for (int64_t i = b; i < e; ++i) po[i] = u[i] == 0;
    } else {
      const T* const pa = a;
#pragma omp simd
      for (int64_t i = b; i < e; ++i) po[i] = !static_cast<bool>(static_cast<OpMath<T>>(pa[i]));
    }
  });
}

template <typename T>
void fill(DenseTensor* out, const Scalar& v) {
  T* const p = out->alloc<T>();
  const T value = v.to<T>();
  parallel_for(out->numel(), [p, value](int64_t b, int64_t e) { std::fill(p + b, p + e, value); });
}

template <typename T>
void FullKernel(const DeviceContext&, const std::vector<int64_t>&, const Scalar& value, DataType, const Place&,
                DenseTensor* out) {
  fill<T>(out, value);
}
template <typename T>
void FullLikeKernel(const DeviceContext&, const DenseTensor&, const Scalar& value, DataType, DenseTensor* out) {
  fill<T>(out, value);
}

}  // namespace
}  // namespace oar::phi

using namespace oar::phi;  // NOLINT: registration macros name the kernels unqualified

OAR_REGISTER_KERNEL(cast, CPU, CastKernel, OAR_ALL_TYPES, OAR_COMPLEX_TYPES)
OAR_REGISTER_KERNEL(assign, CPU, AssignKernel, OAR_ALL_TYPES, OAR_COMPLEX_TYPES)
OAR_REGISTER_KERNEL(logical_not, CPU, LogicalNotKernel, OAR_ALL_TYPES)
OAR_REGISTER_KERNEL(full, CPU, FullKernel, OAR_ALL_TYPES, OAR_COMPLEX_TYPES)
OAR_REGISTER_KERNEL(full_like, CPU, FullLikeKernel, OAR_ALL_TYPES, OAR_COMPLEX_TYPES)
