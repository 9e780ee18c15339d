// Binary elementwise kernels: arithmetic, comparisons, logical and bitwise ops, copysign,
// nextafter, gcd, where.
#include <immintrin.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

#include "oar_generated/kernel_signatures.h"
#include "phi_kernels/cpu/elementwise.h"

namespace oar::phi {
namespace {

// Integer division by zero would trap (SIGFPE): check before running the loop.
template <typename T>
void check_int_divisor(const DenseTensor& y, const char* op) {
  if constexpr (std::is_integral_v<T>) {
    DenseTensor c = contiguous(y);
    const T* p = c.data<T>();
    for (int64_t i = 0; i < c.numel(); ++i) {
      OAR_ENFORCE(p[i] != 0, InvalidArgument, op, ": integer division by zero (y contains 0)");
    }
  }
}

// min / -1 and min % -1 also trap on x86 (the quotient does not fit): Paddle and NumPy
// wrap the quotient (min // -1 == min) and the remainder is 0, so -1 takes this path.
template <typename V>
V div_int(V a, V b) {
  if constexpr (std::is_signed_v<V>) {
    if (b == -1) return static_cast<V>(-static_cast<std::make_unsigned_t<V>>(a));
  }
  return a / b;
}

template <typename V>
V rem_int(V a, V b) {
  if constexpr (std::is_signed_v<V>) {
    if (b == -1) return 0;
  }
  return a % b;
}

// Signed integer +, -, * wrap (two's complement, as in NumPy and Paddle) instead of
// overflowing, which is undefined behaviour: they are computed in the unsigned type. Floats,
// bool and the narrow integers (promoted to int, which cannot overflow) are unchanged.
template <typename V>
constexpr bool kWraps = std::is_integral_v<V>&& std::is_signed_v<V> && sizeof(V) >= sizeof(int);
template <typename V>
V wrap_add(V a, V b) {
  if constexpr (kWraps<V>) {
    using U = std::make_unsigned_t<V>;
    return static_cast<V>(static_cast<U>(a) + static_cast<U>(b));
  } else {
    return a + b;
  }
}
template <typename V>
V wrap_sub(V a, V b) {
  if constexpr (kWraps<V>) {
    using U = std::make_unsigned_t<V>;
    return static_cast<V>(static_cast<U>(a) - static_cast<U>(b));
  } else {
    return a - b;
  }
}
template <typename V>
V wrap_mul(V a, V b) {
  if constexpr (kWraps<V>) {
    using U = std::make_unsigned_t<V>;
    return static_cast<V>(static_cast<U>(a) * static_cast<U>(b));
  } else {
    return a * b;
  }
}
// A power computed in double, back to the element type (integers: float_to_int, defined for
// results past the type's range).
template <typename V, typename D>
V pow_to(D p) {
  if constexpr (std::is_integral_v<V> && !std::is_same_v<V, bool>) {
    return float_to_int<V>(p);
  } else {
    return static_cast<V>(p);
  }
}

#define OAR_BINARY_KERNEL(Name, expr)                                                   \
  template <typename T>                                                                  \
  void Name(const DeviceContext&, const DenseTensor& x, const DenseTensor& y,            \
            DenseTensor* out) {                                                          \
    binary_kernel<T, T>(x, y, out, [](auto a, auto b) { return expr; });                 \
  }

OAR_BINARY_KERNEL(AddKernel, wrap_add(a, b))
OAR_BINARY_KERNEL(SubtractKernel, wrap_sub(a, b))
OAR_BINARY_KERNEL(MultiplyKernel, wrap_mul(a, b))
OAR_BINARY_KERNEL(MaximumKernel, (a != a || a > b) ? a : b)  // NaN propagates
OAR_BINARY_KERNEL(MinimumKernel, (a != a || a < b) ? a : b)
OAR_BINARY_KERNEL(PowKernel, pow_to<decltype(a)>(std::pow(a, b)))
// PReLU: a > 0 ? a : a * alpha, alpha broadcast to x. The select is written on the bits so
// that GCC vectorizes it: under the default -ftrapping-math it moves a product that one side
// of a condition uses under a branch (a scalar loop, 13x slower).
template <typename M>
M prelu_value(M a, M w) {
  using I = std::conditional_t<sizeof(M) == 8, uint64_t, uint32_t>;
  const I keep = a > 0 ? ~I(0) : I(0);
  return std::bit_cast<M>((std::bit_cast<I>(a) & keep) | (std::bit_cast<I>(a * w) & ~keep));
}

template <typename T>
void PreluKernel(const DeviceContext&, const DenseTensor& x, const DenseTensor& alpha, DenseTensor* out) {
  binary_kernel<T, T>(x, alpha, out, [](auto a, auto w) { return prelu_value(a, w); });
}

// copysign and nextafter on the floats' bits (integer operations and selects, which GCC
// vectorizes; std::nextafter is a libm call, 17x torch's time through NumPy before).
template <typename M>
M copysign_bits(M a, M b) {
  using I = std::conditional_t<sizeof(M) == 8, uint64_t, uint32_t>;
  constexpr I kSign = I(1) << (8 * sizeof(M) - 1);
  return std::bit_cast<M>((std::bit_cast<I>(a) & ~kSign) | (std::bit_cast<I>(b) & kSign));
}

// C's nextafter: the next float after a towards b; b when they are equal (so -0 from 0
// towards -0), the smallest subnormal with b's sign from zero, NaN when either is NaN. A
// float's magnitude bits are ordered as its magnitude: one step up moves away from zero.
template <typename M>
M next_after(M a, M b) {
  using I = std::conditional_t<sizeof(M) == 8, int64_t, int32_t>;
  const I ia = std::bit_cast<I>(a);
  const I away = (a < b) == (a > 0) ? I(1) : I(-1);
  const I from_zero = (std::bit_cast<I>(b) & std::numeric_limits<I>::min()) | I(1);
  M r = std::bit_cast<M>(a == 0 ? from_zero : static_cast<I>(ia + away));
  r = a == b ? b : r;
  return (a != a || b != b) ? std::numeric_limits<M>::quiet_NaN() : r;
}

// gcd of |a| and |b| by Stein's binary algorithm, on the magnitudes as uint64 (|min| is
// 2^(n-1), which wraps back to min, as NumPy's gcd); gcd(0, 0) = 0. Both odd, gcd(u, v) =
// gcd(min(u, v), |u - v| without its factors of 2): the shift count comes from the
// difference itself, so each step's chain is a subtract, a count and a shift (with a
// swap under a branch instead, a step waited on a mispredicted compare: 1M int32 20 ms at 1
// thread, torch's Euclid 17.7).
template <typename T>
T gcd_value(T a, T b) {
  using U = std::make_unsigned_t<T>;
  uint64_t u = static_cast<U>(a), v = static_cast<U>(b);
  if constexpr (std::is_signed_v<T>) {
    u = a < 0 ? static_cast<U>(U(0) - static_cast<U>(a)) : u;
    v = b < 0 ? static_cast<U>(U(0) - static_cast<U>(b)) : v;
  }
  if (u == 0 || v == 0) return static_cast<T>(static_cast<U>(u | v));
  const int shift = std::countr_zero(u | v);
  u >>= std::countr_zero(u);
  v >>= std::countr_zero(v);
  while (u != v) {  // both odd and under 2^63
    const int64_t d = static_cast<int64_t>(u) - static_cast<int64_t>(v);
    v = std::min(u, v);
    const uint64_t m = static_cast<uint64_t>(d < 0 ? -d : d);
    u = m >> std::countr_zero(m);
  }
  return static_cast<T>(static_cast<U>(v << shift));
}

template <typename T>
void CopysignKernel(const DeviceContext&, const DenseTensor& x, const DenseTensor& y, DenseTensor* out) {
  binary_kernel<T, T>(x, y, out, [](auto a, auto b) { return copysign_bits(a, b); });
}

template <typename T>
void NextafterKernel(const DeviceContext&, const DenseTensor& x, const DenseTensor& y, DenseTensor* out) {
  binary_kernel<T, T>(x, y, out, [](auto a, auto b) { return next_after(a, b); });
}

template <typename T>
void GcdKernel(const DeviceContext&, const DenseTensor& x, const DenseTensor& y, DenseTensor* out) {
  binary_kernel<T, T>(x, y, out, [](auto a, auto b) { return gcd_value<T>(static_cast<T>(a), static_cast<T>(b)); });
}

template <typename T>
void DivideKernel(const DeviceContext&, const DenseTensor& x, const DenseTensor& y,
                  DenseTensor* out) {
  check_int_divisor<T>(y, "divide");
  binary_kernel<T, T>(x, y, out, [](auto a, auto b) {
    if constexpr (std::is_integral_v<decltype(a)>) {
      return div_int(a, b);
    } else {
      return a / b;
    }
  });
}

// Python's integer // and % (the remainder takes b's sign)
template <typename V>
V floor_div_int(V a, V b) {
  const V q = div_int(a, b);
  return (rem_int(a, b) != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
template <typename V>
V floor_rem_int(V a, V b) {
  const V r = rem_int(a, b);
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

// Note [Integer division through double]
// For integers with |a|, |b| < 2^51, floor(a / b) is the floor of the rounded double quotient:
// a and b are exact doubles, and a quotient that is not an integer lies at least 1/|b| from
// one, farther than the division's rounding error (at most |a / b| 2^-53 < 1/(4 |b|)); an
// integer quotient is exact. The remainder a - q b is then exact by an FMA (|q b| < 2^52).
// Four lanes an instruction against a scalar idiv a lane: 1M int64 % at 1 thread 2.9 -> 1.2 ms
// (torch 2.2), by 7 3.2 -> 0.4. Every int32 qualifies (min // -1 gives 2^31, which the truncating conversion turns
// into min, the wrapped quotient); int64 lanes past 2^51 take the scalar loop.
template <typename T, bool kQuotient>
void div_lanes(const T* x, const T* y, bool one_y, T* o, int64_t b, int64_t e) {
  const auto scalar = [](T a, T d) { return kQuotient ? floor_div_int(a, d) : floor_rem_int(a, d); };
  const auto result = [](__m256d a, __m256d d) {
    const __m256d q = _mm256_floor_pd(_mm256_div_pd(a, d));
    return kQuotient ? q : _mm256_fnmadd_pd(q, d, a);
  };
  int64_t i = b;
  if constexpr (std::is_same_v<T, int32_t>) {
    const __m256d d1 = _mm256_set1_pd(static_cast<double>(y[0]));
    for (; i + 4 <= e; i += 4) {
      const __m256d a = _mm256_cvtepi32_pd(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i)));
      const __m256d d = one_y ? d1 : _mm256_cvtepi32_pd(_mm_loadu_si128(reinterpret_cast<const __m128i*>(y + i)));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(o + i), _mm256_cvttpd_epi32(result(a, d)));
    }
  } else {
    // |v| < 2^51 as a double: v in the low mantissa bits of 1.5 2^52, and back
    const __m256i magic = _mm256_set1_epi64x(0x4338000000000000), bias = _mm256_set1_epi64x(int64_t{1} << 51);
    const auto small = [bias](__m256i v) {  // every lane in [-2^51, 2^51)
      const __m256i high = _mm256_srli_epi64(_mm256_add_epi64(v, bias), 52);
      return _mm256_testz_si256(high, high) != 0;
    };
    const auto to_double = [magic](__m256i v) {
      return _mm256_sub_pd(_mm256_castsi256_pd(_mm256_add_epi64(v, magic)), _mm256_castsi256_pd(magic));
    };
    const __m256i y1 = _mm256_set1_epi64x(y[0]);
    for (; i + 4 <= e; i += 4) {
      const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i));
      const __m256i d = one_y ? y1 : _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y + i));
      if (small(a) && small(d)) {
        const __m256d r = _mm256_add_pd(result(to_double(a), to_double(d)), _mm256_castsi256_pd(magic));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(o + i), _mm256_sub_epi64(_mm256_castpd_si256(r), magic));
      } else {
        for (int64_t k = i; k < i + 4; ++k) o[k] = scalar(x[k], y[one_y ? 0 : k]);
      }
    }
  }
  for (; i < e; ++i) o[i] = scalar(x[i], y[one_y ? 0 : i]);
}

