#include "paddle_core/tensor/place.h"

#include <atomic>
#include <mutex>

#include "paddle_core/base/errors.h"

namespace oar {

namespace {
// Names are written once, before `count` is published, and never change: readers need
// no lock (device_type_name sits on error paths and Place::str, not on hot paths, but
// it may run while another thread registers a plugin).
struct DeviceTypeNames {
  std::mutex mu;
  std::string names[kMaxDeviceTypes] = {"cpu", "gpu"};
  std::atomic<int> count{2};
};

DeviceTypeNames& table() {
  static DeviceTypeNames* t = new DeviceTypeNames();  // leaked: used by static destructors
  return *t;
}

std::string known_types(const DeviceTypeNames& t, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += (i ? ", " : "") + t.names[i];
  return out;
}
}  // namespace

DeviceType device_type_from_name(std::string_view name) {
  if (name == "cpu") return DeviceType::kCPU;
  if (name == "gpu" || name == "cuda") return DeviceType::kGPU;
  OAR_ENFORCE(!name.empty(), InvalidArgument, "device type name is empty");
  DeviceTypeNames& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  const int n = t.count.load(std::memory_order_relaxed);
  for (int i = 0; i < n; ++i) {
    if (t.names[i] == name) return static_cast<DeviceType>(i);
  }
  OAR_ENFORCE(n < kMaxDeviceTypes, ResourceExhausted, "cannot add device type '", name, "': at most ", kMaxDeviceTypes,
              " device types may exist (have: ", known_types(t, n), ")");
  t.names[n] = std::string(name);
  t.count.store(n + 1, std::memory_order_release);
  return static_cast<DeviceType>(n);
}

const std::string& device_type_name(DeviceType type) {
  const DeviceTypeNames& t = table();
  const int id = static_cast<int>(type), n = t.count.load(std::memory_order_acquire);
  OAR_ENFORCE(id >= 0 && id < n, NotFound, "device type id ", id, " is not registered (have: ", known_types(t, n), ")");
  return t.names[id];
}

int num_device_types() { return table().count.load(std::memory_order_acquire); }

Place CustomPlace(const std::string& device_type, int id) { return Place(device_type_from_name(device_type), id); }

std::string Place::str() const {
  if (is_cpu()) return "cpu";
  return device_type_name(type_) + ":" + std::to_string(device_id_);
}

Place parse_place(const std::string& s) {
  auto colon = s.find(':');
  std::string kind = s.substr(0, colon);
  int id = 0;
  if (colon != std::string::npos) {
    try {
      size_t used = 0;
      id = std::stoi(s.substr(colon + 1), &used);
      OAR_ENFORCE(used == s.size() - colon - 1 && id >= 0 && id <= INT16_MAX, InvalidArgument, "");
    } catch (...) {
      OAR_THROW(InvalidArgument, "set_device: bad device id in '", s, "'");
    }
  }
  OAR_ENFORCE(!kind.empty(), InvalidArgument, "set_device: empty device string");
  if (kind == "cpu") return CPUPlace();
  return Place(device_type_from_name(kind), id);
}

}  // namespace oar
