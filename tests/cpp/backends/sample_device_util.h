// Loads the sample device plugin (backends/examples/sample_device) once per process from
// OAR_SAMPLE_DEVICE_LIB, which ctest sets after its fixture built the plugin; and what the
// tests of its slots share: raw device memory read back, streams that run late.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "backends/runtime/device_manager.h"
#include "backends/runtime/streams.h"
#include "paddle_core/base/errors.h"

namespace oar::backends::testing {

/// The sample device's place `id`, loading the plugin on first use. SAMPLE_DEVICE_DELAY_US
/// is read when a stream is created, so tests that want a slow stream set it first.
inline Place sample_place(int id = 0) {
  DeviceManager& dm = DeviceManager::instance();
  if (!dm.has_device_type("sample")) {
    const char* lib = std::getenv("OAR_SAMPLE_DEVICE_LIB");
    if (lib == nullptr)
      ADD_FAILURE() << "OAR_SAMPLE_DEVICE_LIB is not set: run through ctest (its fixture builds "
                       "backends/examples/sample_device)";
    dm.load_plugin(lib != nullptr ? lib : "liboar_sample_device.so");
  }
  return CustomPlace("sample", id);
}

/// `bytes` of raw memory of a device through its table (no allocator), freed at scope exit.
struct DeviceBuffer {
  Place place;
  void* ptr = nullptr;
  size_t bytes;
  DeviceBuffer(const Place& p, size_t n) : place(p), bytes(n) {
    DeviceManager& dm = DeviceManager::instance();
    check_status(dm.interface(device_type_name(p.type())).device_memory_allocate(dm.device(p), &ptr, n),
                 device_type_name(p.type()), "device_memory_allocate");
  }
  ~DeviceBuffer() {
    DeviceManager& dm = DeviceManager::instance();
    dm.interface(device_type_name(place.type())).device_memory_deallocate(dm.device(place), ptr, bytes);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  /// The contents as T values, through a blocking copy (after the work queued on the device).
  template <typename T>
  std::vector<T> read() const {
    std::vector<T> out(bytes / sizeof(T));
    DeviceManager::instance().memcpy(CPUPlace(), out.data(), place, ptr, out.size() * sizeof(T));
    return out;
  }
};

/// A stream of the sample device whose every item runs `max_delay_us`/2..`max_delay_us`
/// later than queued (SAMPLE_DEVICE_DELAY_US, read at stream creation), so queued work
/// stays observably pending; choose a margin for a loaded machine.
inline OAR_Stream slow_stream(const Place& p, int max_delay_us) {
  setenv("SAMPLE_DEVICE_DELAY_US", std::to_string(max_delay_us).c_str(), 1);
  OAR_Stream s = create_stream(p);
  unsetenv("SAMPLE_DEVICE_DELAY_US");
  return s;
}

}  // namespace oar::backends::testing
