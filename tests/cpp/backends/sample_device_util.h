// Loads the sample device plugin (backends/examples/sample_device) once per process from
// OAR_SAMPLE_DEVICE_LIB, which ctest sets after its fixture built the plugin.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "backends/runtime/device_manager.h"

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

}  // namespace oar::backends::testing
