// The matmul kernel's product written into a given layout (Note [Matmul output layout] in
// docs/notes/cinn.md): the fusion compiler's cinn_matmul_layout step writes a batched
// product straight into the transposed layout its consumers read, where `matmul`
// followed by `transpose` would leave a strided view that reshapes copy.
#pragma once

#include "paddle_core/tensor/dense_tensor.h"

namespace oar::phi {

/// out = matmul(x, y, transpose_x, transpose_y) (batch dims broadcast, as the matmul op),
/// written into `out`: an allocated tensor or view with the product's dims [batch..., M, N]
/// (x and y of rank >= 2), non-negative batch strides, unit column stride and a row
/// stride of at least N, whose matrices do not overlap (any permutation of a contiguous
/// tensor that keeps N innermost). float32, float64, float16, bfloat16, int32, int64 and
/// the complex dtypes; x, y and out of one dtype. Raises InvalidArgument naming the
/// argument otherwise.
void matmul_into(const DenseTensor& x, const DenseTensor& y, bool transpose_x, bool transpose_y, DenseTensor* out);

}  // namespace oar::phi
