// Element types and reductions of the sample device's collectives (collectives.cc):
// every OAR_DataType, every OAR_ReduceOp. 16-bit floats are reduced in float and rounded
// once; integers wrap as NumPy's do; bool SUM/MAX are "any", PROD/MIN "all".
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "sample_device.h"

namespace sample {
namespace {

float half_to_float(uint16_t h) {
  const uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    if (man == 0) {
      bits = sign;
    } else {  // subnormal: normalize
      int e = -1;
      uint32_t m = man;
      do {
        ++e;
        m <<= 1;
      } while ((m & 0x400u) == 0);
      bits = sign | ((127 - 15 - e) << 23) | ((m & 0x3ffu) << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (man << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t float_to_half(float f) {  // round to nearest even
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0));
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // overflows to inf
  if (abs < 0x38800000u) {                                               // subnormal or zero in half
    if (abs < 0x33000000u) return static_cast<uint16_t>(sign);
    const uint32_t e = abs >> 23, m = (abs & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - e;  // 14 + (112 - e) + 1 - 1
    uint32_t r = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1u))) ++r;
    return static_cast<uint16_t>(sign | r);
  }
  uint32_t r = abs - 0x38000000u;  // rebias
  r = (r + 0xfffu + ((r >> 13) & 1u)) >> 13;
  return static_cast<uint16_t>(sign | r);
}

float bf16_to_float(uint16_t b) {
  uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
uint16_t float_to_bf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

// Storage type S, math type M: load/store convert between them.
template <typename S, typename M>
struct Plain {
  using Math = M;
  static M load(const char* p) {
    S v;
    std::memcpy(&v, p, sizeof(S));
    return static_cast<M>(v);
  }
  static void store(char* p, M v) {
    S s = static_cast<S>(v);
    std::memcpy(p, &s, sizeof(S));
  }
};
template <float (*To)(uint16_t), uint16_t (*From)(float)>
struct Half16 {
  using Math = float;
  static float load(const char* p) {
    uint16_t v;
    std::memcpy(&v, p, 2);
    return To(v);
  }
  static void store(char* p, float v) {
    uint16_t s = From(v);
    std::memcpy(p, &s, 2);
  }
};
// Integers add and multiply in uint64 (wrapping, as NumPy's do), then narrow.
template <typename S>
struct Int {
  using Math = int64_t;
  static int64_t load(const char* p) { return Plain<S, int64_t>::load(p); }
  static void store(char* p, int64_t v) { Plain<S, int64_t>::store(p, v); }
};

template <typename M>
M combine(OAR_ReduceOp op, M a, M b) {
  if constexpr (std::is_same_v<M, bool>) {
    return (op == OAR_REDUCE_SUM || op == OAR_REDUCE_MAX) ? (a || b) : (a && b);
  } else if constexpr (std::is_integral_v<M>) {
    const auto ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
    switch (op) {
      case OAR_REDUCE_SUM:
      case OAR_REDUCE_AVG:
        return static_cast<M>(ua + ub);
      case OAR_REDUCE_PROD:
        return static_cast<M>(ua * ub);
      case OAR_REDUCE_MAX:
        return a < b ? b : a;
      case OAR_REDUCE_MIN:
        return b < a ? b : a;
    }
    return a;
  } else {
    switch (op) {
      case OAR_REDUCE_SUM:
      case OAR_REDUCE_AVG:
        return a + b;
      case OAR_REDUCE_PROD:
        return a * b;
      case OAR_REDUCE_MAX:
        return (a < b || b != b) ? b : a;  // NaN wins, as in NumPy
      case OAR_REDUCE_MIN:
        return (b < a || b != b) ? b : a;
    }
    return a;
  }
}

// dst[i] = op over srcs[0..n)[i], in rank order (every rank gets the same bits).
template <typename C>
void reduce_typed(char* dst, const std::vector<const char*>& srcs, size_t count, OAR_ReduceOp op) {
  using M = typename C::Math;
  constexpr size_t esz = C::size;
  for (size_t i = 0; i < count; ++i) {
    M acc = C::load(srcs[0] + i * esz);
    for (size_t q = 1; q < srcs.size(); ++q) acc = combine<M>(op, acc, C::load(srcs[q] + i * esz));
    if constexpr (!std::is_same_v<M, bool>) {
      if (op == OAR_REDUCE_AVG) acc = acc / static_cast<M>(srcs.size());
    }
    C::store(dst + i * esz, acc);
  }
}

template <typename Base, size_t N>
struct Sized : Base {
  static constexpr size_t size = N;
};

}  // namespace

void reduce_into(char* dst, const std::vector<const char*>& srcs, size_t count, OAR_DataType t, OAR_ReduceOp op) {
  switch (t) {
    case OAR_DTYPE_BOOL:
      return reduce_typed<Sized<Plain<bool, bool>, 1>>(dst, srcs, count, op);
    case OAR_DTYPE_INT8:
      return reduce_typed<Sized<Int<int8_t>, 1>>(dst, srcs, count, op);
    case OAR_DTYPE_UINT8:
      return reduce_typed<Sized<Int<uint8_t>, 1>>(dst, srcs, count, op);
    case OAR_DTYPE_INT16:
      return reduce_typed<Sized<Int<int16_t>, 2>>(dst, srcs, count, op);
    case OAR_DTYPE_INT32:
      return reduce_typed<Sized<Int<int32_t>, 4>>(dst, srcs, count, op);
    case OAR_DTYPE_INT64:
      return reduce_typed<Sized<Int<int64_t>, 8>>(dst, srcs, count, op);
    case OAR_DTYPE_FLOAT16:
      return reduce_typed<Sized<Half16<half_to_float, float_to_half>, 2>>(dst, srcs, count, op);
    case OAR_DTYPE_BFLOAT16:
      return reduce_typed<Sized<Half16<bf16_to_float, float_to_bf16>, 2>>(dst, srcs, count, op);
    case OAR_DTYPE_FLOAT32:
      return reduce_typed<Sized<Plain<float, float>, 4>>(dst, srcs, count, op);
    case OAR_DTYPE_FLOAT64:
      return reduce_typed<Sized<Plain<double, double>, 8>>(dst, srcs, count, op);
  }
}

}  // namespace sample
