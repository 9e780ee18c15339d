// The CPU's `copy` kernel: what copy_into runs when source and destination are both on
// the host (in-place writes, views made contiguous, the executor's moves). Any strides;
// dtype conversion allowed; overlapping contiguous ranges are memmoved. Registered per
// source dtype like every kernel; other devices register their own (Note [Device types]).
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "paddle_core/dispatch/kernel_registry.h"
#include "paddle_core/tensor/dense_tensor.h"
#include "phi_kernels/cpu/elementwise.h"
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
// bfloat16's NaN payloads included). The dims are coalesced (elementwise.h's coalesce: size-1
// dims dropped, dims that both tensors step through as one merged), then:
// - the destination's rows are dense and the source's unit-stride dim is another one (a
//   transpose): 32 x 32 tiles through transpose_strided, or for 4-byte values at strides
//   that fall in few L1 sets, 64 x 64 tiles through a buffer (Note [Transposed tiles
//   through a buffer], transpose.h);
// - otherwise row by row, the rows' offsets walked by an odometer: memcpy where both rows are
//   dense (inline under 64 values), a fill where the source steps by 0, a strided loop
//   elsewhere; rows shorter than 8 values run along the longest dim one side steps through by
//   one instead.
// Both are split over the pool unless source and destination share a storage: then the rows
// go one after another in order, as a memmove of each.
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

// The element offsets (source, destination) of flat index q over dims n with strides st.
inline std::array<int64_t, 2> offsets_of(const Dims& n, const std::array<Dims, 2>& st, int64_t q) {
  std::array<int64_t, 2> off{0, 0};
  for (int k = n.size() - 1; k >= 0; --k) {
    const int64_t idx = q % n[k];
    q /= n[k];
    off[0] += idx * st[0][k];
    off[1] += idx * st[1][k];
  }
  return off;
}

template <typename E>
void copy_strided(const DenseTensor& src, DenseTensor* dst) {
  Dims n = src.dims();
  std::array<Dims, 2> st{src.strides(), dst->strides()};  // element strides: source, destination
  detail::coalesce(&n, &st);
  const E* sp = static_cast<const E*>(src.raw_data());
  E* dp = static_cast<E*>(dst->raw_data());
  const int r = n.size();
  // One storage: the source may overlap the destination (x[:, 1:] = x[:, :-1]), so the rows
  // go in order, as the memmove of each.
  const bool serial = src.storage() == dst->storage();
  if (!serial && n[r - 1] < 8) {
    // Rows of a few values (a pixel_shuffle's factor of 2 innermost) would each pay an
    // offsets_of walk: the rows run instead along the longest dim one side steps through
    // by one, the short dim outside them. [16, 64, 32, 32] pixel_shuffle(2): 10 -> 1.2 ms.
    int best = -1;
    for (int k = 0; k < r - 1; ++k) {
      if ((st[0][k] == 1 || st[1][k] == 1) && n[k] >= 8 && (best < 0 || n[k] > n[best])) best = k;
    }
    if (best >= 0) {
      std::swap(n[best], n[r - 1]);
      for (auto& s : st) std::swap(s[best], s[r - 1]);
    }
  }
  const int64_t inner = n[r - 1], sst = st[0][r - 1], dst_step = st[1][r - 1];
  const int64_t total = src.numel();
  // the source's unit-stride dim, when the destination's rows are dense and it is another one;
  // not for a source that steps by 0 along the rows (an expanded column, x[:, None] broadcast):
  // those rows are fills (bool [1024, 1] -> [1024, 1024] took 0.79 ms as tiles, torch 0.02)
  int j = -1;
  if (!serial && dst_step == 1 && sst != 1 && sst != 0 && inner >= 8) {
    for (int k = r - 2; k >= 0; --k) {
      if (st[0][k] == 1 && n[k] >= 8) {
        j = k;
        break;
      }
    }
  }
  if (j >= 0) {
    // Note [Transposed tiles through a buffer]: 64 x 64 tiles where the buffer pays.
    const int64_t sj = st[1][j];
    const bool buffered = transpose_buffered(sizeof(E), sst, sj);
    const int64_t kT = buffered ? kTransposeTile : 32;
    const int64_t nj = n[j], tj = (nj + kT - 1) / kT, ti = (inner + kT - 1) / kT;
    Dims rn;  // the dims other than j and the inner one
    std::array<Dims, 2> rst;
    for (int k = 0; k < r - 1; ++k) {
      if (k == j) continue;
      rn.push_back(n[k]);
      for (int o = 0; o < 2; ++o) rst[o].push_back(st[o][k]);
    }
    auto tiles = [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        const auto off = offsets_of(rn, rst, t / (tj * ti));
        const int64_t jb = (t / ti % tj) * kT, ib = (t % ti) * kT;
        const int64_t wj = std::min(kT, nj - jb), wi = std::min(kT, inner - ib);
        const E* s = sp + off[0] + jb + ib * sst;
        E* d = dp + off[1] + jb * sj + ib;
        if constexpr (sizeof(E) == 4) {  // float's register tiles move any 4-byte value's bits
          const float* fs = reinterpret_cast<const float*>(s);
          float* fd = reinterpret_cast<float*>(d);
#if defined(__AVX2__)
          if (buffered && wi == kT && wj == kT) {
            transpose_tile_buffered(fs, sst, fd, sj);
            continue;
          }
#endif
          transpose_strided(fs, sst, wi, wj, fd, sj);
        } else {
          transpose_strided(s, sst, wi, wj, d, sj);
        }
      }
    };
    parallel_for(total / (nj * inner) * tj * ti, tiles, total);
    return;
  }
  Dims on = n;  // the dims the rows are indexed by
  on.resize(r - 1);
  auto row_range = [&](int64_t b, int64_t e) {
    // The first row's offsets from its flat index, the next ones by an odometer: an
    // offsets_of walk (a division per dim) and a memmove call a row took 3x torch's time to
    // crop [16, 32, 36, 36] to 32 x 32 (204 against 71 us; rows of 128 bytes).
    auto off = offsets_of(on, st, b);
    std::vector<int64_t> idx(on.size());
    for (int64_t k = static_cast<int64_t>(on.size()) - 1, q = b; k >= 0; --k) idx[k] = q % on[k], q /= on[k];
    for (int64_t q = b; q < e; ++q) {
      const E* s = sp + off[0];
      E* d = dp + off[1];
      for (int64_t k = static_cast<int64_t>(on.size()) - 1; k >= 0; --k) {
        off[0] += st[0][k], off[1] += st[1][k];
        if (++idx[k] < on[k]) break;
        off[0] -= st[0][k] * on[k], off[1] -= st[1][k] * on[k], idx[k] = 0;
      }
      if (sst == 1 && dst_step == 1 && !serial && inner <= 64) {  // inline: no call for a short row
#pragma omp simd
        for (int64_t i = 0; i < inner; ++i) d[i] = s[i];
      } else if (sst == 1 && dst_step == 1) {
        std::memmove(d, s, static_cast<size_t>(inner) * sizeof(E));
      } else if (sst == 0 && dst_step == 1) {  // a fill (x[...] = scalar): vector stores
        std::fill_n(d, inner, s[0]);
      } else if (sst == 0) {
        const E v = s[0];
        for (int64_t i = 0; i < inner; ++i) d[i * dst_step] = v;
      } else if (dst_step == 1) {  // a strided slice made dense (x[:, ::2]): dense stores
        // the step as a local: a 1-byte store may alias the captured one (Note [Byte stores
        // and captured pointers], elementwise.h); bool [1024, 1024][:, ::2] 0.53 -> 0.11 ms
        const int64_t step = sst;
#pragma omp simd
        for (int64_t i = 0; i < inner; ++i) d[i] = s[i * step];
      } else {
        const int64_t ss = sst, ds = dst_step;
        for (int64_t i = 0; i < inner; ++i) d[i * ds] = s[i * ss];
      }
    }
  };
  if (serial) {
    row_range(0, total / inner);
  } else {
    parallel_for(total / inner, row_range, total);
  }
}

