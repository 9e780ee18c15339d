// In-place reuse and lowering to the kernel dialect.
#include "paddle_core/base/errors.h"
#include "paddle_core/dispatch/fallback.h"
#include "paddle_core/dispatch/kernel_registry.h"
#include "pir/ir/builder.h"
#include "pir/transforms/passes.h"

namespace oar::pir {
namespace {

// ---------------------------------------------------------------- in-place reuse
// pd_op.X(x, ...) -> pd_op.X_(x, ...) when the op definition declares an in-place
// variant, x dies at this op (its only use), x's buffer is the op's own (not a
// parameter, constant, block argument or a view of another tensor), and the result
// has x's type (no broadcasting or dtype change).
bool can_overwrite(Value x, Operation* op) {
  if (!x || !x.has_one_use() || x.is_block_argument()) return false;
  Operation* d = x.defining_op();
  if (!d || d->name().rfind("pd_op.", 0) != 0 || d->has(kTraitView)) return false;
  if (d->parent_block() != op->parent_block()) return false;  // never write a value from outside a loop body
  return x.type() == op->result(0).type();
}

class InplacePass : public Pass {
 public:
  InplacePass() : Pass("inplace") {}
  bool run(Operation* anchor) override {
    IrContext* ctx = anchor->info()->ctx;
    std::vector<Operation*> ops;
    anchor->walk([&](Operation* op) {
      if (!op->info()->inplace.empty() && op->num_operands() > 0 && op->num_results() == 1) ops.push_back(op);
    });
    bool changed = false;
    Builder b(ctx);
    for (Operation* op : ops) {
      if (!can_overwrite(op->operand(0), op)) continue;
      const OpInfo* variant = ctx->find_op(op->info()->inplace);
      if (!variant) continue;
      b.set_insertion_point(op);
      Operation* n = b.build(variant, op->operands(), op->attributes(), {op->result(0).type()});
      op->replace_all_uses_with({n->result(0)});
      op->erase();
      changed = true;
    }
    return changed;
  }
};

// ---------------------------------------------------------------- lowering
DataType dtype_of(Value v) {
  Type t = v.type();
  if (t.is_vector() && t.size() > 0) t = t.element(0);
  return t.is_tensor() ? t.dtype() : DataType::UNDEFINED;
}

// Whether the op's Place attribute is where its kernel runs (a creation op: no tensor
// input picks the place), as the generated kernel stage decides it.
bool place_from_attr(const OpInfo* info) {
  return info->inputs.empty() || info->inputs[0].kind == InputSpec::kOptional;
}

// Note [Lowering for a place]: a program is lowered for the place it will run on (the
// executor's, PassManager::set_place). Each op takes the kernel of that place's device
// type; an op with none there takes its CPU kernel when the fallback may run it (the
// executor then copies its inputs to the host and its outputs back), exactly as eager
// dispatch does; the kernel key's backend says which. A creation op's Place attribute
// becomes the place its kernel runs on, so a saved model runs wherever it is loaded.
class LowerToKernelPass : public Pass {
 public:
  explicit LowerToKernelPass(std::optional<Place> place) : Pass("lower_to_kernel"), fixed_(place) {}
  bool run(Operation* anchor) override {
    ctx_ = anchor->info()->ctx;
    place_ = fixed_ ? *fixed_ : current_place();
    phi_ = ctx_->op_info("kernel.phi_kernel");
    cast_ = ctx_->find_op("pd_op.cast");
    std::vector<Operation*> ops;
    anchor->walk([&](Operation* op) {
      if (op->info()->dialect == "pd_op") ops.push_back(op);
    });
    for (Operation* op : ops) lower(op);
    return !ops.empty();
  }

