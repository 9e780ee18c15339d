// The kernel dialect: after lowering, each op-dialect op becomes
//   %r = "kernel.phi_kernel"(%x...) {op_name = "pd_op.add", kernel_name = "add",
//        kernel_key = #kernel_key<cpu, f32, NCHW>, <the op's attributes>}
// naming the kernel it runs and its key (backend, dtype, layout). View ops keep no
// kernel: kernel_name is their view function. A kernel registered at run time (a
// compiled fusion, Note [Kernel-level programs] in docs/notes/dispatch.md) is
//   %r = "kernel.compiled_kernel"(%x...) {kernel_name = "fused_3"}
// whose step (dispatch::register_kernel_step) computes its results from its operands.
#include "paddle_core/base/errors.h"
#include "pir/ir/ir_context.h"
#include "pir/ir/operation.h"

namespace oar::pir {
namespace {

void verify_phi_kernel(const Operation* op) {
  Attribute name = op->attr("op_name");
  OAR_ENFORCE(name.is(AttrKind::kString), InvalidArgument, "attribute 'op_name' (string) is missing");
  OAR_ENFORCE(op->attr("kernel_name").is(AttrKind::kString), InvalidArgument,
              "attribute 'kernel_name' (string) is missing");
  OAR_ENFORCE(op->attr("kernel_key").is(AttrKind::kKernelKey), InvalidArgument,
              "attribute 'kernel_key' (#kernel_key<...>) is missing");
}

void verify_compiled_kernel(const Operation* op) {
  OAR_ENFORCE(op->attr("kernel_name").is(AttrKind::kString), InvalidArgument,
              "attribute 'kernel_name' (string) is missing");
}

class KernelDialect : public Dialect {
 public:
  KernelDialect() : Dialect("kernel") {}
  void initialize(IrContext* ctx) override {
    OpInfo i;
    i.name = "kernel.phi_kernel";
    i.dialect = "kernel";
    i.verify = verify_phi_kernel;  // purity comes from the op it lowers (is_pure in pass/)
    ctx->register_op(i);
    OpInfo c;
    c.name = "kernel.compiled_kernel";
    c.dialect = "kernel";
    c.verify = verify_compiled_kernel;
    ctx->register_op(c);
  }
};

}  // namespace

void register_kernel_dialect(IrContext* ctx) { ctx->register_dialect(std::make_unique<KernelDialect>()); }

}  // namespace oar::pir
