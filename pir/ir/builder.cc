#include "pir/ir/builder.h"

#include <cstring>

#include "paddle_core/base/errors.h"
#include "paddle_core/tensor/dense_tensor.h"
#include "pir/ir/infer.h"

namespace oar::pir {

Operation* Builder::build(const OpInfo* info, const std::vector<Value>& operands,
                          std::vector<NamedAttribute> attrs, std::vector<Type> result_types,
                          int num_regions) {
  fill_default_attrs(info, attrs);
  if (result_types.empty() && info->infer) {
    std::sort(attrs.begin(), attrs.end(),
              [](const NamedAttribute& a, const NamedAttribute& b) { return a.name < b.name; });
    result_types = infer_result_types(ctx_, info, operands, attrs);
  }
  Operation* op = Operation::create(info, operands, result_types, std::move(attrs), num_regions);
  insert(op);
  return op;
}

Operation* Builder::build(std::string_view name, const std::vector<Value>& operands,
                          std::vector<NamedAttribute> attrs, std::vector<Type> result_types,
                          int num_regions) {
  return build(ctx_->op_info(name), operands, std::move(attrs), std::move(result_types), num_regions);
}

Value Builder::op(std::string_view name, const std::vector<Value>& operands,
                  std::vector<NamedAttribute> attrs) {
  Operation* o = build(name, operands, std::move(attrs));
  OAR_ENFORCE(o->num_results() == 1, InvalidArgument, "Builder::op: '", name, "' has ",
              o->num_results(), " results (use build)");
  return o->result(0);
}

void Builder::insert(Operation* op) {
  OAR_ENFORCE(block_ != nullptr, PreconditionNotMet, "Builder: no insertion block set");
  block_->insert(before_, op);
  if (listener_) listener_->on_op_created(op);
}

Value Builder::parameter(const std::string& name, Type type) {
  return build("builtin.parameter", {}, {{"name", ctx_->str_attr(name)}}, {type})->result(0);
}
Operation* Builder::set_parameter(Value v, const std::string& name) {
  return build("builtin.set_parameter", {v}, {{"name", ctx_->str_attr(name)}}, {});
}
Value Builder::constant(Attribute dense) {
  OAR_ENFORCE(dense.is(AttrKind::kDense), InvalidArgument, "Builder::constant: expected a dense attribute");
  return build("builtin.constant", {}, {{"value", dense}}, {dense.type()})->result(0);
}
Value Builder::constant(const DenseTensor& data) {
  // copy_to_host: `data` may be a view, and on a device (a tensor captured by a program
  // traced with a device current).
  std::string bytes(static_cast<size_t>(data.numel()) * size_of(data.dtype()), '\0');
  if (!bytes.empty()) copy_to_host(data, bytes.data(), bytes.size());
  Type t = ctx_->tensor_type(data.dtype(), data.dims().vec());
  return constant(ctx_->dense_attr(t, std::move(bytes)));
}
Value Builder::constant_scalar(double v, DataType dtype, const std::vector<int64_t>& dims) {
  DenseTensor t(Dims(dims), dtype);
  t.alloc();
  visit_dtype(dtype, "constant_scalar", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = t.data<T>();
    for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<T>(static_cast<OpMath<T>>(v));
  });
  return constant(t);
}
Value Builder::combine(const std::vector<Value>& values) {
  return build("builtin.combine", values)->result(0);
}
std::vector<Value> Builder::split(Value list) { return build("builtin.split", {list})->results(); }
Operation* Builder::yield(const std::vector<Value>& values) { return build("cf.yield", values, {}, {}); }

}  // namespace oar::pir
