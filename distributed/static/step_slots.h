// Executor steps for the dist dialect's ops (Note [DistModel] in docs/notes/distributed.md).
// Kernel steps are plain functions, so each distinct op (its name and attributes) gets a
// slot whose function runs it, as the fusion compiler's kernels do.
#pragma once

#include <functional>
#include <string>

#include "paddle_core/dispatch/dispatch.h"

namespace oar::dist {

using SlotFn = std::function<void(dispatch::KernelCall&)>;

/// The registered kernel-step name ("<prefix>_<k>") running `make()`'s function; ops
/// with the same `key` share one slot (`make` runs once per key, under a lock).
std::string step_slot(const std::string& prefix, const std::string& key, const std::function<SlotFn()>& make);

}  // namespace oar::dist
