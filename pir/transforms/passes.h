// The built-in passes (registered by name; see pass/pass.h for pipelines).
//   dce              erase pure ops whose results are unused
//   cse              merge identical pure ops (scoped: a region sees its ancestors' values)
//   constant_fold    run ops whose inputs are all constants on the eager kernels
//   canonicalize     op-dialect simplifications through the greedy rewrite driver
//   fuse             the DRR fusion rules (pir/drr/fusion_rules.cc)
//   inplace          use an op's in-place variant when its input dies at the op
//   lower_to_kernel  op dialect -> kernel dialect (kernel.phi_kernel + kernel key)
//   fold_parameters  (predictors) run ops on parameters/constants once; results become parameters
#pragma once

#include <memory>
#include <optional>
#include <string_view>

#include "paddle_core/tensor/place.h"
#include "pir/pass/pass.h"
#include "pir/pass/pattern_rewrite.h"

namespace oar::pir {

std::unique_ptr<Pass> create_dce_pass();
std::unique_ptr<Pass> create_cse_pass();
std::unique_ptr<Pass> create_constant_fold_pass();
std::unique_ptr<Pass> create_canonicalize_pass();
std::unique_ptr<Pass> create_fuse_pass();
std::unique_ptr<Pass> create_inplace_pass();
/// Lowers for the kernels of `place`'s device type (Note [Lowering for a place] in
/// inplace_lower.cc); without one (the registered pass), for the pipeline's place
/// (PassManager::set_place, current_place()).
std::unique_ptr<Pass> create_lower_to_kernel_pass(std::optional<Place> place = std::nullopt);
/// The device type whose `kernel` a program lowered for `place` runs for `dtype`: the
/// place's own when it has one, else the CPU's when the fallback may run it (as eager
/// dispatch does); nothing when neither. lower_to_kernel and DRR's require_kernels ask it.
std::optional<DeviceType> kernel_device_for(std::string_view kernel, const Place& place, DataType dtype);
std::unique_ptr<Pass> create_fold_parameters_pass();

/// The canonicalization patterns of the op dialect (patterns of ops not loaded are skipped).
void add_canonicalization_patterns(RewritePatternSet& set);
/// Folds one op on constant inputs; returns the new constant values, or nothing.
std::vector<Value> try_fold(Operation* op, Builder& b);

}  // namespace oar::pir
