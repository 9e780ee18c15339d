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

/// A contiguous copy of `t` on its place (or `t` itself when already contiguous).
DenseTensor contiguous(const DenseTensor& t);
/// Whether `t` has elements and a negative stride (a view like x[::-1]).
bool has_negative_stride(const DenseTensor& t);
/// `t` with no negative stride: a contiguous copy where it walks an axis backwards, the
/// same view with forward strides where only one-element axes had negative ones.
DenseTensor without_negative_strides(const DenseTensor& t);
/// Copies src into dst element by element: same shape; dtype conversion allowed; any
/// strides; any two places. On one place it runs that place's `copy` kernel; across
/// places it goes through the device table (Note [Device types], docs/notes/devices.md).
void copy_into(const DenseTensor& src, DenseTensor* dst);
/// Copies the first `bytes` bytes of `src`'s elements, in row-major order, into host
/// memory `dst`: how the host reads a device scalar (a loop condition, say). Blocks
/// until the bytes have arrived.
void copy_to_host(const DenseTensor& src, void* dst, size_t bytes);

/// Whether a and b may address a common element: false when they are on different
/// storages, when their byte spans are disjoint, or when (one dtype, one set of strides:
/// two slices of one tensor, x[:, :16] and x[:, 16:]) no index of one lands on the
/// other's; true otherwise, or when the strides make that question hard (conservative).
bool may_overlap(const DenseTensor& a, const DenseTensor& b);

/// The slots through which copies reach the layers above the tensor layer (DESIGN:
/// higher layers register into slots that lower layers own). Filled at static init:
/// the kernel slots by the kernel registry (paddle_core/dispatch), `memcpy` by the device
/// manager (backends/runtime).
struct CopyHooks {
  /// Whether `place`'s device type has a `copy` kernel for source dtype `dtype`.
  bool (*has_kernel)(const Place& place, DataType dtype) = nullptr;
  /// Runs that kernel: src and dst on one place (has_kernel is true).
  void (*run_kernel)(const DenseTensor& src, DenseTensor* dst) = nullptr;
  /// Blocking byte copy through the device table, host <-> device or within one place.
  void (*memcpy)(const Place& dst_place, void* dst, const Place& src_place, const void* src, size_t bytes) = nullptr;
};
CopyHooks& copy_hooks();

}  // namespace oar