// int32 / int64 // and % with x of out's layout and y the same or one value (a scalar
// divisor): through div_lanes. False where another layout leaves it to binary_kernel.
template <typename T, bool kQuotient>
bool int_div_fast(const DenseTensor& x, const DenseTensor& y, DenseTensor* out) {
  if constexpr (std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t>) {
    const int64_t n = out->numel();
    const bool one_y = y.numel() == 1;
    if (n == 0 || x.numel() != n || !x.is_contiguous() || !(one_y || (y.numel() == n && y.is_contiguous()))) {
      return false;
    }
    const T *xp = x.data<T>(), *yp = y.data<T>();
    T* o = out->alloc<T>();
    parallel_for(n, [=](int64_t b, int64_t e) { div_lanes<T, kQuotient>(xp, yp, one_y, o, b, e); });
    return true;
  }
  return false;
}

template <typename T>
void FloorDivideKernel(const DeviceContext&, const DenseTensor& x, const DenseTensor& y,
                       DenseTensor* out) {
  check_int_divisor<T>(y, "floor_divide");
  if (int_div_fast<T, true>(x, y, out)) return;
  binary_kernel<T, T>(x, y, out, [](auto a, auto b) {
    if constexpr (std::is_integral_v<decltype(a)>) {
      return floor_div_int(a, b);
    } else {
      return std::floor(a / b);
    }
  });
}

