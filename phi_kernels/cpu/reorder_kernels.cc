// Kernels of flip, roll, as_strided_grad, index_add, take/put_along_axis,
// scatter_nd_add, tril/triu and diag_embed. Index values are bound-checked here (the
// only place that sees them) and raise OutOfRange naming the op; negative indices
// count from the end.
#include <immintrin.h>

#include <cstdlib>
#include <cstring>
#include <memory>

#include "oar_generated/kernel_signatures.h"
#include "paddle_core/tensor/allocator.h"
#include "phi_kernels/cpu/elementwise.h"
#include "phi_kernels/funcs/dense_copy.h"

namespace oar::phi {
namespace {

int64_t prod(const Dims& d, int from, int to) {
  int64_t p = 1;
  for (int i = from; i < to; ++i) p *= d[i];
  return p;
}

// An index tensor read in place (int32 or int64, contiguous), every value checked to lie in
// [-n, n) up front; idx[i] wraps a negative value. take/put_along_axis read it so instead of
// load_index's int64 copy (8 MB written for 1M indices, most of take_along_axis's time);
// load_index copies from it for the kernels that walk an index list many times.
class IndexView {
 public:
  IndexView(const DenseTensor& index, int64_t n, const char* op, const char* arg, int axis)
      : c_(contiguous(index)), n_(n) {
    if (c_.dtype() == DataType::INT32)
      p32_ = c_.data<int32_t>();
    else
      p64_ = c_.data<int64_t>();
    // Branch-free min / max per chunk, the chunks in parallel; the first bad value only on
    // error. (0 starts lo and hi: inside [-n, n) whenever n > 0.)
    const int64_t m = c_.numel();
    const int64_t step = parallel_chunk(m);
    std::vector<int64_t> los((m + step - 1) / step, 0), his(los.size(), 0);
    parallel_for(m, [&](int64_t b, int64_t e) {
      const auto scan = [&](const auto* p) {
        int64_t l = 0, h = 0;
        for (int64_t i = b; i < e; ++i) {
          const int64_t v = p[i];
          l = v < l ? v : l;
          h = v > h ? v : h;
        }
        los[b / step] = l;
        his[b / step] = h;
      };
      p64_ ? scan(p64_) : scan(p32_);
    });
    const int64_t lo = los.empty() ? 0 : *std::min_element(los.begin(), los.end());
    const int64_t hi = his.empty() ? 0 : *std::max_element(his.begin(), his.end());
    if (m > 0 && (lo < -n || hi >= n)) {
      int64_t i = 0;
      while (raw(i) >= -n && raw(i) < n) ++i;
      OAR_THROW(OutOfRange, op, ": ", arg, " value ", raw(i), " is out of range for axis ", axis, " of size ", n,
                " (expected [", -n, ", ", n, "))");
    }
  }
  int64_t raw(int64_t i) const { return p64_ ? p64_[i] : static_cast<int64_t>(p32_[i]); }
  int64_t operator[](int64_t i) const {
    const int64_t v = raw(i);
    return v < 0 ? v + n_ : v;
  }

