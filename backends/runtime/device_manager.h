// DeviceManager: the one registry of device tables (backends/include/oar/device_ext.h).
// Built-in backends register at static-init time; plugins arrive through load_plugin.
// Everything above the backends reaches a device through here, by Place.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "backends/include/oar/device_ext.h"
#include "paddle_core/tensor/place.h"

namespace oar::backends {

/// "OAR_SUCCESS", "OAR_ERROR_OUT_OF_MEMORY", ...
const char* status_name(OAR_Status status);

/// Throws oar::Error naming the device type and the call when `status` is not
/// OAR_SUCCESS (OUT_OF_MEMORY -> ResourceExhausted, UNIMPLEMENTED -> Unimplemented, ...).
void check_status(OAR_Status status, const std::string& device_type, const char* call);

/// Thread-safe. Entries are never removed, so references it returns stay valid.
/// The singleton is never destroyed: tensors freed by static destructors still reach it.
class DeviceManager {
 public:
  static DeviceManager& instance();

  /// Validates (struct sizes, ABI major version, required slots), copies the table,
  /// calls initialize() and get_device_count(). Throws InvalidArgument naming what is
  /// wrong, AlreadyExists for a taken device type.
  void register_device(const OAR_DeviceRegistration& registration);
  /// dlopens `so_path` and registers the device its OAR_INIT_PLUGIN_SYMBOL describes.
  /// The library is never unloaded. Throws NotFound for a missing file or symbol.
  void load_plugin(const std::string& so_path);

  bool has_device_type(const std::string& type) const;
  std::vector<std::string> device_types() const;
  /// Throws NotFound for an unregistered type.
  int device_count(const std::string& type) const;
  const OAR_DeviceInterface& interface(const std::string& type) const;

  /// "cpu", "gpu", or the plugin's name (the place's device type name).
  static std::string device_type_of(const Place& place);
  /// The device of `place`; init_device runs on its first use. Throws OutOfRange.
  OAR_Device* device(const Place& place);

  /// Blocking copies through the place's table; `place` is the device side.
  void memcpy_h2d(const Place& place, void* dst, const void* src, size_t bytes);
  void memcpy_d2h(const Place& place, void* dst, const void* src, size_t bytes);
  void memcpy_d2d(const Place& place, void* dst, const void* src, size_t bytes);
  /// Blocking copy between two places, one of them the CPU or both the same place:
  /// picks h2d, d2h or d2d. (Two devices: Unimplemented; copy_into stages via the host.)
  void memcpy(const Place& dst_place, void* dst, const Place& src_place, const void* src, size_t bytes);
  /// Waits for all work queued on the place's device.
  void synchronize(const Place& place);

 private:
  struct Entry;
  DeviceManager() = default;
  Entry& entry(const std::string& type) const;
  /// The entry and the (initialized) device of a place.
  std::pair<Entry*, OAR_Device*> resolve(const Place& place);

  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<Entry>> entries_;
};

}  // namespace oar::backends
