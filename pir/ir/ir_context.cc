// IrContext: uniquing of types/attributes (keyed by a compact binary encoding) and
// the dialect/op registry.
#include "pir/ir/ir_context.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <unordered_map>

#include "paddle_core/base/errors.h"

namespace oar::pir {

void register_builtin_dialect(IrContext* ctx);
void register_known_dialect(IrContext* ctx, std::string_view name);  // dialects.cc
std::vector<std::string> known_dialect_names();

int OpInfo::attr_index(const std::string& n) const {
  for (size_t i = 0; i < attrs.size(); ++i)
    if (attrs[i].name == n) return static_cast<int>(i);
  return -1;
}

struct IrContext::Impl {
  std::unordered_map<std::string, std::unique_ptr<detail::TypeStorage>> types;
  std::unordered_map<std::string, std::unique_ptr<detail::AttrStorage>> attrs;
  std::vector<std::unique_ptr<Dialect>> dialects;
  std::unordered_map<std::string, std::unique_ptr<OpInfo>, std::hash<std::string>> ops;
  Type scalar[static_cast<int>(TypeKind::kIndex) + 1];
  Attribute bools[2];
  Attribute small_ints[64];  // -8 .. 55
  Attribute dtypes[kNumDataTypes + 1];
  std::string key;  // scratch
};

namespace {
void put_i64(std::string& k, int64_t v) { k.append(reinterpret_cast<const char*>(&v), 8); }
void put_ptr(std::string& k, const void* p) { k.append(reinterpret_cast<const char*>(&p), sizeof(p)); }
}  // namespace

IrContext::IrContext() : impl_(std::make_unique<Impl>()) {
  for (int k = 0; k <= static_cast<int>(TypeKind::kIndex); ++k) {
    auto s = std::make_unique<detail::TypeStorage>();
    s->kind = static_cast<TypeKind>(k);
    std::string key(1, static_cast<char>(k));
    impl_->scalar[k] = Type(s.get());
    impl_->types.emplace(key, std::move(s));
  }
  register_builtin_dialect(this);
}
IrContext::~IrContext() = default;

IrContext* IrContext::global() {
  static IrContext* ctx = [] {
    auto* c = new IrContext();  // leaked on purpose: lives until exit
    c->load_all_dialects();
    return c;
  }();
  return ctx;
}

void IrContext::load_dialect(std::string_view name) {
  if (has_dialect(name)) return;
  register_known_dialect(this, name);
}
void IrContext::load_all_dialects() {
  for (const auto& n : known_dialect_names()) load_dialect(n);
}
void IrContext::register_dialect(std::unique_ptr<Dialect> d) {
  OAR_ENFORCE(!has_dialect(d->name()), AlreadyExists, "IrContext: dialect '", d->name(),
              "' is already registered");
  Dialect* raw = d.get();
  impl_->dialects.push_back(std::move(d));
  raw->initialize(this);
}
bool IrContext::has_dialect(std::string_view name) const {
  for (const auto& d : impl_->dialects)
    if (d->name() == name) return true;
  return false;
}
std::vector<std::string> IrContext::dialect_names() const {
  std::vector<std::string> out;
  for (const auto& d : impl_->dialects) out.push_back(d->name());
  return out;
}
OpInfo* IrContext::register_op(OpInfo info) {
  OAR_ENFORCE(impl_->ops.find(info.name) == impl_->ops.end(), AlreadyExists, "IrContext: op '",
              info.name, "' is already registered");
  auto p = std::make_unique<OpInfo>(std::move(info));
  p->ctx = this;
  OpInfo* raw = p.get();
  impl_->ops.emplace(raw->name, std::move(p));
  return raw;
}
const OpInfo* IrContext::find_op(std::string_view name) const {
  auto it = impl_->ops.find(std::string(name));
  return it == impl_->ops.end() ? nullptr : it->second.get();
}
const OpInfo* IrContext::op_info(std::string_view name) const {
  const OpInfo* info = find_op(name);
  OAR_ENFORCE(info != nullptr, NotFound, "IrContext: op '", name,
              "' is not registered (is its dialect loaded?)");
  return info;
}
std::vector<std::string> IrContext::op_names() const {
  std::vector<std::string> out;
  for (const auto& [n, _] : impl_->ops) out.push_back(n);
  std::sort(out.begin(), out.end());
  return out;
}

// ---------------------------------------------------------------- types
Type IrContext::bool_type() { return impl_->scalar[static_cast<int>(TypeKind::kBool)]; }
Type IrContext::index_type() { return impl_->scalar[static_cast<int>(TypeKind::kIndex)]; }
Type IrContext::scalar_type(TypeKind k) {
  OAR_ENFORCE(k <= TypeKind::kIndex, InvalidArgument, "scalar_type: not a scalar type kind");
  return impl_->scalar[static_cast<int>(k)];
}
Type IrContext::scalar_type(DataType t) { return scalar_type(scalar_kind_of(t)); }

Type IrContext::tensor_type(DataType dtype, const std::vector<int64_t>& dims, DataLayout layout) {
  OAR_ENFORCE(dtype != DataType::UNDEFINED && static_cast<int>(dtype) < kNumDataTypes, InvalidType,
              "tensor_type: a tensor type needs a defined dtype");
  for (int64_t d : dims)
    OAR_ENFORCE(d >= 0 || d == kDynamic, InvalidArgument, "tensor_type: dim ", d,
                " is invalid (expected >= 0, or -1 for a dynamic size) in dims ", dims);
  OAR_ENFORCE(dims.size() <= 64, InvalidArgument, "tensor_type: rank ", dims.size(), " is too large");
  std::string& k = impl_->key;
  k.clear();
  k.push_back(static_cast<char>(TypeKind::kDenseTensor));
  k.push_back(static_cast<char>(dtype));
  k.push_back(static_cast<char>(layout));
  for (int64_t d : dims) put_i64(k, d);
  auto it = impl_->types.find(k);
  if (it != impl_->types.end()) return Type(it->second.get());
  auto s = std::make_unique<detail::TypeStorage>();
  s->kind = TypeKind::kDenseTensor;
  s->dtype = dtype;
  s->layout = layout;
  s->dims = dims;
  Type t(s.get());
  impl_->types.emplace(k, std::move(s));
  return t;
}

Type IrContext::vector_type(const std::vector<Type>& elems) {
  std::string& k = impl_->key;
  k.clear();
  k.push_back(static_cast<char>(TypeKind::kVector));
  for (Type e : elems) {
    OAR_ENFORCE(bool(e), InvalidArgument, "vector_type: null element type");
    put_ptr(k, e.storage());
  }
  auto it = impl_->types.find(k);
  if (it != impl_->types.end()) return Type(it->second.get());
  auto s = std::make_unique<detail::TypeStorage>();
  s->kind = TypeKind::kVector;
  for (Type e : elems) s->elems.push_back(e.storage());
  Type t(s.get());
  impl_->types.emplace(k, std::move(s));
  return t;
}

// ---------------------------------------------------------------- attributes
namespace {
template <typename Fill>
Attribute unique_attr(std::unordered_map<std::string, std::unique_ptr<detail::AttrStorage>>& m,
                      const std::string& key, Fill&& fill) {
  auto it = m.find(key);
  if (it != m.end()) return Attribute(it->second.get());
  auto s = std::make_unique<detail::AttrStorage>();
  fill(*s);
  Attribute a(s.get());
  m.emplace(key, std::move(s));
  return a;
}
}  // namespace

Attribute IrContext::bool_attr(bool v) {
  Attribute& c = impl_->bools[v];
  if (!c) {
    std::string k = {static_cast<char>(AttrKind::kBool), static_cast<char>(v)};
    c = unique_attr(impl_->attrs, k, [&](detail::AttrStorage& s) { s.kind = AttrKind::kBool; s.b = v; });
  }
  return c;
}
Attribute IrContext::int_attr(int64_t v) {
  const bool small = v >= -8 && v < 56;
  if (small && impl_->small_ints[v + 8]) return impl_->small_ints[v + 8];
  std::string k(1, static_cast<char>(AttrKind::kInt));
  put_i64(k, v);
  Attribute a = unique_attr(impl_->attrs, k, [&](detail::AttrStorage& s) { s.kind = AttrKind::kInt; s.i = v; });
  if (small) impl_->small_ints[v + 8] = a;
  return a;
}
Attribute IrContext::float_attr(double v) {
  std::string k(1, static_cast<char>(AttrKind::kFloat));
  k.append(reinterpret_cast<const char*>(&v), 8);  // bitwise: -0.0 and NaN payloads stay distinct
  return unique_attr(impl_->attrs, k, [&](detail::AttrStorage& s) { s.kind = AttrKind::kFloat; s.f = v; });
}
Attribute IrContext::str_attr(std::string_view v) {
  std::string k(1, static_cast<char>(AttrKind::kString));
  k.append(v);
  return unique_attr(impl_->attrs, k, [&](detail::AttrStorage& s) { s.kind = AttrKind::kString; s.s = v; });
}
Attribute IrContext::array_attr(const std::vector<Attribute>& elems) {
  std::string k(1, static_cast<char>(AttrKind::kArray));
  for (Attribute e : elems) {
    OAR_ENFORCE(bool(e), InvalidArgument, "array_attr: null element");
    put_ptr(k, e.storage());
  }
  return unique_attr(impl_->attrs, k, [&](detail::AttrStorage& s) {
    s.kind = AttrKind::kArray;
    for (Attribute e : elems) s.elems.push_back(e.storage());
  });
}
Attribute IrContext::dtype_attr(DataType t) {
  int idx = static_cast<int>(t) + 1;
  OAR_ENFORCE(idx >= 0 && idx <= kNumDataTypes, InvalidType, "dtype_attr: invalid dtype ", idx - 1);
  Attribute& c = impl_->dtypes[idx];
  if (!c) {
    std::string k = {static_cast<char>(AttrKind::kDType), static_cast<char>(t)};
    c = unique_attr(impl_->attrs, k, [&](detail::AttrStorage& s) { s.kind = AttrKind::kDType; s.dtype = t; });
  }
  return c;
}
Attribute IrContext::place_attr(const Place& p) {
  std::string k = {static_cast<char>(AttrKind::kPlace), static_cast<char>(p.type())};
  put_i64(k, p.device_id());
  return unique_attr(impl_->attrs, k, [&](detail::AttrStorage& s) { s.kind = AttrKind::kPlace; s.place = p; });
}
Attribute IrContext::shape_attr(const std::vector<int64_t>& v) {
  std::string k(1, static_cast<char>(AttrKind::kShape));
  for (int64_t x : v) put_i64(k, x);
  return unique_attr(impl_->attrs, k, [&](detail::AttrStorage& s) { s.kind = AttrKind::kShape; s.ints = v; });
}
Attribute IrContext::dense_attr(Type type, std::string bytes) {
  OAR_ENFORCE(type.is_tensor() && !type.has_dynamic_dims(), InvalidArgument,
              "dense_attr: expected a static-shaped tensor type, got ", type ? type.str() : "null");
  const size_t want = static_cast<size_t>(type.numel()) * size_of(type.dtype());
  OAR_ENFORCE(bytes.size() == want, InvalidArgument, "dense_attr: ", type.str(), " needs ", want,
              " bytes of data, got ", bytes.size());
  std::string k(1, static_cast<char>(AttrKind::kDense));
  put_ptr(k, type.storage());
  k.append(bytes);
  return unique_attr(impl_->attrs, k, [&](detail::AttrStorage& s) {
    s.kind = AttrKind::kDense;
    s.type = type;
    s.s = std::move(bytes);
  });
}
Attribute IrContext::type_attr(Type t) {
  OAR_ENFORCE(bool(t), InvalidArgument, "type_attr: null type");
  std::string k(1, static_cast<char>(AttrKind::kType));
  put_ptr(k, t.storage());
  return unique_attr(impl_->attrs, k, [&](detail::AttrStorage& s) { s.kind = AttrKind::kType; s.type = t; });
}
Attribute IrContext::kernel_key_attr(int backend, DataType dtype, DataLayout layout) {
  std::string k = {static_cast<char>(AttrKind::kKernelKey), static_cast<char>(backend),
                   static_cast<char>(dtype), static_cast<char>(layout)};
  return unique_attr(impl_->attrs, k, [&](detail::AttrStorage& s) {
    s.kind = AttrKind::kKernelKey;
    s.i = backend;
    s.dtype = dtype;
    s.layout = layout;
  });
}
Attribute IrContext::scalar_attr(const Scalar& s) {
  switch (s.kind()) {
    case Scalar::Kind::kBool: return bool_attr(s.to_int() != 0);
    case Scalar::Kind::kInt: return int_attr(s.to_int());
    default: return float_attr(s.to_double());
  }
}

size_t IrContext::num_uniqued_types() const { return impl_->types.size(); }
size_t IrContext::num_uniqued_attrs() const { return impl_->attrs.size(); }

}  // namespace oar::pir