 private:
  // The device type whose kernel runs `kernel` for `dtype` (Note [Lowering for a place]).
  DeviceType device_for(const std::string& kernel, DataType dtype, const OpInfo* op) {
    std::optional<DeviceType> d = kernel_device_for(kernel, place_, dtype);
    if (!d) {
      const bool cpu_has = KernelRegistry::instance().find(kernel, DeviceType::kCPU, dtype) != nullptr;
      // As eager dispatch: the fallback turned off is a TypeError, a kernel missing everywhere NotFound.
      OAR_ENFORCE(place_.is_cpu() || !cpu_has, InvalidType, "lower_to_kernel: no ", kernel_device_label(place_.type()),
                  " kernel '", kernel, "' for dtype ", dtype_name(dtype), " (op ", op->name,
                  "), and FLAGS_enable_api_kernel_fallback is off, so it does not run on the CPU");
      OAR_THROW(NotFound, "lower_to_kernel: no ", kernel_device_label(place_.type()), " kernel '", kernel,
                "' for dtype ", dtype_name(dtype), " (op ", op->name, ")",
                place_.is_cpu() ? "" : ", and no CPU kernel to fall back to");
    }
    if (*d != place_.type()) dispatch::warn_fallback(std::string_view(op->name).substr(6), place_.type(), dtype);
    return *d;
  }
  void lower(Operation* op) {
    const OpInfo* info = op->info();
    // The op this runs as: an in-place variant runs its base op's kernel.
    const OpInfo* base = info->inplace_of.empty() ? info : ctx_->op_info(info->inplace_of);
    OAR_ENFORCE(!base->kernel.empty() || !base->view.empty(), Unimplemented, "lower_to_kernel: ",
                info->name, " has neither a kernel nor a view function");
    Builder b(ctx_);
    b.set_insertion_point(op);
    std::vector<Value> operands = op->operands();
    // Paddle's promotion: cast the promoted inputs to their common dtype first.
    if (!base->promote.empty()) {
      DataType common = DataType::UNDEFINED;
      for (int i : base->promote) {
        DataType t = dtype_of(operands[i]);
        common = common == DataType::UNDEFINED ? t : promote_types(common, t);
      }
      if (base->promote_float && is_integral(common, true)) common = default_float_dtype();
      for (int i : base->promote) {
        if (dtype_of(operands[i]) == common) continue;
        OAR_ENFORCE(cast_ != nullptr, NotFound, "lower_to_kernel: promotion needs pd_op.cast");
        Type from = operands[i].type();
        Type to = ctx_->tensor_type(common, from.dims(), from.layout());
        const DeviceType cd = device_for(cast_->kernel, common, cast_);
        Operation* c = b.build(phi_, {operands[i]},
                               {{"op_name", ctx_->str_attr(cast_->name)},
                                {"kernel_name", ctx_->str_attr(cast_->kernel)},
                                {"kernel_key", key(cd, common)},
                                {"dtype", ctx_->dtype_attr(common)}},
                               {to});
        operands[i] = c->result(0);
      }
    }
    DataType kd = DataType::UNDEFINED;
    if (base->kernel_dtype_input >= 0 && static_cast<size_t>(base->kernel_dtype_input) < operands.size() &&
        operands[base->kernel_dtype_input]) {
      kd = dtype_of(operands[base->kernel_dtype_input]);
    } else if (base->kernel_dtype_input == -2) {
      Attribute a = op->attr(base->kernel_dtype_attr);
      kd = a.is(AttrKind::kDType) ? a.as_dtype() : DataType::UNDEFINED;
    }
    if (kd == DataType::UNDEFINED && op->num_results() > 0) kd = dtype_of(op->result(0));
    std::string kernel = base->kernel.empty() ? base->view : base->kernel;
    DeviceType device = place_.type();  // a view runs on whatever place its input is
    if (base->view.empty()) device = device_for(kernel, kd, info);
    std::vector<NamedAttribute> attrs = op->attributes();
    if (place_from_attr(base)) {
      const Place run_on = device == place_.type() ? place_ : CPUPlace();
      for (NamedAttribute& a : attrs)
        if (a.value.is(AttrKind::kPlace)) a.value = ctx_->place_attr(run_on);
    }
    attrs.push_back({"op_name", ctx_->str_attr(info->name)});
    attrs.push_back({"kernel_name", ctx_->str_attr(kernel)});
    attrs.push_back({"kernel_key", key(device, kd, layout_of(op))});
    std::vector<Type> types;
    for (size_t i = 0; i < op->num_results(); ++i) types.push_back(op->result(i).type());
    Operation* k = b.build(phi_, operands, std::move(attrs), types);
    op->replace_all_uses_with(k->results());
    op->erase();
  }
  static DataLayout layout_of(Operation* op) {
    for (size_t i = 0; i < op->num_results(); ++i)
      if (op->result(i).type().is_tensor()) return op->result(i).type().layout();
    return DataLayout::kNCHW;
  }
  Attribute key(DeviceType device, DataType t, DataLayout l = DataLayout::kNCHW) {
    return ctx_->kernel_key_attr(static_cast<int>(device), t, l);
  }
  std::optional<Place> fixed_;
  Place place_;
  IrContext* ctx_ = nullptr;
  const OpInfo* phi_ = nullptr;
  const OpInfo* cast_ = nullptr;
};

}  // namespace

std::unique_ptr<Pass> create_inplace_pass() { return std::make_unique<InplacePass>(); }
std::unique_ptr<Pass> create_lower_to_kernel_pass(std::optional<Place> place) {
  return std::make_unique<LowerToKernelPass>(place);
}

std::optional<DeviceType> kernel_device_for(std::string_view kernel, const Place& place, DataType dtype) {
  const KernelRegistry& r = KernelRegistry::instance();
  if (r.find(kernel, place.type(), dtype) != nullptr) return place.type();
  if (!place.is_cpu() && dispatch::fallback_allowed(place) && r.find(kernel, DeviceType::kCPU, dtype) != nullptr)
    return DeviceType::kCPU;
  return std::nullopt;
}

void register_builtin_passes() {
  register_pass("dce", create_dce_pass);
  register_pass("cse", create_cse_pass);
  register_pass("constant_fold", create_constant_fold_pass);
  register_pass("canonicalize", create_canonicalize_pass);
  register_pass("fuse", create_fuse_pass);
  register_pass("inplace", create_inplace_pass);
  register_pass("lower_to_kernel", [] { return create_lower_to_kernel_pass(); });
  register_pass("fold_parameters", create_fold_parameters_pass);
}

}  // namespace oar::pir
