#include "backends/runtime/device_manager.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "backends/runtime/caching_allocator.h"
#include "paddle_core/base/errors.h"
#include "paddle_core/tensor/allocator.h"
#include "paddle_core/tensor/dense_tensor.h"

namespace oar::backends {

// The slots every device must fill. Slots marked (optional) in device_ext.h, and any
// slot a later minor version appends, are absent from this list.
#define OAR_REQUIRED_DEVICE_SLOTS(X)                                                        \
  X(initialize) X(finalize) X(init_device) X(deinit_device) X(set_device) X(get_device)     \
  X(get_device_count) X(synchronize_device) X(create_stream) X(destroy_stream)             \
  X(synchronize_stream) X(create_event) X(destroy_event) X(record_event)                   \
  X(synchronize_event) X(device_memory_allocate) X(device_memory_deallocate)               \
  X(memory_copy_h2d) X(memory_copy_d2h) X(memory_copy_d2d) X(device_memory_stats)          \
  X(device_min_chunk_size)

// A table from a plugin built against ABI 1.0 ends at device_min_chunk_size; slots
// appended later are optional, so this is the smallest table the runtime accepts.
constexpr size_t kMinInterfaceSize =
    offsetof(OAR_DeviceInterface, device_min_chunk_size) + sizeof(void*);

// Calls a slot of an Entry and throws with the device type and slot name on failure.
#define OAR_DEVICE_CALL(e, slot, ...) check_status((e).iface.slot(__VA_ARGS__), (e).type, #slot)

struct DeviceManager::Entry {
  std::string type;
  std::string sub_type;
  OAR_DeviceInterface iface{};
  std::vector<OAR_Device> devices;
  std::unique_ptr<std::once_flag[]> init_once;  // one per device: init_device runs lazily
};

const char* status_name(OAR_Status status) {
  switch (status) {
    case OAR_SUCCESS: return "OAR_SUCCESS";
    case OAR_ERROR_INVALID_ARGUMENT: return "OAR_ERROR_INVALID_ARGUMENT";
    case OAR_ERROR_OUT_OF_MEMORY: return "OAR_ERROR_OUT_OF_MEMORY";
    case OAR_ERROR_UNIMPLEMENTED: return "OAR_ERROR_UNIMPLEMENTED";
    case OAR_ERROR_DEVICE: return "OAR_ERROR_DEVICE";
    case OAR_ERROR_INTERNAL: return "OAR_ERROR_INTERNAL";
  }
  return "OAR_ERROR_<unknown>";
}

void check_status(OAR_Status status, const std::string& device_type, const char* call) {
  if (__builtin_expect(status == OAR_SUCCESS, 1)) return;
  ErrorKind kind = ErrorKind::kInternal;
  switch (status) {
    case OAR_ERROR_INVALID_ARGUMENT: kind = ErrorKind::kInvalidArgument; break;
    case OAR_ERROR_OUT_OF_MEMORY: kind = ErrorKind::kResourceExhausted; break;
    case OAR_ERROR_UNIMPLEMENTED: kind = ErrorKind::kUnimplemented; break;
    default: break;
  }
  throw Error(kind, detail::str_cat("device '", device_type, "': ", call, " failed with ",
                                    status_name(status), " (", static_cast<int>(status), ")"));
}

DeviceManager& DeviceManager::instance() {
  static DeviceManager* manager = new DeviceManager();  // leaked on purpose, see header
  return *manager;
}

void DeviceManager::register_device(const OAR_DeviceRegistration& reg) {
  OAR_ENFORCE(reg.struct_size >= sizeof(OAR_DeviceRegistration), InvalidArgument,
              "register_device: OAR_DeviceRegistration.struct_size is ", reg.struct_size,
              ", expected at least ", sizeof(OAR_DeviceRegistration));
  OAR_ENFORCE(reg.device_type != nullptr && reg.device_type[0] != '\0', InvalidArgument,
              "register_device: OAR_DeviceRegistration.device_type is empty");
  const std::string type = reg.device_type;
  OAR_ENFORCE(reg.version.struct_size >= sizeof(OAR_DeviceAbiVersion), InvalidArgument,
              "register_device('", type, "'): OAR_DeviceAbiVersion.struct_size is ",
              reg.version.struct_size, ", expected at least ", sizeof(OAR_DeviceAbiVersion));
  OAR_ENFORCE(reg.version.major == OAR_DEVICE_ABI_VERSION_MAJOR, InvalidArgument,
              "register_device('", type, "'): built against device ABI ", reg.version.major, ".",
              reg.version.minor, ", this runtime speaks ", OAR_DEVICE_ABI_VERSION_MAJOR, ".",
              OAR_DEVICE_ABI_VERSION_MINOR, "; rebuild the plugin");
  OAR_ENFORCE(reg.interface != nullptr, InvalidArgument, "register_device('", type,
              "'): OAR_DeviceRegistration.interface is null");
  const size_t iface_size = reg.interface->struct_size;
  OAR_ENFORCE(iface_size >= kMinInterfaceSize, InvalidArgument, "register_device('", type,
              "'): OAR_DeviceInterface.struct_size is ", iface_size, ", expected at least ",
              kMinInterfaceSize);

  auto e = std::make_unique<Entry>();
  e->type = type;
  e->sub_type = reg.sub_device_type != nullptr ? reg.sub_device_type : "";
  // An older-minor table is shorter: its missing tail stays null (optional slots).
  // A newer-minor table is longer: slots this runtime does not know are ignored.
  std::memcpy(&e->iface, reg.interface, std::min(iface_size, sizeof(OAR_DeviceInterface)));
  e->iface.struct_size = sizeof(OAR_DeviceInterface);
#define OAR_CHECK_SLOT(slot)                                                          \
  OAR_ENFORCE(e->iface.slot != nullptr, InvalidArgument, "register_device('", type, \
              "'): required slot OAR_DeviceInterface." #slot " is null");
  OAR_REQUIRED_DEVICE_SLOTS(OAR_CHECK_SLOT)
#undef OAR_CHECK_SLOT

  std::lock_guard<std::mutex> lock(mu_);
  OAR_ENFORCE(entries_.count(type) == 0, AlreadyExists, "register_device: device type '", type,
              "' is already registered");
  // Places, kernels and allocators key on the interned id (Note [Device types]); a type
  // past the limit is refused here, before the plugin is initialized.
  const DeviceType id = device_type_from_name(type);
  OAR_DEVICE_CALL(*e, initialize);
  size_t count = 0;
  OAR_DEVICE_CALL(*e, get_device_count, &count);
  e->devices.resize(count);
  for (size_t i = 0; i < count; ++i) {
    e->devices[i] = OAR_Device{sizeof(OAR_Device), static_cast<int>(i), nullptr};
  }
  e->init_once = std::make_unique<std::once_flag[]>(count);
  entries_.emplace(type, std::move(e));
  if (!has_allocator_factory(id)) register_allocator_factory(id, caching_allocator_for);
}

void DeviceManager::load_plugin(const std::string& so_path) {
  // RTLD_LOCAL: two plugins may export the same symbol names without clashing.
  void* handle = dlopen(so_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    OAR_THROW(NotFound, "load_plugin: cannot load '", so_path, "': ", why ? why : "unknown");
  }
  auto init = reinterpret_cast<OAR_InitPluginFn>(dlsym(handle, OAR_INIT_PLUGIN_SYMBOL));
  if (init == nullptr) {
    dlclose(handle);
    OAR_THROW(NotFound, "load_plugin: '", so_path, "' does not export ", OAR_INIT_PLUGIN_SYMBOL,
              " (declare it extern \"C\")");
  }
  OAR_DeviceRegistration reg;
  std::memset(&reg, 0, sizeof(reg));
  reg.struct_size = sizeof(reg);
  init(&reg);
  try {
    register_device(reg);
  } catch (...) {
    dlclose(handle);
    throw;
  }
  // Never dlclose a registered plugin: its function pointers live in the table.
}

DeviceManager::Entry& DeviceManager::entry(const std::string& type) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(type);
  if (it == entries_.end()) {
    std::string known;
    for (const auto& [name, _] : entries_) known += (known.empty() ? "" : ", ") + name;
    OAR_THROW(NotFound, "device type '", type, "' is not registered (registered: ", known,
              "); load its plugin with load_plugin()");
  }
  return *it->second;
}

bool DeviceManager::has_device_type(const std::string& type) const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.count(type) != 0;
}

