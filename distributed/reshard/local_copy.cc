#include "distributed/reshard/local_copy.h"

#include <cstring>

#include "distributed/mesh/placement.h"
#include "oar_generated/ops_api.h"
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
/// for every outer index; src has ns rows, dst nd rows, both contiguous host memory.
void copy_rows(const char* src, int64_t ns, int64_t sb, char* dst, int64_t nd, int64_t db, int64_t len,
               const Geometry& g) {
  if (len <= 0 || g.inner_bytes == 0) return;
  for (int64_t o = 0; o < g.outer; ++o) {
    std::memcpy(dst + (o * nd + db) * g.inner_bytes, src + (o * ns + sb) * g.inner_bytes, len * g.inner_bytes);
  }
}

DenseTensor dense_contiguous(const DenseTensor& x) { return x.is_contiguous() ? x : contiguous(x); }

/// The part of t (contiguous) at `off` of `sizes`: a view, no copy.
DenseTensor box_view(const DenseTensor& t, const std::vector<int64_t>& off, const std::vector<int64_t>& sizes) {
  DenseTensor v = t;
  int64_t o = t.offset();
  for (size_t i = 0; i < off.size(); ++i) o += off[i] * t.strides()[i];
  v.set_view(Dims(sizes), t.strides(), o);
  return v;
}

/// Chunk r of a stack of chunks [k, ...] (contiguous), as a view.
DenseTensor chunk_view(const DenseTensor& t, int64_t r) {
  std::vector<int64_t> off(static_cast<size_t>(t.rank()), 0), sizes = t.dims().vec();
  off[0] = r;
  sizes[0] = 1;
  DenseTensor v = box_view(t, off, sizes);
  std::vector<int64_t> d = sizes, st = t.strides().vec();
  d.erase(d.begin());
  st.erase(st.begin());
  v.set_view(Dims(d), Dims(st), v.offset());
  return v;
}

/// Rows [sb, sb+len) of src along `dim` -> rows [db, db+len) of dst (both contiguous, the
/// same sizes but along `dim`). Host memory is moved with memcpy; a device's memory
/// (Note [Devices]) only through its copy kernel, on strided views of the two ranges.
void copy_dim_rows(const DenseTensor& src, int64_t sb, DenseTensor* dst, int64_t db, int64_t len, int64_t dim) {
  if (len <= 0) return;
  if (src.place().is_cpu() && dst->place().is_cpu()) {
    const Geometry g = geometry(src.dims().vec(), dim, size_of(src.dtype()));
    copy_rows(static_cast<const char*>(src.raw_data()), src.dims()[dim], sb, static_cast<char*>(dst->raw_data()),
              dst->dims()[dim], db, len, g);
    return;
  }
  std::vector<int64_t> so(static_cast<size_t>(src.rank()), 0), doff = so, sizes = src.dims().vec();
  so[dim] = sb;
  doff[dim] = db;
  sizes[dim] = len;
  DenseTensor to = box_view(*dst, doff, sizes);
  copy_into(box_view(src, so, sizes), &to);
}

}  // namespace

DenseTensor zeros_like_dims(const DenseTensor& x, const std::vector<int64_t>& dims) {
  if (!x.place().is_cpu()) return ops::full(dims, 0.0, x.dtype(), x.place()).dense();  // the host may not write it
  DenseTensor out(Dims(dims), x.dtype(), x.place());
  void* p = out.alloc();
  const size_t bytes = static_cast<size_t>(out.numel()) * size_of(x.dtype());
  if (bytes != 0) std::memset(p, 0, bytes);
  return out;
}

DenseTensor clone(const DenseTensor& x) {
  DenseTensor out(x.dims(), x.dtype(), x.place());
  out.alloc();
  if (x.numel() != 0) copy_into(x, &out);
  return out;
}

DenseTensor slice(const DenseTensor& x_in, int64_t dim, int64_t begin, int64_t end) {
  DenseTensor x = dense_contiguous(x_in);
  std::vector<int64_t> dims = x.dims().vec();
  dims[dim] = end - begin;
  DenseTensor out = zeros_like_dims(x, dims);
  copy_dim_rows(x, begin, &out, 0, end - begin, dim);
  return out;
}

DenseTensor pad(const DenseTensor& x_in, int64_t dim, int64_t to) {
  DenseTensor x = dense_contiguous(x_in);
  std::vector<int64_t> dims = x.dims().vec();
  if (dims[dim] == to) return x;
  OAR_ENFORCE(dims[dim] < to, InvalidArgument, "reshard: cannot pad dim ", dim, " of size ", dims[dim], " to ", to);
  dims[dim] = to;
  DenseTensor out = zeros_like_dims(x, dims);
  copy_dim_rows(x, 0, &out, 0, x.dims()[dim], dim);
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
  for (int64_t r = 0; r < k; ++r) {
    auto [b, e] = shard_range(n, k, r);
    DenseTensor chunk_r = chunk_view(out, r);
    copy_dim_rows(x, b, &chunk_r, 0, e - b, dim);
  }
  return out;
}

DenseTensor unpack_chunks(const DenseTensor& buf_in, int64_t dim, int64_t k, int64_t n) {
  DenseTensor buf = dense_contiguous(buf_in);
  std::vector<int64_t> chunk = buf.dims().vec();
  chunk.erase(chunk.begin());
  std::vector<int64_t> dims = chunk;
  dims[dim] = n;
  DenseTensor out = zeros_like_dims(buf, dims);
  for (int64_t r = 0; r < k; ++r) {
    auto [b, e] = shard_range(n, k, r);
    copy_dim_rows(chunk_view(buf, r), 0, &out, b, e - b, dim);
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
  if (!src.place().is_cpu() || !dst->place().is_cpu()) {  // a device: its copy kernel, on views
    DenseTensor to = box_view(*dst, dst_off, sizes);
    copy_into(box_view(src, src_off, sizes), &to);
    return;
  }
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
