#include "cinn/dialect.h"

#include <unordered_map>

#include "paddle_core/base/errors.h"
#include "pir/ir/builder.h"
#include "pir/ir/ir_context.h"
#include "pir/ir/operation.h"

namespace oar::cinn {
using namespace pir;  // NOLINT

namespace {

void verify_fusion(const Operation* op) {
  OAR_ENFORCE(op->num_regions() == 1 && op->region(0).size() == 1, InvalidArgument,
              "cinn.fusion needs one region with one block");
  const Block* body = op->region(0).front();
  OAR_ENFORCE(body->num_arguments() == op->num_operands(), InvalidArgument, "cinn.fusion has ", op->num_operands(),
              " operands but its block takes ", body->num_arguments(), " arguments");
  for (size_t i = 0; i < op->num_operands(); ++i)
    OAR_ENFORCE(op->operand(i) && body->argument(i).type() == op->operand(i).type(), InvalidArgument,
                "cinn.fusion: block argument ", i, " must have the operand's type ",
                op->operand(i) ? op->operand(i).type().str() : "null");
  const Operation* y = body->back();
  OAR_ENFORCE(y && y->name() == kYieldOp, InvalidArgument, "cinn.fusion's block must end with cinn.yield");
  OAR_ENFORCE(y->num_operands() == op->num_results(), InvalidArgument, "cinn.fusion yields ", y->num_operands(),
              " values but has ", op->num_results(), " results");
  for (size_t i = 0; i < y->num_operands(); ++i)
    OAR_ENFORCE(y->operand(i).type() == op->result(i).type(), InvalidArgument, "cinn.fusion yields ",
                y->operand(i).type().str(), " for result ", i, " of type ", op->result(i).type().str());
}

void verify_yield(const Operation* op) {
  const Operation* parent = op->parent_op();
  OAR_ENFORCE(parent && parent->name() == kFusionOp, InvalidArgument, "cinn.yield must be inside cinn.fusion");
}

class CinnDialect : public Dialect {
 public:
  CinnDialect() : Dialect("cinn") {}
  void initialize(IrContext* ctx) override {
    OpInfo f;
    f.name = kFusionOp;
    f.dialect = "cinn";
    f.num_regions = 1;
    f.traits = kTraitPure;  // its ops are pure (random and in-place ops never join a group)
    f.verify = verify_fusion;
    ctx->register_op(f);
    OpInfo y;
    y.name = kYieldOp;
    y.dialect = "cinn";
    y.traits = kTraitTerminator;
    y.verify = verify_yield;
    ctx->register_op(y);
  }
};

}  // namespace

void register_cinn_dialect(IrContext* ctx) {
  if (!ctx->has_dialect("cinn")) ctx->register_dialect(std::make_unique<CinnDialect>());
}

std::vector<Value> clone_fusion_body(Builder& b, const Operation* fusion, const std::vector<Value>& args) {
  const Block* body = fusion->region(0).front();
  std::unordered_map<const void*, Value> map;
  for (size_t i = 0; i < body->num_arguments(); ++i) map[body->argument(i).impl()] = args.at(i);
  for (Operation* op : *body) {
    std::vector<Value> operands;
    for (Value v : op->operands()) operands.push_back(v ? map.at(v.impl()) : Value());
    if (op->name() == kYieldOp) return operands;
    OAR_ENFORCE(op->num_regions() == 0, Unimplemented, "cinn.fusion: ", op->name(), " has regions");
    std::vector<Type> types;
    for (Value r : op->results()) types.push_back(r.type());
    Operation* c = b.build(op->info(), operands, op->attributes(), types);
    for (size_t i = 0; i < op->num_results(); ++i) map[op->result(i).impl()] = c->result(i);
  }
  OAR_THROW(InvalidArgument, "cinn.fusion's block must end with cinn.yield");
}

void inline_fusion(Operation* fusion) {
  Builder b(fusion->info()->ctx);
  b.set_insertion_point(fusion);
  fusion->replace_all_uses_with(clone_fusion_body(b, fusion, fusion->operands()));
  fusion->erase();
}

}  // namespace oar::cinn