 private:
  DenseTensor c_;
  int64_t n_;
  const int32_t* p32_ = nullptr;
  const int64_t* p64_ = nullptr;
};

// Index values as int64, wrapped into [0, n) after IndexView's bound check.
std::vector<int64_t> load_index(const DenseTensor& index, int64_t n, const char* op, const char* arg, int axis) {
  const IndexView view(index, n, op, arg, axis);
  std::vector<int64_t> out(static_cast<size_t>(index.numel()));
  for (size_t i = 0; i < out.size(); ++i) out[i] = view[static_cast<int64_t>(i)];
  return out;
}

template <typename T>
void FlipKernel(const DeviceContext&, const DenseTensor& x, const std::vector<int64_t>& axis,
                DenseTensor* out) {
  T* o = out->alloc<T>();
  if (out->numel() == 0) return;
  DenseTensor c = dense_copy<T>(x);
  const T* src = c.data<T>();
  const int r = x.rank();
  if (r == 0) {
    o[0] = src[0];
    return;
  }
  std::vector<bool> flip(r, false);
  for (int64_t a : axis) flip[wrap_axis(a, r, "flip")] = true;
  const Dims& d = x.dims();
  const int64_t inner = d[r - 1], rows = out->numel() / inner;
  const bool reverse = flip[r - 1];
  // The row dims' steps in source rows (negative where flipped). Each chunk finds its first
  // source row by divisions and walks the rest by an odometer: a division per dim and a
  // memcpy call per row made [16, 32, 32, 32] flipped along H and W 2.4x torch's time.
  std::vector<int64_t> step(std::max(r - 1, 0));
  int64_t mul = 1;
  for (int i = r - 2; i >= 0; --i) {
    step[i] = flip[i] ? -mul : mul;
    mul *= d[i];
  }
  parallel_for(
      rows,
      [&](int64_t b, int64_t e) {
    std::vector<int64_t> idx(step.size());
    int64_t row = 0;
    for (int64_t i = static_cast<int64_t>(step.size()) - 1, rem = b; i >= 0; --i) {
      idx[i] = rem % d[i], rem /= d[i];
      row += (flip[i] ? d[i] - 1 - idx[i] : idx[i]) * std::abs(step[i]);
    }
    for (int64_t q = b; q < e; ++q) {
      const T* s = src + row * inner;
      T* dst = o + q * inner;
      if (reverse) {
        for (int64_t i = 0; i < inner; ++i) dst[i] = s[inner - 1 - i];
      } else if (inner * static_cast<int64_t>(sizeof(T)) < 64) {
        for (int64_t i = 0; i < inner; ++i) dst[i] = s[i];
      } else {
        std::memcpy(dst, s, inner * sizeof(T));
      }
      for (int64_t i = static_cast<int64_t>(step.size()) - 1; i >= 0; --i) {
        row += step[i];
        if (++idx[i] < d[i]) break;
        row -= step[i] * d[i], idx[i] = 0;
      }
    }
      },
      rows * inner);
}

// n bytes from s to d (not overlapping) in 32-byte vectors. glibc's memcpy of a few KB (rep
// movsb on AMD's cores) slows to a tenth when the destination lies a few bytes past the
// source modulo 4 KB: a roll by 3 floats along rows of 1024 (each row's head copied 12 bytes
// on) took 1.2 ms for [1024, 1024] against torch's 0.12; this loop 0.09.
void copy_bytes(char* d, const char* s, int64_t n) {
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i)));
  }
  std::memcpy(d + i, s + i, static_cast<size_t>(n - i));
}

// One axis at a time: out[..., (i + s) % n, ...] = x[..., i, ...] as two block copies.
template <typename T>
void roll_axis(const T* src, T* dst, int64_t outer, int64_t n, int64_t inner, int64_t shift) {
  shift %= n;
  if (shift < 0) shift += n;
  const int64_t head = (n - shift) * inner, tail = shift * inner;
  parallel_for(outer, [&](int64_t b, int64_t e) {
    for (int64_t k = b; k < e; ++k) {
      const T* s = src + k * n * inner;
      T* o = dst + k * n * inner;
      copy_bytes(reinterpret_cast<char*>(o + tail), reinterpret_cast<const char*>(s), head * sizeof(T));
      copy_bytes(reinterpret_cast<char*>(o), reinterpret_cast<const char*>(s + head), tail * sizeof(T));
    }
  }, outer * n * inner);
}

