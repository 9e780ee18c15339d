// Shard(from) -> Shard(to) on one axis: all-to-all. Each process pads its shard along
// `from` to the chunk size, cuts it into k padded chunks along `to` and sends chunk r to
// process r; the received pieces (one per sender, in order) join along `from`.
#include "distributed/reshard/local_copy.h"
#include "distributed/reshard/reshard.h"

namespace oar::dist {

DenseTensor reshard_s_to_s(const DenseTensor& x, const AxisStep& s, int64_t from_dim, int64_t to_dim) {
  if (s.k == 1) return x;
  const int64_t n_from = s.global_shape[from_dim];
  const int64_t n_to = x.dims()[static_cast<int>(to_dim)];
  DenseTensor padded = local::pad(x, from_dim, (n_from + s.k - 1) / s.k);
  DenseTensor send = local::pack_chunks(padded, to_dim, s.k);
  DenseTensor recv = local::zeros_like_dims(send, send.dims().vec());
  s.group->alltoall(recv, send)->wait();
  DenseTensor joined = local::unpack_chunks(recv, from_dim, s.k, n_from);
  auto [begin, end] = shard_range(n_to, s.k, s.index);
  return local::slice(joined, to_dim, 0, end - begin);
}

}  // namespace oar::dist
