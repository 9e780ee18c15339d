// DenseTensor: shape, strides (in elements), offset, dtype and a shared Storage.
// Views (transpose, slice, expand, reshape of contiguous data) share the Storage and
// differ only in this metadata. Kernels see DenseTensors, never autograd state.
#pragma once

#include <memory>

#include "paddle_core/tensor/dims.h"
#include "paddle_core/tensor/dtype.h"
#include "paddle_core/tensor/place.h"
#include "paddle_core/tensor/storage.h"

namespace oar {

class DenseTensor {
 public:
  DenseTensor() = default;
  /// Metadata only (no memory): what an infer-meta function fills in.
  DenseTensor(const Dims& dims, DataType dtype, const Place& place = CPUPlace())
      : dims_(dims), strides_(contiguous_strides(dims)), dtype_(dtype), place_(place) {}

  const Dims& dims() const { return dims_; }
  const Dims& strides() const { return strides_; }
  int64_t offset() const { return offset_; }
  int rank() const { return dims_.size(); }
  int64_t numel() const { return dims_.numel(); }
  DataType dtype() const { return dtype_; }
  const Place& place() const { return place_; }
  const std::shared_ptr<Storage>& storage() const { return storage_; }
  bool initialized() const { return storage_ != nullptr; }
  bool is_contiguous() const;

  /// Sets shape (and contiguous strides, offset 0); drops storage that is too small.
  void set_dims(const Dims& dims);
  void set_dtype(DataType t) { dtype_ = t; }
  void set_place(const Place& p) { place_ = p; }
  /// Turns this tensor into a view: same storage, new shape/strides/offset.
  void set_view(const Dims& dims, const Dims& strides, int64_t offset) {
    dims_ = dims;
    strides_ = strides;
    offset_ = offset;
  }
  void set_storage(std::shared_ptr<Storage> s, int64_t offset = 0) {
    storage_ = std::move(s);
    offset_ = offset;
  }

  /// Allocates contiguous memory for the current dims/dtype/place unless it already
  /// has enough; returns the first element.
  void* alloc();
  template <typename T> T* alloc() { return static_cast<T*>(alloc()); }

  /// Pointer to the first element (storage + offset).
  void* raw_data() const {
    return storage_ ? static_cast<char*>(storage_->data()) + offset_ * size_of(dtype_) : nullptr;
  }
  template <typename T> T* data() const { return static_cast<T*>(raw_data()); }

  /// The highest byte this view touches, for bound checks of views.
  size_t span_bytes() const;

 private:
  std::shared_ptr<Storage> storage_;
  Dims dims_;
  Dims strides_;
  int64_t offset_ = 0;
  DataType dtype_ = DataType::UNDEFINED;
  Place place_;
};

/// A contiguous copy of `t` (or `t` itself when already contiguous).
DenseTensor contiguous(const DenseTensor& t);
/// Copies src into dst element by element (same shape; dtype conversion allowed; any strides).
void copy_into(const DenseTensor& src, DenseTensor* dst);

}  // namespace oar