template <typename T>
void RollKernel(const DeviceContext&, const DenseTensor& x, const std::vector<int64_t>& shifts,
                const std::vector<int64_t>& axis, DenseTensor* out) {
  T* o = out->alloc<T>();
  const int64_t total = out->numel();
  if (total == 0) return;
  // A 0-D tensor accepts axis 0 / -1 (Paddle's 0-D rule, wrap_axis) but has no dims to
  // index: rolling its one element is a copy.
  if (x.rank() == 0) {
    o[0] = x.data<T>()[0];
    return;
  }
  DenseTensor c = dense_copy<T>(x);
  if (axis.empty()) {
    roll_axis<T>(c.data<T>(), o, 1, total, 1, shifts[0]);
    return;
  }
  std::unique_ptr<T[]> tmp;  // not std::vector: vector<bool> has no data()
  const T* src = c.data<T>();
  for (size_t k = 0; k < axis.size(); ++k) {
    const int a = wrap_axis(axis[k], x.rank(), "roll");
    const int64_t n = x.dims()[a];
    if (k > 0) {  // the previous step wrote `o`; roll from a copy of it
      if (!tmp) tmp.reset(new T[total]);
      std::copy(o, o + total, tmp.get());
      src = tmp.get();
    }
    roll_axis<T>(src, o, prod(x.dims(), 0, a), n, prod(x.dims(), a + 1, x.rank()), shifts[k]);
  }
}

template <typename T>
void AsStridedGradKernel(const DeviceContext&, const DenseTensor& x, const DenseTensor& grad_out,
                         const std::vector<int64_t>& shape, const std::vector<int64_t>& stride,
                         int64_t offset, DenseTensor* out) {
  using M = OpMath<T>;
  T* o = out->alloc<T>();
  const int64_t n = out->numel();
  std::fill(o, o + n, T(0));
  (void)x;
  const int64_t m = grad_out.numel();
  if (m == 0) return;
  DenseTensor g = dense_copy<T>(grad_out);
  const T* gp = g.data<T>();
  const int r = static_cast<int>(shape.size());
  std::vector<int64_t> idx(r, 0);
  for (int64_t k = 0; k < m; ++k) {
    int64_t pos = offset;
    for (int i = 0; i < r; ++i) pos += idx[i] * stride[i];
    o[pos] = static_cast<T>(M(o[pos]) + M(gp[k]));
    for (int i = r - 1; i >= 0; --i) {
      if (++idx[i] < shape[i]) break;
      idx[i] = 0;
    }
  }
}

template <typename T>
void IndexAddKernel(const DeviceContext&, const DenseTensor& x, const DenseTensor& index,
                    int64_t axis, const DenseTensor& value, DenseTensor* out) {
  using M = OpMath<T>;
  T* o = out->alloc<T>();
  copy_into(x, out);
  const int a = wrap_axis(axis, x.rank(), "index_add");
  const int64_t n = x.dims()[a];
  const std::vector<int64_t> idx = load_index(index, n, "index_add", "index", a);
  if (value.numel() == 0) return;
  const int64_t outer = prod(x.dims(), 0, a), inner = prod(x.dims(), a + 1, x.rank());
  const int64_t m = static_cast<int64_t>(idx.size());
  DenseTensor v = dense_copy<T>(value);
  const T* vp = v.data<T>();
  parallel_for(outer, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      for (int64_t j = 0; j < m; ++j) {
        T* dst = o + (b * n + idx[j]) * inner;
        const T* src = vp + (b * m + j) * inner;
        for (int64_t i = 0; i < inner; ++i) dst[i] = static_cast<T>(M(dst[i]) + M(src[i]));
      }
    }
  }, outer * m * inner);
}

// Walks indices [outer, k, inner] against arr [outer', n, inner'] (indices may be
// smaller outside the axis): fn(arr_offset, indices_offset).
template <typename Fn>
void along_axis(const DenseTensor& arr, const DenseTensor& indices, int a, const IndexView& idx, Fn fn) {
  const Dims& id = indices.dims();
  const Dims as = contiguous_strides(arr.dims());
  const int r = indices.rank();
  const int64_t m = indices.numel();
  std::vector<int64_t> pos(r, 0);
  for (int64_t k = 0; k < m; ++k) {
    int64_t off = 0;
    for (int i = 0; i < r; ++i) off += (i == a ? idx[k] : pos[i]) * as[i];
    fn(off, k);
    for (int i = r - 1; i >= 0; --i) {
      if (++pos[i] < id[i]) break;
      pos[i] = 0;
    }
  }
}