template <typename T>
void RemainderKernel(const DeviceContext&, const DenseTensor& x, const DenseTensor& y,
                     DenseTensor* out) {
  check_int_divisor<T>(y, "remainder");
  if (int_div_fast<T, false>(x, y, out)) return;
  binary_kernel<T, T>(x, y, out, [](auto a, auto b) { return floor_rem_int(a, b); });
}

#define OAR_COMPARE_KERNEL(Name, expr)                                                   \
  template <typename T>                                                                  \
  void Name(const DeviceContext&, const DenseTensor& x, const DenseTensor& y,            \
            DenseTensor* out) {                                                          \
    binary_kernel<T, bool>(x, y, out, [](auto a, auto b) { return expr; });              \
  }

OAR_COMPARE_KERNEL(EqualKernel, a == b)
OAR_COMPARE_KERNEL(NotEqualKernel, a != b)
OAR_COMPARE_KERNEL(LessThanKernel, a < b)
OAR_COMPARE_KERNEL(LessEqualKernel, a <= b)
OAR_COMPARE_KERNEL(GreaterThanKernel, a > b)
OAR_COMPARE_KERNEL(GreaterEqualKernel, a >= b)
OAR_COMPARE_KERNEL(LogicalAndKernel, static_cast<bool>(a) && static_cast<bool>(b))
OAR_COMPARE_KERNEL(LogicalOrKernel, static_cast<bool>(a) || static_cast<bool>(b))
OAR_COMPARE_KERNEL(LogicalXorKernel, static_cast<bool>(a) != static_cast<bool>(b))

