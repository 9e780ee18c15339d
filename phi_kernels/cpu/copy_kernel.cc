// The CPU's `copy` kernel: what copy_into runs when source and destination are both on
// the host (in-place writes, views made contiguous, the executor's moves). Any strides;
// dtype conversion allowed; overlapping contiguous ranges are memmoved. Registered per
// source dtype like every kernel; other devices register their own (Note [Device types]).
#include <cstring>
#include <type_traits>

#include "paddle_core/dispatch/kernel_registry.h"
#include "paddle_core/tensor/dense_tensor.h"

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

// Same-dtype strided copy of one row: memcpy when both rows are dense, else a typed
// strided loop on the element size.
template <typename E>
void copy_row(const char* s, int64_t ss, char* d, int64_t ds, int64_t n) {
  for (int64_t j = 0; j < n; ++j) std::memcpy(d + j * ds, s + j * ss, sizeof(E));
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
  constexpr int64_t e = sizeof(T);
  for_each_row(src, dst, [](const char* s, int64_t ss, char* d, int64_t ds, int64_t n) {
    if (ss == e && ds == e) {
      std::memmove(d, s, static_cast<size_t>(n * e));
    } else {
      copy_row<T>(s, ss, d, ds, n);
    }
  });
}

}  // namespace

OAR_REGISTER_KERNEL(copy, CPU, CopyKernel, OAR_ALL_TYPES, OAR_COMPLEX_TYPES)

}  // namespace oar::phi
