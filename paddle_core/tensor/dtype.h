// DataType: the element types of a tensor, their sizes and names, Paddle's type
// promotion, and visit_dtype() to turn a runtime dtype into a template argument.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "paddle_core/base/errors.h"
#include "paddle_core/tensor/float16.h"

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
inline bool is_integral(DataType t, bool include_bool = false) {
  return (t >= DataType::INT8 && t <= DataType::INT64) || (include_bool && t == DataType::BOOL);
}

/// The dtype two operands are computed in (the lattice Paddle and NumPy share:
/// bool < ints < floats; int8+uint8 -> int16; float16+bfloat16 -> float32).
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
#define OAR_DECL_CPP_TO_DTYPE(cpp, name) \
  template <> struct CppTypeToDataType<cpp> { static constexpr DataType value = DataType::name; };
OAR_FOR_EACH_DTYPE(OAR_DECL_CPP_TO_DTYPE)
#undef OAR_DECL_CPP_TO_DTYPE
template <typename T> constexpr DataType dtype_of = CppTypeToDataType<T>::value;

/// The type arithmetic on T is done in: float for the 16-bit floats, T otherwise.
template <typename T> struct OpMathT { using type = T; };
template <> struct OpMathT<float16> { using type = float; };
template <> struct OpMathT<bfloat16> { using type = float; };
template <typename T> using OpMath = typename OpMathT<T>::type;

template <typename T> struct TypeTag { using type = T; };

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
  OAR_THROW(InvalidType, op, ": unsupported dtype ", static_cast<int>(t));
}

}  // namespace oar
