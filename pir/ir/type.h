// Type: a handle to a type uniqued in an IrContext, so equality is pointer equality.
// Builtin types: bool, int8..int64, uint8, float16, bfloat16, float32, float64, index,
// DenseTensorType (dims with -1 for a dynamic size, dtype, layout) and VectorType
// (a list of types: what builtin.combine makes and a Tensor[] argument takes).
// Dialects register more kinds (kinds.h, Note [Attribute and type kinds]).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "paddle_core/tensor/dtype.h"

namespace oar::pir {

class IrContext;
struct TypeKindInfo;

/// The id of a type kind. The builtin kinds are these values (registered first, in this
/// order); a dialect's kinds get the ids after them, per context.
enum class TypeKind : uint16_t {
  kBool,
  kInt8,
  kUInt8,
  kInt16,
  kInt32,
  kInt64,
  kFloat16,
  kBFloat16,
  kFloat32,
  kFloat64,
  kIndex,
  kDenseTensor,
  kVector,
};
constexpr int kNumBuiltinTypeKinds = static_cast<int>(TypeKind::kVector) + 1;

/// Memory layout of a dense tensor (Paddle's DataLayout; NCHW is the default).
enum class DataLayout : uint8_t { kNCHW = 0, kNHWC = 1, kAny = 2 };
const char* layout_name(DataLayout l);

/// A size that is only known when the program runs.
constexpr int64_t kDynamic = -1;

namespace detail {
/// The uniqued type. Builtin kinds keep their parameters in these fields; a dialect's
/// kind may derive its own storage from this one.
struct TypeStorage {
  TypeStorage() = default;
  virtual ~TypeStorage() = default;
  // Movable: a value is built on the stack and moved into the context only when new.
  TypeStorage(TypeStorage&&) = default;
  TypeStorage& operator=(TypeStorage&&) = default;
  TypeStorage(const TypeStorage&) = default;
  TypeStorage& operator=(const TypeStorage&) = default;
  TypeKind kind{};
  const TypeKindInfo* info = nullptr;     // the kind's hooks (set by the context)
  DataType dtype = DataType::UNDEFINED;   // kDenseTensor: element type
  DataLayout layout = DataLayout::kNCHW;  // kDenseTensor
  std::vector<int64_t> dims;              // kDenseTensor
  std::vector<const TypeStorage*> elems;  // kVector
};
}  // namespace detail

/// A uniqued type; the null Type means "no type".
class Type {
 public:
  Type() = default;
  explicit Type(const detail::TypeStorage* s) : s_(s) {}
  explicit operator bool() const { return s_ != nullptr; }
  bool operator==(Type o) const { return s_ == o.s_; }
  bool operator!=(Type o) const { return s_ != o.s_; }
  const detail::TypeStorage* storage() const { return s_; }
  TypeKind kind() const { return s_->kind; }
  /// The kind's registration (name and hooks).
  const TypeKindInfo& kind_info() const { return *s_->info; }
  const std::string& kind_name() const;
  /// A dialect kind's storage (check the kind first).
  template <typename S>
  const S& storage_as() const {
    return static_cast<const S&>(*s_);
  }

  bool is_tensor() const { return s_ && s_->kind == TypeKind::kDenseTensor; }
  bool is_vector() const { return s_ && s_->kind == TypeKind::kVector; }
  /// True for the scalar element types (bool ... float64, index).
  bool is_scalar() const { return s_ && s_->kind < TypeKind::kDenseTensor; }

  // DenseTensorType accessors (only valid when is_tensor()).
  const std::vector<int64_t>& dims() const { return s_->dims; }
  int rank() const { return static_cast<int>(s_->dims.size()); }
  DataType dtype() const { return s_->dtype; }
  DataLayout layout() const { return s_->layout; }
  bool has_dynamic_dims() const;
  /// Whether a value of this type may stand where `general` is expected: the same type,
  /// or tensors of one dtype and rank whose dims agree wherever `general`'s are static
  /// (a loop carries tensor<?x...> that an init or a yield of known size refines).
  bool refines(Type general) const;
  /// Number of elements, -1 when a dim is dynamic.
  int64_t numel() const;

  // VectorType accessors (only valid when is_vector()).
  size_t size() const { return s_->elems.size(); }
  Type element(size_t i) const { return Type(s_->elems[i]); }

  /// The textual form: f32, tensor<2x?xf32>, vec<tensor<f32>, i64>.
  std::string str() const;

 private:
  const detail::TypeStorage* s_ = nullptr;
};

/// The scalar type kind of a dtype (f32 for FLOAT32...), and back.
TypeKind scalar_kind_of(DataType t);
DataType dtype_of_kind(TypeKind k);
/// "f32", "i64", "bf16", "bool", ... (the text format's element names), and back
/// (UNDEFINED for an unknown name).
const char* short_dtype_name(DataType t);
DataType dtype_from_short_name(std::string_view n);

}  // namespace oar::pir

template <> struct std::hash<oar::pir::Type> {
  size_t operator()(oar::pir::Type t) const noexcept {
    return std::hash<const void*>()(t.storage());
  }
};