std::vector<std::string> DeviceManager::device_types() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> types;
  for (const auto& [name, _] : entries_) types.push_back(name);
  return types;
}

int DeviceManager::device_count(const std::string& type) const {
  return static_cast<int>(entry(type).devices.size());
}

const OAR_DeviceInterface& DeviceManager::interface(const std::string& type) const {
  return entry(type).iface;
}

std::string DeviceManager::device_type_of(const Place& place) { return device_type_name(place.type()); }

std::pair<DeviceManager::Entry*, OAR_Device*> DeviceManager::resolve(const Place& place) {
  Entry& e = entry(device_type_of(place));
  const int id = place.device_id();
  OAR_ENFORCE(id >= 0 && id < static_cast<int>(e.devices.size()), OutOfRange, "place ",
              place.str(), ": device id ", id, " is out of range, '", e.type, "' has ",
              e.devices.size(), " device(s)");
  OAR_Device* dev = &e.devices[id];
  std::call_once(e.init_once[id], [&] { OAR_DEVICE_CALL(e, init_device, dev); });
  return {&e, dev};
}

OAR_Device* DeviceManager::device(const Place& place) { return resolve(place).second; }

void DeviceManager::memcpy_h2d(const Place& place, void* dst, const void* src, size_t bytes) {
  auto [e, dev] = resolve(place);
  OAR_DEVICE_CALL(*e, memory_copy_h2d, dev, dst, src, bytes);
}

