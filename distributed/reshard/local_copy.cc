#include "distributed/reshard/local_copy.h"

#include <cstring>

#include "distributed/mesh/placement.h"
#include "paddle_core/base/errors.h"

namespace oar::dist::local {
namespace {

struct Geometry {
  int64_t outer = 1, n = 1, inner_bytes = 0;
};

Geometry geometry(const std::vector<int64_t>& dims, int64_t dim, size_t elem) {
  Geometry g;
  int64_t inner = 1;
  for (int64_t i = 0; i < static_cast<int64_t>(dims.size()); ++i) {
    if (i < dim) g.outer *= dims[i];
    if (i > dim) inner *= dims[i];
  }
  g.n = dims.empty() ? 1 : dims[dim];
  g.inner_bytes = inner * static_cast<int64_t>(elem);
  return g;
}

/// Copies `len` rows along the split dim: src rows [sb, sb+len) -> dst rows [db, db+len),
/// for every outer index; src has ns rows, dst nd rows, both contiguous.
void copy_rows(const char* src, int64_t ns, int64_t sb, char* dst, int64_t nd, int64_t db, int64_t len,
               const Geometry& g) {
  if (len <= 0 || g.inner_bytes == 0) return;
  for (int64_t o = 0; o < g.outer; ++o) {
    std::memcpy(dst + (o * nd + db) * g.inner_bytes, src + (o * ns + sb) * g.inner_bytes, len * g.inner_bytes);
  }
}

DenseTensor dense_contiguous(const DenseTensor& x) { return x.is_contiguous() ? x : contiguous(x); }

}  // namespace

DenseTensor zeros_like_dims(const DenseTensor& x, const std::vector<int64_t>& dims) {
  DenseTensor out(Dims(dims), x.dtype(), x.place());
  void* p = out.alloc();
  const size_t bytes = static_cast<size_t>(out.numel()) * size_of(x.dtype());
  if (bytes != 0) std::memset(p, 0, bytes);
  return out;
}

DenseTensor clone(const DenseTensor& x) {
  DenseTensor out = zeros_like_dims(x, x.dims().vec());
  if (x.numel() != 0) copy_into(x, &out);
  return out;
}

DenseTensor slice(const DenseTensor& x_in, int64_t dim, int64_t begin, int64_t end) {
  DenseTensor x = dense_contiguous(x_in);
  std::vector<int64_t> dims = x.dims().vec();
  dims[dim] = end - begin;
  DenseTensor out = zeros_like_dims(x, dims);
  Geometry g = geometry(x.dims().vec(), dim, size_of(x.dtype()));
  copy_rows(static_cast<const char*>(x.raw_data()), g.n, begin, static_cast<char*>(out.raw_data()), end - begin, 0,
            end - begin, g);
  return out;
}

DenseTensor pad(const DenseTensor& x_in, int64_t dim, int64_t to) {
  DenseTensor x = dense_contiguous(x_in);
  std::vector<int64_t> dims = x.dims().vec();
  if (dims[dim] == to) return x;
  OAR_ENFORCE(dims[dim] < to, InvalidArgument, "reshard: cannot pad dim ", dim, " of size ", dims[dim], " to ", to);
  dims[dim] = to;
  DenseTensor out = zeros_like_dims(x, dims);
  Geometry g = geometry(x.dims().vec(), dim, size_of(x.dtype()));
  copy_rows(static_cast<const char*>(x.raw_data()), g.n, 0, static_cast<char*>(out.raw_data()), to, 0, g.n, g);
  return out;
}

DenseTensor pack_chunks(const DenseTensor& x_in, int64_t dim, int64_t k) {
  DenseTensor x = dense_contiguous(x_in);
  std::vector<int64_t> chunk = x.dims().vec();
  const int64_t n = chunk[dim];
  const int64_t c = (n + k - 1) / k;
  chunk[dim] = c;
  std::vector<int64_t> dims = chunk;
  dims.insert(dims.begin(), k);
  DenseTensor out = zeros_like_dims(x, dims);
  Geometry g = geometry(x.dims().vec(), dim, size_of(x.dtype()));
  const int64_t block = g.outer * c * g.inner_bytes;
  for (int64_t r = 0; r < k; ++r) {
    auto [b, e] = shard_range(n, k, r);
    copy_rows(static_cast<const char*>(x.raw_data()), n, b, static_cast<char*>(out.raw_data()) + r * block, c, 0, e - b,
              g);
  }
  return out;
}

DenseTensor unpack_chunks(const DenseTensor& buf_in, int64_t dim, int64_t k, int64_t n) {
  DenseTensor buf = dense_contiguous(buf_in);
  std::vector<int64_t> chunk = buf.dims().vec();
  chunk.erase(chunk.begin());
  const int64_t c = chunk[dim];
  std::vector<int64_t> dims = chunk;
  dims[dim] = n;
  DenseTensor out = zeros_like_dims(buf, dims);
  Geometry g = geometry(chunk, dim, size_of(buf.dtype()));
  const int64_t block = g.outer * c * g.inner_bytes;
  for (int64_t r = 0; r < k; ++r) {
    auto [b, e] = shard_range(n, k, r);
    copy_rows(static_cast<const char*>(buf.raw_data()) + r * block, c, 0, static_cast<char*>(out.raw_data()), n, b,
              e - b, g);
  }
  return out;
}

void copy_box(const DenseTensor& src_in, const std::vector<int64_t>& src_off, DenseTensor* dst,
              const std::vector<int64_t>& dst_off, const std::vector<int64_t>& sizes) {
  DenseTensor src = dense_contiguous(src_in);
  const size_t r = sizes.size(), elem = size_of(src.dtype());
  const std::vector<int64_t> sd = src.dims().vec(), dd = dst->dims().vec();
  OAR_ENFORCE(sd.size() == r && dd.size() == r && src_off.size() == r && dst_off.size() == r && dst->is_contiguous(),
              InvalidArgument, "reshard: a box copy between tensors of ranks ", sd.size(), " and ", dd.size(),
              " for a box of rank ", r);
  int64_t numel = 1;
  for (size_t i = 0; i < r; ++i) {
    OAR_ENFORCE(src_off[i] + sizes[i] <= sd[i] && dst_off[i] + sizes[i] <= dd[i], InvalidArgument, "reshard: box dim ",
                i, " of ", sizes[i], " at ", src_off[i], " / ", dst_off[i], " exceeds the sizes ", sd[i], " / ", dd[i]);
    numel *= sizes[i];
  }
  if (numel == 0) return;
  const char* s = static_cast<const char*>(src.raw_data());
  char* d = static_cast<char*>(dst->raw_data());
  if (r == 0) {
    std::memcpy(d, s, elem);
    return;
  }
  // Row-major strides in elements; contiguous runs along the last dim.
  std::vector<int64_t> ss(r, 1), ds(r, 1);
  for (size_t i = r - 1; i > 0; --i) {
    ss[i - 1] = ss[i] * sd[i];
    ds[i - 1] = ds[i] * dd[i];
  }
  const size_t run = static_cast<size_t>(sizes[r - 1]) * elem;
  std::vector<int64_t> idx(r, 0);  // over the box's leading dims
  while (true) {
    int64_t so = 0, dof = 0;
    for (size_t i = 0; i < r; ++i) {
      so += (src_off[i] + idx[i]) * ss[i];
      dof += (dst_off[i] + idx[i]) * ds[i];
    }
    std::memcpy(d + dof * static_cast<int64_t>(elem), s + so * static_cast<int64_t>(elem), run);
    size_t i = r - 1;
    while (i > 0) {
      if (++idx[i - 1] < sizes[i - 1]) break;
      idx[i - 1] = 0;
      --i;
    }
    if (i == 0) return;
  }
}

}  // namespace oar::dist::local
