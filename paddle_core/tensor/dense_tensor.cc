#include "paddle_core/tensor/dense_tensor.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>

#include "paddle_core/tensor/checked.h"

namespace oar {

bool DenseTensor::is_contiguous() const {
  int64_t expected = 1;
  for (int i = 0; i < dims_.size(); ++i) {
    if (dims_[i] == 0) return true;  // no element: any strides describe the (empty) memory
  }
  for (int i = dims_.size() - 1; i >= 0; --i) {
    if (dims_[i] == 1) continue;
    if (strides_[i] != expected) return false;
    // Saturates like contiguous_strides: a 0-size or IR stand-in shape's product can pass
    // int64 (a signed overflow is undefined behaviour; UBSan, tests/python/jit).
    if (__builtin_mul_overflow(expected, dims_[i], &expected)) expected = INT64_MAX;
  }
  return true;
}

namespace {
// Byte span [lo, hi] of t's elements (t not empty).
std::pair<int64_t, int64_t> byte_span(const DenseTensor& t) {
  const auto item = static_cast<int64_t>(size_of(t.dtype()));
  int64_t lo = t.offset() * item, hi = lo + item - 1;
  for (int i = 0; i < t.rank(); ++i) {
    const int64_t reach = (t.dims()[i] - 1) * t.strides()[i] * item;
    (reach < 0 ? lo : hi) += reach;
  }
  return {lo, hi};
}

// Whether delta = sum_k c_k * s_k has a solution with c_k in [lo_k, hi_k], the dims taken
// by decreasing |stride| from `k`. Each |stride| exceeds what the smaller ones can reach
// (checked by the caller), so c_k is one of the two integers nearest delta / s_k.
bool reachable(int64_t delta, const std::vector<std::array<int64_t, 3>>& dims, size_t k) {
  if (k == dims.size()) return delta == 0;
  const auto [s, lo, hi] = dims[k];
  const int64_t q = delta / s;  // toward zero: the other candidate is one further out
  for (int64_t c : {q, delta < 0 ? q - 1 : q + 1})
    if (c >= lo && c <= hi && reachable(delta - c * s, dims, k + 1)) return true;
  return false;
}
}  // namespace

bool may_overlap(const DenseTensor& a, const DenseTensor& b) {
  if (a.storage() == nullptr || a.storage() != b.storage() || a.numel() == 0 || b.numel() == 0) return false;
  const auto [alo, ahi] = byte_span(a);
  const auto [blo, bhi] = byte_span(b);
  if (ahi < blo || bhi < alo) return false;
  if (a.dtype() != b.dtype() || a.rank() != b.rank() || a.strides() != b.strides()) return true;
  // b's element j meets a's element i when b.offset - a.offset = sum_k (i_k - j_k) * s_k:
  // c_k = i_k - j_k in [-(b_k - 1), a_k - 1] (mirrored for a negative stride).
  std::vector<std::array<int64_t, 3>> dims;
  for (int k = 0; k < a.rank(); ++k) {
    const int64_t s = a.strides()[k], na = a.dims()[k] - 1, nb = b.dims()[k] - 1;
    if (s == 0 || (na == 0 && nb == 0)) continue;
    dims.push_back(s > 0 ? std::array<int64_t, 3>{s, -nb, na} : std::array<int64_t, 3>{-s, -na, nb});
  }
  std::sort(dims.begin(), dims.end(), [](const auto& x, const auto& y) { return x[0] > y[0]; });
  int64_t below = 0;  // the most the smaller strides reach
  for (size_t k = dims.size(); k-- > 0;) {
    if (dims[k][0] <= below) return true;  // strides that interleave: not decided here
    below += dims[k][0] * std::max(-dims[k][1], dims[k][2]);
  }
  return reachable(b.offset() - a.offset(), dims, 0);
}

void DenseTensor::set_dims(const Dims& dims) {
  for (int i = 0; i < dims.size(); ++i) {
    OAR_ENFORCE(dims[i] >= 0, InvalidArgument, "tensor dims must be non-negative, got ", dims);
  }
  // Not checked::bytes here: set_dims is metadata, and the IR's shape inference runs
  // infer-meta with a large stand-in for dynamic dims (pir kDynamicSentinel) whose products
  // may overflow without harm. The count is checked where it matters, when memory is
  // requested (alloc) and where a user's shape enters (meta::shape_from).
  dims_ = dims;
  strides_ = contiguous_strides(dims);
  const int64_t n = numel();
  if (storage_ && (n < 0 || storage_->bytes() < static_cast<size_t>(n) * size_of(dtype_) + offset_ * size_of(dtype_))) {
    storage_.reset();
    offset_ = 0;
  }
}

void* DenseTensor::alloc() {
  // The one place a shape becomes a memory request: a count or a byte size that overflows
  // is ResourceExhausted here, before any kernel writes through a wrapped size.
  const size_t need = checked::bytes(checked::product(dims_.data(), dims_.size(), dims_), size_of(dtype_), dims_);
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
  int64_t last = offset_;  // a negative stride reaches below the offset, not past it
  for (int i = 0; i < dims_.size(); ++i) last += std::max<int64_t>(0, (dims_[i] - 1) * strides_[i]);
  return static_cast<size_t>(last + 1) * size_of(dtype_);
}

CopyHooks& copy_hooks() {
  static CopyHooks hooks;
  return hooks;
}

namespace {
size_t nbytes(const DenseTensor& t) { return static_cast<size_t>(t.numel()) * size_of(t.dtype()); }

bool has_copy_kernel(const Place& place, DataType dtype) {
  auto fn = copy_hooks().has_kernel;
  OAR_ENFORCE(fn != nullptr, Internal, "copy on ", place.str(),
              ": no kernel registry is linked in (paddle_core/dispatch)");
  return fn(place, dtype);
}

void run_copy_kernel(const DenseTensor& src, DenseTensor* dst) {
  auto fn = copy_hooks().run_kernel;
  OAR_ENFORCE(fn != nullptr, Internal, "copy on ", src.place().str(),
              ": no kernel registry is linked in (paddle_core/dispatch)");
  fn(src, dst);
}

void device_memcpy(const Place& dp, void* dst, const Place& sp, const void* src, size_t bytes) {
  auto fn = copy_hooks().memcpy;
  OAR_ENFORCE(fn != nullptr, Internal, "copy ", sp.str(), " -> ", dp.str(),
              ": no device table is linked in (backends/runtime)");
  fn(dp, dst, sp, src, bytes);
}

// The first element of t's storage that t reaches: its offset, less what its negative
// strides (a view like x[::-1]) reach below it. t has elements.
int64_t lowest_element(const DenseTensor& t) {
  int64_t lo = t.offset();
  for (int i = 0; i < t.rank(); ++i) lo += std::min<int64_t>(0, (t.dims()[i] - 1) * t.strides()[i]);
  return lo;
}

// The bytes `t` spans, from its lowest element to its highest, copied to the host and
// viewed there with t's shape and strides (a plain contiguous copy when t is contiguous).
// How a device without a `copy` kernel (or one that takes no negative strides) still
// serves views: the strided walk runs on the host.
DenseTensor span_to_host(const DenseTensor& t) {
  const int64_t lo = lowest_element(t);
  const size_t begin = static_cast<size_t>(lo) * size_of(t.dtype());
  auto storage = std::make_shared<Storage>(t.span_bytes() - begin, CPUPlace());
  device_memcpy(CPUPlace(), storage->data(), t.place(), static_cast<const char*>(t.storage()->data()) + begin,
                storage->bytes());
  DenseTensor host(t.dims(), t.dtype(), CPUPlace());
  host.set_storage(std::move(storage));
  host.set_view(t.dims(), t.strides(), t.offset() - lo);
  return host;
}

// Writes a span_to_host(t) copy back over the bytes t spans.
void span_from_host(const DenseTensor& host, const DenseTensor& t) {
  const size_t begin = static_cast<size_t>(lowest_element(t)) * size_of(t.dtype());
  device_memcpy(t.place(), static_cast<char*>(t.storage()->data()) + begin, CPUPlace(), host.storage()->data(),
                host.storage()->bytes());
}

// Whether a device's copy kernel serves this copy. A view with a negative stride goes
// through the host instead: a plugin kernel is never handed one as its input (Note [Forward
// strides for plugin kernels] would copy it first, through here) and may refuse one as its
// output.
bool device_copy_kernel(const DenseTensor& src, const DenseTensor& dst) {
  return !has_negative_stride(src) && !has_negative_stride(dst) && has_copy_kernel(src.place(), src.dtype());
}

// host `src` -> any `dst`, through a host copy of dst's span when dst is a strided view:
// the bytes between its elements go back unchanged.
void scatter_through_host(const DenseTensor& src, DenseTensor* dst) {
  DenseTensor host;
  if (dst->is_contiguous()) {
    host = DenseTensor(dst->dims(), dst->dtype(), CPUPlace());  // every byte is written
    host.alloc();
  } else {
    host = span_to_host(*dst);
  }
  copy_into(src, &host);
  span_from_host(host, *dst);
}

// One place whose device type has no `copy` kernel for src's dtype: raw bytes through the
// device table when no element moves, else through host memory (slow, but it lets a device
// hold views before it has a copy kernel).
void copy_without_kernel(const DenseTensor& src, DenseTensor* dst) {
  if (src.dtype() == dst->dtype() && src.is_contiguous() && dst->is_contiguous()) {
    if (src.raw_data() != dst->raw_data()) {
      device_memcpy(dst->place(), dst->raw_data(), src.place(), src.raw_data(), nbytes(src));
    }
    return;
  }
  scatter_through_host(span_to_host(src), dst);
}

// device -> host.
void copy_to_cpu(const DenseTensor& src, DenseTensor* dst) {
  DenseTensor s = src;
  if (!s.is_contiguous() && device_copy_kernel(s, s)) s = contiguous(s);
  if (s.is_contiguous() && dst->dtype() == s.dtype() && dst->is_contiguous()) {
    device_memcpy(dst->place(), dst->raw_data(), s.place(), s.raw_data(), nbytes(s));
  } else {
    copy_into(span_to_host(s), dst);  // strides and dtype on the host
  }
}

// host -> device.
void copy_from_cpu(const DenseTensor& src, DenseTensor* dst) {
  if (dst->is_contiguous()) {
    DenseTensor s = src;
    if (src.dtype() != dst->dtype() || !src.is_contiguous()) {
      s = DenseTensor(src.dims(), dst->dtype(), CPUPlace());
      s.alloc();
      copy_into(src, &s);
    }
    device_memcpy(dst->place(), dst->raw_data(), s.place(), s.raw_data(), nbytes(s));
  } else if (device_copy_kernel(*dst, *dst)) {
    // Land contiguous on the device, then scatter into the view there.
    DenseTensor staged(dst->dims(), dst->dtype(), dst->place());
    staged.alloc();
    copy_from_cpu(src, &staged);
    run_copy_kernel(staged, dst);
  } else {
    scatter_through_host(src, dst);
  }
}
}  // namespace

bool has_negative_stride(const DenseTensor& t) {
  if (t.numel() == 0) return false;
  for (int i = 0; i < t.rank(); ++i)
    if (t.strides()[i] < 0) return true;
  return false;
}

DenseTensor without_negative_strides(const DenseTensor& t) {
  if (!has_negative_stride(t)) return t;
  if (!t.is_contiguous()) return contiguous(t);
  // Only axes of one element walk backwards (x[::-1][:1]): any stride describes them.
  DenseTensor v = t;
  v.set_view(t.dims(), contiguous_strides(t.dims()), t.offset());
  return v;
}

void copy_into(const DenseTensor& src, DenseTensor* dst) {
  OAR_ENFORCE(src.dims() == dst->dims(), InvalidArgument, "copy: shape mismatch, source ",
              src.dims(), " vs destination ", dst->dims());
  if (src.numel() == 0) return;
  const Place& sp = src.place();
  const Place& dp = dst->place();
  if (sp == dp) {
    // The CPU has a copy kernel for every dtype: skip the query on the common path.
    if (sp.is_cpu() || device_copy_kernel(src, *dst)) {
      run_copy_kernel(src, dst);
    } else {
      copy_without_kernel(src, dst);
    }
  } else if (dp.is_cpu()) {
    copy_to_cpu(src, dst);
  } else if (sp.is_cpu()) {
    copy_from_cpu(src, dst);
  } else {
    // Between two devices (or two ids of one type): raw bytes go device to device
    // (DeviceManager::memcpy: the table's peer copy, else staged); strides or a dtype
    // change through the host.
    if (src.dtype() == dst->dtype() && src.is_contiguous() && dst->is_contiguous()) {
      device_memcpy(dp, dst->raw_data(), sp, src.raw_data(), nbytes(src));
      return;
    }
    DenseTensor host(src.dims(), src.dtype(), CPUPlace());
    host.alloc();
    copy_to_cpu(src, &host);
    copy_from_cpu(host, dst);
  }
}

DenseTensor contiguous(const DenseTensor& t) {
  if (t.is_contiguous()) return t;
  DenseTensor out(t.dims(), t.dtype(), t.place());
  out.alloc();
  copy_into(t, &out);
  return out;
}

void copy_to_host(const DenseTensor& src, void* dst, size_t bytes) {
  OAR_ENFORCE(bytes <= nbytes(src), InvalidArgument, "copy_to_host: asked for ", bytes, " bytes of a ",
              dtype_name(src.dtype()), " tensor of shape ", src.dims(), " on ", src.place().str(), ", which holds ",
              nbytes(src));
  if (bytes == 0) return;
  if (src.place().is_cpu()) {
    DenseTensor s = contiguous(src);
    std::memcpy(dst, s.raw_data(), bytes);
    return;
  }
  DenseTensor s = src;
  if (!s.is_contiguous()) {
    s = DenseTensor(src.dims(), src.dtype(), CPUPlace());
    s.alloc();
    copy_to_cpu(src, &s);
    std::memcpy(dst, s.raw_data(), bytes);
    return;
  }
  device_memcpy(CPUPlace(), dst, s.place(), s.raw_data(), bytes);
}

}  // namespace oar
