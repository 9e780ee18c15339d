// Joining and splitting kernels: concat, stack, unstack, tile (and tile_grad). Every one
// views its tensors as [outer, axis, inner] blocks and moves contiguous rows of
// `axis * inner` elements (memcpy, or inline for short rows). split, split_with_num and
// unbind are views (view_meta.h): they move nothing.
#include <cstring>

#include "oar_generated/kernel_signatures.h"
#include "phi_kernels/cpu/copy_grain.h"
#include "phi_kernels/cpu/elementwise.h"

namespace oar::phi {
namespace {

int64_t prod(const Dims& d, int from, int to) {
  int64_t p = 1;
  for (int i = from; i < to; ++i) p *= d[i];
  return p;
}

// Copies `pieces[i]` (each [outer, w_i] contiguous) into `out` ([outer, sum w_i]) side by
// side, or the reverse when `gather_into_pieces`. Threads only above kCopyParallelBytes
// (Note [Copy grain]).
template <typename T>
void join_rows(std::vector<T*> pieces, const std::vector<int64_t>& widths, T* out, int64_t outer,
               bool gather_into_pieces) {
  int64_t total = 0;
  for (int64_t w : widths) total += w;
  auto rows = [&](int64_t o0, int64_t o1) {
    for (int64_t o = o0; o < o1; ++o) {
      int64_t off = 0;
      for (size_t i = 0; i < pieces.size(); ++i) {
        const int64_t w = widths[i];
        T* row = out + o * total + off;
        T* piece = pieces[i] + o * w;
        T* to = gather_into_pieces ? piece : row;
        const T* from = gather_into_pieces ? row : piece;
        if (w == 1) {  // stack along the last axis: a memcpy call an element took 1.75x torch's time
          *to = *from;
        } else if (w * static_cast<int64_t>(sizeof(T)) < 64) {  // inline: a call costs more than a short row
#pragma omp simd
          for (int64_t k = 0; k < w; ++k) to[k] = from[k];
        } else {
          std::memcpy(to, from, w * sizeof(T));
        }
        off += w;
      }
    }
  };
  parallel_for(outer, rows, copy_cost(outer * total * static_cast<int64_t>(sizeof(T))));
}

template <typename T>
void ConcatKernel(const DeviceContext&, const std::vector<const DenseTensor*>& x, int64_t axis,
                  DenseTensor* out) {
  T* o = out->alloc<T>();
  if (out->numel() == 0) return;
  const int a = wrap_axis(axis, out->rank(), "concat");
  const int64_t outer = prod(out->dims(), 0, a), inner = prod(out->dims(), a + 1, out->rank());
  std::vector<DenseTensor> keep;  // contiguous copies of strided inputs
  keep.reserve(x.size());
  std::vector<T*> pieces;
  std::vector<int64_t> widths;
  for (const DenseTensor* t : x) {
    keep.push_back(contiguous(*t));
    pieces.push_back(keep.back().data<T>());
    widths.push_back(t->dims()[a] * inner);
  }
  join_rows<T>(pieces, widths, o, outer, false);
}

template <typename T>
void StackKernel(const DeviceContext&, const std::vector<const DenseTensor*>& x, int64_t axis,
                 DenseTensor* out) {
  T* o = out->alloc<T>();
  if (out->numel() == 0) return;
  const int a = wrap_axis(axis, out->rank(), "stack");
  const int64_t outer = prod(out->dims(), 0, a), inner = prod(out->dims(), a + 1, out->rank());
  std::vector<DenseTensor> keep;
  keep.reserve(x.size());
  std::vector<T*> pieces;
  for (const DenseTensor* t : x) {
    keep.push_back(contiguous(*t));
    pieces.push_back(keep.back().data<T>());
  }
  join_rows<T>(pieces, std::vector<int64_t>(x.size(), inner), o, outer, false);
}

// Copies the slices of x along `a` into outs (unstack: infer-meta has set their dims).
template <typename T>
void UnstackKernel(const DeviceContext&, const DenseTensor& x, int64_t axis, int64_t, std::vector<DenseTensor*> outs) {
  const int a = wrap_axis(axis, x.rank(), "unstack");
  std::vector<T*> pieces;
  const int64_t inner = prod(x.dims(), a + 1, x.rank());
  for (DenseTensor* t : outs) pieces.push_back(t->alloc<T>());
  if (x.numel() == 0) return;
  DenseTensor c = contiguous(x);
  join_rows<T>(pieces, std::vector<int64_t>(outs.size(), inner), c.data<T>(), prod(x.dims(), 0, a), true);
}

// x's dims left-padded with 1s to the output's rank.
Dims padded_dims(const DenseTensor& x, int rank) {
  Dims d = Dims::filled(rank, 1);
  for (int i = 0; i < x.rank(); ++i) d[rank - x.rank() + i] = x.dims()[i];
  return d;
}

// Calls fn(out_row, x_row) for every row (all dims but the last) of the tiled output,
// where x_row is the source row of x that the output row repeats.
template <typename Fn>
void for_each_tile_row(const Dims& xd, const Dims& od, Fn&& fn) {
  const int r = od.size();
  int64_t rows = 1;
  for (int i = 0; i + 1 < r; ++i) rows *= od[i];
  Dims xs = contiguous_strides(xd);
  for (int64_t row = 0; row < rows; ++row) {
    int64_t rem = row, src = 0;
    for (int i = r - 2; i >= 0; --i) {
      const int64_t idx = rem % od[i];
      rem /= od[i];
      src += (idx % xd[i]) * xs[i];
    }
    fn(row, src / (r ? xd[r - 1] : 1));
  }
}

template <typename T>
void TileKernel(const DeviceContext&, const DenseTensor& x, const std::vector<int64_t>&,
                DenseTensor* out) {
  T* o = out->alloc<T>();
  if (out->numel() == 0) return;
  const Dims& od = out->dims();
  const int r = od.size();
  if (r == 0) {
    o[0] = contiguous(x).data<T>()[0];
    return;
  }
  const Dims xd = padded_dims(x, r);
  DenseTensor c = contiguous(x);
  const T* xp = c.data<T>();
  const int64_t w = xd[r - 1], reps = od[r - 1] / w;
  for_each_tile_row(xd, od, [&](int64_t row, int64_t src_row) {
    T* dst = o + row * od[r - 1];
    for (int64_t k = 0; k < reps; ++k) std::memcpy(dst + k * w, xp + src_row * w, w * sizeof(T));
  });
}

template <typename T>
void TileGradKernel(const DeviceContext&, const DenseTensor& x, const DenseTensor& grad_out,
                    const std::vector<int64_t>&, DenseTensor* out) {
  using Acc = std::conditional_t<std::is_same_v<T, double>, double,
                                 std::conditional_t<std::is_floating_point_v<OpMath<T>>, float,
                                                    OpMath<T>>>;
  T* o = out->alloc<T>();
  const int64_t n = out->numel();
  if (n == 0) return;
  const Dims& gd = grad_out.dims();
  const int r = gd.size();
  std::vector<Acc> acc(n, Acc(0));
  if (r == 0 || grad_out.numel() == 0) {
    if (r == 0) acc[0] = static_cast<Acc>(contiguous(grad_out).data<T>()[0]);
  } else {
    const Dims xd = padded_dims(x, r);
    DenseTensor g = contiguous(grad_out);
    const T* gp = g.data<T>();
    const int64_t w = xd[r - 1], reps = gd[r - 1] / w;
    for_each_tile_row(xd, gd, [&](int64_t row, int64_t src_row) {
      const T* src = gp + row * gd[r - 1];
      Acc* dst = acc.data() + src_row * w;
      for (int64_t k = 0; k < reps; ++k) {
        for (int64_t j = 0; j < w; ++j) dst[j] += static_cast<Acc>(src[k * w + j]);
      }
    });
  }
  for (int64_t i = 0; i < n; ++i) o[i] = static_cast<T>(acc[i]);
}

}  // namespace
}  // namespace oar::phi

using namespace oar::phi;  // NOLINT

OAR_REGISTER_KERNEL(concat, CPU, ConcatKernel, OAR_ALL_TYPES, OAR_COMPLEX_TYPES)
OAR_REGISTER_KERNEL(stack, CPU, StackKernel, OAR_ALL_TYPES, OAR_COMPLEX_TYPES)
OAR_REGISTER_KERNEL(unstack, CPU, UnstackKernel, OAR_ALL_TYPES, OAR_COMPLEX_TYPES)
OAR_REGISTER_KERNEL(tile, CPU, TileKernel, OAR_ALL_TYPES, OAR_COMPLEX_TYPES)
OAR_REGISTER_KERNEL(tile_grad, CPU, TileGradKernel, OAR_NUMERIC_TYPES)
