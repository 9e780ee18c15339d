// Partial(reduce) -> Shard(dim): reduce-scatter. Each process cuts its piece into k chunks
// along `dim` (padded to ceil(n / k)); process r receives the reduction of everyone's
// chunk r and trims the padding.
#include "distributed/reshard/local_copy.h"
#include "distributed/reshard/reshard.h"

namespace oar::dist {

DenseTensor reshard_p_to_s(const DenseTensor& x, const AxisStep& s, ReduceType reduce, int64_t dim) {
  const int64_t n = x.dims()[static_cast<int>(dim)];
  if (s.k == 1) return x;
  DenseTensor chunks = local::pack_chunks(x, dim, s.k);
  std::vector<int64_t> dims = chunks.dims().vec();
  dims.erase(dims.begin());
  DenseTensor mine = local::zeros_like_dims(x, dims);
  s.group->reduce_scatter(mine, chunks, reduce_op_for(reduce))->wait();
  auto [begin, end] = shard_range(n, s.k, s.index);
  return local::slice(mine, dim, 0, end - begin);
}

}  // namespace oar::dist
