// Attribute: a handle to a constant value uniqued in an IrContext (pointer equality).
// Builtin kinds: bool, int (int64), float (double), string, array (of attributes),
// dtype, place, shape (int64 list: int[] arguments), dense (tensor data: constants),
// type, and kernel_key (backend, dtype, layout: the kernel dialect's annotation).
// Dialects register more kinds (kinds.h, Note [Attribute and type kinds]).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "paddle_core/tensor/place.h"
#include "paddle_core/tensor/scalar.h"
#include "pir/ir/type.h"

namespace oar {
class DenseTensor;
}

namespace oar::pir {

struct AttrKindInfo;

/// The id of an attribute kind. The builtin kinds are these values (registered first,
/// in this order); a dialect's kinds get the ids after them, per context.
enum class AttrKind : uint16_t {
  kBool,
  kInt,
  kFloat,
  kString,
  kArray,
  kDType,
  kPlace,
  kShape,
  kDense,
  kType,
  kKernelKey,
};
constexpr int kNumBuiltinAttrKinds = static_cast<int>(AttrKind::kKernelKey) + 1;
/// A builtin kind's name ("int", "kernel_key"); "dialect kind" for any other id (the
/// context knows those: Attribute::kind_name()).
const char* attr_kind_name(AttrKind k);

namespace detail {
/// The uniqued value. Builtin kinds keep their value in these fields; a dialect's kind
/// may derive its own storage from this one (its builtin fields stay default, so a
/// mistaken as_int() on it reads 0, never garbage).
struct AttrStorage {
  AttrStorage() = default;
  virtual ~AttrStorage() = default;
  // Movable: a value is built on the stack and moved into the context only when new.
  AttrStorage(AttrStorage&&) = default;
  AttrStorage& operator=(AttrStorage&&) = default;
  AttrStorage(const AttrStorage&) = default;
  AttrStorage& operator=(const AttrStorage&) = default;
  AttrKind kind{};
  const AttrKindInfo* info = nullptr;  // the kind's hooks (set by the context)
  bool b = false;
  int64_t i = 0;                          // kInt; kKernelKey: backend
  double f = 0.0;                         // kFloat
  DataType dtype = DataType::UNDEFINED;   // kDType, kKernelKey
  DataLayout layout = DataLayout::kNCHW;  // kKernelKey
  Place place;                            // kPlace
  std::string s;                          // kString; kDense: raw little-endian bytes
  std::vector<int64_t> ints;              // kShape
  std::vector<const AttrStorage*> elems;  // kArray
  Type type;                              // kDense (its tensor type), kType
};
}  // namespace detail

class Attribute {
 public:
  Attribute() = default;
  explicit Attribute(const detail::AttrStorage* s) : s_(s) {}
  explicit operator bool() const { return s_ != nullptr; }
  bool operator==(Attribute o) const { return s_ == o.s_; }
  bool operator!=(Attribute o) const { return s_ != o.s_; }
  const detail::AttrStorage* storage() const { return s_; }
  AttrKind kind() const { return s_->kind; }
  bool is(AttrKind k) const { return s_ && s_->kind == k; }
  /// The kind's registration (name and hooks).
  const AttrKindInfo& kind_info() const { return *s_->info; }
  const std::string& kind_name() const;
  /// A dialect kind's storage (check the kind first).
  template <typename S>
  const S& storage_as() const {
    return static_cast<const S&>(*s_);
  }

  bool as_bool() const { return s_->b; }
  int64_t as_int() const { return s_->i; }
  double as_float() const { return s_->f; }
  /// Int or float as double.
  double as_number() const { return s_->kind == AttrKind::kInt ? double(s_->i) : s_->f; }
  /// Bool/int/float as the op API's Scalar (keeps the kind).
  Scalar as_scalar() const;
  const std::string& as_string() const { return s_->s; }
  DataType as_dtype() const { return s_->dtype; }
  const Place& as_place() const { return s_->place; }
  const std::vector<int64_t>& as_shape() const { return s_->ints; }
  size_t size() const { return s_->elems.size(); }
  Attribute element(size_t i) const { return Attribute(s_->elems[i]); }
  /// kDense: the tensor type and the raw bytes.
  Type type() const { return s_->type; }
  const std::string& bytes() const { return s_->s; }
  /// kDense: a new CPU tensor holding a copy of the data.
  DenseTensor as_dense_tensor() const;
  /// kKernelKey parts.
  int backend() const { return static_cast<int>(s_->i); }
  DataLayout layout() const { return s_->layout; }

  /// The textual form (see docs/notes/pir.md).
  std::string str() const;

 private:
  const detail::AttrStorage* s_ = nullptr;
};

/// One entry of an operation's attribute dictionary.
struct NamedAttribute {
  std::string name;
  Attribute value;
};

}  // namespace oar::pir
