// The allocator interface the tensor layer owns. Backends (backends/runtime) register
// one allocator factory per device type; Storage asks get_allocator(place) for memory.
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

/// Registers the factory for a device type (done once by each backend).
void register_allocator_factory(DeviceType type, AllocatorFactory factory);
/// The allocator for `place`; throws NotFound if its backend is not registered.
Allocator* get_allocator(const Place& place);

}  // namespace oar
