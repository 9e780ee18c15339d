// make_reduce_shape (reduce.h), moved verbatim from reduce_kernels.cc: shape logic only, so it lives in the baseline
// library once, outside the per-ISA copies of the reduction kernels (Note [CPU dispatch]).
#include <algorithm>

#include "phi_kernels/cpu/reduce.h"

namespace oar::phi {

ReduceShape make_reduce_shape(const DenseTensor& x, const std::vector<int>& axes) {
  ReduceShape rs;
  const int r = x.rank();
  bool block = true;
  for (size_t k = 1; k < axes.size(); ++k) block = block && axes[k] == axes[k - 1] + 1;
  if (axes.empty()) {
    rs.data = contiguous(x);
    rs.outer = x.numel();
    return rs;
  }
  if (block) {
    rs.data = contiguous(x);
    for (int i = 0; i < axes.front(); ++i) rs.outer *= x.dims()[i];
    for (int i = axes.front(); i <= axes.back(); ++i) rs.reduce *= x.dims()[i];
    for (int i = axes.back() + 1; i < r; ++i) rs.inner *= x.dims()[i];
    return rs;
  }
  // Permute kept axes first, reduced axes last, then make it contiguous.
  Dims d, s;
  for (int i = 0; i < r; ++i) {
    if (std::find(axes.begin(), axes.end(), i) == axes.end()) {
      d.push_back(x.dims()[i]);
      s.push_back(x.strides()[i]);
      rs.outer *= x.dims()[i];
    }
  }
  for (int a : axes) {
    d.push_back(x.dims()[a]);
    s.push_back(x.strides()[a]);
    rs.reduce *= x.dims()[a];
  }
  DenseTensor v = x;
  v.set_view(d, s, x.offset());
  rs.data = contiguous(v);
  return rs;
}

}  // namespace oar::phi
