// The target shape an op reads from a 1-D int tensor operand (dyn_reshape, dyn_expand,
// dyn_uniform, dyn_gaussian, dyn_randint). A header of its own, so that only their
// infer-meta files include it.
#pragma once

#include <cstdint>
#include <vector>

#include "paddle_core/tensor/dense_tensor.h"

namespace oar::meta {

/// `shape`'s values when it has data (on the host), else `hint` (the IR's types, dynamic
/// sizes as the sentinel); false when neither is known. `op` names the caller in errors.
bool shape_operand(const DenseTensor& shape, const std::vector<int64_t>& hint, const char* op,
                   std::vector<int64_t>* out);

}  // namespace oar::meta