// along_axis when indices has arr's dims outside the axis (the common case): arr as [outer, n,
// inner], indices as [outer, k, inner], outer slices in parallel (each writes only its own
// slice of the output, in the serial order). Returns false when the dims differ.
template <typename Fn>
bool along_axis_slices(const DenseTensor& arr, const DenseTensor& indices, int a, const IndexView& idx, Fn fn) {
  const Dims& ad = arr.dims();
  const Dims& id = indices.dims();
  for (int i = 0; i < arr.rank(); ++i) {
    if (i != a && ad[i] != id[i]) return false;
  }
  const int64_t outer = prod(ad, 0, a), inner = prod(ad, a + 1, arr.rank());
  const int64_t n = ad[a], k = id[a];
  parallel_for(
      outer,
      [&](int64_t o0, int64_t o1) {
    if (inner == 1) {  // along the last axis: one index a position, no inner walk
      for (int64_t o = o0; o < o1; ++o) {
        for (int64_t j = o * k; j < (o + 1) * k; ++j) fn(o * n + idx[j], j);
      }
      return;
    }
    for (int64_t o = o0; o < o1; ++o) {
      for (int64_t j = 0; j < k; ++j) {
        const int64_t base = (o * k + j) * inner;
        for (int64_t i = 0; i < inner; ++i) fn((o * n + idx[base + i]) * inner + i, base + i);
      }
    }
      },
      outer * k * inner);
  return true;
}

template <typename T>
void TakeAlongAxisKernel(const DeviceContext&, const DenseTensor& arr, const DenseTensor& indices,
                         int64_t axis, DenseTensor* out) {
  T* o = out->alloc<T>();
  const int a = wrap_axis(axis, arr.rank(), "take_along_axis");
  const IndexView idx(indices, arr.dims()[a], "take_along_axis", "indices", a);
  if (out->numel() == 0) return;
  DenseTensor c = dense_copy<T>(arr);
  const T* ap = c.data<T>();
  const auto take = [&](int64_t src, int64_t k) { o[k] = ap[src]; };
  if (!along_axis_slices(arr, indices, a, idx, take)) along_axis(arr, indices, a, idx, take);
}

// put_along_axis's reductions (amax/amin keep the current value against a NaN value, as
// before).
enum class PutReduce { kAdd, kMul, kMax, kMin };
template <PutReduce R, typename M>
M put_fold(M cur, M val) {
  if constexpr (R == PutReduce::kAdd) return cur + val;
  if constexpr (R == PutReduce::kMul) return cur * val;
  if constexpr (R == PutReduce::kMax) return val > cur ? val : cur;
  return val < cur ? val : cur;
}

