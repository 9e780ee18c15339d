#include "pir/ir/infer.h"

#include <algorithm>

#include "paddle_core/base/errors.h"

namespace oar::pir {

Attribute InferContext::attr(size_t i) const {
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

std::vector<Type> infer_result_types(IrContext* ctx, const OpInfo* info,
                                     const std::vector<Type>& operand_types,
                                     const std::vector<NamedAttribute>& attrs) {
  OAR_ENFORCE(info->infer != nullptr, InvalidArgument, info->name,
              ": the op has no shape inference; give its result types explicitly");
  InferContext c;
  c.ctx = ctx;
  c.info = info;
  c.inputs = operand_types;
  c.attrs = &attrs;
  info->infer(c);
  return std::move(c.outputs);
}

std::vector<Type> infer_result_types(IrContext* ctx, const OpInfo* info,
                                     const std::vector<Value>& operands,
                                     const std::vector<NamedAttribute>& attrs) {
  std::vector<Type> types;
  types.reserve(operands.size());
  for (Value v : operands) types.push_back(v ? v.type() : Type());
  return infer_result_types(ctx, info, types, attrs);
}

void fill_default_attrs(const OpInfo* info, std::vector<NamedAttribute>& attrs) {
  if (!info->has_schema) return;
  for (const AttrSpec& spec : info->attrs) {
    if (!spec.default_value) continue;
    bool found = false;
    for (const auto& a : attrs)
      if (a.name == spec.name) { found = true; break; }
    if (!found) attrs.push_back(NamedAttribute{spec.name, spec.default_value});
  }
}

}  // namespace oar::pir
