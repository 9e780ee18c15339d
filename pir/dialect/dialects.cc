// The dialects this build knows, loadable by name into any IrContext.
#include <string>
#include <vector>

#include "paddle_core/base/errors.h"
#include "pir/ir/ir_context.h"

namespace oar::pir {

void register_pd_op_dialect(IrContext* ctx);
void register_cf_dialect(IrContext* ctx);
void register_kernel_dialect(IrContext* ctx);

std::vector<std::string> known_dialect_names() { return {"builtin", "pd_op", "cf", "kernel"}; }

void register_known_dialect(IrContext* ctx, std::string_view name) {
  if (name == "pd_op") return register_pd_op_dialect(ctx);
  if (name == "cf") return register_cf_dialect(ctx);
  if (name == "kernel") return register_kernel_dialect(ctx);
  OAR_THROW(NotFound, "IrContext: unknown dialect '", name, "' (known: builtin, pd_op, cf, kernel)");
}

}  // namespace oar::pir
