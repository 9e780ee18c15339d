#include "paddle_core/tensor/allocator.h"

#include <atomic>

#include "paddle_core/base/errors.h"

namespace oar {

namespace {
// Indexed by device type id. Atomic because a plugin may register while other threads
// allocate; get_allocator reads it on every tensor allocation, so it stays a plain load.
std::atomic<AllocatorFactory> g_factories[kMaxDeviceTypes] = {};
}  // namespace

void register_allocator_factory(DeviceType type, AllocatorFactory factory) {
  const int id = static_cast<int>(type);
  OAR_ENFORCE(id >= 0 && id < kMaxDeviceTypes, OutOfRange, "register_allocator_factory: device type id ", id,
              " is out of range [0, ", kMaxDeviceTypes, ")");
  g_factories[id].store(factory, std::memory_order_release);
}

bool has_allocator_factory(DeviceType type) {
  const int id = static_cast<int>(type);
  return id >= 0 && id < kMaxDeviceTypes && g_factories[id].load(std::memory_order_acquire) != nullptr;
}

Allocator* get_allocator(const Place& place) {
  AllocatorFactory f = g_factories[place.type_id()].load(std::memory_order_acquire);
  OAR_ENFORCE(f != nullptr, NotFound, "no allocator is registered for place ", place.str(),
              " (is its backend compiled in and its device plugin loaded?)");
  return f(place);
}

Workspace& Workspace::operator=(Workspace&& o) noexcept {
  if (this != &o) {
    release();
    place_ = o.place_;
    allocator_ = o.allocator_;
    data_ = o.data_;
    bytes_ = o.bytes_;
    o.allocator_ = nullptr;
    o.data_ = nullptr;
    o.bytes_ = 0;
  }
  return *this;
}

void Workspace::reserve(size_t bytes) {
  if (bytes <= bytes_) return;
  release();
  if (allocator_ == nullptr) allocator_ = get_allocator(place_);
  data_ = allocator_->allocate(bytes);
  bytes_ = bytes;
}

void Workspace::release() {
  if (data_ != nullptr) allocator_->deallocate(data_, bytes_);
  data_ = nullptr;
  bytes_ = 0;
}

}  // namespace oar
