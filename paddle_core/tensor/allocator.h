// The allocator interface the tensor layer owns. Backends (backends/runtime) register
// one allocator factory per device type; Storage asks get_allocator(place) for memory,
// and kernels ask for scratch memory through Workspace / thread_workspace.
// See Note [Device types] (docs/notes/devices.md).
#pragma once

#include <cstddef>
#include <cstdint>

#include "paddle_core/tensor/place.h"

namespace oar {

struct AllocatorStats {
  int64_t allocated_bytes = 0;       // live, handed to tensors
  int64_t peak_allocated_bytes = 0;
  int64_t cached_bytes = 0;          // freed by tensors, kept for reuse
  int64_t num_device_allocs = 0;     // calls that reached the device (cache misses)
};

class Allocator {
 public:
  virtual ~Allocator() = default;
  /// Returns at least `bytes` bytes (64-byte aligned on CPU); throws ResourceExhausted.
  virtual void* allocate(size_t bytes) = 0;
  /// Returns memory from allocate(); `bytes` is the size that was asked for.
  virtual void deallocate(void* ptr, size_t bytes) = 0;
  /// Gives cached blocks back to the device.
  virtual void empty_cache() {}
  virtual AllocatorStats stats() const { return {}; }
};

using AllocatorFactory = Allocator* (*)(const Place& place);

/// Registers the factory for a device type (each backend once; the DeviceManager does it
/// for every device type it registers). A later registration replaces an earlier one, so
/// a backend with its own allocator can take over from the default.
void register_allocator_factory(DeviceType type, AllocatorFactory factory);
/// Whether a factory is registered for `type`.
bool has_allocator_factory(DeviceType type);
/// The allocator for `place`; throws NotFound if its device type has no factory.
Allocator* get_allocator(const Place& place);

/// Scratch memory for a kernel, from the place's allocator, returned to it (to its cache)
/// when the Workspace dies. Contents are undefined. Move-only.
class Workspace {
 public:
  Workspace() = default;
  Workspace(const Place& place, size_t bytes) : place_(place) { reserve(bytes); }
  ~Workspace() { release(); }
  Workspace(Workspace&& o) noexcept { *this = static_cast<Workspace&&>(o); }
  Workspace& operator=(Workspace&& o) noexcept;
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;

  void* data() const { return data_; }
  template <typename T>
  T* data() const {
    return static_cast<T*>(data_);
  }
  size_t bytes() const { return bytes_; }
  const Place& place() const { return place_; }
  /// Grows to at least `bytes` (never shrinks); contents are not kept when it grows.
  void reserve(size_t bytes);
  /// Gives the memory back to the allocator.
  void release();

 private:
  Place place_;
  Allocator* allocator_ = nullptr;
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

/// The calling thread's buffers for kernel family Tag (see thread_workspace).
template <typename Tag, int kSlots>
Workspace* thread_workspaces() {
  thread_local Workspace bufs[kSlots];
  return bufs;
}

/// Per-thread scratch that a kernel keeps across calls (a fresh page costs ~11 us to
/// fault in on these machines, more than many kernels): slot `slot` of the calling
/// thread's buffers for kernel family Tag on the CPU, grown (never shrunk) to at least
/// `bytes`. 64-byte aligned; contents are undefined. Kernels on another device keep
/// their scratch in a Workspace tied to the call instead.
template <typename Tag, int kSlots = 4>
void* thread_workspace(int slot, size_t bytes) {
  Workspace& w = thread_workspaces<Tag, kSlots>()[slot];
  if (w.bytes() < bytes) w.reserve(bytes);  // a default Workspace is on the CPU
  return w.data();
}
/// Gives the calling thread's buffers of kernel family Tag back to the allocator (a
/// kernel that will not run again soon, e.g. after a geometry chose another algorithm).
template <typename Tag, int kSlots = 4>
void release_thread_workspace() {
  for (int i = 0; i < kSlots; ++i) thread_workspaces<Tag, kSlots>()[i].release();
}

}  // namespace oar