template <typename T>
void PutAlongAxisKernel(const DeviceContext&, const DenseTensor& arr, const DenseTensor& indices,
                        const DenseTensor& values, int64_t axis, const std::string& reduce,
                        bool include_self, DenseTensor* out) {
  using M = OpMath<T>;
  T* o = out->alloc<T>();
  copy_into(arr, out);
  const int a = wrap_axis(axis, arr.rank(), "put_along_axis");
  const IndexView idx(indices, arr.dims()[a], "put_along_axis", "indices", a);
  if (indices.numel() == 0) return;
  DenseTensor v = dense_copy<T>(values);
  const T* vp = v.data<T>();
  if (reduce == "assign") {
    const auto put = [&](int64_t dst, int64_t k) { o[dst] = vp[k]; };
    if (!along_axis_slices(arr, indices, a, idx, put)) along_axis(arr, indices, a, idx, put);
    return;
  }
  // Reductions: positions written start from arr (include_self) or from the first value. The
  // mode is resolved once (it was a string compare per element: add on [1024, 1024] took 5x
  // torch's scatter_reduce), and only mean or include_self=false count the values that reach
  // each position, in scratch from the allocator's cache.
  const PutReduce mode = reduce == "add" || reduce == "mean"       ? PutReduce::kAdd
                         : reduce == "mul" || reduce == "multiply" ? PutReduce::kMul
                         : reduce == "amax"                        ? PutReduce::kMax
                                                                   : PutReduce::kMin;
  const auto walk = [&](const auto& fn) {
    if (!along_axis_slices(arr, indices, a, idx, fn)) along_axis(arr, indices, a, idx, fn);
  };
  const bool counted = !include_self || reduce == "mean";
  const int64_t n = out->numel();
  Workspace ws;
  int32_t* count = nullptr;
  if (counted) {
    ws = Workspace(out->place(), static_cast<size_t>(n) * sizeof(int32_t));
    count = ws.data<int32_t>();
    std::memset(count, 0, static_cast<size_t>(n) * sizeof(int32_t));
  }
  const auto fold_with = [&](auto r) {
    constexpr PutReduce R = decltype(r)::value;
    if (include_self) {  // a plain fold (Paddle's default), then mean's count in a pass of its own
      walk([&](int64_t dst, int64_t k) { o[dst] = static_cast<T>(put_fold<R>(M(o[dst]), M(vp[k]))); });
      if (counted) walk([&](int64_t dst, int64_t) { ++count[dst]; });
      return;
    }
    walk([&](int64_t dst, int64_t k) {
      const M val = M(vp[k]);
      const bool first = count[dst]++ == 0 && !include_self;
      o[dst] = static_cast<T>(first ? val : put_fold<R>(M(o[dst]), val));
    });
  };
  switch (mode) {
    case PutReduce::kAdd:
      fold_with(std::integral_constant<PutReduce, PutReduce::kAdd>());
      break;
    case PutReduce::kMul:
      fold_with(std::integral_constant<PutReduce, PutReduce::kMul>());
      break;
    case PutReduce::kMax:
      fold_with(std::integral_constant<PutReduce, PutReduce::kMax>());
      break;
    case PutReduce::kMin:
      fold_with(std::integral_constant<PutReduce, PutReduce::kMin>());
      break;
  }
  if (reduce == "mean") {  // positions no value reached divide by 1 (no branch to mispredict)
    const int32_t self = include_self ? 1 : 0;
    for (int64_t i = 0; i < n; ++i) o[i] = static_cast<T>(M(o[i]) / static_cast<M>(std::max(count[i] + self, 1)));
  }
}

template <typename T>
void ScatterNdAddKernel(const DeviceContext&, const DenseTensor& x, const DenseTensor& index,
                        const DenseTensor& updates, DenseTensor* out) {
  using M = OpMath<T>;
  T* o = out->alloc<T>();
  copy_into(x, out);
  const int64_t k = index.dims()[index.rank() - 1];
  const int64_t m = prod(index.dims(), 0, index.rank() - 1);
  const int64_t inner = prod(x.dims(), static_cast<int>(k), x.rank());
  if (m == 0 || inner == 0) return;
  DenseTensor ic = contiguous(index);
  std::vector<int64_t> raw(ic.numel());
  if (ic.dtype() == DataType::INT32) {
    const int32_t* p = ic.data<int32_t>();
    for (size_t i = 0; i < raw.size(); ++i) raw[i] = p[i];
  } else if (!raw.empty()) {
    std::memcpy(raw.data(), ic.data<int64_t>(), raw.size() * sizeof(int64_t));
  }
  DenseTensor u = dense_copy<T>(updates);
  const T* up = u.data<T>();
  for (int64_t j = 0; j < m; ++j) {
    int64_t f = 0;
    for (int64_t d = 0; d < k; ++d) {
      const int64_t n = x.dims()[d];
      const int64_t v = raw[j * k + d];
      OAR_ENFORCE(v >= -n && v < n, OutOfRange, "scatter_nd_add: index value ", v,
                  " is out of range for axis ", d, " of size ", n, " (expected [", -n, ", ", n,
                  "))");
      f = f * n + (v < 0 ? v + n : v);
    }
    T* dst = o + f * inner;
    const T* src = up + j * inner;
    for (int64_t i = 0; i < inner; ++i) dst[i] = static_cast<T>(M(dst[i]) + M(src[i]));
  }
}