// Bitwise ops. A shift count outside [0, bits) gives 0, and for an arithmetic right shift of
// a signed x the sign's fill (x >> (bits - 1)), as Paddle's kernels do; C++ leaves those
// shifts undefined, so the count is tested first, as unsigned (a negative count is large).
// Left shifts and logical right shifts run on x's bits as unsigned (no signed overflow).
OAR_BINARY_KERNEL(BitwiseAndKernel, a& b)
OAR_BINARY_KERNEL(BitwiseOrKernel, a | b)
OAR_BINARY_KERNEL(BitwiseXorKernel, a ^ b)

template <typename T>
void BitwiseNotKernel(const DeviceContext&, const DenseTensor& x, DenseTensor* out) {
  if constexpr (std::is_same_v<T, bool>) {
    if (x.is_contiguous()) {  // as bytes: GCC does not vectorize bool loads (12x torch before)
      const auto* u = static_cast<const uint8_t*>(x.raw_data());
      bool* o = out->alloc<bool>();
      parallel_for(out->numel(), [u, o](int64_t b, int64_t e) {
        bool* const po = o;  // Note [Byte stores and captured pointers] (elementwise.h)
        const uint8_t* const pu = u;
#pragma omp simd
        for (int64_t i = b; i < e; ++i) po[i] = pu[i] == 0;
      });
      return;
    }
  }
  unary_kernel<T, T>(x, out, [](auto a) {
    if constexpr (std::is_same_v<decltype(a), bool>) {
      return !a;
    } else {
      return static_cast<T>(~a);
    }
  });
}

