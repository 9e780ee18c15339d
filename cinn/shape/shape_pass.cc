// The `cinn_shape` stage (Note [Symbolic shapes] in docs/notes/cinn.md): runs the shape
// analysis on each block and writes every cinn.fusion's symbolic signature into its
// attributes (`sym_shapes`, and `sym_assumed`: the equalities the group relies on, with
// the ops that implied them), so the dumps show them and the lowering keys the compile
// cache and checks the run-time dims with them. Under OAR_PIR_PRINT_IR it also prints
// the whole program with every value's dims. `print_shapes` (pir_opt
// --pipeline=print_shapes file) prints that annotated program to stdout.
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <unordered_set>

#include "cinn/dialect.h"
#include "cinn/pipeline.h"
#include "cinn/shape/shape_analysis.h"
#include "pir/ir/ir_context.h"
#include "pir/ir/operation.h"
#include "pir/ir/printer.h"
#include "pir/pass/pass.h"

namespace oar::cinn {
using namespace pir;  // NOLINT

namespace {

bool print_ir_env() {
  const char* e = std::getenv("OAR_PIR_PRINT_IR");
  return e && *e && std::string(e) != "0";
}

// The assumptions whose symbols the group's operands use (by representative).
std::string group_assumptions(const ShapeAnalysis& a, const Operation* f) {
  std::unordered_set<std::string> syms;
  for (Value v : f->operands())
    for (const DimExpr& d : a.dims(v))
      if (d.kind() == DimExpr::kSym) syms.insert(symbol_name(a.find(d.sym())));
  std::string out;
  for (const std::string& s : a.assumptions()) {
    // "S3 == S0 (pd_op.add)": the right-hand side is the representative at that time;
    // keep it when the left one's class is used by the group.
    const size_t eq = s.find(" == ");
    const std::string lhs = s.substr(0, eq);
    const int id = std::stoi(lhs.substr(1));
    if (syms.count(symbol_name(a.find(id)))) out += (out.empty() ? "" : "; ") + s;
  }
  return out;
}

class ShapePass : public Pass {
 public:
  ShapePass() : Pass("cinn_shape") {}
  bool run(Operation* anchor) override {
    bool changed = false;
    for (size_t r = 0; r < anchor->num_regions(); ++r)
      for (size_t b = 0; b < anchor->region(r).size(); ++b) {
        Block* block = anchor->region(r).block(b);
        ShapeAnalysis a(block);
        for (Operation* op : *block) {
          if (op->name() != kFusionOp) continue;
          IrContext* ctx = op->info()->ctx;
          op->set_attr("sym_shapes", ctx->str_attr(fusion_signature(a, op)));
          const std::string assumed = group_assumptions(a, op);
          if (!assumed.empty()) op->set_attr("sym_assumed", ctx->str_attr(assumed));
          changed = true;
        }
      }
    if (print_ir_env() && anchor->num_regions() == 1 && anchor->region(0).size() == 1)
      std::fprintf(stderr, "// ----- symbolic shapes (cinn_shape) -----\n%s",
                   annotate_shapes(print_op(anchor), anchor->region(0).front(), anchor).c_str());
    return changed;
  }
};

class PrintShapesPass : public Pass {
 public:
  PrintShapesPass() : Pass("print_shapes") {}
  bool run(Operation* anchor) override {
    if (anchor->num_regions() == 1 && anchor->region(0).size() == 1)
      std::cout << annotate_shapes(print_op(anchor), anchor->region(0).front(), anchor) << std::flush;
    return false;
  }
};

}  // namespace

std::unique_ptr<Pass> create_shape_pass() { return std::make_unique<ShapePass>(); }
std::unique_ptr<Pass> create_print_shapes_pass() { return std::make_unique<PrintShapesPass>(); }

}  // namespace oar::cinn