template <typename T>
void TrilTriuKernel(const DeviceContext&, const DenseTensor& x, int64_t diagonal, bool lower,
                    DenseTensor* out) {
  T* o = out->alloc<T>();
  if (out->numel() == 0) return;
  DenseTensor c = dense_copy<T>(x);
  const T* xp = c.data<T>();
  const int r = x.rank();
  const int64_t rows = x.dims()[r - 2], cols = x.dims()[r - 1];
  const int64_t batch = out->numel() / (rows * cols);
  parallel_for(batch * rows, [&](int64_t b, int64_t e) {
    for (int64_t br = b; br < e; ++br) {
      const int64_t i = br % rows;
      const T* s = xp + br * cols;
      T* d = o + br * cols;
      // tril keeps j <= i + diagonal; triu keeps j >= i + diagonal.
      const int64_t cut = std::clamp<int64_t>(lower ? i + diagonal + 1 : i + diagonal, 0, cols);
      if (lower) {
        std::memcpy(d, s, cut * sizeof(T));
        std::fill(d + cut, d + cols, T(0));
      } else {
        std::fill(d, d + cut, T(0));
        std::memcpy(d + cut, s + cut, (cols - cut) * sizeof(T));
      }
    }
  }, batch * rows * cols);
}

template <typename T>
void DiagEmbedKernel(const DeviceContext&, const DenseTensor& input, int64_t offset,
                     int64_t dim1, int64_t dim2, DenseTensor* out) {
  T* o = out->alloc<T>();
  const int64_t total = out->numel();
  std::fill(o, o + total, T(0));
  if (total == 0 || input.numel() == 0) return;
  const int r = out->rank();
  const int d1 = wrap_axis(dim1, r, "diag_embed"), d2 = wrap_axis(dim2, r, "diag_embed");
  const Dims os = contiguous_strides(out->dims());
  Dims other_strides;
  for (int i = 0; i < r; ++i) {
    if (i != d1 && i != d2) other_strides.push_back(os[i]);
  }
  DenseTensor c = dense_copy<T>(input);
  const T* ip = c.data<T>();
  const int ir = input.rank();
  const int64_t len = input.dims()[ir - 1], outer = input.numel() / len;
  const int64_t start = offset >= 0 ? offset * os[d2] : -offset * os[d1];
  const int64_t step = os[d1] + os[d2];
  for (int64_t b = 0; b < outer; ++b) {
    int64_t rem = b, base = start;
    for (int i = ir - 2; i >= 0; --i) {
      base += (rem % input.dims()[i]) * other_strides[i];
      rem /= input.dims()[i];
    }
    for (int64_t k = 0; k < len; ++k) o[base + k * step] = ip[b * len + k];
  }
}

}  // namespace
}  // namespace oar::phi

using namespace oar::phi;  // NOLINT

OAR_REGISTER_KERNEL(flip, CPU, FlipKernel, OAR_ALL_TYPES, OAR_COMPLEX_TYPES)
OAR_REGISTER_KERNEL(roll, CPU, RollKernel, OAR_ALL_TYPES, OAR_COMPLEX_TYPES)
OAR_REGISTER_KERNEL(as_strided_grad, CPU, AsStridedGradKernel, OAR_NUMERIC_TYPES)
OAR_REGISTER_KERNEL(index_add, CPU, IndexAddKernel, OAR_NUMERIC_TYPES)
OAR_REGISTER_KERNEL(take_along_axis, CPU, TakeAlongAxisKernel, OAR_ALL_TYPES)
OAR_REGISTER_KERNEL(put_along_axis, CPU, PutAlongAxisKernel, OAR_NUMERIC_TYPES)
OAR_REGISTER_KERNEL(scatter_nd_add, CPU, ScatterNdAddKernel, OAR_NUMERIC_TYPES)
OAR_REGISTER_KERNEL(tril_triu, CPU, TrilTriuKernel, OAR_ALL_TYPES)
OAR_REGISTER_KERNEL(diag_embed, CPU, DiagEmbedKernel, OAR_ALL_TYPES)
