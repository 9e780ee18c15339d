// A contiguous copy of a strided tensor through the vectorized elementwise iterator
// (dimension coalescing, broadcast strides, threads), for kernels whose inputs are
// often views: gradients arriving as expanded views, transposed operands.
#pragma once

#include "phi_kernels/cpu/elementwise.h"

namespace oar::phi {

/// `t` itself when contiguous, else a contiguous copy of it (same dtype T).
template <typename T>
DenseTensor dense_copy(const DenseTensor& t) {
  if (t.is_contiguous()) return t;
  DenseTensor out(t.dims(), t.dtype(), t.place());
  unary_kernel<T, T>(t, &out, [](auto v) { return v; });
  return out;
}

}  // namespace oar::phi
