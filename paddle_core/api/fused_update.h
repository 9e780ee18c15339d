// The optimizers' fused multi-tensor updates, dispatched by place like every op
// (Note [Devices] in docs/notes/devices.md): the update kernel of the parameters'
// device type ("adam_update", phi_kernels/funcs/optimizer_update.h) when it has one, else
// the CPU's on host copies, with the fallback's warning once per (rule, device, dtype),
// or an error when FLAGS_enable_api_kernel_fallback is off.
#pragma once

#include <string_view>

#include "phi_kernels/funcs/optimizer_update.h"

namespace oar::api {

/// Runs rule `rule` ("sgd", "adam", ... phi::update_rules()) on `args`. Every tensor must
/// be on the first parameter's place (InvalidArgument naming the list, the index and
/// both places otherwise).
void fused_update(std::string_view rule, const phi::UpdateArgs& args);

/// Runs `cpu_kernel` (a CPU update kernel, phi::UpdateKernel) on host copies of `args`'
/// tensors and copies the parameters and states back: the fallback's way, and a device
/// kernel's declined call's (Note [Declined plugin kernels], backends/runtime/kernel_ext.cc).
void update_on_host(void* cpu_kernel, const phi::UpdateArgs& args);

}  // namespace oar::api
