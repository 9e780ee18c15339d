// Indexing kernels with data-dependent or multi-tensor indices: masked_select,
// nonzero, index_get/index_put (x[i0, i1, ...] with int or bool index tensors) and
// slice_scatter (x[a:b:c, ...] = value).
#include <algorithm>
#include <array>
#include <cstring>
#include <utility>
#include <vector>

#include "oar_generated/kernel_signatures.h"
#include "paddle_core/meta/infer_meta_manipulation.h"
#include "paddle_core/meta/view_meta.h"
#include "phi_kernels/cpu/elementwise.h"
#include "phi_kernels/cpu/parallel.h"

namespace oar::phi {
namespace {

int64_t prod(const Dims& d, int from, int to) {
  int64_t p = 1;
  for (int i = from; i < to; ++i) p *= d[i];
  return p;
}

template <typename T>
bool is_nonzero(const T& v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v;
  } else {
    return static_cast<OpMath<T>>(v) != OpMath<T>(0);
  }
}

// dst[...] = src broadcast to dst's shape, for any strides (dst may be a view).
template <typename T>
void strided_assign(const DenseTensor& src, DenseTensor* dst) {
  if (dst->numel() == 0) return;
  Dims dims = dst->dims();
  std::array<Dims, 2> st{dst->strides(), detail::broadcast_strides(src, dims)};
  detail::coalesce(&dims, &st);
  const std::array<int64_t, 2> s = detail::inner_strides(dims, st);
  detail::for_each_row<2>(dims, st, {static_cast<char*>(dst->raw_data()), static_cast<char*>(src.raw_data())},
                          {sizeof(T), sizeof(T)}, [s](const auto& p, int64_t m) {
                            T* d = reinterpret_cast<T*>(p[0]);
                            const T* q = reinterpret_cast<const T*>(p[1]);
                            for (int64_t i = 0; i < m; ++i) d[i * s[0]] = q[i * s[1]];
                          });
}

// `t` broadcast to `shape` and made contiguous (t itself when already that shape).
DenseTensor broadcast_contiguous(const DenseTensor& t, const Dims& shape) {
  if (t.dims() == shape) return contiguous(t);
  return contiguous(ExpandView(t, shape.vec()));
}

// ---------------------------------------------------------------- masked_select

// The number of true elements of a bool mask, and one past the last (0 when none).
std::pair<int64_t, int64_t> count_and_end(const bool* mask, int64_t n) {
  const uint8_t* p = reinterpret_cast<const uint8_t*>(mask);
  int64_t count = 0;
  for (int64_t i = 0; i < n; ++i) count += p[i];
  int64_t end = n;
  while (end > 0 && p[end - 1] == 0) --end;
  return {count, end};
}

// Selection without a branch per element (a random mask mispredicts half of them): each
// element is written at the next output slot, which advances by the mask byte. Before the
// last true element the slot is below count, so every write lands inside the output.
template <typename T>
void MaskedSelectKernel(const DeviceContext&, const DenseTensor& x, const DenseTensor& mask,
                        DenseTensor* out) {
  const Dims s = meta::broadcast_dims(x.dims(), mask.dims(), "masked_select");
  DenseTensor xs = broadcast_contiguous(x, s), ms = broadcast_contiguous(mask, s);
  const uint8_t* mp = reinterpret_cast<const uint8_t*>(ms.data<bool>());
  const auto [count, end] = count_and_end(ms.data<bool>(), s.numel());
  out->set_dims(Dims{count});
  T* o = out->alloc<T>();
  const T* xp = xs.data<T>();
  for (int64_t i = 0, j = 0; i < end; ++i) {
    o[j] = xp[i];
    j += mp[i];
  }
}

template <typename T>
void MaskedSelectGradKernel(const DeviceContext&, const DenseTensor&, const DenseTensor& mask,
                            const DenseTensor& grad_out, DenseTensor* out) {
  T* o = out->alloc<T>();
  const int64_t n = out->numel();
  DenseTensor ms = broadcast_contiguous(mask, out->dims());
  const uint8_t* mp = reinterpret_cast<const uint8_t*>(ms.data<bool>());
  const auto [count, end] = count_and_end(ms.data<bool>(), n);
  OAR_ENFORCE(grad_out.numel() == count, InvalidArgument, "masked_select_grad: grad_out has ",
              grad_out.numel(), " elements but the mask selects ", count);
  DenseTensor g = contiguous(grad_out);
  const T* gp = g.data<T>();
  for (int64_t i = 0, j = 0; i < end; ++i) {  // as MaskedSelectKernel: j < count before `end`
    const T v = gp[j];
    o[i] = mp[i] ? v : T(0);
    j += mp[i];
  }
  std::fill(o + end, o + n, T(0));
}

// The coordinates of the nonzero elements, without a branch per element (as
// MaskedSelectKernel): every element writes its coordinates at the next slot, which
// advances when the element is nonzero; before the last nonzero element the slot is below
// count. The innermost coordinate is the loop's, the outer ones change once a row.
template <typename T>
void NonzeroKernel(const DeviceContext&, const DenseTensor& x, DenseTensor* out) {
  DenseTensor c = contiguous(x);
  const T* xp = c.data<T>();
  const int64_t n = c.numel();
  const int r = x.rank();
  int64_t count = 0;
  for (int64_t i = 0; i < n; ++i) count += is_nonzero(xp[i]);
  out->set_dims(Dims{count, r});
  int64_t* o = out->alloc<int64_t>();
  if (r == 0 || count == 0) return;
  int64_t end = n;
  while (!is_nonzero(xp[end - 1])) --end;
  const int64_t inner = x.dims()[r - 1];
  Dims idx = Dims::filled(r, 0);
  int64_t j = 0;
  for (int64_t base = 0; base < end; base += inner) {
    const int64_t m = std::min(inner, end - base);
    for (int64_t k = 0; k < m; ++k) {
      int64_t* slot = o + j * r;
      for (int d = 0; d + 1 < r; ++d) slot[d] = idx[d];
      slot[r - 1] = k;
      j += is_nonzero(xp[base + k]);
    }
    for (int d = r - 2; d >= 0; --d) {
      if (++idx[d] < x.dims()[d]) break;
      idx[d] = 0;
    }
  }
}

// ---------------------------------------------------------------- nms

// Greedy non-maximum suppression: boxes are visited in order; each one not yet suppressed is
// kept and suppresses the later boxes whose IoU with it exceeds the threshold. In double, with
// the NumPy loop's arithmetic it replaced (2000 boxes: 23 -> 1.5 ms): a NaN union (0 / 0, or a
// box with a NaN coordinate, whose area is NaN) suppresses nothing. The later boxes are read
// from columns, so the IoU loop vectorizes.
template <typename T>
void NmsKernel(const DeviceContext&, const DenseTensor& boxes, double threshold, DenseTensor* out) {
  DenseTensor c = contiguous(boxes);
  const T* b = c.data<T>();
  const int64_t n = boxes.dims()[0];
  std::vector<double> x1(n), y1(n), x2(n), y2(n), area(n);
  for (int64_t i = 0; i < n; ++i) {
    x1[i] = static_cast<double>(b[4 * i]);
    y1[i] = static_cast<double>(b[4 * i + 1]);
    x2[i] = static_cast<double>(b[4 * i + 2]);
    y2[i] = static_cast<double>(b[4 * i + 3]);
    area[i] = std::max(x2[i] - x1[i], 0.0) * std::max(y2[i] - y1[i], 0.0);  // NaN stays NaN
  }
  std::vector<uint8_t> suppressed(n, 0);
  std::vector<int64_t> keep;
  for (int64_t i = 0; i < n; ++i) {
    if (suppressed[i]) continue;
    keep.push_back(i);
    const double ax1 = x1[i], ay1 = y1[i], ax2 = x2[i], ay2 = y2[i], aa = area[i];
    for (int64_t j = i + 1; j < n; ++j) {
      const double iw = std::max(std::min(ax2, x2[j]) - std::max(ax1, x1[j]), 0.0);
      const double ih = std::max(std::min(ay2, y2[j]) - std::max(ay1, y1[j]), 0.0);
      const double inter = iw * ih;
      suppressed[j] |= static_cast<uint8_t>(inter / (aa + area[j] - inter) > threshold);
    }
  }
  out->set_dims(Dims{static_cast<int64_t>(keep.size())});
  int64_t* o = out->alloc<int64_t>();
  std::copy(keep.begin(), keep.end(), o);
}

// ---------------------------------------------------------------- index_get / index_put

// The positions x[indices] reads or writes: `shape` is the broadcast shape of the
// indices (bool indices become their true coordinates), `rows[b]` the flat offset of
// position b in units of x's trailing block of `inner` elements (dims k.. of x).
struct IndexPositions {
  Dims shape;
  std::vector<int64_t> rows;
  int k = 0;
  int64_t inner = 1;
};

// The flat offsets of a bool mask's true elements, in order. Eight bytes are tested at a
// time (a mask is mostly runs), and the offsets are counted first so that the vector is
// filled without growing (the general path below builds per-dim coordinates and then
// recombines them).
std::vector<int64_t> true_offsets(const DenseTensor& mask) {
  DenseTensor t = contiguous(mask);
  const bool* p = t.data<bool>();
  const int64_t n = t.numel();
  std::vector<int64_t> rows(count_and_end(p, n).first);
  int64_t* r = rows.data();
  int64_t e = 0;
  for (; e + 8 <= n; e += 8) {
    uint64_t w;
    std::memcpy(&w, p + e, 8);
    for (; w != 0; w &= w - 1) *r++ = e + (__builtin_ctzll(w) >> 3);  // bools are 0 or 1
  }
  for (; e < n; ++e) {
    if (p[e]) *r++ = e;
  }
  return rows;
}

// The index of x[mask]: one bool tensor of rank >= 1, covering x's leading dims (InferMeta
// checked its shape); null for any other indices.
const DenseTensor* lone_mask(const std::vector<const DenseTensor*>& indices) {
  const bool one = indices.size() == 1 && indices[0]->dtype() == DataType::BOOL && indices[0]->rank() > 0;
  return one ? indices[0] : nullptr;
}

IndexPositions resolve_indices(const DenseTensor& x, const std::vector<const DenseTensor*>& indices,
                               const char* op) {
  if (const DenseTensor* mask = lone_mask(indices)) {  // the offsets of its true elements are the rows
    IndexPositions r;
    r.k = mask->rank();
    r.inner = prod(x.dims(), r.k, x.rank());
    r.rows = true_offsets(*mask);
    r.shape = Dims{static_cast<int64_t>(r.rows.size())};
    return r;
  }
  struct One {  // one covered dim of x: its index values and their shape
    Dims dims;
    std::vector<int64_t> vals;
  };
  std::vector<One> per_dim;
  for (size_t i = 0; i < indices.size(); ++i) {
    DenseTensor t = contiguous(*indices[i]);
    const int k0 = static_cast<int>(per_dim.size());
    if (t.dtype() == DataType::BOOL) {
      const bool* p = t.data<bool>();
      const int m = t.rank();
      std::vector<One> cols(m);
      Dims idx = Dims::filled(m, 0);
      for (int64_t e = 0; e < t.numel(); ++e) {
        if (p[e]) {
          for (int d = 0; d < m; ++d) cols[d].vals.push_back(idx[d]);
        }
        for (int d = m - 1; d >= 0; --d) {
          if (++idx[d] < t.dims()[d]) break;
          idx[d] = 0;
        }
      }
      for (auto& c : cols) {
        c.dims = Dims{static_cast<int64_t>(c.vals.size())};
        per_dim.push_back(std::move(c));
      }
      if (m == 0) {  // a 0-D bool index: a new axis of size 1 (true) or 0 (false)
        OAR_THROW(Unimplemented, op, ": 0-D bool indices are not supported");
      }
    } else {
      One o;
      o.dims = t.dims();
      o.vals.resize(t.numel());
      const int64_t n = x.dims()[k0];
      for (int64_t e = 0; e < t.numel(); ++e) {
        int64_t v = t.dtype() == DataType::INT32 ? t.data<int32_t>()[e] : t.data<int64_t>()[e];
        OAR_ENFORCE(v >= -n && v < n, OutOfRange, op, ": index ", v, " is out of range for axis ",
                    k0, " of size ", n, " (expected [", -n, ", ", n, "))");
        o.vals[e] = v < 0 ? v + n : v;
      }
      per_dim.push_back(std::move(o));
    }
  }
  IndexPositions r;
  r.k = static_cast<int>(per_dim.size());
  r.inner = prod(x.dims(), r.k, x.rank());
  for (const One& o : per_dim) r.shape = meta::broadcast_dims(r.shape, o.dims, op);
  const int64_t total = r.shape.numel();
  r.rows.assign(total, 0);
  if (total == 0) return r;
  const int br = r.shape.size();
  for (int d = 0; d < r.k; ++d) {
    const One& o = per_dim[d];
    // broadcast strides of this index into r.shape
    Dims bs = Dims::filled(br, 0);
    const Dims cs = contiguous_strides(o.dims);
    for (int i = 0; i < o.dims.size(); ++i) {
      const int j = br - o.dims.size() + i;
      bs[j] = o.dims[i] == 1 ? 0 : cs[i];
    }
    const int64_t n = x.dims()[d];
    Dims pos = Dims::filled(br, 0);
    int64_t src = 0;
    for (int64_t b = 0; b < total; ++b) {
      r.rows[b] = r.rows[b] * n + o.vals[src];
      for (int i = br - 1; i >= 0; --i) {
        src += bs[i];
        if (++pos[i] < r.shape[i]) break;
        src -= bs[i] * pos[i];
        pos[i] = 0;
      }
    }
  }
  return r;
}

template <typename T>
void IndexGetKernel(const DeviceContext&, const DenseTensor& x,
                    const std::vector<const DenseTensor*>& indices, DenseTensor* out) {
  const IndexPositions p = resolve_indices(x, indices, "index_get");
  Dims d = p.shape;
  for (int i = p.k; i < x.rank(); ++i) d.push_back(x.dims()[i]);
  out->set_dims(d);
  T* o = out->alloc<T>();
  if (out->numel() == 0) return;
  DenseTensor c = contiguous(x);
  const T* xp = c.data<T>();
  const int64_t m = static_cast<int64_t>(p.rows.size()), inner = p.inner;
  parallel_for(
      m,
      [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) std::memcpy(o + b * inner, xp + p.rows[b] * inner, inner * sizeof(T));
      },
      m * inner);
}

