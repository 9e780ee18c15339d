// Shapes as backward formulas and composite rules read them (Note [Dist layer] in
// docs/notes/distributed.md): a dist tensor's global shape, the one attributes are written
// in, except while the dist layer runs an op on local shards. The core cannot read the
// dist metadata itself (distributed/ defines it), so the dist layer registers the reader.
#pragma once

#include <atomic>
#include <cstdint>

#include "paddle_core/tensor/tensor.h"

namespace oar {

/// A dist tensor's global dims, or nullptr (not a dist tensor, or below the dist layer).
using GlobalDimsFn = const Dims* (*)(const TensorImpl& t);
extern std::atomic<GlobalDimsFn> g_global_dims_fn;  // composite.cc; set by distributed/

/// t.dims(), but a dist tensor's global shape outside the dist layer.
inline const Dims& dist_dims(const Tensor& t) {
  if (t.defined() && t.impl()->dist != nullptr) {
    if (GlobalDimsFn f = g_global_dims_fn.load(std::memory_order_acquire)) {
      if (const Dims* d = f(*t.impl())) return *d;
    }
  }
  return t.dims();
}
inline int64_t dist_numel(const Tensor& t) { return dist_dims(t).numel(); }

}  // namespace oar
