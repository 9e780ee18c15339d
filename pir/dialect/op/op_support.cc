#include "pir/dialect/op/op_support.h"

#include <algorithm>

#include "paddle_core/base/errors.h"

namespace oar::pir {

Attribute lookup_attr(const OpInfo* info, const std::vector<NamedAttribute>* attrs, size_t i) {
  const AttrSpec& spec = info->attrs[i];
  if (attrs) {
    auto it = std::lower_bound(attrs->begin(), attrs->end(), spec.name,
                               [](const NamedAttribute& a, const std::string& k) { return a.name < k; });
    if (it != attrs->end() && it->name == spec.name) return it->value;
  }
  OAR_ENFORCE(bool(spec.default_value), InvalidArgument, info->name, ": required attribute '",
              spec.name, "' (", spec.type, ") is missing");
  return spec.default_value;
}
Attribute EvalContext::attr(size_t i) const { return lookup_attr(info, attrs, i); }

bool attr_kind_matches(const std::string& type, Attribute a) {
  if (!a) return false;
  AttrKind k = a.kind();
  if (type == "int") return k == AttrKind::kInt;
  if (type == "float") return k == AttrKind::kFloat || k == AttrKind::kInt;
  if (type == "bool") return k == AttrKind::kBool;
  if (type == "str") return k == AttrKind::kString;
  if (type == "int[]") return k == AttrKind::kShape;
  if (type == "float[]") {
    if (k != AttrKind::kArray) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (!a.element(i).is(AttrKind::kFloat) && !a.element(i).is(AttrKind::kInt)) return false;
    return true;
  }
  if (type == "DataType") return k == AttrKind::kDType;
  if (type == "Place") return k == AttrKind::kPlace;
  if (type == "Scalar") return k == AttrKind::kInt || k == AttrKind::kFloat || k == AttrKind::kBool;
  if (type == "Tensor") return k == AttrKind::kDense;
  return true;
}

namespace opgen {
namespace {
thread_local int64_t g_dynamic_as = kDynamicSentinel;
[[noreturn]] void bad_attr(Attribute a, const OpInfo* info, size_t i) {
  OAR_THROW(InvalidArgument, info->name, ": attribute '", info->attrs[i].name, "' must be ",
            info->attrs[i].type, ", got ", a ? a.str() : std::string("nothing"));
}
DenseTensor from_type(Type t, const OpInfo* info, size_t i) {
  OAR_ENFORCE(t.is_tensor(), InvalidArgument, info->name, ": input '", info->inputs[i].name,
              "' must be a tensor, got ", t ? t.str() : std::string("null"));
  Dims d;
  for (int64_t x : t.dims()) d.push_back(x == kDynamic ? g_dynamic_as : x);
  return DenseTensor(d, t.dtype());
}
// With dynamic inputs, an output size computed from the sentinel (a prime near 1e9:
// 2*S after a reshape, S+3 after a concat, about S/2 after a strided conv) is dynamic
// too. A static size that large next to dynamic inputs does not occur in practice.
constexpr int64_t kDerivedFromSentinel = kDynamicSentinel / 64;
Type to_type(IrContext* ctx, const DenseTensor& d, DataLayout layout, bool dynamic_inputs = false) {
  std::vector<int64_t> dims;
  for (int64_t x : d.dims())
    dims.push_back(x == kDynamicSentinel || (dynamic_inputs && x >= kDerivedFromSentinel) ? kDynamic : x);
  return ctx->tensor_type(d.dtype(), dims, layout);
}
DataLayout first_layout(const InferContext& c) {
  for (Type t : c.inputs)
    if (t.is_tensor()) return t.layout();
  return DataLayout::kNCHW;
}
}  // namespace

DenseTensor meta(const InferContext& c, size_t i) {
  OAR_ENFORCE(i < c.inputs.size() && c.inputs[i], InvalidArgument, c.info->name, ": input '",
              c.info->inputs[i].name, "' is missing");
  return from_type(c.inputs[i], c.info, i);
}
const DenseTensor* opt_meta(const InferContext& c, size_t i, DenseTensor& storage) {
  if (i >= c.inputs.size() || !c.inputs[i]) return nullptr;
  storage = from_type(c.inputs[i], c.info, i);
  return &storage;
}
std::vector<DenseTensor> list_meta(const InferContext& c, size_t i) {
  OAR_ENFORCE(i < c.inputs.size() && c.inputs[i].is_vector(), InvalidArgument, c.info->name,
              ": input '", c.info->inputs[i].name, "' must be a vector of tensors (builtin.combine), got ",
              i < c.inputs.size() && c.inputs[i] ? c.inputs[i].str() : std::string("nothing"));
  std::vector<DenseTensor> out;
  for (size_t k = 0; k < c.inputs[i].size(); ++k) out.push_back(from_type(c.inputs[i].element(k), c.info, i));
  return out;
}
std::vector<const DenseTensor*> ptrs(const std::vector<DenseTensor>& v) {
  std::vector<const DenseTensor*> p;
  for (const auto& t : v) p.push_back(&t);
  return p;
}
void set_out(InferContext& c, const DenseTensor& d) {
  c.outputs.push_back(to_type(c.ctx, d, first_layout(c), any_dynamic(c)));
}
void set_out_list(InferContext& c, const std::vector<DenseTensor>& d) {
  std::vector<Type> ts;
  const bool dynamic = any_dynamic(c);
  for (const auto& t : d) ts.push_back(to_type(c.ctx, t, first_layout(c), dynamic));
  c.outputs.push_back(c.ctx->vector_type(ts));
}
void mark_data_dependent(InferContext& c) {
  Type& t = c.outputs.back();
  if (!t.is_tensor()) return;
  std::vector<int64_t> dims = t.dims();
  // 0: the placeholder of a size only the kernel knows; >= kDerivedFromSentinel: a size
  // computed from a dynamic one (a dyn_reshape's hint) on an op whose inputs are static.
  for (int64_t& d : dims)
    if (d == 0 || d >= kDerivedFromSentinel) d = kDynamic;
  t = c.ctx->tensor_type(t.dtype(), dims, t.layout());
}
bool any_dynamic(const InferContext& c) {
  for (Type t : c.inputs) {
    if (t.is_tensor() && t.has_dynamic_dims()) return true;
    if (t.is_vector())
      for (size_t k = 0; k < t.size(); ++k)
        if (t.element(k).is_tensor() && t.element(k).has_dynamic_dims()) return true;
  }
  return false;
}
DataType in_dtype(const InferContext& c, size_t i) {
  Type t = i < c.inputs.size() ? c.inputs[i] : Type();
  if (t.is_vector() && t.size() > 0) t = t.element(0);
  OAR_ENFORCE(t.is_tensor(), InvalidArgument, c.info->name, ": input '", c.info->inputs[i].name,
              "' must be a tensor");
  return t.dtype();
}

int64_t a_int(Attribute a, const OpInfo* info, size_t i) {
  if (!a.is(AttrKind::kInt)) bad_attr(a, info, i);
  return a.as_int();
}
double a_float(Attribute a, const OpInfo* info, size_t i) {
  if (!a.is(AttrKind::kFloat) && !a.is(AttrKind::kInt)) bad_attr(a, info, i);
  return a.as_number();
}
bool a_bool(Attribute a, const OpInfo* info, size_t i) {
  if (!a.is(AttrKind::kBool)) bad_attr(a, info, i);
  return a.as_bool();
}
std::string a_str(Attribute a, const OpInfo* info, size_t i) {
  if (!a.is(AttrKind::kString)) bad_attr(a, info, i);
  return a.as_string();
}
std::vector<int64_t> a_ints(Attribute a, const OpInfo* info, size_t i) {
  if (!a.is(AttrKind::kShape)) bad_attr(a, info, i);
  return a.as_shape();
}
std::vector<double> a_floats(Attribute a, const OpInfo* info, size_t i) {
  if (!attr_kind_matches("float[]", a)) bad_attr(a, info, i);
  std::vector<double> v;
  for (size_t k = 0; k < a.size(); ++k) v.push_back(a.element(k).as_number());
  return v;
}
DataType a_dtype(Attribute a, const OpInfo* info, size_t i) {
  if (!a.is(AttrKind::kDType)) bad_attr(a, info, i);
  return a.as_dtype();
}
Place a_place(Attribute a, const OpInfo* info, size_t i) {
  if (!a.is(AttrKind::kPlace)) bad_attr(a, info, i);
  return a.as_place();
}
Scalar a_scalar(Attribute a, const OpInfo* info, size_t i) {
  if (!attr_kind_matches("Scalar", a)) bad_attr(a, info, i);
  return a.as_scalar();
}

const Tensor& e_tensor(const EvalContext& c, size_t i) {
  OAR_ENFORCE(i < c.inputs.size() && c.inputs[i].size() == 1, InvalidArgument, c.info->name,
              ": input '", c.info->inputs[i].name, "' is missing");
  return c.inputs[i][0];
}
Tensor e_opt(const EvalContext& c, size_t i) {
  return i < c.inputs.size() && !c.inputs[i].empty() ? c.inputs[i][0] : Tensor();
}

namespace {
[[noreturn]] void rethrow_infer_error(const OpInfo* info, const std::exception& e, bool dynamic) {
  const auto* err = dynamic_cast<const Error*>(&e);
  std::string msg = err ? err->message() : std::string(e.what());
  if (dynamic) msg += " (some input dims are dynamic)";
  throw Error(err ? err->kind() : ErrorKind::kInvalidArgument, info->name + ": " + msg);
}
/// A dynamic input dim aligned (from the right) with output dim `i` of rank `rank`.
bool dynamic_at(const InferContext& c, size_t i, size_t rank) {
  auto check = [&](Type t) {
    if (!t.is_tensor() || t.dims().size() != rank) return false;
    return t.dims()[i] == kDynamic;
  };
  for (Type t : c.inputs) {
    if (check(t)) return true;
    if (t.is_vector())
      for (size_t k = 0; k < t.size(); ++k)
        if (check(t.element(k))) return true;
  }
  return false;
}
Type mark_dynamic(const InferContext& c, Type t) {
  if (!t.is_tensor()) return t;
  std::vector<int64_t> dims = t.dims();
  for (size_t i = 0; i < dims.size(); ++i)
    if (dims[i] == 1 && dynamic_at(c, i, dims.size())) dims[i] = kDynamic;
  return c.ctx->tensor_type(t.dtype(), dims, t.layout());
}
}  // namespace

void run_infer(InferContext& c, void (*body)(InferContext&)) {
  const bool dynamic = any_dynamic(c);
  try {
    body(c);
    return;
  } catch (const std::exception& first) {
    if (!dynamic) rethrow_infer_error(c.info, first, false);
    c.outputs.clear();
    g_dynamic_as = 1;
    try {
      body(c);
    } catch (const std::exception&) {
      g_dynamic_as = kDynamicSentinel;
      c.outputs.clear();
      rethrow_infer_error(c.info, first, true);
    }
    g_dynamic_as = kDynamicSentinel;
    for (Type& t : c.outputs) {
      if (!t.is_vector()) { t = mark_dynamic(c, t); continue; }
      std::vector<Type> elems;
      for (size_t k = 0; k < t.size(); ++k) elems.push_back(mark_dynamic(c, t.element(k)));
      t = c.ctx->vector_type(elems);
    }
  }
}

}  // namespace opgen
}  // namespace oar::pir