// The unsigned integer as wide as an element (1, 2, 4 or 8 bytes), allowed to alias it.
template <size_t N>
struct BitsOf {
  using U = std::conditional_t<N == 1, uint8_t,
                               std::conditional_t<N == 2, uint16_t, std::conditional_t<N == 4, uint32_t, uint64_t>>>;
  typedef U __attribute__((may_alias)) type;
};

// x[mask] = v with one value: a select over the mask, no offsets, no broadcast value. The
// select is on the element's bits (o & ~m | v & m, m all ones where the mask byte is 1) in
// an omp simd loop: GCC turned `o[e] = p[e] ? v : o[e]` into a branch per element, which a
// random mask mispredicts half the time, and kept the bit select scalar without the pragma.
// Pointers come from locals (Note [Byte stores and captured pointers]).
template <typename T>
void masked_fill(const DenseTensor& mask, T v, int64_t inner, DenseTensor* dst) {
  DenseTensor m = contiguous(mask);
  const int64_t n = m.numel();
  const bool* mp = m.data<bool>();
  std::vector<uint8_t> own;  // m[m] = False writes the mask it reads (x's memory): read a copy
  if (m.storage() == dst->storage()) {
    own.assign(reinterpret_cast<const uint8_t*>(mp), reinterpret_cast<const uint8_t*>(mp) + n);
    mp = reinterpret_cast<const bool*>(own.data());
  }
  T* out = dst->data<T>();
  parallel_for(
      n,
      [mp, v, inner, out](int64_t e0, int64_t e1) {
    const bool* p = mp;
    T* o = out;
    const T val = v;
    if constexpr (sizeof(T) <= 8 && (sizeof(T) & (sizeof(T) - 1)) == 0) {
      if (inner == 1) {
        using U = typename BitsOf<sizeof(T)>::type;
        U vb;
        std::memcpy(&vb, &val, sizeof(T));
        U* ob = reinterpret_cast<U*>(o);
        const uint8_t* pb = reinterpret_cast<const uint8_t*>(p);  // Note in WhereKernel
#pragma omp simd
        for (int64_t e = e0; e < e1; ++e) {
          const U sel = static_cast<U>(U{0} - static_cast<U>(pb[e]));
          ob[e] = static_cast<U>((ob[e] & ~sel) | (vb & sel));
        }
        return;
      }
    }
    for (int64_t e = e0; e < e1; ++e) {
      if (p[e]) std::fill(o + e * inner, o + (e + 1) * inner, val);
    }
      },
      n * inner);
}

