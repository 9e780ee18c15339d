// Gather/scatter along an axis or by coordinate tuples: gather, index_select,
// gather_nd, scatter and their gradients. Index values are validated here (the
// only place that sees them): out of range -> OutOfRange naming the op. Negative
// indices count from the end, as in NumPy.
#include <cstring>

#include "oar_generated/kernel_signatures.h"
#include "phi_kernels/cpu/copy_grain.h"
#include "phi_kernels/cpu/elementwise.h"
#include "phi_kernels/cpu/parallel.h"

namespace oar::phi {
namespace {

int64_t prod(const Dims& d, int from, int to) {
  int64_t p = 1;
  for (int i = from; i < to; ++i) p *= d[i];
  return p;
}

// The index values as int64, wrapped into [0, n) and bound-checked.
std::vector<int64_t> read_index(const DenseTensor& index, int64_t n, const char* op, int axis) {
  DenseTensor c = contiguous(index);
  std::vector<int64_t> out(c.numel());
  auto load = [&](auto* p) {
    for (size_t i = 0; i < out.size(); ++i) {
      int64_t v = static_cast<int64_t>(p[i]);
      OAR_ENFORCE(v >= -n && v < n, OutOfRange, op, ": index ", v, " is out of range for axis ",
                  axis, " of size ", n, " (expected [", -n, ", ", n, "))");
      out[i] = v < 0 ? v + n : v;
    }
  };
  if (c.dtype() == DataType::INT32) {
    load(c.data<int32_t>());
  } else {
    load(c.data<int64_t>());
  }
  return out;
}

// out[o, j, :] = x[o, idx[j], :] (x viewed as [outer, n, inner]). The indices are
// range-checked by one vectorized min/max pass (read_index names the first bad one) and
// read in place, without an int64 copy; single elements are assigned, rows memcpy'd
// (on threads only above kCopyParallelBytes, Note [Copy grain]).
template <typename T>
void gather_rows(const DenseTensor& x, const DenseTensor& index, int64_t axis, DenseTensor* out,
                 const char* op) {
  T* o = out->alloc<T>();
  const int a = wrap_axis(axis, x.rank(), op);
  const int64_t n = x.dims()[a];
  const DenseTensor ic = contiguous(index);
  const int64_t m = ic.numel();
  auto run = [&](const auto* ip) {
    using I = std::remove_const_t<std::remove_pointer_t<decltype(ip)>>;
    I lo = 0, hi = 0;
#pragma omp simd reduction(min : lo) reduction(max : hi)
    for (int64_t j = 0; j < m; ++j) {
      lo = ip[j] < lo ? ip[j] : lo;
      hi = ip[j] > hi ? ip[j] : hi;
    }
    if (lo < -n || hi >= n) read_index(index, n, op, a);  // raises, naming the index
    if (out->numel() == 0) return;
    const int64_t outer = prod(x.dims(), 0, a), inner = prod(x.dims(), a + 1, x.rank());
    DenseTensor c = contiguous(x);
    const T* xp = c.data<T>();
    auto at = [n, ip](int64_t j) {
      const int64_t v = static_cast<int64_t>(ip[j]);
      return v < 0 ? v + n : v;
    };
    auto rows = [&](int64_t t0, int64_t t1) {
      int64_t b = t0 / m, j = t0 - b * m;
      if (inner == 1) {  // single elements: a tight loop per outer row (a random read each)
        for (int64_t t = t0; t < t1; b++, j = 0) {
          const int64_t e = std::min(t1 - t, m - j);
          const T* xb = xp + b * n;
          T* ob = o + t - j;
          for (int64_t k = j; k < j + e; ++k) ob[k] = xb[at(k)];
          t += e;
        }
        return;
      }
      for (int64_t t = t0; t < t1; ++t) {
        std::memcpy(o + t * inner, xp + (b * n + at(j)) * inner, inner * sizeof(T));
        if (++j == m) j = 0, ++b;
      }
    };
    const int64_t bytes = outer * m * inner * static_cast<int64_t>(sizeof(T));
    parallel_for(outer * m, rows, inner == 1 ? outer * m : copy_cost(bytes));
  };
  if (ic.dtype() == DataType::INT32) {
    run(ic.data<int32_t>());
  } else {
    run(ic.data<int64_t>());
  }
}

template <typename T>
void GatherKernel(const DeviceContext&, const DenseTensor& x, const DenseTensor& index,
                  int64_t axis, DenseTensor* out) {
  gather_rows<T>(x, index, axis, out, "gather");
}

template <typename T>
void IndexSelectKernel(const DeviceContext&, const DenseTensor& x, const DenseTensor& index,
                       int64_t axis, DenseTensor* out) {
  gather_rows<T>(x, index, axis, out, "index_select");
}

// out = zeros like x; out[o, idx[j], :] += g[o, j, :]. Rows of one `o` are summed
// sequentially (repeated indices); blocks of `inner` run in parallel.
template <typename T>
void GatherGradKernel(const DeviceContext&, const DenseTensor& x, const DenseTensor& index,
                      const DenseTensor& grad_out, int64_t axis, DenseTensor* out) {
  using M = OpMath<T>;
  T* o = out->alloc<T>();
  const int64_t total = out->numel();
  std::fill(o, o + total, T(0));
  const int a = wrap_axis(axis, x.rank(), "gather");
  const int64_t n = x.dims()[a];
  const std::vector<int64_t> idx = read_index(index, n, "gather", a);
  if (total == 0 || grad_out.numel() == 0) return;
  const int64_t outer = prod(x.dims(), 0, a), inner = prod(x.dims(), a + 1, x.rank());
  const int64_t m = static_cast<int64_t>(idx.size());
  DenseTensor g = contiguous(grad_out);
  const T* gp = g.data<T>();
  constexpr int64_t kChunk = 256;
  const int64_t chunks = (inner + kChunk - 1) / kChunk;
  // Each (outer row b, column block c) pair owns its columns of every destination row, so
  // the pairs run in any order and split across threads; a repeated index adds in j order.
  parallel_for(
      outer * chunks,
      [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t b = p / chunks, c = p % chunks;
      const int64_t lo = c * kChunk, hi = std::min(inner, lo + kChunk);
      for (int64_t j = 0; j < m; ++j) {
        T* dst = o + (b * n + idx[j]) * inner;
        const T* src = gp + (b * m + j) * inner;
        for (int64_t i = lo; i < hi; ++i) dst[i] = static_cast<T>(M(dst[i]) + M(src[i]));
      }
    }
      },
      outer * m * inner);
}

// Flat row offsets (in units of x's trailing block) of each coordinate tuple in index [..., k].
std::vector<int64_t> nd_offsets(const DenseTensor& x, const DenseTensor& index, const char* op) {
  const int64_t k = index.dims()[index.rank() - 1];
  const int64_t m = k > 0 ? index.numel() / k : prod(index.dims(), 0, index.rank() - 1);
  std::vector<int64_t> raw(index.numel());
  {
    DenseTensor c = contiguous(index);
    if (c.dtype() == DataType::INT32) {
      const int32_t* p = c.data<int32_t>();
      for (size_t i = 0; i < raw.size(); ++i) raw[i] = p[i];
    } else if (!raw.empty()) {
      std::memcpy(raw.data(), c.data<int64_t>(), raw.size() * sizeof(int64_t));
    }
  }
  std::vector<int64_t> off(m, 0);
  for (int64_t j = 0; j < m; ++j) {
    int64_t f = 0;
    for (int64_t d = 0; d < k; ++d) {
      const int64_t n = x.dims()[d];
      int64_t v = raw[j * k + d];
      OAR_ENFORCE(v >= -n && v < n, OutOfRange, op, ": index ", v, " is out of range for axis ",
                  d, " of size ", n, " (expected [", -n, ", ", n, "))");
      f = f * n + (v < 0 ? v + n : v);
    }
    off[j] = f;
  }
  return off;
}

template <typename T>
void GatherNdKernel(const DeviceContext&, const DenseTensor& x, const DenseTensor& index,
                    DenseTensor* out) {
  T* o = out->alloc<T>();
  const std::vector<int64_t> off = nd_offsets(x, index, "gather_nd");
  if (out->numel() == 0) return;
  const int64_t k = index.dims()[index.rank() - 1];
  const int64_t inner = prod(x.dims(), static_cast<int>(k), x.rank());
  DenseTensor c = contiguous(x);
  const T* xp = c.data<T>();
  const int64_t m = static_cast<int64_t>(off.size());
  parallel_for(
      m,
      [&](int64_t j0, int64_t j1) {
    for (int64_t j = j0; j < j1; ++j) std::memcpy(o + j * inner, xp + off[j] * inner, inner * sizeof(T));
      },
      m * inner);
}

template <typename T>
void GatherNdGradKernel(const DeviceContext&, const DenseTensor& x, const DenseTensor& index,
                        const DenseTensor& grad_out, DenseTensor* out) {
  using M = OpMath<T>;
  T* o = out->alloc<T>();
  std::fill(o, o + out->numel(), T(0));
  const std::vector<int64_t> off = nd_offsets(x, index, "gather_nd");
  if (out->numel() == 0 || grad_out.numel() == 0) return;
  const int64_t k = index.dims()[index.rank() - 1];
  const int64_t inner = prod(x.dims(), static_cast<int>(k), x.rank());
  DenseTensor g = contiguous(grad_out);
  const T* gp = g.data<T>();
  const int64_t m = static_cast<int64_t>(off.size());
  for (int64_t j = 0; j < m; ++j) {
    T* dst = o + off[j] * inner;
    const T* src = gp + j * inner;
    for (int64_t i = 0; i < inner; ++i) dst[i] = static_cast<T>(M(dst[i]) + M(src[i]));
  }
}

// Paddle's scatter: out = x; without overwrite the indexed rows are zeroed first and
// the updates added; with overwrite the updates are written in order (the last wins).
template <typename T>
void ScatterKernel(const DeviceContext&, const DenseTensor& x, const DenseTensor& index,
                   const DenseTensor& updates, bool overwrite, DenseTensor* out) {
  using M = OpMath<T>;
  T* o = out->alloc<T>();
  copy_into(x, out);
  const int64_t n = x.dims()[0];
  const std::vector<int64_t> idx = read_index(index, n, "scatter", 0);
  const int64_t inner = prod(x.dims(), 1, x.rank());
  if (inner == 0 || idx.empty()) return;
  DenseTensor u = contiguous(updates);
  const T* up = u.data<T>();
  if (!overwrite) {
    for (int64_t r : idx) std::fill(o + r * inner, o + (r + 1) * inner, T(0));
  }
  for (size_t j = 0; j < idx.size(); ++j) {
    T* dst = o + idx[j] * inner;
    const T* src = up + j * inner;
    if (overwrite) {
      std::memcpy(dst, src, inner * sizeof(T));
    } else {
      for (int64_t i = 0; i < inner; ++i) dst[i] = static_cast<T>(M(dst[i]) + M(src[i]));
    }
  }
}

template <typename I>
void ScatterLastMaskKernel(const DeviceContext&, const DenseTensor& index, DataType,
                           DenseTensor* out) {
  DenseTensor c = contiguous(index);
  const I* p = c.data<I>();
  const int64_t m = c.numel();
  std::vector<int64_t> vals(p, p + m);
  visit_dtype(out->dtype(), "scatter", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* o = out->alloc<T>();
    std::unordered_map<int64_t, int64_t> last;
    for (int64_t j = 0; j < m; ++j) last[vals[j]] = j;
    for (int64_t j = 0; j < m; ++j) o[j] = static_cast<T>(last[vals[j]] == j ? 1.0f : 0.0f);
  });
}

}  // namespace
}  // namespace oar::phi

using namespace oar::phi;  // NOLINT

OAR_REGISTER_KERNEL(gather, CPU, GatherKernel, OAR_ALL_TYPES, OAR_COMPLEX_TYPES)
OAR_REGISTER_KERNEL(index_select, CPU, IndexSelectKernel, OAR_ALL_TYPES, OAR_COMPLEX_TYPES)
OAR_REGISTER_KERNEL(gather_grad, CPU, GatherGradKernel, OAR_NUMERIC_TYPES)
OAR_REGISTER_KERNEL(gather_nd, CPU, GatherNdKernel, OAR_ALL_TYPES, OAR_COMPLEX_TYPES)
OAR_REGISTER_KERNEL(gather_nd_grad, CPU, GatherNdGradKernel, OAR_NUMERIC_TYPES)
OAR_REGISTER_KERNEL(scatter, CPU, ScatterKernel, OAR_ALL_TYPES)
OAR_REGISTER_KERNEL(scatter_last_mask, CPU, ScatterLastMaskKernel, int32_t, int64_t)
