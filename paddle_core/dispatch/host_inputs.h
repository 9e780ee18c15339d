// Note [Host inputs] (docs/notes/devices.md): an op's definition may name tensor inputs
// that its kernels read on the host (`host_inputs: [shape]`: dyn_reshape's target shape).
// They are exempt from the same-place rule, and the generated code gives every kernel of
// the op, eager and in the executor, a CPU copy of them when they live on a device. Only
// the generated op files that have such an op include this header.
#pragma once

#include "paddle_core/tensor/dense_tensor.h"

namespace oar::detail {

/// `t` on the CPU: `t` itself (sharing its storage) when it is there or has no data yet
/// (an IR value typed by its shape only), else a copy through the device's blocking copy,
/// which runs after the work already queued on the device. `op` and `arg` name the copy
/// in an error.
DenseTensor on_host(const DenseTensor& t, const char* op, const char* arg);

}  // namespace oar::detail