template <typename T>
constexpr bool shift_inside(T count) {
  return static_cast<std::make_unsigned_t<T>>(count) < sizeof(T) * 8;
}

template <typename T>
void BitwiseLeftShiftKernel(const DeviceContext&, const DenseTensor& x, const DenseTensor& y, bool, DenseTensor* out) {
  using U = std::make_unsigned_t<T>;
  binary_kernel<T, T>(x, y, out, [](T a, T b) {
    return shift_inside(b) ? static_cast<T>(static_cast<U>(static_cast<U>(a) << b)) : T(0);
  });
}

template <typename T>
void BitwiseRightShiftKernel(const DeviceContext&, const DenseTensor& x, const DenseTensor& y, bool is_arithmetic,
                             DenseTensor* out) {
  using U = std::make_unsigned_t<T>;
  constexpr int kSign = sizeof(T) * 8 - 1;
  if (is_arithmetic && std::is_signed_v<T>) {
    binary_kernel<T, T>(x, y, out,
                        [](T a, T b) { return static_cast<T>(a >> (shift_inside(b) ? static_cast<int>(b) : kSign)); });
  } else {
    binary_kernel<T, T>(x, y, out,
                        [](T a, T b) { return shift_inside(b) ? static_cast<T>(static_cast<U>(a) >> b) : T(0); });
  }
}

template <typename T>
void WhereKernel(const DeviceContext&, const DenseTensor& cond, const DenseTensor& x,
                 const DenseTensor& y, DenseTensor* out) {
  // The condition is read as bytes (bool tensors hold 0 or 1): GCC does not vectorize a
  // select on `bool` loads and emitted a branch per element, which a random mask mispredicts
  // half the time (4.2 ms for 1M floats, 28x an add). On uint8_t it is a vector blend.
  // 16-bit floats are selected as their bit patterns: a select needs no arithmetic, and
  // through float each element was widened and rounded back (float16 1.56x torch's time on
  // the Xeon; now 0.08 ms for [1024, 1024] on Zen 4).
  auto pick = [](uint8_t c, auto a, auto b) { return c != 0 ? a : b; };
  if constexpr (detail::kIsHalf<T>) {
    ternary_kernel<uint8_t, uint16_t, uint16_t>(cond, x, y, out, pick);
  } else {
    ternary_kernel<uint8_t, T, T>(cond, x, y, out, pick);
  }
}

}  // namespace
}  // namespace oar::phi