template <typename T>
void IndexPutKernel(const DeviceContext&, const DenseTensor& x,
                    const std::vector<const DenseTensor*>& indices, const DenseTensor& value,
                    bool accumulate, DenseTensor* out) {
  using M = OpMath<T>;
  T* o = out->alloc<T>();
  // x_[indices] = value writes into x's own memory (inplace_kernel: Note [Donated outputs]);
  // the indices are read before anything is written.
  const bool in_place = out->storage() == x.storage() && out->offset() == x.offset() && out->strides() == x.strides();
  if (!in_place) copy_into(x, out);
  const DenseTensor* mask = lone_mask(indices);
  if (mask != nullptr && !accumulate && value.numel() == 1 && value.rank() <= 1) {
    masked_fill(*mask, contiguous(value).data<T>()[0], prod(x.dims(), mask->rank(), x.rank()), out);
    return;
  }
  const IndexPositions p = resolve_indices(x, indices, "index_put");
  Dims target = p.shape;
  for (int i = p.k; i < x.rank(); ++i) target.push_back(x.dims()[i]);
  meta::check_assignable(value.dims(), target, "index_put");
  if (target.numel() == 0) return;
  DenseTensor v = broadcast_contiguous(value, target);
  const T* vp = v.data<T>();
  const int64_t inner = p.inner;
  for (size_t b = 0; b < p.rows.size(); ++b) {
    T* dst = o + p.rows[b] * inner;
    const T* src = vp + b * inner;
    if (accumulate) {
      for (int64_t i = 0; i < inner; ++i) dst[i] = static_cast<T>(M(dst[i]) + M(src[i]));
    } else {
      std::memcpy(dst, src, inner * sizeof(T));
    }
  }
}

