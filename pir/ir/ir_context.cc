// IrContext: uniquing of types/attributes (keyed by their kind id and the kind's key
// bytes) and the registry of dialects, ops and attribute/type kinds.
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

namespace {
/// Lets the kind maps be searched with a string_view (the parser's hot path).
struct NameHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>()(s); }
};
}  // namespace

struct IrContext::Impl {
  std::unordered_map<std::string, std::unique_ptr<detail::TypeStorage>> types;
  std::unordered_map<std::string, std::unique_ptr<detail::AttrStorage>> attrs;
  std::vector<std::unique_ptr<Dialect>> dialects;
  std::unordered_map<std::string, std::unique_ptr<OpInfo>, std::hash<std::string>> ops;
  // kinds, indexed by id (stable addresses: storages point to them)
  std::vector<std::unique_ptr<AttrKindInfo>> attr_kinds;
  std::vector<std::unique_ptr<TypeKindInfo>> type_kinds;
  std::unordered_map<std::string, int, NameHash, std::equal_to<>> attr_kind_ids, type_kind_ids;
  int16_t literal_kinds[256];  // first character of a bare literal -> attr kind id, -1: none
  Type scalar[static_cast<int>(TypeKind::kIndex) + 1];
  Attribute bools[2];
  Attribute small_ints[64];  // -8 .. 55
  Attribute dtypes[kNumDataTypes + 1];
  std::string key;  // scratch
  // Reused values for the builtin kinds built most often (shape inference makes a
  // tensor type per result): a lookup that finds the value allocates nothing.
  detail::TypeStorage tensor_scratch, vector_scratch;
  detail::AttrStorage shape_scratch, array_scratch;
};

