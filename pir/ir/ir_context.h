// IrContext: owns uniqued types and attributes and the registry of dialects and
// ops. Everything built in a context lives as long as the context. A context is
// not thread-safe: build and transform a program from one thread at a time.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "pir/ir/attribute.h"
#include "pir/ir/kinds.h"
#include "pir/ir/op_info.h"
#include "pir/ir/type.h"

namespace oar::pir {

class IrContext;

/// A dialect: a namespace of ops ("pd_op.add") and of attribute/type kinds
/// ("#dist.placements<...>") registered into a context.
class Dialect {
 public:
  explicit Dialect(std::string name) : name_(std::move(name)) {}
  virtual ~Dialect() = default;
  const std::string& name() const { return name_; }
  /// Registers the dialect's ops and kinds.
  virtual void initialize(IrContext* ctx) = 0;

 private:
  std::string name_;
};

/// A layer above pir (distributed/) makes its dialect loadable by name, so every
/// context's load_all_dialects() (and IrContext::global(), on its first call) loads it.
/// Called at static init by the objects that define the dialect.
using DialectLoader = void (*)(IrContext*);
void register_dialect_loader(const std::string& name, DialectLoader load);

class IrContext {
 public:
  /// A context with the builtin dialect loaded.
  IrContext();
  ~IrContext();
  IrContext(const IrContext&) = delete;
  IrContext& operator=(const IrContext&) = delete;

  /// A process-wide context with every dialect loaded (builtin, pd_op, cf, kernel).
  static IrContext* global();

  // ---- dialects and ops
  /// Loads a dialect by name ("builtin", "pd_op", "cf", "kernel"); no-op when loaded.
  void load_dialect(std::string_view name);
  /// Loads every dialect known to this build.
  void load_all_dialects();
  void register_dialect(std::unique_ptr<Dialect> d);
  bool has_dialect(std::string_view name) const;
  std::vector<std::string> dialect_names() const;
  /// Registers an op; throws AlreadyExists for a duplicate name.
  OpInfo* register_op(OpInfo info);
  /// nullptr when not registered.
  const OpInfo* find_op(std::string_view name) const;
  /// Throws NotFound naming the op when not registered.
  const OpInfo* op_info(std::string_view name) const;
  /// All registered op names, sorted.
  std::vector<std::string> op_names() const;

  // ---- attribute and type kinds (kinds.h)
  /// Registers a kind and returns its id; throws AlreadyExists for a taken name and
  /// InvalidArgument for a missing hook or a dialect kind named without "<dialect>.".
  AttrKind register_attr_kind(AttrKindInfo info);
  TypeKind register_type_kind(TypeKindInfo info);
  /// nullptr when no kind has that name.
  const AttrKindInfo* find_attr_kind(std::string_view name) const;
  const TypeKindInfo* find_type_kind(std::string_view name) const;
  /// Throws NotFound naming the kind when it is not registered.
  AttrKind attr_kind(std::string_view name) const;
  TypeKind type_kind(std::string_view name) const;
  /// By id; nullptr when not registered.
  const AttrKindInfo* attr_kind_info(AttrKind id) const;
  const TypeKindInfo* type_kind_info(TypeKind id) const;
  /// The attribute kind whose bare literal starts with `c` (nullptr when none).
  const AttrKindInfo* literal_attr_kind(char c) const;
  /// The unique attribute of kind `kind` equal to `value` (by the kind's key hook):
  /// the existing one, or `value` itself moved into the context after the kind's
  /// verify hook accepted it. S is detail::AttrStorage or a dialect's storage derived
  /// from it; how a dialect kind builds its values (see tests/cpp/pir/test_pir_kinds.cc).
  template <typename S>
  Attribute unique_attr(AttrKind kind, S value) {
    static_assert(std::is_base_of_v<detail::AttrStorage, S>);
    return unique_attr_impl(kind, value, [](detail::AttrStorage& v) -> std::unique_ptr<detail::AttrStorage> {
      return std::make_unique<S>(std::move(static_cast<S&>(v)));
    });
  }
  template <typename S>
  Type unique_type(TypeKind kind, S value) {
    static_assert(std::is_base_of_v<detail::TypeStorage, S>);
    return unique_type_impl(kind, value, [](detail::TypeStorage& v) -> std::unique_ptr<detail::TypeStorage> {
      return std::make_unique<S>(std::move(static_cast<S&>(v)));
    });
  }

  // ---- types
  Type bool_type();
  Type index_type();
  /// The scalar type of a dtype (f32 for FLOAT32).
  Type scalar_type(DataType t);
  Type scalar_type(TypeKind k);
  /// Dense tensor type; dims may hold kDynamic (-1). Throws on other negative sizes.
  Type tensor_type(DataType dtype, const std::vector<int64_t>& dims,
                   DataLayout layout = DataLayout::kNCHW);
  Type vector_type(const std::vector<Type>& elems);

  // ---- attributes
  Attribute bool_attr(bool v);
  Attribute int_attr(int64_t v);
  Attribute float_attr(double v);
  Attribute str_attr(std::string_view v);
  Attribute array_attr(const std::vector<Attribute>& elems);
  Attribute dtype_attr(DataType t);
  Attribute place_attr(const Place& p);
  Attribute shape_attr(const std::vector<int64_t>& v);
  /// Tensor data: `type` must be a static-shaped tensor type; bytes its raw contents.
  Attribute dense_attr(Type type, std::string bytes);
  Attribute type_attr(Type t);
  Attribute kernel_key_attr(int backend, DataType dtype, DataLayout layout);
  /// A bool/int/float attribute from a Scalar (keeps its kind).
  Attribute scalar_attr(const Scalar& s);

  size_t num_uniqued_types() const;
  size_t num_uniqued_attrs() const;

 private:
  // `take` moves (or copies) a new value into heap storage of its type.
  Attribute unique_attr_impl(AttrKind kind, detail::AttrStorage& value,
                             std::unique_ptr<detail::AttrStorage> (*take)(detail::AttrStorage&));
  Type unique_type_impl(TypeKind kind, detail::TypeStorage& value,
                        std::unique_ptr<detail::TypeStorage> (*take)(detail::TypeStorage&));

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace oar::pir