void DeviceManager::memcpy_d2h(const Place& place, void* dst, const void* src, size_t bytes) {
  auto [e, dev] = resolve(place);
  OAR_DEVICE_CALL(*e, memory_copy_d2h, dev, dst, src, bytes);
}

void DeviceManager::memcpy_d2d(const Place& place, void* dst, const void* src, size_t bytes) {
  auto [e, dev] = resolve(place);
  OAR_DEVICE_CALL(*e, memory_copy_d2d, dev, dst, src, bytes);
}

void DeviceManager::synchronize(const Place& place) {
  auto [e, dev] = resolve(place);
  OAR_DEVICE_CALL(*e, synchronize_device, dev);
}

void DeviceManager::memcpy(const Place& dst_place, void* dst, const Place& src_place, const void* src, size_t bytes) {
  if (bytes == 0) return;
  if (dst_place == src_place) {
    memcpy_d2d(dst_place, dst, src, bytes);
  } else if (src_place.is_cpu()) {
    memcpy_h2d(dst_place, dst, src, bytes);
  } else if (dst_place.is_cpu()) {
    memcpy_d2h(src_place, dst, src, bytes);
  } else {
    OAR_THROW(Unimplemented, "memcpy ", src_place.str(), " -> ", dst_place.str(),
              ": copies between two devices go through the host (copy_into stages them)");
  }
}

namespace {
// copy_into (paddle_core/tensor) reaches the device tables through this slot.
const bool g_copy_hook_installed = [] {
  copy_hooks().memcpy = [](const Place& dp, void* dst, const Place& sp, const void* src, size_t bytes) {
    DeviceManager::instance().memcpy(dp, dst, sp, src, bytes);
  };
  return true;
}();
}  // namespace

}  // namespace oar::backends
