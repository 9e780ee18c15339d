// The op dialect (pd_op): its ops are generated from paddle_core/ops/*.yaml by
// paddle_core/ops/generator/gen_pir_ops.py (see Note [PIR] in docs/notes/pir.md).
#include "pir/ir/ir_context.h"

namespace oar::pir {

void register_pd_ops(IrContext* ctx);  // generated: <build>/generated/oar_generated/pir_ops.cc

namespace {
class OpDialect : public Dialect {
 public:
  OpDialect() : Dialect("pd_op") {}
  void initialize(IrContext* ctx) override { register_pd_ops(ctx); }
};
}  // namespace

void register_pd_op_dialect(IrContext* ctx) { ctx->register_dialect(std::make_unique<OpDialect>()); }

}  // namespace oar::pir
