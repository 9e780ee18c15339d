// Shard(dim) -> Replicate: all-gather along the axis. Uneven splits: every shard is padded
// to the chunk size ceil(n / k), gathered, and each trimmed to its length when joined.
#include "distributed/reshard/local_copy.h"
#include "distributed/reshard/reshard.h"

namespace oar::dist {

DenseTensor reshard_s_to_r(const DenseTensor& x, const AxisStep& s, int64_t dim) {
  if (s.k == 1) return x;
  const int64_t n = s.global_shape[dim];
  const int64_t chunk = (n + s.k - 1) / s.k;
  DenseTensor mine = local::pad(x, dim, chunk);
  std::vector<int64_t> dims = mine.dims().vec();
  dims.insert(dims.begin(), s.k);
  DenseTensor gathered = local::zeros_like_dims(mine, dims);
  s.group->all_gather(gathered, mine)->wait();
  return local::unpack_chunks(gathered, dim, s.k, n);
}

}  // namespace oar::dist
