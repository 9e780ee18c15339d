#include "paddle_core/tensor/allocator.h"

#include <array>

#include "paddle_core/base/errors.h"

namespace oar {

namespace {
std::array<AllocatorFactory, 3>& factories() {
  static std::array<AllocatorFactory, 3> f{};
  return f;
}
}  // namespace

void register_allocator_factory(DeviceType type, AllocatorFactory factory) {
  factories()[static_cast<int>(type)] = factory;
}

Allocator* get_allocator(const Place& place) {
  AllocatorFactory f = factories()[static_cast<int>(place.type())];
  OAR_ENFORCE(f != nullptr, NotFound, "no allocator is registered for place ", place.str(),
              " (is its backend compiled in and its device plugin loaded?)");
  return f(place);
}

}  // namespace oar
