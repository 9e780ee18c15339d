// DataType: the element types of a tensor, their sizes and names, Paddle's type
// promotion, and visit_dtype() to turn a runtime dtype into a template argument.
#pragma once

#include <complex>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#include "paddle_core/base/errors.h"
#include "paddle_core/tensor/float16.h"
#include "paddle_core/tensor/float_to_int.h"

namespace oar {

enum class DataType : int8_t {
  UNDEFINED = -1,
  BOOL = 0,
  INT8,
  UINT8,
  INT16,
  INT32,
  INT64,
  FLOAT16,
  BFLOAT16,
  FLOAT32,
  FLOAT64,
  COMPLEX64,   // std::complex<float>, Paddle's complex64
  COMPLEX128,  // std::complex<double>
  NUM_TYPES,
};
constexpr int kNumDataTypes = static_cast<int>(DataType::NUM_TYPES);

size_t size_of(DataType t);
/// Paddle's name: "float32", "int64", "bool", ...
const char* dtype_name(DataType t);
/// Parses "float32", "float", "fp16", "bf16", "int", "long", ... ; throws InvalidType.
DataType dtype_from_name(std::string_view name);

inline bool is_floating(DataType t) {
  return t == DataType::FLOAT16 || t == DataType::BFLOAT16 || t == DataType::FLOAT32 ||
         t == DataType::FLOAT64;
}
inline bool is_complex(DataType t) { return t == DataType::COMPLEX64 || t == DataType::COMPLEX128; }
/// complex64 -> float32, complex128 -> float64; other dtypes map to themselves.
inline DataType complex_to_real(DataType t) {
  return t == DataType::COMPLEX64 ? DataType::FLOAT32 : t == DataType::COMPLEX128 ? DataType::FLOAT64 : t;
}
/// float32 (and the 16-bit floats) -> complex64, float64 -> complex128.
DataType real_to_complex(DataType t);
inline bool is_integral(DataType t, bool include_bool = false) {
  return (t >= DataType::INT8 && t <= DataType::INT64) || (include_bool && t == DataType::BOOL);
}

/// The dtype two operands are computed in (the lattice Paddle and NumPy share:
/// bool < ints < floats < complex; int8+uint8 -> int16; float16+bfloat16 -> float32;
/// a complex result has the wider of the two real precisions: float64 with complex64
/// is complex128).
DataType promote_types(DataType a, DataType b);

/// Default float dtype for Python floats and creation ops (oar.set_default_dtype).
DataType default_float_dtype();
void set_default_float_dtype(DataType t);

template <typename T> struct CppTypeToDataType;
#define OAR_FOR_EACH_DTYPE(_)  \
  _(bool, BOOL)                \
  _(int8_t, INT8)              \
  _(uint8_t, UINT8)            \
  _(int16_t, INT16)            \
  _(int32_t, INT32)            \
  _(int64_t, INT64)            \
  _(::oar::float16, FLOAT16)   \
  _(::oar::bfloat16, BFLOAT16) \
  _(float, FLOAT32)            \
  _(double, FLOAT64)
/// The complex dtypes, kept out of OAR_FOR_EACH_DTYPE (so out of visit_dtype): most
/// generic code compares or orders its elements. visit_dtype_all includes them.
#define OAR_FOR_EACH_COMPLEX_DTYPE(_) \
  _(::std::complex<float>, COMPLEX64) \
  _(::std::complex<double>, COMPLEX128)
#define OAR_DECL_CPP_TO_DTYPE(cpp, name) \
  template <> struct CppTypeToDataType<cpp> { static constexpr DataType value = DataType::name; };
OAR_FOR_EACH_DTYPE(OAR_DECL_CPP_TO_DTYPE)
OAR_FOR_EACH_COMPLEX_DTYPE(OAR_DECL_CPP_TO_DTYPE)
#undef OAR_DECL_CPP_TO_DTYPE
template <typename T> constexpr DataType dtype_of = CppTypeToDataType<T>::value;

/// The type arithmetic on T is done in: float for the 16-bit floats, T otherwise.
template <typename T> struct OpMathT { using type = T; };
template <> struct OpMathT<float16> { using type = float; };
template <> struct OpMathT<bfloat16> { using type = float; };
template <typename T> using OpMath = typename OpMathT<T>::type;

template <typename T> struct TypeTag { using type = T; };

template <typename T>
struct IsComplexT : std::false_type {};
template <typename T>
struct IsComplexT<std::complex<T>> : std::true_type {};
template <typename T>
constexpr bool is_complex_v = IsComplexT<T>::value;

/// Converts one element between any two dtypes: complex -> real keeps the real part
/// (as Paddle's cast), real -> complex has a zero imaginary part.
template <typename To, typename From>
inline To convert_element(From v) {
  if constexpr (is_complex_v<From> && is_complex_v<To>) {
    return To(static_cast<typename To::value_type>(v.real()), static_cast<typename To::value_type>(v.imag()));
  } else if constexpr (is_complex_v<From>) {
    if constexpr (std::is_same_v<To, bool>) {
      return v.real() != 0 || v.imag() != 0;
    } else if constexpr (std::is_integral_v<To>) {
      return float_to_int<To>(v.real());
    } else {
      return static_cast<To>(static_cast<OpMath<To>>(v.real()));
    }
  } else if constexpr (is_complex_v<To>) {
    return To(static_cast<typename To::value_type>(static_cast<OpMath<From>>(v)), 0);
  } else if constexpr (std::is_integral_v<To> && !std::is_same_v<To, bool> && !std::is_integral_v<From> &&
                       !std::is_same_v<From, bool>) {
    return float_to_int<To>(static_cast<OpMath<From>>(v));  // NaN/inf/huge: defined
  } else {
    return static_cast<To>(v);
  }
}

[[noreturn]] void throw_unsupported_dtype(const char* op, DataType t);

/// Calls fn(TypeTag<T>{}) with T the C++ type of `t`. `op` names the caller in errors.
template <typename Fn>
decltype(auto) visit_dtype(DataType t, const char* op, Fn&& fn) {
  switch (t) {
#define OAR_VISIT_CASE(cpp, name) \
  case DataType::name: return fn(TypeTag<cpp>{});
    OAR_FOR_EACH_DTYPE(OAR_VISIT_CASE)
#undef OAR_VISIT_CASE
    default: break;
  }
  throw_unsupported_dtype(op, t);
}

/// visit_dtype over every dtype, the complex ones included.
template <typename Fn>
decltype(auto) visit_dtype_all(DataType t, const char* op, Fn&& fn) {
  switch (t) {
#define OAR_VISIT_CASE(cpp, name) \
  case DataType::name:            \
    return fn(TypeTag<cpp>{});
    OAR_FOR_EACH_DTYPE(OAR_VISIT_CASE)
    OAR_FOR_EACH_COMPLEX_DTYPE(OAR_VISIT_CASE)
#undef OAR_VISIT_CASE
    default:
      break;
  }
  throw_unsupported_dtype(op, t);
}

}  // namespace oar
