// Place: where a tensor's memory lives. cpu, gpu:N, or custom:<device_type>:N for
// devices that enter through the plugin ABI (backends/include/oar/device_ext.h).
#pragma once

#include <cstdint>
#include <string>

namespace oar {

enum class DeviceType : int8_t { kCPU = 0, kGPU = 1, kCustom = 2 };

class Place {
 public:
  Place() = default;
  Place(DeviceType type, int device_id = 0, int custom_type_id = 0)
      : type_(type), device_id_(static_cast<int16_t>(device_id)),
        custom_type_id_(static_cast<int16_t>(custom_type_id)) {}

  DeviceType type() const { return type_; }
  int device_id() const { return device_id_; }
  /// For kCustom: the interned device type name (see custom_device_type_name).
  int custom_type_id() const { return custom_type_id_; }
  bool is_cpu() const { return type_ == DeviceType::kCPU; }
  bool is_gpu() const { return type_ == DeviceType::kGPU; }
  bool is_custom() const { return type_ == DeviceType::kCustom; }

  /// "cpu", "gpu:0", "npu:1"
  std::string str() const;
  bool operator==(const Place& o) const {
    return type_ == o.type_ && device_id_ == o.device_id_ && custom_type_id_ == o.custom_type_id_;
  }
  bool operator!=(const Place& o) const { return !(*this == o); }

 private:
  DeviceType type_ = DeviceType::kCPU;
  int16_t device_id_ = 0;
  int16_t custom_type_id_ = 0;
};

inline Place CPUPlace() { return Place(DeviceType::kCPU); }
inline Place GPUPlace(int id) { return Place(DeviceType::kGPU, id); }
Place CustomPlace(const std::string& device_type, int id);

/// Interns a plugin device type name ("npu") to a small id, and back.
int intern_custom_device_type(const std::string& name);
const std::string& custom_device_type_name(int id);

/// Parses "cpu", "gpu", "gpu:1", "npu:0"; throws InvalidArgument.
Place parse_place(const std::string& s);

}  // namespace oar
