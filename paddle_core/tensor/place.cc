#include "paddle_core/tensor/place.h"

#include <mutex>
#include <vector>

#include "paddle_core/base/errors.h"

namespace oar {

namespace {
std::mutex g_mu;
std::vector<std::string>& custom_names() {
  static std::vector<std::string> names{""};  // id 0 is "no custom type"
  return names;
}
}  // namespace

int intern_custom_device_type(const std::string& name) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto& names = custom_names();
  for (size_t i = 1; i < names.size(); ++i) {
    if (names[i] == name) return static_cast<int>(i);
  }
  names.push_back(name);
  return static_cast<int>(names.size() - 1);
}

const std::string& custom_device_type_name(int id) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto& names = custom_names();
  OAR_ENFORCE(id > 0 && id < static_cast<int>(names.size()), NotFound,
              "custom device type id ", id, " is not registered");
  return names[id];
}

Place CustomPlace(const std::string& device_type, int id) {
  return Place(DeviceType::kCustom, id, intern_custom_device_type(device_type));
}

std::string Place::str() const {
  switch (type_) {
    case DeviceType::kCPU: return "cpu";
    case DeviceType::kGPU: return "gpu:" + std::to_string(device_id_);
    case DeviceType::kCustom:
      return custom_device_type_name(custom_type_id_) + ":" + std::to_string(device_id_);
  }
  return "unknown";
}

Place parse_place(const std::string& s) {
  auto colon = s.find(':');
  std::string kind = s.substr(0, colon);
  int id = 0;
  if (colon != std::string::npos) {
    try {
      size_t used = 0;
      id = std::stoi(s.substr(colon + 1), &used);
      OAR_ENFORCE(used == s.size() - colon - 1 && id >= 0, InvalidArgument, "");
    } catch (...) {
      OAR_THROW(InvalidArgument, "set_device: bad device id in '", s, "'");
    }
  }
  if (kind == "cpu") return CPUPlace();
  if (kind == "gpu" || kind == "cuda") return GPUPlace(id);
  OAR_ENFORCE(!kind.empty(), InvalidArgument, "set_device: empty device string");
  return CustomPlace(kind, id);
}

}  // namespace oar
