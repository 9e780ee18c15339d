// The `cinn_lower` pass: each cinn.fusion becomes a kernel.compiled_kernel naming the
// kernel step compile_group registered (the executor runs it like any kernel step). A
// group that fails to compile is inlined back (its unfused ops run) and the reason is
// logged once per distinct reason.
#include <mutex>
#include <set>

#include "cinn/dialect.h"
#include "cinn/pipeline.h"
#include "cinn/runtime/runtime.h"
#include "pir/ir/builder.h"
#include "pir/pass/pass.h"

namespace oar::cinn {
using namespace pir;  // NOLINT

void note_fallback(const std::string& why);  // counts it and logs a new reason once (runtime.cc)

namespace {

class LowerFusionPass : public Pass {
 public:
  LowerFusionPass() : Pass("cinn_lower") {}
  bool run(Operation* anchor) override {
    register_cinn_dialect(anchor->info()->ctx);
    std::vector<Operation*> fusions;
    anchor->walk([&](Operation* op) {
      if (op->name() == kFusionOp) fusions.push_back(op);
    });
    for (Operation* f : fusions) {
      std::string kernel;
      try {
        kernel = compile_group(f);
      } catch (const std::exception& e) {
        note_fallback(e.what());
        inline_fusion(f);
        continue;
      }
      Builder b(f->info()->ctx);
      b.set_insertion_point(f);
      std::vector<Type> types;
      for (Value r : f->results()) types.push_back(r.type());
      Operation* k =
          b.build("kernel.compiled_kernel", f->operands(), {{"kernel_name", f->info()->ctx->str_attr(kernel)}}, types);
      f->replace_all_uses_with(k->results());
      f->erase();
    }
    return !fusions.empty();
  }
};

}  // namespace

std::unique_ptr<Pass> create_lower_fusion_pass() { return std::make_unique<LowerFusionPass>(); }

}  // namespace oar::cinn