using namespace oar::phi;  // NOLINT: registration macros name the kernels unqualified

OAR_REGISTER_KERNEL(add, CPU, AddKernel, OAR_NUMERIC_TYPES)
OAR_REGISTER_KERNEL(subtract, CPU, SubtractKernel, OAR_NUMERIC_TYPES)
OAR_REGISTER_KERNEL(multiply, CPU, MultiplyKernel, OAR_NUMERIC_TYPES, bool)
OAR_REGISTER_KERNEL(divide, CPU, DivideKernel, OAR_NUMERIC_TYPES)
OAR_REGISTER_KERNEL(floor_divide, CPU, FloorDivideKernel, OAR_NUMERIC_TYPES)
OAR_REGISTER_KERNEL(remainder, CPU, RemainderKernel, int8_t, uint8_t, int16_t, int32_t,
                    int64_t)  // floats: math_functions_kernels.cc
OAR_REGISTER_KERNEL(elementwise_pow, CPU, PowKernel, int32_t, int64_t)  // floats: math_functions_kernels.cc
OAR_REGISTER_KERNEL(prelu, CPU, PreluKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(copysign, CPU, CopysignKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(nextafter, CPU, NextafterKernel, float, double)
OAR_REGISTER_KERNEL(gcd, CPU, GcdKernel, int8_t, uint8_t, int16_t, int32_t, int64_t)
OAR_REGISTER_KERNEL(maximum, CPU, MaximumKernel, OAR_NUMERIC_TYPES)
OAR_REGISTER_KERNEL(minimum, CPU, MinimumKernel, OAR_NUMERIC_TYPES)
OAR_REGISTER_KERNEL(equal, CPU, EqualKernel, OAR_ALL_TYPES)
OAR_REGISTER_KERNEL(not_equal, CPU, NotEqualKernel, OAR_ALL_TYPES)
OAR_REGISTER_KERNEL(less_than, CPU, LessThanKernel, OAR_ALL_TYPES)
OAR_REGISTER_KERNEL(less_equal, CPU, LessEqualKernel, OAR_ALL_TYPES)
OAR_REGISTER_KERNEL(greater_than, CPU, GreaterThanKernel, OAR_ALL_TYPES)
OAR_REGISTER_KERNEL(greater_equal, CPU, GreaterEqualKernel, OAR_ALL_TYPES)
OAR_REGISTER_KERNEL(logical_and, CPU, LogicalAndKernel, OAR_ALL_TYPES)
OAR_REGISTER_KERNEL(logical_or, CPU, LogicalOrKernel, OAR_ALL_TYPES)
OAR_REGISTER_KERNEL(logical_xor, CPU, LogicalXorKernel, OAR_ALL_TYPES)
OAR_REGISTER_KERNEL(bitwise_and, CPU, BitwiseAndKernel, int8_t, uint8_t, int16_t, int32_t, int64_t, bool)
OAR_REGISTER_KERNEL(bitwise_or, CPU, BitwiseOrKernel, int8_t, uint8_t, int16_t, int32_t, int64_t, bool)
OAR_REGISTER_KERNEL(bitwise_xor, CPU, BitwiseXorKernel, int8_t, uint8_t, int16_t, int32_t, int64_t, bool)
OAR_REGISTER_KERNEL(bitwise_not, CPU, BitwiseNotKernel, int8_t, uint8_t, int16_t, int32_t, int64_t, bool)
OAR_REGISTER_KERNEL(bitwise_left_shift, CPU, BitwiseLeftShiftKernel, int8_t, uint8_t, int16_t, int32_t, int64_t)
OAR_REGISTER_KERNEL(bitwise_right_shift, CPU, BitwiseRightShiftKernel, int8_t, uint8_t, int16_t, int32_t, int64_t)
OAR_REGISTER_KERNEL(where, CPU, WhereKernel, OAR_ALL_TYPES, OAR_COMPLEX_TYPES)
