// Counting kernels with data-dependent output shapes (unique, unique_consecutive,
// bincount; the kernel sets the output dims) plus histogram and diagonal_grad.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "oar_generated/kernel_signatures.h"
#include "paddle_core/meta/infer_meta_math_functions.h"
#include "paddle_core/tensor/allocator.h"
#include "phi_kernels/cpu/radix_sort.h"
#include "phi_kernels/cpu/reduce.h"

namespace oar::phi {
namespace {

template <typename M> bool same(M a, M b) {
  if constexpr (std::is_floating_point_v<M>) return a == b || (a != a && b != b);
  else return a == b;
}
template <typename M> bool less(M a, M b) {  // NaN last
  if constexpr (std::is_floating_point_v<M>) {
    if (a != a || b != b) return b != b && a == a;
  }
  return a < b;
}

// The input as n slices along `axis` (or n scalars when flattened): slice j's elements
// are at p[(o * n + j) * inner + i] for o < outer, i < inner.
struct Slices {
  DenseTensor data;
  int axis = -1;
  int64_t outer = 1, n = 0, inner = 1;
};
Slices slices_of(const DenseTensor& x, const std::vector<int64_t>& axis, const char* op) {
  Slices s;
  s.data = contiguous(x);
  if (axis.empty()) {
    s.n = x.numel();
    return s;
  }
  s.axis = wrap_axis(axis[0], x.rank(), op);
  for (int k = 0; k < s.axis; ++k) s.outer *= x.dims()[k];
  s.n = x.dims()[s.axis];
  for (int k = s.axis + 1; k < x.rank(); ++k) s.inner *= x.dims()[k];
  return s;
}

template <typename T>
struct SliceOps {
  const T* p;
  const Slices& s;
  OpMath<T> v(int64_t j, int64_t o, int64_t i) const {
    return static_cast<OpMath<T>>(p[(o * s.n + j) * s.inner + i]);
  }
  bool equal(int64_t a, int64_t b) const {
    for (int64_t o = 0; o < s.outer; ++o)
      for (int64_t i = 0; i < s.inner; ++i)
        if (!same(v(a, o, i), v(b, o, i))) return false;
    return true;
  }
  bool before(int64_t a, int64_t b) const {  // lexicographic, ties by position
    for (int64_t o = 0; o < s.outer; ++o) {
      for (int64_t i = 0; i < s.inner; ++i) {
        const auto x = v(a, o, i), y = v(b, o, i);
        if (!same(x, y)) return less(x, y);
      }
    }
    return a < b;
  }
};

// Writes the slices `pick` (in order) as `out` with x's dims except n -> pick.size().
template <typename T>
void write_slices(const DenseTensor& x, const Slices& s, const std::vector<int64_t>& pick,
                  DenseTensor* out) {
  const int64_t u = pick.size();
  if (s.axis < 0) {
    out->set_dims(Dims{u});
  } else {
    Dims d = x.dims();
    d[s.axis] = u;
    out->set_dims(d);
  }
  T* o = out->alloc<T>();
  const T* p = s.data.data<T>();
  for (int64_t oo = 0; oo < s.outer; ++oo)
    for (int64_t j = 0; j < u; ++j)
      for (int64_t i = 0; i < s.inner; ++i)
        o[(oo * u + j) * s.inner + i] = p[(oo * s.n + pick[j]) * s.inner + i];
}

void write_ints(const int64_t* v, int64_t n, const Dims& dims, DenseTensor* out) {
  out->set_dims(dims);
  visit_dtype(out->dtype(), "unique", [&](auto tag) {
    using I = typename decltype(tag)::type;
    I* o = out->template alloc<I>();
    for (int64_t k = 0; k < n; ++k) o[k] = static_cast<I>(v[k]);
  });
}
void write_ints(const std::vector<int64_t>& v, const Dims& dims, DenseTensor* out) {
  write_ints(v.data(), static_cast<int64_t>(v.size()), dims, out);
}

// Note [unique by radix]: unique of scalars sorts (key, position) pairs with radix_sort.h's
// stable radix sort, so a group's positions ascend and its first is the smallest, and keys
// are equal exactly where same() is. std::sort of the pairs took 120 ms for 1M int64 in
// [0, 5000) (torch 41). Its five arrays of n (positions, keys, the sort's two buffers, the
// inverse) come from the CPU allocator's cache: as std::vectors, 40 MB of fresh pages a call
// cost a third of the time in page faults (1M int64: 43 -> 25 ms at 1 thread).
template <typename T>
void UniqueKernel(const DeviceContext&, const DenseTensor& x, const std::vector<int64_t>& axis,
                  DataType, DenseTensor* out, DenseTensor* indices, DenseTensor* inverse,
                  DenseTensor* counts) {
  Slices s = slices_of(x, axis, "unique");
  SliceOps<T> ops{s.data.data<T>(), s};
  const size_t words = static_cast<size_t>(s.n) * 8;
  Workspace order_ws(CPUPlace(), words), inv_ws(CPUPlace(), words), keys_ws(CPUPlace(), 0), kbuf_ws(CPUPlace(), 0),
      pbuf_ws(CPUPlace(), 0);
  int64_t* order = order_ws.data<int64_t>();
  int64_t* inv = inv_ws.data<int64_t>();
  std::iota(order, order + s.n, int64_t{0});
  uint64_t* keys = nullptr;  // scalars: their order keys, in sorted order
  if (s.axis < 0) {          // radix sort (key, position) pairs (Note [unique by radix])
    keys_ws.reserve(words), kbuf_ws.reserve(words), pbuf_ws.reserve(words);
    keys = keys_ws.data<uint64_t>();
    const T* p = s.data.data<T>();
    for (int64_t j = 0; j < s.n; ++j) keys[j] = order_key(p[j]);
    radix_sort(keys, order, s.n, kbuf_ws.data<uint64_t>(), pbuf_ws.data<int64_t>());
  } else {
    std::sort(order, order + s.n, [&](int64_t a, int64_t b) { return ops.before(a, b); });
  }
  std::vector<int64_t> first, cnt;
  for (int64_t k = 0; k < s.n; ++k) {
    const bool starts = k == 0 || (s.axis < 0 ? keys[k] != keys[k - 1] : !ops.equal(order[k], order[k - 1]));
    if (starts) {
      first.push_back(order[k]);  // the smallest position of its group (stable order)
      cnt.push_back(0);
    }
    ++cnt.back();
    inv[order[k]] = static_cast<int64_t>(first.size()) - 1;
  }
  write_slices<T>(x, s, first, out);
  const int64_t u = first.size();
  write_ints(first, Dims{u}, indices);
  write_ints(inv, s.n, Dims{s.n}, inverse);
  write_ints(cnt, Dims{u}, counts);
}

template <typename T>
void UniqueConsecutiveKernel(const DeviceContext&, const DenseTensor& x,
                             const std::vector<int64_t>& axis, DataType, DenseTensor* out,
                             DenseTensor* inverse, DenseTensor* counts) {
  Slices s = slices_of(x, axis, "unique_consecutive");
  SliceOps<T> ops{s.data.data<T>(), s};
  std::vector<int64_t> first, cnt, inv(s.n);
  for (int64_t j = 0; j < s.n; ++j) {
    if (j == 0 || !ops.equal(j, j - 1)) {
      first.push_back(j);
      cnt.push_back(0);
    }
    ++cnt.back();
    inv[j] = static_cast<int64_t>(first.size()) - 1;
  }
  write_slices<T>(x, s, first, out);
  write_ints(inv, Dims{s.n}, inverse);
  write_ints(cnt, Dims{static_cast<int64_t>(cnt.size())}, counts);
}

template <typename T>
void BincountKernel(const DeviceContext&, const DenseTensor& x, const DenseTensor* weights,
                    int64_t minlength, DenseTensor* out) {
  DenseTensor xc = contiguous(x);
  const T* p = xc.data<T>();
  const int64_t n = x.numel();
  int64_t mx = -1;
  for (int64_t k = 0; k < n; ++k) {
    OAR_ENFORCE(p[k] >= 0, InvalidArgument, "bincount: x must be non-negative, got ",
                static_cast<int64_t>(p[k]), " at position ", k);
    mx = std::max<int64_t>(mx, static_cast<int64_t>(p[k]));
  }
  // max(x) + 1 bins: for x holding 2^63 - 1 that count is past int64 (it wrapped to a
  // negative length, and the count loop then wrote before the buffer). Such a count, like
  // any count whose bytes no device can hold, is ResourceExhausted (MemoryError).
  OAR_ENFORCE(mx < std::numeric_limits<int64_t>::max(), ResourceExhausted,
              "bincount: max(x) + 1 = 2^63 bins are more than can be counted");
  const int64_t len = std::max<int64_t>(mx + 1, minlength);
  out->set_dims(Dims{len});
  if (!weights) {
    int64_t* o = out->alloc<int64_t>();
    std::fill(o, o + len, 0);
    for (int64_t k = 0; k < n; ++k) ++o[p[k]];
    return;
  }
  DenseTensor wc = contiguous(*weights);
  visit_dtype(wc.dtype(), "bincount", [&](auto wtag) {
    using W = typename decltype(wtag)::type;
    const W* w = wc.data<W>();
    visit_dtype(out->dtype(), "bincount", [&](auto otag) {
      using O = typename decltype(otag)::type;
      using A = std::conditional_t<std::is_integral_v<O>, int64_t, double>;
      O* o = out->template alloc<O>();  // the checked request comes before the scratch
      std::vector<A> acc(len, A(0));
      for (int64_t k = 0; k < n; ++k) acc[p[k]] += static_cast<A>(static_cast<OpMath<W>>(w[k]));
      for (int64_t k = 0; k < len; ++k) o[k] = static_cast<O>(static_cast<OpMath<O>>(acc[k]));
    });
  });
}

template <typename T>
void HistogramKernel(const DeviceContext&, const DenseTensor& input, const DenseTensor* weight,
                     int64_t bins, double min, double max, bool density, DenseTensor* out) {
  DenseTensor xc = contiguous(input);
  const T* p = xc.data<T>();
  const int64_t n = input.numel();
  auto val = [&](int64_t k) { return static_cast<double>(static_cast<OpMath<T>>(p[k])); };
  double lo = min, hi = max;
  if (lo == 0 && hi == 0 && n > 0) {  // the data's range
    lo = std::numeric_limits<double>::infinity();
    hi = -lo;
    for (int64_t k = 0; k < n; ++k) {
      const double v = val(k);
      if (v != v) continue;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
    if (lo > hi) lo = hi = 0;
  }
  if (lo == hi) {  // Paddle widens an empty range by 1 on each side
    lo -= 1;
    hi += 1;
  }
  std::vector<double> w;
  if (weight) {
    DenseTensor wc = contiguous(*weight);
    w.resize(n);
    visit_dtype(wc.dtype(), "histogram", [&](auto tag) {
      using W = typename decltype(tag)::type;
      const W* pw = wc.data<W>();
      for (int64_t k = 0; k < n; ++k) w[k] = static_cast<double>(static_cast<OpMath<W>>(pw[k]));
    });
  }
  std::vector<double> h(bins, 0.0);
  const double scale = static_cast<double>(bins) / (hi - lo);
  for (int64_t k = 0; k < n; ++k) {
    const double v = val(k);
    if (!(v >= lo && v <= hi)) continue;
    int64_t b = static_cast<int64_t>((v - lo) * scale);
    b = std::min(b, bins - 1);
    h[b] += weight ? w[k] : 1.0;
  }
  if (density) {
    double total = 0;
    for (double c : h) total += c;
    const double width = (hi - lo) / static_cast<double>(bins);
    for (double& c : h) c = c / (total * width);
  }
  if (out->dtype() == DataType::INT64) {
    int64_t* o = out->alloc<int64_t>();
    for (int64_t b = 0; b < bins; ++b) o[b] = static_cast<int64_t>(h[b]);
  } else {
    float* o = out->alloc<float>();
    for (int64_t b = 0; b < bins; ++b) o[b] = static_cast<float>(h[b]);
  }
}

template <typename T>
void DiagonalGradKernel(const DeviceContext&, const DenseTensor& x, const DenseTensor& grad,
                        int64_t offset, int64_t axis1, int64_t axis2, DenseTensor* out) {
  T* o = out->alloc<T>();
  std::fill(o, o + out->numel(), T(0));
  if (out->numel() == 0) return;
  DenseTensor diag = DiagonalView(*out, offset, axis1, axis2);
  copy_into(grad, &diag);
}

}  // namespace
}  // namespace oar::phi

using namespace oar::phi;  // NOLINT

OAR_REGISTER_KERNEL(unique, CPU, UniqueKernel, OAR_ALL_TYPES)
OAR_REGISTER_KERNEL(unique_consecutive, CPU, UniqueConsecutiveKernel, OAR_ALL_TYPES)
OAR_REGISTER_KERNEL(bincount, CPU, BincountKernel, int8_t, uint8_t, int16_t, int32_t, int64_t)
OAR_REGISTER_KERNEL(histogram, CPU, HistogramKernel, OAR_NUMERIC_TYPES)
OAR_REGISTER_KERNEL(diagonal_grad, CPU, DiagonalGradKernel, OAR_FLOAT_TYPES)
