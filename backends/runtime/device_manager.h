// DeviceManager: the one registry of device tables (backends/include/oar/device_ext.h).
// Built-in backends register at static-init time; plugins arrive through load_plugin.
// Everything above the backends reaches a device through here, by Place.
#pragma once

#include <cstddef>
#include <functional>
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
/// OAR_SUCCESS (OUT_OF_MEMORY -> ResourceExhausted, UNIMPLEMENTED -> Unimplemented, ...),
/// with the plugin's get_last_error_message text when its table has one.
void check_status(OAR_Status status, const std::string& device_type, const char* call);

/// The C kernel API's side of plugin loading (backends/runtime/kernel_ext.cc, which sits
/// above the kernel registry and registers itself here): calls a plugin's
/// register_kernels and checks every kernel against the op definitions, registering
/// nothing yet. Throws InvalidArgument naming what was refused; otherwise returns the
/// function that registers the checked kernels, run once the device is live.
using KernelStager = std::function<void()> (*)(const std::string& device_type,
                                               OAR_Status (*register_kernels)(const struct OAR_KernelApi*));
void set_kernel_stager(KernelStager stager);

/// Thread-safe. Entries are never removed, so references it returns stay valid.
/// The singleton is never destroyed: tensors freed by static destructors still reach it.
class DeviceManager {
 public:
  static DeviceManager& instance();

  /// Validates (struct sizes, ABI major version, required slots, all-or-none
  /// collectives), checks the plugin's C kernels, copies the table, calls initialize()
  /// and get_device_count(), then registers the device and its kernels together. Throws
  /// InvalidArgument naming what is wrong (and nothing is registered), AlreadyExists for
  /// a taken device type.
  void register_device(const OAR_DeviceRegistration& registration);
  /// dlopens `so_path` and registers the device its OAR_INIT_PLUGIN_SYMBOL describes;
  /// returns its device type. The library is never unloaded once registered. Every error
  /// names the file, the device type and both ABI versions; NotFound for a missing file
  /// or entry point.
  std::string load_plugin(const std::string& so_path);

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
  /// The device's properties (get_device_properties, ABI 1.1). A table without that
  /// slot (ABI 1.0, the CPU) reports its device type as name and device_memory_stats'
  /// total as total_memory; other fields stay 0.
  OAR_DeviceProperties properties(const Place& place);
  /// The plugin's last error text for the calling thread ("" when it has none).
  std::string last_error_message(const std::string& type) const;

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
