// The optimizer update as ops of a rank's program (Note [DistModel] in
// docs/notes/distributed.md): dist.<rule>_update reads the learning rate and the step
// count (program inputs, so schedules and bias correction stay right), the parameters,
// their gradients and the rule's state tensors, and gives the updated parameters and
// states, which builtin.set_parameter writes back. Its executor step calls the fused
// update oar.optimizer calls eagerly (api::fused_update): one implementation of the math.
#pragma once

#include <string>
#include <vector>

#include "paddle_core/tensor/tensor.h"

namespace oar::pir {
class Builder;
class IrContext;
class Operation;
}  // namespace oar::pir

namespace oar::dist {

// The update ops are registered with the dist dialect (dist_dialect.cc).
/// Whether `name` is one of them ("dist.sgd_update", "dist.adamw_update", ...).
bool is_update_op(const std::string& name);

/// While DistModel traces a step: the program inputs that hold the learning rate (float64,
/// 0-d) and the step count (int64, 0-d); undefined tensors end it. `skip` (optional, a bool
/// with one element: GradScaler's found_inf in a converted training step) becomes the
/// update's last operand: when it holds true at run time the step leaves the parameters and
/// states as they are (the op's attribute `skip_input` says it is there).
void set_update_inputs(const Tensor& lr, const Tensor& step, const Tensor& skip = Tensor());

/// The optimizer's fused update of `rule` on these lists. While a ProgramTracer is active
/// and set_update_inputs was given, records dist.<rule>_update (the learning rates as
/// multiples of the lr input: DistModel traces with a learning rate of 1) and the writes
/// of the new values into the parameters and states, computes those values on copies
/// (the traced step leaves the tensors as they were) and returns true; otherwise false
/// (the caller updates eagerly).
bool record_update(const std::string& rule, const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                   const std::vector<std::vector<Tensor>>& states, const std::vector<double>& lrs,
                   const std::vector<double>& wds, const std::vector<double>& scalars, bool flag, int64_t step);

/// Replaces the update op `op` by a kernel.compiled_kernel running it. When no later op of
/// the block reads the parameters and states it updates, the step writes them in place and
/// the set_parameter ops copying its results back are dropped.
void lower_update(pir::Operation* op, pir::Builder& b);

}  // namespace oar::dist
