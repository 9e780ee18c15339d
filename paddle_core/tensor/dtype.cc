#include "paddle_core/tensor/dtype.h"

#include <atomic>
#include <string>
#include <unordered_map>

namespace oar {

size_t size_of(DataType t) {
  switch (t) {
    case DataType::BOOL: case DataType::INT8: case DataType::UINT8: return 1;
    case DataType::INT16: case DataType::FLOAT16: case DataType::BFLOAT16: return 2;
    case DataType::INT32: case DataType::FLOAT32: return 4;
    case DataType::INT64:
    case DataType::FLOAT64:
    case DataType::COMPLEX64:
      return 8;
    case DataType::COMPLEX128:
      return 16;
    default: break;
  }
  OAR_THROW(InvalidType, "size_of: undefined dtype");
}

const char* dtype_name(DataType t) {
  switch (t) {
    case DataType::BOOL: return "bool";
    case DataType::INT8: return "int8";
    case DataType::UINT8: return "uint8";
    case DataType::INT16: return "int16";
    case DataType::INT32: return "int32";
    case DataType::INT64: return "int64";
    case DataType::FLOAT16: return "float16";
    case DataType::BFLOAT16: return "bfloat16";
    case DataType::FLOAT32: return "float32";
    case DataType::FLOAT64: return "float64";
    case DataType::COMPLEX64:
      return "complex64";
    case DataType::COMPLEX128:
      return "complex128";
    default: return "undefined";
  }
}

DataType dtype_from_name(std::string_view name) {
  static const std::unordered_map<std::string_view, DataType> kNames = {
      {"bool", DataType::BOOL},        {"int8", DataType::INT8},           {"uint8", DataType::UINT8},
      {"int16", DataType::INT16},      {"int32", DataType::INT32},         {"int64", DataType::INT64},
      {"int", DataType::INT64},        {"long", DataType::INT64},          {"float16", DataType::FLOAT16},
      {"fp16", DataType::FLOAT16},     {"half", DataType::FLOAT16},        {"bfloat16", DataType::BFLOAT16},
      {"bf16", DataType::BFLOAT16},    {"float32", DataType::FLOAT32},     {"fp32", DataType::FLOAT32},
      {"float", DataType::FLOAT32},    {"float64", DataType::FLOAT64},     {"fp64", DataType::FLOAT64},
      {"double", DataType::FLOAT64},   {"complex64", DataType::COMPLEX64}, {"complex128", DataType::COMPLEX128},
      {"cfloat", DataType::COMPLEX64}, {"cdouble", DataType::COMPLEX128},
  };
  auto it = kNames.find(name);
  OAR_ENFORCE(it != kNames.end(), InvalidType, "unknown dtype '", name,
              "'; expected one of bool, int8, uint8, int16, int32, int64, float16, "
              "bfloat16, float32, float64, complex64, complex128");
  return it->second;
}

namespace {
int rank(DataType t) {  // position in the promotion lattice
  switch (t) {
    case DataType::BOOL: return 0;
    case DataType::UINT8: case DataType::INT8: return 1;
    case DataType::INT16: return 2;
    case DataType::INT32: return 3;
    case DataType::INT64: return 4;
    case DataType::FLOAT16: case DataType::BFLOAT16: return 5;
    case DataType::FLOAT32: return 6;
    case DataType::FLOAT64: return 7;
    case DataType::COMPLEX64:
      return 8;
    case DataType::COMPLEX128:
      return 9;
    default: return -1;
  }
}
std::atomic<DataType> g_default_float{DataType::FLOAT32};
}  // namespace

DataType promote_types(DataType a, DataType b) {
  if (a == b) return a;
  OAR_ENFORCE(a != DataType::UNDEFINED && b != DataType::UNDEFINED, InvalidType,
              "promote_types: undefined dtype");
  if (is_complex(a) || is_complex(b)) {  // complex of the wider real precision
    return real_to_complex(promote_types(complex_to_real(a), complex_to_real(b)));
  }
  int ra = rank(a), rb = rank(b);
  if (ra == rb) {  // same rank, different types
    if (ra == 1) return DataType::INT16;    // int8 + uint8
    return DataType::FLOAT32;               // float16 + bfloat16
  }
  return ra > rb ? a : b;
}

DataType real_to_complex(DataType t) {
  if (is_complex(t)) return t;
  return t == DataType::FLOAT64 ? DataType::COMPLEX128 : DataType::COMPLEX64;
}

void throw_unsupported_dtype(const char* op, DataType t) {
  OAR_THROW(InvalidType, op, ": unsupported dtype ", dtype_name(t));
}

DataType default_float_dtype() { return g_default_float.load(std::memory_order_relaxed); }
void set_default_float_dtype(DataType t) {
  OAR_ENFORCE(is_floating(t), InvalidType, "set_default_dtype: expected a float dtype, got ",
              dtype_name(t));
  g_default_float.store(t);
}

}  // namespace oar
