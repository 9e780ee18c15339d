// Byte-level pieces of the reshard transfers: cutting, padding and joining contiguous
// local values along one dim (dtype-agnostic: whole elements are moved, never computed).
#pragma once

#include <cstdint>
#include <vector>

#include "paddle_core/tensor/dense_tensor.h"

namespace oar::dist::local {

/// A zero-filled contiguous tensor of `dims` with x's dtype and place.
DenseTensor zeros_like_dims(const DenseTensor& x, const std::vector<int64_t>& dims);
/// A private contiguous copy of x.
DenseTensor clone(const DenseTensor& x);
/// A contiguous copy of x[..., begin:end, ...] along `dim`.
DenseTensor slice(const DenseTensor& x, int64_t dim, int64_t begin, int64_t end);
/// `k` chunks of x along `dim` (chunk r = x[range r of n / k]), each zero-padded to
/// ceil(n / k), stacked into [k, ...]: what reduce_scatter and alltoall take.
DenseTensor pack_chunks(const DenseTensor& x, int64_t dim, int64_t k);
/// The inverse: `buf` holds k padded chunks [k, ...]; joins them along `dim`, each trimmed
/// to its length in a split of `n` in k (Paddle's uneven split).
DenseTensor unpack_chunks(const DenseTensor& buf, int64_t dim, int64_t k, int64_t n);
/// x zero-padded along `dim` to length `to`.
DenseTensor pad(const DenseTensor& x, int64_t dim, int64_t to);
/// Copies the box of `sizes` at `src_off` in `src` to `dst_off` in `*dst` (both contiguous,
/// one rank; a 0-d box is one element): the cross-mesh transfer's pieces.
void copy_box(const DenseTensor& src, const std::vector<int64_t>& src_off, DenseTensor* dst,
              const std::vector<int64_t>& dst_off, const std::vector<int64_t>& sizes);

}  // namespace oar::dist::local