// ---------------------------------------------------------------- slice_scatter

template <typename T>
void SliceScatterKernel(const DeviceContext&, const DenseTensor& x, const DenseTensor& value,
                        const std::vector<int64_t>& axes, const std::vector<int64_t>& starts,
                        const std::vector<int64_t>& ends, const std::vector<int64_t>& strides,
                        DenseTensor* out) {
  out->alloc<T>();
  copy_into(x, out);
  DenseTensor region = SliceView(*out, axes, starts, ends, strides);
  strided_assign<T>(value, &region);
}

}  // namespace
}  // namespace oar::phi

using namespace oar::phi;  // NOLINT

OAR_REGISTER_KERNEL(masked_select, CPU, MaskedSelectKernel, OAR_ALL_TYPES, OAR_COMPLEX_TYPES)
OAR_REGISTER_KERNEL(masked_select_grad, CPU, MaskedSelectGradKernel, OAR_ALL_TYPES)
OAR_REGISTER_KERNEL(nonzero, CPU, NonzeroKernel, OAR_ALL_TYPES)
OAR_REGISTER_KERNEL(nms, CPU, NmsKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(index_get, CPU, IndexGetKernel, OAR_ALL_TYPES, OAR_COMPLEX_TYPES)
OAR_REGISTER_KERNEL(index_put, CPU, IndexPutKernel, OAR_ALL_TYPES, OAR_COMPLEX_TYPES)
OAR_REGISTER_KERNEL(slice_scatter, CPU, SliceScatterKernel, OAR_ALL_TYPES, OAR_COMPLEX_TYPES)
