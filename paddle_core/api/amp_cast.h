// The casts of the autocast layer (paddle_core/dispatch/amp.h), used by the generated
// op functions: differentiable casts of the floating inputs to the chosen dtype.
#pragma once

#include <vector>

#include "oar_generated/ops_api.h"
#include "paddle_core/dispatch/amp.h"

namespace oar::ops::detail {

/// `t` cast to `to` when it is a float32/float16/bfloat16 tensor of another dtype.
inline Tensor amp_cast(const Tensor& t, DataType to) {
  return t.defined() && amp::castable(t.dtype()) && t.dtype() != to ? ops::cast(t, to) : t;
}

inline std::vector<Tensor> amp_cast(const std::vector<Tensor>& ts, DataType to) {
  std::vector<Tensor> out;
  out.reserve(ts.size());
  for (const Tensor& t : ts) out.push_back(amp_cast(t, to));
  return out;
}

}  // namespace oar::ops::detail
