// The CPU's `copy` kernel: what copy_into runs when source and destination are both on
// the host (in-place writes, views made contiguous, the executor's moves). Any strides;
// dtype conversion allowed; overlapping contiguous ranges are memmoved. Registered per
// source dtype like every kernel; other devices register their own (Note [Device types]).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "paddle_core/dispatch/kernel_registry.h"
#include "paddle_core/tensor/dense_tensor.h"
#include "phi_kernels/cpu/parallel.h"
#include "phi_kernels/cpu/transpose.h"

namespace oar::phi {
namespace {

// Walks two same-shape strided tensors row by row (the innermost dim), calling
// row(src, src_step, dst, dst_step, n) with element steps in bytes. The outer offsets
// advance incrementally (an odometer), so a row costs O(1) bookkeeping, not O(rank)
// per element.
template <typename Row>
void for_each_row(const DenseTensor& src, DenseTensor* dst, Row&& row) {
  const int rank = src.rank();
  const int64_t sb = static_cast<int64_t>(size_of(src.dtype())), db = static_cast<int64_t>(size_of(dst->dtype()));
  const char* sp = static_cast<const char*>(src.raw_data());
  char* dp = static_cast<char*>(dst->raw_data());
  if (src.numel() == 0) return;
  if (rank == 0) {
    row(sp, 0, dp, 0, 1);
    return;
  }
  const int inner = rank - 1;
  const int64_t n = src.dims()[inner];
  const int64_t s_step = src.strides()[inner] * sb, d_step = dst->strides()[inner] * db;
  const int64_t rows = src.numel() / n;
  Dims idx = Dims::filled(rank, 0);
  int64_t so = 0, dof = 0;  // byte offsets of the current row
  for (int64_t r = 0; r < rows; ++r) {
    row(sp + so, s_step, dp + dof, d_step, n);
    for (int i = inner - 1; i >= 0; --i) {
      so += src.strides()[i] * sb;
      dof += dst->strides()[i] * db;
      if (++idx[i] < src.dims()[i]) break;
      so -= src.dims()[i] * src.strides()[i] * sb;
      dof -= src.dims()[i] * dst->strides()[i] * db;
      idx[i] = 0;
    }
  }
}

// Note [Strided copies]: a same-dtype copy between any strides (what contiguous() of a
// view runs: a transpose, a permuted or expanded operand a kernel wants dense) moves
// elements as raw bytes of their size, so every dtype's bits survive (float16's and
// bfloat16's NaN payloads included). The dims are coalesced (size-1 dims dropped, dims that
// both tensors step through as one merged), then:
// - the destination's rows are dense and the source's unit-stride dim is another one (a
//   transpose): 32 x 32 tiles through transpose_strided (transpose.h; 4-byte values in
//   its float register tiles);
// - otherwise row by row: memcpy where both rows are dense, a strided loop where not.
// Both are split over the pool unless the source and destination overlap: then the rows go
// one after another in order, as a memmove of each.
// A [1024, 1024] float transpose took 5.0 ms as one element-by-element odometer walk on
// one thread (Zen 3).
struct Elem16 {
  uint64_t lo, hi;
};
template <size_t E>
using ElemOf = std::conditional_t<
    E == 1, uint8_t,
    std::conditional_t<E == 2, uint16_t,
                       std::conditional_t<E == 4, uint32_t, std::conditional_t<E == 8, uint64_t, Elem16>>>>;

struct CopyLayout {
  int rank = 0;
  int64_t n[kMaxRank];
  int64_t ss[kMaxRank], ds[kMaxRank];  // element strides of source and destination
};

// Drops size-1 dims and merges neighbours both tensors step through as one dim.
CopyLayout coalesce(const DenseTensor& src, const DenseTensor& dst) {
  CopyLayout l;
  for (int i = 0; i < src.rank(); ++i) {
    const int64_t n = src.dims()[i];
    if (n == 1) continue;
    if (l.rank > 0 && l.ss[l.rank - 1] == src.strides()[i] * n && l.ds[l.rank - 1] == dst.strides()[i] * n) {
      l.n[l.rank - 1] *= n;
      l.ss[l.rank - 1] = src.strides()[i];
      l.ds[l.rank - 1] = dst.strides()[i];
      continue;
    }
    l.n[l.rank] = n;
    l.ss[l.rank] = src.strides()[i];
    l.ds[l.rank] = dst.strides()[i];
    ++l.rank;
  }
  if (l.rank == 0) {
    l.n[0] = 1;
    l.ss[0] = l.ds[0] = 0;
    l.rank = 1;
  }
  return l;
}

// The element offsets of flat index q of the dims [0, r) (all but the ones the caller walks).
inline void offsets_of(const CopyLayout& l, int r, int64_t q, int64_t* so, int64_t* dof) {
  int64_t s = 0, d = 0;
  for (int k = r - 1; k >= 0; --k) {
    const int64_t idx = q % l.n[k];
    q /= l.n[k];
    s += idx * l.ss[k];
    d += idx * l.ds[k];
  }
  *so = s;
  *dof = d;
}

// Byte ranges [lo, hi) the tensor's elements span.
inline bool spans_overlap(const DenseTensor& a, const DenseTensor& b) {
  const char* pa = static_cast<const char*>(a.raw_data());
  const char* pb = static_cast<const char*>(b.raw_data());
  auto range = [](const DenseTensor& t, const char* p, const char** lo, const char** hi) {
    int64_t neg = 0, pos = 0;
    for (int i = 0; i < t.rank(); ++i) {
      const int64_t e = (t.dims()[i] - 1) * t.strides()[i];
      (e < 0 ? neg : pos) += e;
    }
    const int64_t es = static_cast<int64_t>(size_of(t.dtype()));
    *lo = p + neg * es;
    *hi = p + (pos + 1) * es;
  };
  const char *alo, *ahi, *blo, *bhi;
  range(a, pa, &alo, &ahi);
  range(b, pb, &blo, &bhi);
  return alo < bhi && blo < ahi;
}

template <typename E>
void copy_strided(const DenseTensor& src, DenseTensor* dst) {
  const CopyLayout l = coalesce(src, *dst);
  const E* sp = static_cast<const E*>(src.raw_data());
  E* dp = static_cast<E*>(dst->raw_data());
  const int r = l.rank;
  const int64_t inner = l.n[r - 1], sst = l.ss[r - 1], dst_step = l.ds[r - 1];
  const bool serial = spans_overlap(src, *dst);
  const int64_t total = src.numel();
  int j = -1;  // the source's unit-stride dim, when the destination's rows are dense and it is another one
  if (!serial && dst_step == 1 && sst != 1 && inner >= 8) {
    for (int k = r - 2; k >= 0; --k) {
      if (l.ss[k] == 1 && l.n[k] >= 8) {
        j = k;
        break;
      }
    }
  }
  if (j >= 0) {
    constexpr int64_t kT = 32;
    const int64_t nj = l.n[j], tj = (nj + kT - 1) / kT, ti = (inner + kT - 1) / kT;
    const int64_t sj = l.ds[j];
    // the dims other than j and the inner one, flattened
    CopyLayout rest;
    for (int k = 0; k < r - 1; ++k) {
      if (k == j) continue;
      rest.n[rest.rank] = l.n[k];
      rest.ss[rest.rank] = l.ss[k];
      rest.ds[rest.rank] = l.ds[k];
      ++rest.rank;
    }
    const int64_t outer = total / (nj * inner);
    auto tiles = [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        int64_t so, dof;
        offsets_of(rest, rest.rank, t / (tj * ti), &so, &dof);
        const int64_t jb = (t / ti % tj) * kT, ib = (t % ti) * kT;
        const int64_t wj = std::min(kT, nj - jb), wi = std::min(kT, inner - ib);
        const E* s = sp + so + jb + ib * sst;
        E* d = dp + dof + jb * sj + ib;
        if constexpr (sizeof(E) == 4) {  // float's register tiles move any 4-byte value's bits
          transpose_strided(reinterpret_cast<const float*>(s), sst, wi, wj, reinterpret_cast<float*>(d), sj);
        } else {
          transpose_strided(s, sst, wi, wj, d, sj);
        }
      }
    };
    parallel_for(outer * tj * ti, tiles, total);
    return;
  }
  const int64_t rows = total / inner;
  auto row_range = [&](int64_t b, int64_t e) {
    for (int64_t q = b; q < e; ++q) {
      int64_t so, dof;
      offsets_of(l, r - 1, q, &so, &dof);
      const E* s = sp + so;
      E* d = dp + dof;
      if (sst == 1 && dst_step == 1) {
        std::memmove(d, s, static_cast<size_t>(inner) * sizeof(E));
      } else if (sst == 0) {
        const E v = s[0];
        for (int64_t i = 0; i < inner; ++i) d[i * dst_step] = v;
      } else {
        for (int64_t i = 0; i < inner; ++i) d[i * dst_step] = s[i * sst];
      }
    }
  };
  if (serial) {
    row_range(0, rows);
  } else {
    parallel_for(rows, row_range, total);
  }
}

// Element-by-element conversion from S to dst's dtype.
template <typename S>
void convert(const DenseTensor& src, DenseTensor* dst) {
  visit_dtype_all(dst->dtype(), "copy", [&](auto dt) {
    using D = typename decltype(dt)::type;
    for_each_row(src, dst, [](const char* s, int64_t ss, char* d, int64_t ds, int64_t n) {
      for (int64_t j = 0; j < n; ++j) {
        S v;
        std::memcpy(&v, s + j * ss, sizeof(S));
        D out;
        if constexpr (is_complex_v<S> || is_complex_v<D>) {
          out = convert_element<D>(v);
        } else if constexpr (std::is_same_v<D, bool>) {
          out = static_cast<float>(v) != 0.0f;
        } else if constexpr (std::is_integral_v<D> && !std::is_integral_v<S>) {
          out = float_to_int<D>(static_cast<OpMath<S>>(v));  // NaN/inf/huge: defined
        } else if constexpr (std::is_same_v<S, float16> || std::is_same_v<S, bfloat16>) {
          out = static_cast<D>(static_cast<float>(v));
        } else {
          out = static_cast<D>(static_cast<OpMath<D>>(v));
        }
        std::memcpy(d + j * ds, &out, sizeof(D));
      }
    });
  });
}

/// src (dtype T) -> dst, both on the host, same shape.
template <typename T>
void CopyKernel(const DeviceContext&, const DenseTensor& src, DenseTensor* dst) {
  OAR_ENFORCE(src.dims() == dst->dims(), InvalidArgument, "copy: shape mismatch, source ", src.dims(),
              " vs destination ", dst->dims());
  if (src.dtype() != dst->dtype()) {
    convert<T>(src, dst);
    return;
  }
  if (src.is_contiguous() && dst->is_contiguous()) {
    if (src.numel() > 0 && src.raw_data() != dst->raw_data()) {
      std::memmove(dst->raw_data(), src.raw_data(), src.numel() * sizeof(T));
    }
    return;
  }
  if (src.numel() == 0) return;
  static_assert(sizeof(T) <= 16 && (sizeof(T) & (sizeof(T) - 1)) == 0, "copy: element size");
  copy_strided<ElemOf<sizeof(T)>>(src, dst);
}

}  // namespace

OAR_REGISTER_KERNEL(copy, CPU, CopyKernel, OAR_ALL_TYPES, OAR_COMPLEX_TYPES)

}  // namespace oar::phi
