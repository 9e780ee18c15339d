#include "paddle_core/tensor/dense_tensor.h"

#include <cstring>

namespace oar {

bool DenseTensor::is_contiguous() const {
  int64_t expected = 1;
  for (int i = dims_.size() - 1; i >= 0; --i) {
    if (dims_[i] == 1) continue;
    if (strides_[i] != expected) return false;
    expected *= dims_[i];
  }
  return true;
}

void DenseTensor::set_dims(const Dims& dims) {
  for (int i = 0; i < dims.size(); ++i) {
    OAR_ENFORCE(dims[i] >= 0, InvalidArgument, "tensor dims must be non-negative, got ", dims);
  }
  dims_ = dims;
  strides_ = contiguous_strides(dims);
  if (storage_ && storage_->bytes() < static_cast<size_t>(numel()) * size_of(dtype_) +
                                          offset_ * size_of(dtype_)) {
    storage_.reset();
    offset_ = 0;
  }
}

void* DenseTensor::alloc() {
  size_t need = static_cast<size_t>(numel()) * size_of(dtype_);
  if (storage_ && is_contiguous() && storage_->bytes() >= need + offset_ * size_of(dtype_)) {
    return raw_data();
  }
  strides_ = contiguous_strides(dims_);
  offset_ = 0;
  storage_ = std::make_shared<Storage>(need, place_);
  return storage_->data();
}

size_t DenseTensor::span_bytes() const {
  if (numel() == 0) return 0;
  int64_t last = offset_;
  for (int i = 0; i < dims_.size(); ++i) last += (dims_[i] - 1) * strides_[i];
  return static_cast<size_t>(last + 1) * size_of(dtype_);
}

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
}  // namespace

void copy_into(const DenseTensor& src, DenseTensor* dst) {
  OAR_ENFORCE(src.dims() == dst->dims(), InvalidArgument, "copy: shape mismatch, source ",
              src.dims(), " vs destination ", dst->dims());
  if (src.dtype() == dst->dtype() && src.is_contiguous() && dst->is_contiguous()) {
    if (src.numel() > 0 && src.raw_data() != dst->raw_data()) {
      std::memmove(dst->raw_data(), src.raw_data(), src.numel() * size_of(src.dtype()));
    }
    return;
  }
  if (src.dtype() == dst->dtype()) {
    const int64_t e = static_cast<int64_t>(size_of(src.dtype()));
    for_each_row(src, dst, [e](const char* s, int64_t ss, char* d, int64_t ds, int64_t n) {
      if (ss == e && ds == e) {
        std::memmove(d, s, static_cast<size_t>(n * e));
        return;
      }
      switch (e) {
        case 1: copy_row<uint8_t>(s, ss, d, ds, n); break;
        case 2: copy_row<uint16_t>(s, ss, d, ds, n); break;
        case 4: copy_row<uint32_t>(s, ss, d, ds, n); break;
        case 8: copy_row<uint64_t>(s, ss, d, ds, n); break;
        default:
          for (int64_t j = 0; j < n; ++j) std::memcpy(d + j * ds, s + j * ss, static_cast<size_t>(e));
      }
    });
    return;
  }
  visit_dtype(src.dtype(), "copy", [&](auto st) {
    using S = typename decltype(st)::type;
    visit_dtype(dst->dtype(), "copy", [&](auto dt) {
      using D = typename decltype(dt)::type;
      for_each_row(src, dst, [](const char* s, int64_t ss, char* d, int64_t ds, int64_t n) {
        for (int64_t j = 0; j < n; ++j) {
          S v;
          std::memcpy(&v, s + j * ss, sizeof(S));
          D out;
          if constexpr (std::is_same_v<D, bool>) {
            out = static_cast<float>(v) != 0.0f;
          } else if constexpr (std::is_same_v<S, float16> || std::is_same_v<S, bfloat16>) {
            out = static_cast<D>(static_cast<float>(v));
          } else {
            out = static_cast<D>(static_cast<OpMath<D>>(v));
          }
          std::memcpy(d + j * ds, &out, sizeof(D));
        }
      });
    });
  });
}

DenseTensor contiguous(const DenseTensor& t) {
  if (t.is_contiguous()) return t;
  DenseTensor out(t.dims(), t.dtype(), t.place());
  out.alloc();
  copy_into(t, &out);
  return out;
}

}  // namespace oar
