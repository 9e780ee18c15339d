// The fallback's policy for code that runs kernels outside the dispatch layers (the
// executor, lower_to_kernel, the optimizers' fused updates): whether an op with no
// kernel on a device may run its CPU kernel with copies, and the warning it prints once
// (Note [Devices] in docs/notes/devices.md; the eager side is fallback.cc's layer).
#pragma once

#include <string_view>

#include "paddle_core/tensor/dtype.h"
#include "paddle_core/tensor/place.h"

namespace oar::dispatch {

/// Whether an op with no kernel for `place` may run its CPU kernel with copies: a device
/// place, the fallback layer linked, FLAGS_enable_api_kernel_fallback on.
bool fallback_allowed(const Place& place);
/// The fallback's warning, once per (op, device type, dtype), as the eager fallback
/// prints it. `declined`: the device's kernel declined the call, saying this (Note
/// [Declined plugin kernels] in backends/runtime/kernel_ext.cc); else it has none.
void warn_fallback(std::string_view op, DeviceType device, DataType dtype, std::string_view declined = {});

}  // namespace oar::dispatch
