// Storage: one block of device memory shared by a tensor and all of its views.
// It carries the version counter that in-place ops bump and autograd checks.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "paddle_core/tensor/allocator.h"
#include "paddle_core/tensor/place.h"

namespace oar {

class Storage {
 public:
  /// Allocates `bytes` from the place's allocator.
  Storage(size_t bytes, const Place& place);
  /// Wraps memory owned elsewhere (NumPy, DLPack); `release` runs when the storage dies.
  Storage(void* data, size_t bytes, const Place& place, std::function<void()> release);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  const Place& place() const { return place_; }

  /// Incremented by every in-place write; saved tensors compare it at backward time.
  uint32_t version() const { return version_; }
  void bump_version() { ++version_; }

  /// Whether code outside Oar's ops may write this memory, bumping no version counter: a
  /// writable NumPy view, a DLPack export or import, a data_ptr() handed out. Set once,
  /// never cleared. A cache of what the memory holds (a packed filter) trusts the version
  /// counter alone only while this is false (Note [Filters reused across calls]).
  bool shared_out() const { return shared_out_.load(std::memory_order_relaxed); }
  void mark_shared_out() { shared_out_.store(true, std::memory_order_relaxed); }

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
  Place place_;
  Allocator* allocator_ = nullptr;  // null for external memory
  std::function<void()> release_;
  uint32_t version_ = 0;
  std::atomic<bool> shared_out_{false};
};

}  // namespace oar
