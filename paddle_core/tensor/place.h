// Place: where a tensor's memory lives, as (device type, device id). See Note [Device types]
// (docs/notes/devices.md).
//
// A DeviceType is a small interned id: 0 = cpu, 1 = gpu, and each plugin type ("npu",
// "sample", ...) gets the next id the first time its name is seen (its registration with
// the DeviceManager, or a place naming it). The kernel registry, the per-op kernel cache
// and the allocator factories are arrays indexed by this id, so two plugin types never
// share a slot and the lookups on every eager op stay a load from a fixed array.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace oar {

/// The interned id of a device type; values past kGPU name plugin types.
enum class DeviceType : int8_t { kCPU = 0, kGPU = 1 };

/// How many device types can exist at once (cpu, gpu and 14 plugin types). Fixed so that
/// per-device-type tables are plain arrays; interning one more is an error.
constexpr int kMaxDeviceTypes = 16;

/// The id of a device type name ("cpu", "gpu", "npu"), interning new names; "cuda" is "gpu".
/// Throws ResourceExhausted past kMaxDeviceTypes, listing the types that exist.
DeviceType device_type_from_name(std::string_view name);
/// "cpu", "gpu" or the plugin's name; throws NotFound for an id never interned.
const std::string& device_type_name(DeviceType type);
/// The number of interned device types (ids 0 .. n-1 are valid).
int num_device_types();

class Place {
 public:
  Place() = default;
  explicit Place(DeviceType type, int device_id = 0) : type_(type), device_id_(static_cast<int16_t>(device_id)) {}

  DeviceType type() const { return type_; }
  /// The device type as an index into per-device-type tables, in [0, kMaxDeviceTypes).
  int type_id() const { return static_cast<int>(type_); }
  int device_id() const { return device_id_; }
  bool is_cpu() const { return type_ == DeviceType::kCPU; }
  bool is_gpu() const { return type_ == DeviceType::kGPU; }
  /// A plugin device (any type past gpu).
  bool is_custom() const { return static_cast<int>(type_) > static_cast<int>(DeviceType::kGPU); }

  /// "cpu", "gpu:0", "npu:1"
  std::string str() const;
  bool operator==(const Place& o) const { return type_ == o.type_ && device_id_ == o.device_id_; }
  bool operator!=(const Place& o) const { return !(*this == o); }

 private:
  // 4 bytes, compared and copied as one word on the hot paths.
  DeviceType type_ = DeviceType::kCPU;
  int16_t device_id_ = 0;
};

inline Place CPUPlace() { return Place(DeviceType::kCPU); }
inline Place GPUPlace(int id) { return Place(DeviceType::kGPU, id); }
/// A plugin device's place; interns `device_type`.
Place CustomPlace(const std::string& device_type, int id);

/// Parses "cpu", "gpu", "gpu:1", "cuda:0", "npu:0"; throws InvalidArgument.
Place parse_place(const std::string& s);

}  // namespace oar
