// The hook DistModel traces the optimizer step through (Note [DistModel] in
// docs/notes/distributed.md): the fused-update bindings (optimizer_py.cc) ask the
// installed recorder first; when it returns true the update was recorded into the program
// being traced instead of run. None is installed in a build without distributed.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "paddle_core/tensor/tensor.h"

namespace oar::python {

using TensorList = std::vector<std::shared_ptr<TensorImpl>>;
/// rule, params, grads, the state lists (nullptr: an absent one), lrs, wds, scalars, flag, step.
using UpdateRecorder = bool (*)(const char* rule, const TensorList& params, const TensorList& grads,
                                const std::vector<const TensorList*>& states, const std::vector<double>& lrs,
                                const std::vector<double>& wds, const std::vector<double>& scalars, bool flag,
                                int64_t step);
void set_update_recorder(UpdateRecorder r);

}  // namespace oar::python
