// The control-flow dialect: structured control flow in regions (no branches).
//   %r... = cf.if(%cond) ({then}, {else})  each branch ends with cf.yield(values of the result types)
//   %r... = cf.while(%cond, %init...) ({body(%carried...) ... cf.yield(%next_cond, %next...)})
//     runs the body while the condition holds; results are the final carried values.
#include "paddle_core/base/errors.h"
#include "pir/ir/ir_context.h"
#include "pir/ir/operation.h"

namespace oar::pir {
namespace {

bool is_bool_scalar_tensor(Type t) {
  return t && ((t.is_tensor() && t.dtype() == DataType::BOOL && t.numel() == 1) ||
               t.kind() == TypeKind::kBool);
}

const Operation* terminator(const Region& r, size_t i, const char* what) {
  OAR_ENFORCE(r.size() == 1, InvalidArgument, what, " must have exactly one block, got ", r.size());
  const Operation* t = r.front()->back();
  OAR_ENFORCE(t && t->name() == "cf.yield", InvalidArgument, what,
              " must end with cf.yield", t ? std::string(", ends with ") + t->name() : std::string(" (it is empty)"));
  return t;
}

void verify_if(const Operation* op) {
  OAR_ENFORCE(op->num_operands() == 1 && op->operand(0), InvalidArgument,
              "expected one condition operand, got ", op->num_operands());
  OAR_ENFORCE(is_bool_scalar_tensor(op->operand(0).type()), InvalidArgument,
              "the condition must be a bool with one element, got ", op->operand(0).type().str());
  OAR_ENFORCE(op->num_regions() == 2, InvalidArgument, "expected 2 regions (then, else), got ",
              op->num_regions());
  const char* names[2] = {"the then region", "the else region"};
  for (int r = 0; r < 2; ++r) {
    const Operation* y = terminator(op->region(r), 0, names[r]);
    OAR_ENFORCE(op->region(r).front()->num_arguments() == 0, InvalidArgument, names[r],
                " takes no block arguments");
    OAR_ENFORCE(y->num_operands() == op->num_results(), InvalidArgument, names[r], " yields ",
                y->num_operands(), " values but cf.if has ", op->num_results(), " results");
    for (size_t i = 0; i < y->num_operands(); ++i)
      OAR_ENFORCE(y->operand(i) && y->operand(i).type() == op->result(i).type(), InvalidArgument,
                  names[r], " yields ", y->operand(i) ? y->operand(i).type().str() : "null",
                  " for result ", i, " of type ", op->result(i).type().str());
  }
}

// `init` and the yielded value may be more specific than the carried type (Type::refines):
// a value whose size grows with the iterations (a history of the loop variables, Note
// [Gradients through cf.while], a list's rows appended in the body) is carried as
// tensor<?x...> from an init of known size, and the body yields it with the sizes its
// ops know.
void verify_while(const Operation* op) {
  OAR_ENFORCE(op->num_operands() >= 1 && op->operand(0), InvalidArgument,
              "expected (condition, carried values...)");
  OAR_ENFORCE(is_bool_scalar_tensor(op->operand(0).type()), InvalidArgument,
              "the condition must be a bool with one element, got ", op->operand(0).type().str());
  const size_t n = op->num_operands() - 1;
  OAR_ENFORCE(op->num_results() == n, InvalidArgument, "expected ", n,
              " results (one per carried value), got ", op->num_results());
  OAR_ENFORCE(op->num_regions() == 1, InvalidArgument, "expected 1 region (the body), got ",
              op->num_regions());
  const Operation* y = terminator(op->region(0), 0, "the body");
  const Block* body = op->region(0).front();
  OAR_ENFORCE(body->num_arguments() == n, InvalidArgument, "the body takes ", body->num_arguments(),
              " arguments but the loop carries ", n, " values");
  OAR_ENFORCE(y->num_operands() == n + 1, InvalidArgument, "the body yields ", y->num_operands(),
              " values; expected the next condition and ", n, " carried values");
  OAR_ENFORCE(y->operand(0) && is_bool_scalar_tensor(y->operand(0).type()), InvalidArgument,
              "the body's first yielded value must be the bool condition");
  for (size_t i = 0; i < n; ++i) {
    OAR_ENFORCE(bool(op->operand(i + 1)), InvalidArgument, "carried value ", i, " is null");
    Type t = body->argument(i).type();
    OAR_ENFORCE(op->operand(i + 1).type().refines(t) && op->result(i).type() == t && y->operand(i + 1) &&
                    y->operand(i + 1).type().refines(t),
                InvalidArgument, "carried value ", i, " must have the same type (", t ? t.str() : "null",
                ") as block argument and result, and init and the yielded value must refine it (got ",
                op->operand(i + 1).type().str(), ")");
  }
}

void verify_yield(const Operation* op) {
  OAR_ENFORCE(op->num_results() == 0, InvalidArgument, "cf.yield has no results");
  const Operation* parent = op->parent_op();
  OAR_ENFORCE(parent && (parent->name() == "cf.if" || parent->name() == "cf.while"), InvalidArgument,
              "cf.yield must be inside cf.if or cf.while, found in ",
              parent ? parent->name() : std::string("no op"));
}

class ControlFlowDialect : public Dialect {
 public:
  ControlFlowDialect() : Dialect("cf") {}
  void initialize(IrContext* ctx) override {
    OpInfo i;
    i.dialect = "cf";
    i.name = "cf.if";
    i.num_regions = 2;
    i.verify = verify_if;
    ctx->register_op(i);
    i.name = "cf.while";
    i.num_regions = 1;
    i.verify = verify_while;
    ctx->register_op(i);
    i.name = "cf.yield";
    i.num_regions = 0;
    i.traits = kTraitTerminator;
    i.verify = verify_yield;
    ctx->register_op(i);
  }
};

}  // namespace

void register_cf_dialect(IrContext* ctx) { ctx->register_dialect(std::make_unique<ControlFlowDialect>()); }

}  // namespace oar::pir