// Element-by-element conversion from S to dst's dtype.
template <typename S>
void convert(const DenseTensor& src, DenseTensor* dst) {
  visit_dtype_all(dst->dtype(), "copy", [&](auto dt) {
    using D = typename decltype(dt)::type;
    auto one = [](S v) {
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
      return out;
    };
    auto row = [&one](const char* s, int64_t ss, char* d, int64_t ds, int64_t n) {
      if (ss == sizeof(S) && ds == sizeof(D)) {
        // Unit strides (a contiguous source, or a row of a view): typed pointers, so the loop
        // vectorizes. Through memcpy at byte strides it ran an element at a time: bfloat16 ->
        // float of 262K elements 0.07 ms, the attention kernel's inputs.
        const S* sp = reinterpret_cast<const S*>(s);
        D* dp = reinterpret_cast<D*>(d);
        for (int64_t j = 0; j < n; ++j) dp[j] = one(sp[j]);
        return;
      }
      for (int64_t j = 0; j < n; ++j) {
        S v;
        std::memcpy(&v, s + j * ss, sizeof(S));
        const D out = one(v);
        std::memcpy(d + j * ds, &out, sizeof(D));
      }
    };
    if (src.is_contiguous() && dst->is_contiguous()) {  // one row, in pieces on the pool
      const char* sp = static_cast<const char*>(src.raw_data());
      char* dp = static_cast<char*>(dst->raw_data());
      parallel_for(src.numel(), [&](int64_t b, int64_t e) {
        row(sp + b * sizeof(S), sizeof(S), dp + b * sizeof(D), sizeof(D), e - b);
      });
      return;
    }
    for_each_row(src, dst, row);
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
    const int64_t n = src.numel();
    if (n == 0 || src.raw_data() == dst->raw_data()) return;
    char* d = static_cast<char*>(dst->raw_data());
    const char* s = static_cast<const char*>(src.raw_data());
    const size_t bytes = static_cast<size_t>(n) * sizeof(T);
    if (d + bytes <= s || s + bytes <= d) {
      // Disjoint: pieces on the pool. One thread's memcpy reads about half the bandwidth
      // two reach; the cost (a sixteenth of the elements) keeps copies under 2 MB of floats
      // on the caller, where waking a worker costs more than it saves.
      parallel_for(
          n, [&](int64_t b, int64_t e) { std::memcpy(d + b * sizeof(T), s + b * sizeof(T), (e - b) * sizeof(T)); },
          n / 16);
    } else {
      std::memmove(d, s, bytes);
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
