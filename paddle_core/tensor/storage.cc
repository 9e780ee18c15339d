#include "paddle_core/tensor/storage.h"

namespace oar {

Storage::Storage(size_t bytes, const Place& place)
    : bytes_(bytes), place_(place), allocator_(get_allocator(place)) {
  data_ = allocator_->allocate(bytes);
}

Storage::Storage(void* data, size_t bytes, const Place& place, std::function<void()> release)
    : data_(data), bytes_(bytes), place_(place), release_(std::move(release)) {}

Storage::~Storage() {
  if (allocator_ != nullptr) {
    allocator_->deallocate(data_, bytes_);
  } else if (release_) {
    release_();
  }
}

}  // namespace oar