namespace {

/// Kind names are identifiers; a dialect's have the form "<dialect>.<kind>".
void check_kind_name(const std::string& name, bool builtin, const char* what) {
  bool ok = !name.empty();
  for (char c : name)
    ok &= (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
  OAR_ENFORCE(ok, InvalidArgument, "IrContext: ", what, " kind name '", name,
              "' must be made of letters, digits, '_' and '.'");
  const size_t dot = name.find('.');
  OAR_ENFORCE(builtin || (dot != std::string::npos && dot > 0 && dot + 1 < name.size()), InvalidArgument,
              "IrContext: ", what, " kind '", name, "' must be named \"<dialect>.<kind>\"");
}
template <typename Info>
void check_hooks(const Info& i, const char* what) {
  const char* missing = !i.key     ? "key"
                        : !i.print ? "print"
                        : !i.parse ? "parse"
                        : !i.write ? "write"
                        : !i.read  ? "read"
                                   : nullptr;
  OAR_ENFORCE(missing == nullptr, InvalidArgument, "IrContext: ", what, " kind '", i.name, "' has no ",
              missing ? missing : "", " hook");
}
}  // namespace

IrContext::IrContext() : impl_(std::make_unique<Impl>()) {
  std::fill(std::begin(impl_->literal_kinds), std::end(impl_->literal_kinds), int16_t(-1));
  register_builtin_dialect(this);  // registers the builtin kinds first: their ids are the enum values
  for (int k = 0; k <= static_cast<int>(TypeKind::kIndex); ++k)
    impl_->scalar[k] = unique_type(static_cast<TypeKind>(k), detail::TypeStorage());
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

// ---------------------------------------------------------------- kinds
AttrKind IrContext::register_attr_kind(AttrKindInfo info) {
  const int id = static_cast<int>(impl_->attr_kinds.size());
  check_kind_name(info.name, id < kNumBuiltinAttrKinds, "attribute");
  check_hooks(info, "attribute");
  OAR_ENFORCE(id < kNumBuiltinAttrKinds || info.literal_chars.empty(), InvalidArgument, "IrContext: attribute kind '",
              info.name, "': only builtin kinds have bare literals (a dialect's kind is written #", info.name, "...)");
  OAR_ENFORCE(id <= UINT16_MAX, ResourceExhausted, "IrContext: too many attribute kinds");
  OAR_ENFORCE(impl_->attr_kind_ids.emplace(info.name, id).second, AlreadyExists, "IrContext: attribute kind '",
              info.name, "' is already registered");
  for (char c : info.literal_chars) {
    int16_t& slot = impl_->literal_kinds[static_cast<unsigned char>(c)];
    OAR_ENFORCE(slot < 0, AlreadyExists, "IrContext: attribute kind '", info.name, "': literals starting with '", c,
                "' belong to kind '", impl_->attr_kinds[slot]->name, "'");
    slot = static_cast<int16_t>(id);
  }
  info.id = static_cast<AttrKind>(id);
  impl_->attr_kinds.push_back(std::make_unique<AttrKindInfo>(std::move(info)));
  return static_cast<AttrKind>(id);
}
TypeKind IrContext::register_type_kind(TypeKindInfo info) {
  const int id = static_cast<int>(impl_->type_kinds.size());
  check_kind_name(info.name, id < kNumBuiltinTypeKinds, "type");
  check_hooks(info, "type");
  OAR_ENFORCE(id <= UINT16_MAX, ResourceExhausted, "IrContext: too many type kinds");
  OAR_ENFORCE(impl_->type_kind_ids.emplace(info.name, id).second, AlreadyExists, "IrContext: type kind '", info.name,
              "' is already registered");
  info.id = static_cast<TypeKind>(id);
  impl_->type_kinds.push_back(std::make_unique<TypeKindInfo>(std::move(info)));
  return static_cast<TypeKind>(id);
}
const AttrKindInfo* IrContext::find_attr_kind(std::string_view name) const {
  auto it = impl_->attr_kind_ids.find(name);
  return it == impl_->attr_kind_ids.end() ? nullptr : impl_->attr_kinds[it->second].get();
}
const TypeKindInfo* IrContext::find_type_kind(std::string_view name) const {
  auto it = impl_->type_kind_ids.find(name);
  return it == impl_->type_kind_ids.end() ? nullptr : impl_->type_kinds[it->second].get();
}
AttrKind IrContext::attr_kind(std::string_view name) const {
  const AttrKindInfo* k = find_attr_kind(name);
  OAR_ENFORCE(k != nullptr, NotFound, "IrContext: attribute kind '", name,
              "' is not registered (is its dialect loaded?)");
  return k->id;
}
TypeKind IrContext::type_kind(std::string_view name) const {
  const TypeKindInfo* k = find_type_kind(name);
  OAR_ENFORCE(k != nullptr, NotFound, "IrContext: type kind '", name, "' is not registered (is its dialect loaded?)");
  return k->id;
}
const AttrKindInfo* IrContext::attr_kind_info(AttrKind id) const {
  const auto i = static_cast<size_t>(id);
  return i < impl_->attr_kinds.size() ? impl_->attr_kinds[i].get() : nullptr;
}
const TypeKindInfo* IrContext::type_kind_info(TypeKind id) const {
  const auto i = static_cast<size_t>(id);
  return i < impl_->type_kinds.size() ? impl_->type_kinds[i].get() : nullptr;
}
const AttrKindInfo* IrContext::literal_attr_kind(char c) const {
  int16_t id = impl_->literal_kinds[static_cast<unsigned char>(c)];
  return id < 0 ? nullptr : impl_->attr_kinds[id].get();
}

// The key is the kind id (2 bytes) and the kind's bytes. On a miss the key is copied
// before `verify`, which may itself unique values (and reuse the scratch key).
Attribute IrContext::unique_attr_impl(AttrKind kind, detail::AttrStorage& value,
                                      std::unique_ptr<detail::AttrStorage> (*take)(detail::AttrStorage&)) {
  const auto id = static_cast<size_t>(kind);
  OAR_ENFORCE(id < impl_->attr_kinds.size(), InvalidArgument, "IrContext: attribute kind id ", id,
              " is not registered");
  const AttrKindInfo* info = impl_->attr_kinds[id].get();
  std::string& k = impl_->key;
  k.assign(reinterpret_cast<const char*>(&kind), sizeof(kind));
  info->key(k, value);
  auto it = impl_->attrs.find(k);
  if (it != impl_->attrs.end()) return Attribute(it->second.get());
  std::string key = k;
  value.kind = kind;
  value.info = info;
  if (info->verify) info->verify(value);
  std::unique_ptr<detail::AttrStorage> s = take(value);
  Attribute a(s.get());
  impl_->attrs.emplace(std::move(key), std::move(s));
  return a;
}
Type IrContext::unique_type_impl(TypeKind kind, detail::TypeStorage& value,
                                 std::unique_ptr<detail::TypeStorage> (*take)(detail::TypeStorage&)) {
  const auto id = static_cast<size_t>(kind);
  OAR_ENFORCE(id < impl_->type_kinds.size(), InvalidArgument, "IrContext: type kind id ", id, " is not registered");
  const TypeKindInfo* info = impl_->type_kinds[id].get();
  std::string& k = impl_->key;
  k.assign(reinterpret_cast<const char*>(&kind), sizeof(kind));
  info->key(k, value);
  auto it = impl_->types.find(k);
  if (it != impl_->types.end()) return Type(it->second.get());
  std::string key = k;
  value.kind = kind;
  value.info = info;
  if (info->verify) info->verify(value);
  std::unique_ptr<detail::TypeStorage> s = take(value);
  Type t(s.get());
  impl_->types.emplace(std::move(key), std::move(s));
  return t;
}

// ---------------------------------------------------------------- types
Type IrContext::bool_type() { return impl_->scalar[static_cast<int>(TypeKind::kBool)]; }
Type IrContext::index_type() { return impl_->scalar[static_cast<int>(TypeKind::kIndex)]; }
Type IrContext::scalar_type(TypeKind k) {
  OAR_ENFORCE(k <= TypeKind::kIndex, InvalidArgument, "scalar_type: not a scalar type kind");
  return impl_->scalar[static_cast<int>(k)];
}
Type IrContext::scalar_type(DataType t) { return scalar_type(scalar_kind_of(t)); }

// The builtin kinds' checks and keys are their verify/key hooks (builtin_kinds.cc).
namespace {
template <typename S>
std::unique_ptr<S> copy_out(S& v) {
  return std::make_unique<S>(v);
}
}  // namespace

Type IrContext::tensor_type(DataType dtype, const std::vector<int64_t>& dims, DataLayout layout) {
  detail::TypeStorage& s = impl_->tensor_scratch;
  s.dtype = dtype;
  s.layout = layout;
  s.dims.assign(dims.begin(), dims.end());
  return unique_type_impl(TypeKind::kDenseTensor, s, copy_out<detail::TypeStorage>);
}
Type IrContext::vector_type(const std::vector<Type>& elems) {
  detail::TypeStorage& s = impl_->vector_scratch;
  s.elems.clear();
  for (Type e : elems) s.elems.push_back(e.storage());
  return unique_type_impl(TypeKind::kVector, s, copy_out<detail::TypeStorage>);
}

// ---------------------------------------------------------------- attributes
Attribute IrContext::bool_attr(bool v) {
  Attribute& c = impl_->bools[v];
  if (!c) {
    detail::AttrStorage s;
    s.b = v;
    c = unique_attr(AttrKind::kBool, std::move(s));
  }
  return c;
}
Attribute IrContext::int_attr(int64_t v) {
  const bool small = v >= -8 && v < 56;
  if (small && impl_->small_ints[v + 8]) return impl_->small_ints[v + 8];
  detail::AttrStorage s;
  s.i = v;
  Attribute a = unique_attr(AttrKind::kInt, std::move(s));
  if (small) impl_->small_ints[v + 8] = a;
  return a;
}
Attribute IrContext::float_attr(double v) {
  detail::AttrStorage s;
  s.f = v;
  return unique_attr(AttrKind::kFloat, std::move(s));
}
Attribute IrContext::str_attr(std::string_view v) {
  detail::AttrStorage s;
  s.s = v;
  return unique_attr(AttrKind::kString, std::move(s));
}
Attribute IrContext::array_attr(const std::vector<Attribute>& elems) {
  detail::AttrStorage& s = impl_->array_scratch;
  s.elems.clear();
  for (Attribute e : elems) s.elems.push_back(e.storage());
  return unique_attr_impl(AttrKind::kArray, s, copy_out<detail::AttrStorage>);
}
Attribute IrContext::dtype_attr(DataType t) {
  int idx = static_cast<int>(t) + 1;
  OAR_ENFORCE(idx >= 0 && idx <= kNumDataTypes, InvalidType, "dtype_attr: invalid dtype ", idx - 1);
  Attribute& c = impl_->dtypes[idx];
  if (!c) {
    detail::AttrStorage s;
    s.dtype = t;
    c = unique_attr(AttrKind::kDType, std::move(s));
  }
  return c;
}
Attribute IrContext::place_attr(const Place& p) {
  detail::AttrStorage s;
  s.place = p;
  return unique_attr(AttrKind::kPlace, std::move(s));
}
Attribute IrContext::shape_attr(const std::vector<int64_t>& v) {
  detail::AttrStorage& s = impl_->shape_scratch;
  s.ints.assign(v.begin(), v.end());
  return unique_attr_impl(AttrKind::kShape, s, copy_out<detail::AttrStorage>);
}
Attribute IrContext::dense_attr(Type type, std::string bytes) {
  detail::AttrStorage s;
  s.type = type;
  s.s = std::move(bytes);
  return unique_attr(AttrKind::kDense, std::move(s));
}
Attribute IrContext::type_attr(Type t) {
  detail::AttrStorage s;
  s.type = t;
  return unique_attr(AttrKind::kType, std::move(s));
}
Attribute IrContext::kernel_key_attr(int backend, DataType dtype, DataLayout layout) {
  detail::AttrStorage s;
  s.i = backend;
  s.dtype = dtype;
  s.layout = layout;
  return unique_attr(AttrKind::kKernelKey, std::move(s));
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
