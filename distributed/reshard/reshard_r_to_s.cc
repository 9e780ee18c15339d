// Replicate -> Shard(dim): every process already holds the whole tensor; it keeps its
// chunk. No communication.
#include "distributed/reshard/local_copy.h"
#include "distributed/reshard/reshard.h"

namespace oar::dist {

DenseTensor reshard_r_to_s(const DenseTensor& x, const AxisStep& s, int64_t dim) {
  auto [begin, end] = shard_range(x.dims()[static_cast<int>(dim)], s.k, s.index);
  return local::slice(x, dim, begin, end);
}

}  // namespace oar::dist
