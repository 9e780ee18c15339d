// The builtin dialect: module, input, parameter, set_parameter, output, constant, and
// combine/split (a list of values as one value of vector type, Paddle's Tensor[]);
// and the builtin attribute and type kinds (builtin_kinds.cc).
#include "paddle_core/base/errors.h"
#include "pir/ir/infer.h"
#include "pir/ir/ir_context.h"
#include "pir/ir/operation.h"

namespace oar::pir {

void register_builtin_kinds(IrContext* ctx);  // builtin_kinds.cc

namespace {

void expect_counts(const Operation* op, size_t operands, size_t results) {
  OAR_ENFORCE(op->num_operands() == operands, InvalidArgument, "expected ", operands,
              " operand(s), got ", op->num_operands());
  OAR_ENFORCE(op->num_results() == results, InvalidArgument, "expected ", results,
              " result(s), got ", op->num_results());
}
Attribute expect_attr(const Operation* op, const char* name, AttrKind kind) {
  Attribute a = op->attr(name);
  OAR_ENFORCE(a.is(kind), InvalidArgument, "attribute '", name, "' must be a ",
              attr_kind_name(kind), a ? std::string(", got ") + a.str() : std::string(" (missing)"));
  return a;
}

void verify_module(const Operation* op) {
  expect_counts(op, 0, 0);
  OAR_ENFORCE(op->num_regions() == 1 && op->region(0).size() == 1, InvalidArgument,
              "a module has one region with one block");
}
void verify_parameter(const Operation* op) {
  expect_counts(op, 0, 1);
  expect_attr(op, "name", AttrKind::kString);
  OAR_ENFORCE(op->result(0).type().is_tensor(), InvalidArgument, "result must be a tensor, got ",
              op->result(0).type().str());
}
void verify_set_parameter(const Operation* op) {
  expect_counts(op, 1, 0);
  expect_attr(op, "name", AttrKind::kString);
  OAR_ENFORCE(op->operand(0) && op->operand(0).type().is_tensor(), InvalidArgument,
              "operand must be a tensor");
}
void verify_constant(const Operation* op) {
  expect_counts(op, 0, 1);
  Attribute v = expect_attr(op, "value", AttrKind::kDense);
  OAR_ENFORCE(op->result(0).type() == v.type(), InvalidArgument, "result type ",
              op->result(0).type().str(), " differs from the value's type ", v.type().str());
}
void infer_constant(InferContext& c) { c.outputs = {c.attr(0).type()}; }

void verify_combine(const Operation* op) {
  OAR_ENFORCE(op->num_results() == 1, InvalidArgument, "expected 1 result, got ", op->num_results());
  Type t = op->result(0).type();
  OAR_ENFORCE(t.is_vector() && t.size() == op->num_operands(), InvalidArgument,
              "result must be a vector of ", op->num_operands(), " types, got ", t.str());
  for (size_t i = 0; i < op->num_operands(); ++i)
    OAR_ENFORCE(op->operand(i) && op->operand(i).type() == t.element(i), InvalidArgument,
                "operand ", i, " does not match vector element ", i);
}
void infer_combine(InferContext& c) {
  for (size_t i = 0; i < c.inputs.size(); ++i)
    OAR_ENFORCE(bool(c.inputs[i]), InvalidArgument, "builtin.combine: operand ", i, " is null");
  c.outputs = {c.ctx->vector_type(c.inputs)};
}
void verify_split(const Operation* op) {
  OAR_ENFORCE(op->num_operands() == 1, InvalidArgument, "expected 1 operand, got ", op->num_operands());
  Type t = op->operand(0) ? op->operand(0).type() : Type();
  OAR_ENFORCE(t.is_vector() && t.size() == op->num_results(), InvalidArgument,
              "operand must be a vector of ", op->num_results(), " types, got ", t ? t.str() : "null");
  for (size_t i = 0; i < op->num_results(); ++i)
    OAR_ENFORCE(op->result(i).type() == t.element(i), InvalidArgument, "result ", i,
                " does not match vector element ", i);
}
void infer_split(InferContext& c) {
  OAR_ENFORCE(c.inputs.size() == 1 && c.inputs[0].is_vector(), InvalidArgument,
              "builtin.split: expected one operand of vector type");
  for (size_t i = 0; i < c.inputs[0].size(); ++i) c.outputs.push_back(c.inputs[0].element(i));
}
void verify_output(const Operation* op) {
  expect_counts(op, 1, 0);
  expect_attr(op, "name", AttrKind::kString);
  OAR_ENFORCE(bool(op->operand(0)), InvalidArgument, "operand is null");
}

OpInfo make(const char* name, uint32_t traits, VerifyFn verify, InferFn infer = nullptr,
            int regions = 0) {
  OpInfo i;
  i.name = name;
  i.dialect = "builtin";
  i.traits = traits;
  i.verify = verify;
  i.infer = infer;
  i.num_regions = regions;
  return i;
}

class BuiltinDialect : public Dialect {
 public:
  BuiltinDialect() : Dialect("builtin") {}
  void initialize(IrContext* ctx) override {
    register_builtin_kinds(ctx);  // first: their ids are the AttrKind / TypeKind values
    ctx->register_op(make("builtin.module", 0, verify_module, nullptr, 1));
    ctx->register_op(make("builtin.parameter", kTraitPure, verify_parameter));
    // A program input fed at run time (`name`); not pure, so an unused input keeps its place.
    ctx->register_op(make("builtin.input", 0, verify_parameter));
    ctx->register_op(make("builtin.set_parameter", 0, verify_set_parameter));
    ctx->register_op(make("builtin.output", 0, verify_output));
    OpInfo c = make("builtin.constant", kTraitPure, verify_constant, infer_constant);
    c.attrs = {AttrSpec{"value", "Tensor", Attribute()}};
    ctx->register_op(std::move(c));
    ctx->register_op(make("builtin.combine", kTraitPure, verify_combine, infer_combine));
    ctx->register_op(make("builtin.split", kTraitPure, verify_split, infer_split));
  }
};

}  // namespace

void register_builtin_dialect(IrContext* ctx) { ctx->register_dialect(std::make_unique<BuiltinDialect>()); }

}  // namespace oar::pir
