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
// Walks every element of two same-shape strided tensors, calling fn(src_ptr, dst_ptr).
template <typename Fn>
void for_each_pair(const DenseTensor& src, DenseTensor* dst, Fn&& fn) {
  const int rank = src.rank();
  const size_t sb = size_of(src.dtype()), db = size_of(dst->dtype());
  const char* sp = static_cast<const char*>(src.raw_data());
  char* dp = static_cast<char*>(dst->raw_data());
  const int64_t n = src.numel();
  if (n == 0) return;
  Dims idx = Dims::filled(rank, 0);
  for (int64_t k = 0; k < n; ++k) {
    int64_t so = 0, dof = 0;
    for (int i = 0; i < rank; ++i) {
      so += idx[i] * src.strides()[i];
      dof += idx[i] * dst->strides()[i];
    }
    fn(sp + so * sb, dp + dof * db);
    for (int i = rank - 1; i >= 0; --i) {
      if (++idx[i] < src.dims()[i]) break;
      idx[i] = 0;
    }
  }
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
  visit_dtype(src.dtype(), "copy", [&](auto st) {
    using S = typename decltype(st)::type;
    visit_dtype(dst->dtype(), "copy", [&](auto dt) {
      using D = typename decltype(dt)::type;
      for_each_pair(src, dst, [](const char* s, char* d) {
        S v;
        std::memcpy(&v, s, sizeof(S));
        D out;
        if constexpr (std::is_same_v<D, bool>) {
          out = static_cast<float>(v) != 0.0f;
        } else if constexpr (std::is_same_v<S, float16> || std::is_same_v<S, bfloat16>) {
          out = static_cast<D>(static_cast<float>(v));
        } else {
          out = static_cast<D>(static_cast<OpMath<D>>(v));
        }
        std::memcpy(d, &out, sizeof(D));
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
