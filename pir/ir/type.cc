#include "pir/ir/type.h"

#include <cstring>

#include "paddle_core/base/errors.h"
#include "paddle_core/tensor/dense_tensor.h"
#include "pir/ir/attribute.h"
#include "pir/ir/kinds.h"
#include "pir/ir/printer.h"

namespace oar::pir {

const char* layout_name(DataLayout l) {
  switch (l) {
    case DataLayout::kNCHW: return "NCHW";
    case DataLayout::kNHWC: return "NHWC";
    default: return "ANY";
  }
}

bool Type::has_dynamic_dims() const {
  for (int64_t d : s_->dims)
    if (d == kDynamic) return true;
  return false;
}
bool Type::refines(Type general) const {
  if (*this == general) return true;
  if (!*this || !general || !is_tensor() || !general.is_tensor() || dtype() != general.dtype() ||
      dims().size() != general.dims().size())
    return false;
  for (size_t i = 0; i < dims().size(); ++i)
    if (general.dims()[i] != kDynamic && general.dims()[i] != dims()[i]) return false;
  return true;
}
int64_t Type::numel() const {
  int64_t n = 1;
  for (int64_t d : s_->dims) {
    if (d == kDynamic) return -1;
    n *= d;
  }
  return n;
}
std::string Type::str() const {
  std::string s;
  print_type(s, *this);
  return s;
}

TypeKind scalar_kind_of(DataType t) {
  switch (t) {
    case DataType::BOOL: return TypeKind::kBool;
    case DataType::INT8: return TypeKind::kInt8;
    case DataType::UINT8: return TypeKind::kUInt8;
    case DataType::INT16: return TypeKind::kInt16;
    case DataType::INT32: return TypeKind::kInt32;
    case DataType::INT64: return TypeKind::kInt64;
    case DataType::FLOAT16: return TypeKind::kFloat16;
    case DataType::BFLOAT16: return TypeKind::kBFloat16;
    case DataType::FLOAT32: return TypeKind::kFloat32;
    case DataType::FLOAT64: return TypeKind::kFloat64;
    default: break;
  }
  OAR_THROW(InvalidType, "scalar_type: undefined dtype");
}
DataType dtype_of_kind(TypeKind k) {
  switch (k) {
    case TypeKind::kBool: return DataType::BOOL;
    case TypeKind::kInt8: return DataType::INT8;
    case TypeKind::kUInt8: return DataType::UINT8;
    case TypeKind::kInt16: return DataType::INT16;
    case TypeKind::kInt32: return DataType::INT32;
    case TypeKind::kInt64: return DataType::INT64;
    case TypeKind::kFloat16: return DataType::FLOAT16;
    case TypeKind::kBFloat16: return DataType::BFLOAT16;
    case TypeKind::kFloat32: return DataType::FLOAT32;
    case TypeKind::kFloat64: return DataType::FLOAT64;
    default: return DataType::UNDEFINED;
  }
}
const std::string& Type::kind_name() const { return s_->info->name; }
const std::string& Attribute::kind_name() const { return s_->info->name; }

DataType dtype_from_short_name(std::string_view n) {
  static const std::pair<std::string_view, DataType> kNames[] = {
      {"f32", DataType::FLOAT32}, {"i64", DataType::INT64},   {"i32", DataType::INT32},     {"bool", DataType::BOOL},
      {"f64", DataType::FLOAT64}, {"f16", DataType::FLOAT16}, {"bf16", DataType::BFLOAT16}, {"i8", DataType::INT8},
      {"u8", DataType::UINT8},    {"i16", DataType::INT16}};  // the common ones first: this is on the parser's path
  for (const auto& [name, t] : kNames)
    if (n == name) return t;
  return DataType::UNDEFINED;
}
const char* short_dtype_name(DataType t) {
  switch (t) {
    case DataType::BOOL: return "bool";
    case DataType::INT8: return "i8";
    case DataType::UINT8: return "u8";
    case DataType::INT16: return "i16";
    case DataType::INT32: return "i32";
    case DataType::INT64: return "i64";
    case DataType::FLOAT16: return "f16";
    case DataType::BFLOAT16: return "bf16";
    case DataType::FLOAT32: return "f32";
    case DataType::FLOAT64: return "f64";
    default: return "undefined";
  }
}

const char* attr_kind_name(AttrKind k) {
  switch (k) {
    case AttrKind::kBool: return "bool";
    case AttrKind::kInt: return "int";
    case AttrKind::kFloat: return "float";
    case AttrKind::kString: return "string";
    case AttrKind::kArray: return "array";
    case AttrKind::kDType: return "dtype";
    case AttrKind::kPlace: return "place";
    case AttrKind::kShape: return "shape";
    case AttrKind::kDense: return "dense";
    case AttrKind::kType: return "type";
    case AttrKind::kKernelKey: return "kernel_key";
  }
  return "dialect kind";
}

DenseTensor Attribute::as_dense_tensor() const {
  DenseTensor d(Dims(type().dims()), type().dtype());
  d.alloc();
  if (!bytes().empty()) std::memcpy(d.raw_data(), bytes().data(), bytes().size());
  return d;
}

Scalar Attribute::as_scalar() const {
  switch (s_->kind) {
    case AttrKind::kBool: return Scalar(s_->b);
    case AttrKind::kInt: return Scalar(s_->i);
    case AttrKind::kFloat: return Scalar(s_->f);
    default: break;
  }
  OAR_THROW(InvalidArgument, "attribute ", str(), " is not a number");
}
std::string Attribute::str() const {
  std::string s;
  print_attr(s, *this);
  return s;
}

}  // namespace oar::pir
