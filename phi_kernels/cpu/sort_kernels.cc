// Sorting, selection and searching along one axis: argsort (values + indices), topk,
// kthvalue, mode, searchsorted, and gather_axis / gather_axis_grad that route the
// values' gradients back through the indices. Rows ([outer, n, inner] views, reduce.h)
// run in parallel; each row sorts (value, index) pairs, ties broken by index, so every
// result is deterministic and argsort is stable. NaN sorts as the largest value.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <numeric>

#include "oar_generated/kernel_signatures.h"
#include "paddle_core/tensor/allocator.h"
#include "phi_kernels/cpu/radix_sort.h"
#include "phi_kernels/cpu/reduce.h"

namespace oar::phi {
namespace {

template <typename M> bool is_nan(M v) {
  if constexpr (std::is_floating_point_v<M>) return v != v;
  else return false;
}
/// a before b in ascending order, NaN last, ties by index.
template <typename M> struct Asc {
  bool operator()(const std::pair<M, int64_t>& a, const std::pair<M, int64_t>& b) const {
    if (is_nan(a.first) || is_nan(b.first)) {
      if (is_nan(a.first) != is_nan(b.first)) return is_nan(b.first);
      return a.second < b.second;
    }
    return a.first < b.first || (a.first == b.first && a.second < b.second);
  }
};
template <typename M> struct Desc {
  bool operator()(const std::pair<M, int64_t>& a, const std::pair<M, int64_t>& b) const {
    if (is_nan(a.first) || is_nan(b.first)) {
      if (is_nan(a.first) != is_nan(b.first)) return is_nan(a.first);
      return a.second < b.second;
    }
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  }
};

// Runs fn(row_pairs, a, i) for every row along `axis`, with the row's (value, index) pairs;
// writes nothing itself.
template <typename T, typename Fn>
void for_each_row_pairs(const DenseTensor& x, int axis, Fn&& fn) {
  ReduceShape rs = x.rank() == 0 ? ReduceShape{contiguous(x), 1, 1, 1}
                                 : make_reduce_shape(x, {axis});
  const T* p = rs.data.data<T>();
  const int64_t n = rs.reduce, inner = rs.inner;
  using M = OpMath<T>;
  parallel_for(rs.outer * inner, [&](int64_t b, int64_t e) {
    std::vector<std::pair<M, int64_t>> row(n);
    for (int64_t t = b; t < e; ++t) {
      const int64_t a = t / inner, i = t % inner;
      for (int64_t k = 0; k < n; ++k) row[k] = {static_cast<M>(p[(a * n + k) * inner + i]), k};
      fn(row, a, i);
    }
  }, rs.outer * n * inner * 8);
}

// Output position of element k of row (a, i) in an [outer, m, inner] tensor.
inline int64_t at(int64_t a, int64_t k, int64_t i, int64_t m, int64_t inner) {
  return (a * m + k) * inner + i;
}

struct AxisShape {
  int axis = 0;
  int64_t outer = 1, n = 1, inner = 1;
};
AxisShape axis_shape(const Dims& d, int64_t axis, const char* op) {
  AxisShape s;
  if (d.size() == 0) return s;
  s.axis = wrap_axis(axis, d.size(), op);
  for (int k = 0; k < s.axis; ++k) s.outer *= d[k];
  s.n = d[s.axis];
  for (int k = s.axis + 1; k < d.size(); ++k) s.inner *= d[k];
  return s;
}

// Rows at least this long sort by radix (shorter ones pay more for its 256-bucket passes than
// std::sort's comparisons).
constexpr int64_t kRadixRow = 64;

// Each row of x along `axis` (Note [Radix keys]): its keys (flipped for descending) sorted by
// a stable radix sort with their positions in the row: fn(keys, pos, row, a, i, inner), `row`
// the row's first element, its elements `inner` apart.
template <typename T, typename Fn>
void for_each_radix_row(const DenseTensor& x, int axis, bool descending, Fn&& fn) {
  ReduceShape rs = make_reduce_shape(x, {axis});
  const T* p = rs.data.data<T>();
  const int64_t n = rs.reduce, inner = rs.inner;
  parallel_for(
      rs.outer * inner,
      [&](int64_t b, int64_t e) {
    // from the allocator's cache: a long row's buffers as fresh pages every call cost page
    // faults (Note [unique by radix], unique_kernels.cc)
    Workspace ws(CPUPlace(), static_cast<size_t>(n) * 32);
    uint64_t* keys = ws.data<uint64_t>();
    uint64_t* kbuf = keys + n;
    int64_t* pos = reinterpret_cast<int64_t*>(kbuf + n);
    int64_t* pbuf = pos + n;
    for (int64_t t = b; t < e; ++t) {
      const int64_t a = t / inner, i = t % inner;
      const T* row = p + a * n * inner + i;
      for (int64_t k = 0; k < n; ++k) {
        const uint64_t key = order_key(row[k * inner]);
        keys[k] = descending ? ~key : key;
        pos[k] = k;
      }
      radix_sort(keys, pos, n, kbuf, pbuf);
      fn(keys, pos, row, a, i, inner);
    }
      },
      rs.outer * n * inner * 8);
}

template <typename T>
void ArgsortKernel(const DeviceContext&, const DenseTensor& x, int64_t axis, bool descending,
                   bool, DenseTensor* out, DenseTensor* indices) {
  T* o = out->alloc<T>();
  int64_t* idx = indices->alloc<int64_t>();
  if (x.numel() == 0) return;
  AxisShape s = axis_shape(x.dims(), axis, "argsort");
  using M = OpMath<T>;
  if (s.n >= kRadixRow) {
    // Note [Radix keys]: flipped keys for descending put NaN first and keep ties in index
    // order, the order Asc / Desc give.
    for_each_radix_row<T>(x, s.axis, descending,
                          [&](const uint64_t*, const int64_t* pos, const T* row, int64_t a, int64_t i, int64_t inner) {
      for (int64_t k = 0; k < s.n; ++k) {
        o[at(a, k, i, s.n, inner)] = row[pos[k] * inner];
        idx[at(a, k, i, s.n, inner)] = pos[k];
      }
    });
    return;
  }
  for_each_row_pairs<T>(x, s.axis, [&](auto& row, int64_t a, int64_t i) {
    if (descending) std::sort(row.begin(), row.end(), Desc<M>());
    else std::sort(row.begin(), row.end(), Asc<M>());
    for (int64_t k = 0; k < s.n; ++k) {
      o[at(a, k, i, s.n, s.inner)] = static_cast<T>(row[k].first);
      idx[at(a, k, i, s.n, s.inner)] = row[k].second;
    }
  });
}

// Whether v beats w, the current k-th of topk's scan (v's index is past w's, so a tie loses):
// greater for the largest, smaller for the smallest, NaN counting as the largest value.
template <typename M>
bool beats_kth(M v, M w, bool largest) {
  return largest ? (v > w || (!is_nan(w) && is_nan(v))) : (v < w || (is_nan(w) && !is_nan(v)));
}

// The k best of a row, read in place (stride `stride`): a candidate buffer is trimmed to
// k by nth_element whenever it fills, and later elements not better than the current
// k-th are skipped without being copied (most of them, for k << n).
template <typename T, typename Better>
void top_k_row(const T* row, int64_t n, int64_t stride, int64_t k, Better better,
               std::vector<std::pair<OpMath<T>, int64_t>>* buf) {
  using M = OpMath<T>;
  buf->clear();
  if (k == 0) return;
  const size_t cap = std::max<int64_t>(4 * k, 64);
  // Once the buffer has been trimmed, an element is kept only when it beats the current k-th
  // (beats_kth): a test on the value alone, where the pair comparator branched on NaN and
  // ties. (The float family takes top_k_packed, Note [topk on packed keys].)
  constexpr bool kDesc = std::is_same_v<Better, Desc<M>>;
  int64_t j = 0;
  auto fill = [&](int64_t j0, M w, bool filter) {
    for (int64_t t = j0; t < n; ++t) {
      const M v = static_cast<M>(row[t * stride]);
      if (filter && !beats_kth(v, w, kDesc)) continue;
      buf->push_back({v, t});
      if (buf->size() == cap) return t + 1;
    }
    return n;
  };
  j = fill(0, M(0), false);
  while (j < n) {
    std::nth_element(buf->begin(), buf->begin() + (k - 1), buf->end(), better);
    buf->resize(k);
    j = fill(j, (*buf)[k - 1].first, true);
  }
  const int64_t m = std::min<int64_t>(k, buf->size());
  std::partial_sort(buf->begin(), buf->begin() + m, buf->end(), better);
  buf->resize(m);
}

// Note [topk on packed keys]: for the float family (rows shorter than 2^32), a candidate is
// one uint64, order_key's 32 bits (complemented for the smallest) above 2^32 - 1 - index, so
// that the larger word is the better candidate, ties going to the smaller index and NaN
// first for the largest and last for the smallest, as Desc / Asc: nth_element and
// partial_sort compare integers instead of pairs through NaN branches, and the buffer is a
// plain array. For k <= 32 the k best are kept sorted and a candidate that beats the k-th is
// inserted in place; larger k trims a candidate buffer by nth_element as top_k_row does. The
// scan skips 8 contiguous floats a compare while none beats the k-th.
template <typename T>
void top_k_packed(const T* row, int64_t n, int64_t stride, int64_t k, bool largest, std::vector<uint64_t>* buf,
                  int64_t* m_out) {
  const int64_t cap = std::max<int64_t>(4 * k, 64);
  buf->resize(static_cast<size_t>(cap));
  uint64_t* b = buf->data();
  auto pack = [&](int64_t j) {
    const uint64_t key = order_key(row[j * stride]);
    return ((largest ? key : ~key & 0xFFFFFFFFu) << 32) | (0xFFFFFFFFu - static_cast<uint64_t>(j));
  };
  auto value_at = [&](uint64_t key) { return static_cast<float>(row[(0xFFFFFFFFu - (key & 0xFFFFFFFFu)) * stride]); };
  // How far the AVX2 skip gets from j while no float of the row beats w. 16-bit floats are
  // widened in registers (F16C, or a shift for bfloat16): element by element, float16's
  // integer conversion made [1024, 1024] float16 topk 1.45x torch's time on the Xeon.
  auto eight = [&](int64_t j) {
    if constexpr (std::is_same_v<T, float>) {
      return _mm256_loadu_ps(row + j);
    } else {
      return detail::widen8(row + j);
    }
  };
  auto skip = [&](int64_t j, float w) {
#ifdef __AVX2__
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>) {
      if (stride == 1 && w == w) {
        const __m256 wv = _mm256_set1_ps(w);
        while (j + 8 <= n) {
          const __m256 v8 = eight(j);
          const __m256 hit = largest ? _mm256_cmp_ps(v8, wv, _CMP_NLE_UQ) : _mm256_cmp_ps(v8, wv, _CMP_LT_OQ);
          if (_mm256_movemask_ps(hit) != 0) break;
          j += 8;
        }
      }
    }
#endif
    return j;
  };
  if (k <= 32) {
    // small k: the k best so far kept sorted, a candidate inserted in place (about k ln(n / k)
    // of them), and the filter's threshold is always the current k-th
    for (int64_t j = 0; j < k; ++j) b[j] = pack(j);
    std::sort(b, b + k, std::greater<uint64_t>());
    float w = value_at(b[k - 1]);
    for (int64_t j = skip(k, w); j < n; j = skip(j + 1, w)) {
      if (!beats_kth(static_cast<float>(row[j * stride]), w, largest)) continue;
      const uint64_t key = pack(j);
      int64_t q = k - 1;
      for (; q > 0 && b[q - 1] < key; --q) b[q] = b[q - 1];
      b[q] = key;
      w = value_at(b[k - 1]);
    }
    *m_out = k;
    return;
  }
  int64_t m = 0, j = 0;
  for (; j < n && m < cap; ++j) b[m++] = pack(j);
  while (j < n) {
    std::nth_element(b, b + (k - 1), b + m, std::greater<uint64_t>());
    m = k;
    const float w = value_at(b[k - 1]);
    for (j = skip(j, w); j < n && m < cap; j = skip(j + 1, w)) {
      if (beats_kth(static_cast<float>(row[j * stride]), w, largest)) b[m++] = pack(j);
    }
  }
  const int64_t top = std::min(k, m);
  std::partial_sort(b, b + top, b + m, std::greater<uint64_t>());
  *m_out = top;
}

template <typename T>
void TopkKernel(const DeviceContext&, const DenseTensor& x, int64_t k, int64_t axis, bool largest,
                bool, DenseTensor* out, DenseTensor* indices) {
  T* o = out->alloc<T>();
  int64_t* idx = indices->alloc<int64_t>();
  if (out->numel() == 0) return;
  AxisShape s = axis_shape(x.dims(), axis, "topk");
  DenseTensor xc = contiguous(x);
  const T* p = xc.data<T>();
  using M = OpMath<T>;
  if constexpr (std::is_same_v<M, float>) {
    if (s.n < (int64_t{1} << 32) && k > 0) {
      parallel_for(
          s.outer * s.inner,
          [&](int64_t b, int64_t e) {
        std::vector<uint64_t> buf;
        for (int64_t t = b; t < e; ++t) {
          const int64_t a = t / s.inner, i = t % s.inner;
          const T* row = p + a * s.n * s.inner + i;
          int64_t m = 0;
          top_k_packed(row, s.n, s.inner, k, largest, &buf, &m);
          for (int64_t j = 0; j < m; ++j) {
            const int64_t src = static_cast<int64_t>(0xFFFFFFFFu - (buf[j] & 0xFFFFFFFFu));
            o[at(a, j, i, k, s.inner)] = row[src * s.inner];
            idx[at(a, j, i, k, s.inner)] = src;
          }
        }
          },
          s.outer * s.n * s.inner * 4);
      return;
    }
  }
  parallel_for(s.outer * s.inner, [&](int64_t b, int64_t e) {
    std::vector<std::pair<M, int64_t>> buf;
    for (int64_t t = b; t < e; ++t) {
      const int64_t a = t / s.inner, i = t % s.inner;
      const T* row = p + a * s.n * s.inner + i;
      if (largest) top_k_row(row, s.n, s.inner, k, Desc<M>(), &buf);
      else top_k_row(row, s.n, s.inner, k, Asc<M>(), &buf);
      for (int64_t j = 0; j < k; ++j) {
        o[at(a, j, i, k, s.inner)] = static_cast<T>(buf[j].first);
        idx[at(a, j, i, k, s.inner)] = buf[j].second;
      }
    }
  }, s.outer * s.n * s.inner * 4);
}

// Note [Radix select] (docs/notes/cpu_speed_steps.md, stop 68): the k-th smallest (0-based)
// of n float keys (order_key, whose order is the values' with the zeros one key), and how
// many keys are below it. Each level histograms one digit of the keys still in play, 11 bits
// from the top, keeps (compacted in place) those in the bucket that holds rank k and counts
// the lower buckets' keys as below; at most kSelectTail keys left end in nth_element.
// nth_element alone took 13 us a row of 1024 (its partitions' compares mispredict half the
// time); two histogram levels and a short nth_element take ~3.
constexpr int64_t kSelectTail = 256;

uint32_t select_key(uint32_t* keys, int64_t n, int64_t k, int64_t* below) {
  *below = 0;
  uint32_t hist[1 << 11];
  for (int shift : {21, 10, 0}) {
    if (n <= kSelectTail) break;
    const uint32_t mask = shift == 0 ? 0x3FFu : 0x7FFu;
    std::memset(hist, 0, sizeof(uint32_t) * (mask + 1));
    for (int64_t i = 0; i < n; ++i) ++hist[(keys[i] >> shift) & mask];
    uint32_t b = 0;
    int64_t cum = 0;
    while (cum + hist[b] <= k) cum += hist[b++];
    *below += cum;
    k -= cum;
    if (hist[b] == n) continue;  // every key in one bucket: the next digit tells them apart
    int64_t m = 0;
    for (int64_t i = 0; i < n; ++i) {
      const uint32_t key = keys[i];
      keys[m] = key;
      m += ((key >> shift) & mask) == b;
    }
    n = m;
  }
  std::nth_element(keys, keys + k, keys + n);
  const uint32_t v = keys[k];
  for (int64_t i = 0; i < k; ++i) *below += keys[i] < v;
  return v;
}

/// The float whose order_key is `key` (zeros come back as +0).
float key_value(uint32_t key) {
  const uint32_t u = (key >> 31) ? key & 0x7FFFFFFFu : ~key;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// k-th smallest by nth_element on the values alone (NaN largest); its index is then the
// (k - #smaller)-th occurrence of that value, the one a stable sort would put at rank k.
template <typename T>
void KthvalueKernel(const DeviceContext&, const DenseTensor& x, int64_t k, int64_t axis, bool,
                    DenseTensor* out, DenseTensor* indices) {
  T* o = out->alloc<T>();
  int64_t* idx = indices->alloc<int64_t>();
  if (out->numel() == 0) return;
  AxisShape s = axis_shape(x.dims(), axis, "kthvalue");
  DenseTensor xc = contiguous(x);
  const T* p = xc.data<T>();
  using M = OpMath<T>;
  auto lt = [](M a, M b) { return is_nan(b) ? !is_nan(a) : a < b; };
  parallel_for(s.outer * s.inner, [&](int64_t b, int64_t e) {
    std::vector<M> vals(s.n);
    std::vector<uint32_t> keys(std::is_same_v<M, float> && s.n > kSelectTail ? s.n : 0);
    for (int64_t t = b; t < e; ++t) {
      const int64_t a = t / s.inner, i = t % s.inner;
      const T* row = p + a * s.n * s.inner + i;
      M v{};
      int64_t smaller = 0;
      bool selected = false;
      if constexpr (std::is_same_v<M, float>) {
        if (!keys.empty()) {  // Note [Radix select], unless the row holds a NaN
          bool nan = false;
          for (int64_t j = 0; j < s.n; ++j) {
            const float f = static_cast<float>(row[j * s.inner]);
            nan = nan || f != f;
            keys[j] = static_cast<uint32_t>(order_key(f));
          }
          if (!nan) {
            v = key_value(select_key(keys.data(), s.n, k - 1, &smaller));
            selected = true;
          }
        }
      }
      bool nan = false;
      if (!selected) {
        for (int64_t j = 0; j < s.n; ++j) {
          vals[j] = static_cast<M>(row[j * s.inner]);
          nan = nan || is_nan(vals[j]);
        }
        if (nan) std::nth_element(vals.begin(), vals.begin() + (k - 1), vals.end(), lt);
        else std::nth_element(vals.begin(), vals.begin() + (k - 1), vals.end());
        v = vals[k - 1];
        for (int64_t j = 0; j < k - 1; ++j) smaller += lt(vals[j], v) ? 1 : 0;
      }
      int64_t want = k - 1 - smaller, found = 0;
      for (int64_t j = 0; j < s.n; ++j) {
        const M w = static_cast<M>(row[j * s.inner]);
        if (!lt(w, v) && !lt(v, w) && want-- == 0) {
          found = j;
          break;
        }
      }
      o[a * s.inner + i] = static_cast<T>(v);
      idx[a * s.inner + i] = found;
    }
  }, s.outer * s.n * s.inner * 8);
}

// The most frequent value (the smallest among equally frequent ones) and the index of
// its last occurrence.
// The most frequent value of each row, the smallest among equally frequent ones, and its last
// position. The row's keys sorted (order_key: equal exactly where values are the same, NaNs
// one value); a stable sort leaves a run's last position last.
template <typename T>
void ModeKernel(const DeviceContext&, const DenseTensor& x, int64_t axis, bool, DenseTensor* out,
                DenseTensor* indices) {
  T* o = out->alloc<T>();
  int64_t* idx = indices->alloc<int64_t>();
  if (out->numel() == 0) return;
  AxisShape s = axis_shape(x.dims(), axis, "mode");
  if (x.rank() == 0) {
    o[0] = x.data<T>()[0];
    idx[0] = 0;
    return;
  }
  for_each_radix_row<T>(
      x, s.axis, false,
      [&](const uint64_t* keys, const int64_t* pos, const T* row, int64_t a, int64_t i, int64_t inner) {
    int64_t best = 0, best_count = 0;
    for (int64_t b = 0; b < s.n;) {
      int64_t e = b + 1;
      while (e < s.n && keys[e] == keys[b]) ++e;
      if (e - b > best_count) {
        best_count = e - b;
        best = pos[e - 1];
      }
      b = e;
    }
    o[a * inner + i] = row[best * inner];
    idx[a * inner + i] = best;
      });
}

// index along `axis` -> position, wrapping negatives; throws OutOfRange.
template <typename I>
inline int64_t checked_index(I v, int64_t n, const char* op, int axis) {
  int64_t k = static_cast<int64_t>(v);
  if (k < 0) k += n;
  OAR_ENFORCE(k >= 0 && k < n, OutOfRange, op, ": index ", static_cast<int64_t>(v),
              " is out of range for axis ", axis, " of size ", n);
  return k;
}

template <typename T>
void GatherAxisKernel(const DeviceContext&, const DenseTensor& x, const DenseTensor& index,
                      int64_t axis, DenseTensor* out) {
  T* o = out->alloc<T>();
  if (out->numel() == 0) return;
  AxisShape sx = axis_shape(x.dims(), axis, "gather_axis");
  AxisShape si = axis_shape(index.dims(), axis, "gather_axis");
  DenseTensor xc = contiguous(x), ic = contiguous(index);
  const T* px = xc.data<T>();
  visit_dtype(index.dtype(), "gather_axis", [&](auto tag) {
    using I = typename decltype(tag)::type;
    if constexpr (std::is_integral_v<I> && !std::is_same_v<I, bool>) {
      const I* pi = ic.data<I>();
      for (int64_t a = 0; a < si.outer; ++a) {
        for (int64_t k = 0; k < si.n; ++k) {
          for (int64_t i = 0; i < si.inner; ++i) {
            const int64_t pos = at(a, k, i, si.n, si.inner);
            const int64_t j = checked_index(pi[pos], sx.n, "gather_axis", sx.axis);
            o[pos] = px[at(a, j, i, sx.n, sx.inner)];
          }
        }
      }
    }
  });
}

// Scatter-adds grad into zeros along `axis`. Each outer index owns its own slab of the output
// (the index only moves along the axis), so slabs split over the pool; float and double add in
// the output itself, 16-bit floats in a float slab (topk's backward on [256, 1024], k 16: a
// zeroed float copy of the whole output, one thread, 0.27 -> 0.07 ms).
template <typename T>
void GatherAxisGradKernel(const DeviceContext&, const DenseTensor& x, const DenseTensor& index,
                          const DenseTensor& grad, int64_t axis, DenseTensor* out) {
  T* o = out->alloc<T>();
  if (out->numel() == 0) return;
  using M = OpMath<T>;
  AxisShape sx = axis_shape(x.dims(), axis, "gather_axis_grad");
  AxisShape si = axis_shape(index.dims(), axis, "gather_axis_grad");
  OAR_ENFORCE(si.outer == sx.outer && si.inner == sx.inner && grad.dims() == index.dims(), InvalidArgument,
              "gather_axis_grad: index (shape ", index.dims(), ") and grad_out (shape ", grad.dims(),
              ") must have x's shape ", x.dims(), " except along axis ", axis);
  DenseTensor ic = contiguous(index), gc = contiguous(grad);
  const T* pg = gc.data<T>();
  const int64_t slab = sx.n * sx.inner;
  visit_dtype(index.dtype(), "gather_axis_grad", [&](auto tag) {
    using I = typename decltype(tag)::type;
    if constexpr (std::is_integral_v<I> && !std::is_same_v<I, bool>) {
      const I* pi = ic.data<I>();
      const auto run = [&](int64_t b, int64_t e) {
        std::vector<M> wide(std::is_same_v<M, T> ? 0 : slab);
        for (int64_t a = b; a < e; ++a) {
          M* acc;
          if constexpr (std::is_same_v<M, T>) {
            acc = o + a * slab;
          } else {
            acc = wide.data();
          }
          std::fill_n(acc, slab, M(0));
          for (int64_t k = 0; k < si.n; ++k) {
            for (int64_t i = 0; i < si.inner; ++i) {
              const int64_t pos = at(a, k, i, si.n, si.inner);
              const int64_t j = checked_index(pi[pos], sx.n, "gather_axis_grad", sx.axis);
              acc[j * sx.inner + i] += static_cast<M>(pg[pos]);
            }
          }
          if constexpr (!std::is_same_v<M, T>) {
            for (int64_t q = 0; q < slab; ++q) o[a * slab + q] = static_cast<T>(acc[q]);
          }
        }
      };
      parallel_for(si.outer, run, out->numel() + index.numel());
    } else {
      std::fill_n(o, out->numel(), T(0));
    }
  });
}

template <typename T>
void SearchsortedKernel(const DeviceContext&, const DenseTensor& seq, const DenseTensor& values,
                        bool out_int32, bool right, DenseTensor* out) {
  DenseTensor sc = contiguous(seq), vc = contiguous(values);
  const T* ps = sc.data<T>();
  const T* pv = vc.data<T>();
  const int64_t m = seq.dims()[seq.rank() - 1];
  const int64_t nv = values.numel();
  const int64_t per_row = seq.rank() == 1 ? nv : (values.rank() ? values.dims()[values.rank() - 1] : 1);
  using M = OpMath<T>;
  std::vector<int64_t> res(nv);
  parallel_for(nv, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      const T* row = ps + (seq.rank() == 1 ? 0 : (t / per_row) * m);
      const M v = static_cast<M>(pv[t]);
      int64_t lo = 0, hi = m;  // first position where row[pos] > v (right) or >= v (left)
      while (lo < hi) {
        const int64_t mid = (lo + hi) / 2;
        const M r = static_cast<M>(row[mid]);
        const bool go_right = right ? !(v < r) : (r < v);
        if (go_right) lo = mid + 1;
        else hi = mid;
      }
      res[t] = lo;
    }
  });
  if (out_int32) {
    int32_t* o = out->alloc<int32_t>();
    for (int64_t t = 0; t < nv; ++t) o[t] = static_cast<int32_t>(res[t]);
  } else {
    int64_t* o = out->alloc<int64_t>();
    std::copy(res.begin(), res.end(), o);
  }
}

}  // namespace
}  // namespace oar::phi

using namespace oar::phi;  // NOLINT

OAR_REGISTER_KERNEL(argsort, CPU, ArgsortKernel, OAR_NUMERIC_TYPES)
OAR_REGISTER_KERNEL(topk, CPU, TopkKernel, OAR_NUMERIC_TYPES)
OAR_REGISTER_KERNEL(kthvalue, CPU, KthvalueKernel, OAR_NUMERIC_TYPES)
OAR_REGISTER_KERNEL(mode, CPU, ModeKernel, OAR_NUMERIC_TYPES)
OAR_REGISTER_KERNEL(gather_axis, CPU, GatherAxisKernel, OAR_ALL_TYPES)
OAR_REGISTER_KERNEL(gather_axis_grad, CPU, GatherAxisGradKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(searchsorted, CPU, SearchsortedKernel, OAR_NUMERIC_TYPES)
