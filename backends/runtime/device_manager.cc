#include "backends/runtime/device_manager.h"

#include <dlfcn.h>
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdio>
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

// The collectives come as a group (ABI 1.1): a plugin fills all of them or none.
#define OAR_CCL_SLOTS(X)    \
  X(ccl_get_unique_id_size) \
  X(ccl_get_unique_id)      \
  X(ccl_comm_init_rank)     \
  X(ccl_destroy_comm)       \
  X(ccl_all_reduce)         \
  X(ccl_broadcast)          \
  X(ccl_reduce)             \
  X(ccl_all_gather)         \
  X(ccl_reduce_scatter)     \
  X(ccl_all_to_all)         \
  X(ccl_send)               \
  X(ccl_recv)               \
  X(ccl_group_start)        \
  X(ccl_group_end)

// Calls a slot of an Entry and throws with the device type, the slot name and the
// plugin's own message on failure.
#define OAR_DEVICE_CALL(e, slot, ...) check_call((e).iface, (e).type, (e).iface.slot(__VA_ARGS__), #slot)

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
    case OAR_ERROR_NOT_READY:
      return "OAR_ERROR_NOT_READY";
  }
  return "OAR_ERROR_<unknown>";
}

namespace {
std::string plugin_message(const OAR_DeviceInterface& iface) {
  const char* msg = iface.get_last_error_message != nullptr ? iface.get_last_error_message() : nullptr;
  return msg != nullptr ? msg : "";
}

[[noreturn]] void throw_status(OAR_Status status, const std::string& device_type, const char* call,
                               const std::string& detail) {
  ErrorKind kind = ErrorKind::kInternal;
  switch (status) {
    case OAR_ERROR_INVALID_ARGUMENT: kind = ErrorKind::kInvalidArgument; break;
    case OAR_ERROR_OUT_OF_MEMORY: kind = ErrorKind::kResourceExhausted; break;
    case OAR_ERROR_UNIMPLEMENTED: kind = ErrorKind::kUnimplemented; break;
    default: break;
  }
  throw Error(kind, detail::str_cat("device '", device_type, "': ", call, " failed with ", status_name(status), " (",
                                    static_cast<int>(status), ")", detail.empty() ? "" : ": ", detail));
}

inline void check_call(const OAR_DeviceInterface& iface, const std::string& type, OAR_Status status, const char* call) {
  if (__builtin_expect(status != OAR_SUCCESS, 0)) throw_status(status, type, call, plugin_message(iface));
}

KernelStager g_kernel_stager = nullptr;

// Note [Devices after fork]: a device's runtime lives in the process that initialized it
// (a stream's worker threads, a driver context); a child forked after that has none of
// it, and a call waiting for the device's work (a copy to the host, a synchronize) waited
// forever. As PyTorch does for CUDA, the child refuses to use such a device: every call
// that resolves a place raises. Its CPU work is unaffected (DataLoader workers run on the
// CPU: python/oar/io/dataloader.py), and a child started by 'spawn' or 'forkserver' is a
// fresh process.
std::atomic<bool> g_device_initialized{false};
std::atomic<bool> g_forked_after_init{false};
const int g_fork_handler = pthread_atfork(nullptr, nullptr, [] {
  if (g_device_initialized.load(std::memory_order_relaxed)) g_forked_after_init.store(true);
});

[[noreturn]] void refuse_forked(const Place& place) {
  OAR_THROW(PreconditionNotMet, place.str(),
            ": this process was forked from one that had initialized the device, and a forked child cannot "
            "use it (its runtime stayed in the parent). Start the child with the 'spawn' or 'forkserver' method "
            "(DataLoader(multiprocessing_context='spawn'), multiprocessing.get_context('spawn')), or keep its "
            "tensors on the CPU");
}
}  // namespace

void set_kernel_stager(KernelStager stager) { g_kernel_stager = stager; }

void check_status(OAR_Status status, const std::string& device_type, const char* call) {
  if (__builtin_expect(status == OAR_SUCCESS, 1)) return;
  throw_status(status, device_type, call, DeviceManager::instance().last_error_message(device_type));
}

std::string DeviceManager::last_error_message(const std::string& type) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(type);
  return it == entries_.end() ? "" : plugin_message(it->second->iface);
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
  std::string ccl_null, ccl_set;
#define OAR_CCL_SLOT(slot) (e->iface.slot == nullptr ? ccl_null : ccl_set) += " " #slot;
  OAR_CCL_SLOTS(OAR_CCL_SLOT)
#undef OAR_CCL_SLOT
  OAR_ENFORCE(ccl_null.empty() || ccl_set.empty(), InvalidArgument, "register_device('", type,
              "'): the collectives are all or none; set:", ccl_set, "; null:", ccl_null);

  // One registration at a time: the checks below and the insertion must not interleave
  // with another registration of the same type (entries_ itself is guarded by mu_).
  static std::mutex register_mu;
  std::lock_guard<std::mutex> register_lock(register_mu);
  OAR_ENFORCE(!has_device_type(type), AlreadyExists, "register_device: device type '", type, "' is already registered");
  // Places, kernels and allocators key on the interned id (Note [Device types]); a type
  // past the limit is refused here, before the plugin is initialized.
  const DeviceType id = device_type_from_name(type);
  // Kernels are checked before the plugin is initialized and registered after it is
  // live, so a refused plugin leaves neither a device nor a kernel behind.
  const bool has_kernels = reg.struct_size >= offsetof(OAR_DeviceRegistration, register_kernels) + sizeof(void*) &&
                           reg.register_kernels != nullptr;
  OAR_ENFORCE(!has_kernels || g_kernel_stager != nullptr, Unimplemented, "register_device('", type,
              "'): this build has no C kernel API");
  std::function<void()> commit_kernels = has_kernels ? g_kernel_stager(type, reg.register_kernels) : nullptr;
  OAR_DEVICE_CALL(*e, initialize);
  size_t count = 0;
  try {
    OAR_DEVICE_CALL(*e, get_device_count, &count);
  } catch (...) {
    e->iface.finalize();
    throw;
  }
  e->devices.resize(count);
  for (size_t i = 0; i < count; ++i) {
    e->devices[i] = OAR_Device{sizeof(OAR_Device), static_cast<int>(i), nullptr};
  }
  e->init_once = std::make_unique<std::once_flag[]>(count);
  {
    std::lock_guard<std::mutex> lock(mu_);
    entries_.emplace(type, std::move(e));
  }
  if (!has_allocator_factory(id)) register_allocator_factory(id, caching_allocator_for);
  if (commit_kernels) commit_kernels();
}

std::string DeviceManager::load_plugin(const std::string& so_path) {
  const std::string runtime_abi =
      detail::str_cat("runtime ABI ", OAR_DEVICE_ABI_VERSION_MAJOR, ".", OAR_DEVICE_ABI_VERSION_MINOR);
  // RTLD_LOCAL: two plugins may export the same symbol names without clashing.
  void* handle = dlopen(so_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    OAR_THROW(NotFound, "load_plugin('", so_path, "'): cannot load it (", runtime_abi, "): ", why ? why : "unknown");
  }
  auto init = reinterpret_cast<OAR_InitPluginFn>(dlsym(handle, OAR_INIT_PLUGIN_SYMBOL));
  if (init == nullptr) {
    dlclose(handle);
    OAR_THROW(NotFound, "load_plugin('", so_path, "'): no device type, no plugin ABI (", runtime_abi,
              "): the library does not export ", OAR_INIT_PLUGIN_SYMBOL,
              " (not an Oar plugin, or the entry point is not declared extern \"C\")");
  }
  OAR_DeviceRegistration reg;
  std::memset(&reg, 0, sizeof(reg));
  reg.struct_size = sizeof(reg);
  init(&reg);
  const std::string type = reg.device_type != nullptr ? reg.device_type : "";
  try {
    register_device(reg);
  } catch (const Error& e) {
    dlclose(handle);
    // One message with everything a user needs to tell which plugin to rebuild or fix.
    const bool has_version = reg.version.struct_size >= sizeof(OAR_DeviceAbiVersion);
    throw Error(e.kind(), detail::str_cat("load_plugin('", so_path, "'): device '", type, "', plugin ABI ",
                                          has_version ? std::to_string(reg.version.major) : std::string("?"), ".",
                                          has_version ? std::to_string(reg.version.minor) : std::string("?"), ", ",
                                          runtime_abi, ": ", e.message()));
  }
  // Never dlclose a registered plugin: its function pointers live in the table.
  return type;
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
  if (__builtin_expect(g_forked_after_init.load(std::memory_order_relaxed), 0)) refuse_forked(place);
  OAR_Device* dev = &e.devices[id];
  std::call_once(e.init_once[id], [&] {
    OAR_DEVICE_CALL(e, init_device, dev);
    g_device_initialized.store(true);
  });
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

OAR_DeviceProperties DeviceManager::properties(const Place& place) {
  auto [e, dev] = resolve(place);
  OAR_DeviceProperties props;
  std::memset(&props, 0, sizeof(props));
  props.struct_size = sizeof(props);
  if (e->iface.get_device_properties != nullptr) {
    OAR_DEVICE_CALL(*e, get_device_properties, dev, &props);
    props.name[sizeof(props.name) - 1] = '\0';  // whatever the plugin wrote
    props.struct_size = sizeof(props);
    return props;
  }
  std::snprintf(props.name, sizeof(props.name), "%s", e->type.c_str());
  size_t free_bytes = 0;
  OAR_DEVICE_CALL(*e, device_memory_stats, dev, &props.total_memory, &free_bytes);
  return props;
}

// Between two devices of one type: the table's memory_copy_p2p when it has one, else
// d2h then h2d (as between two types).
void DeviceManager::memcpy(const Place& dst_place, void* dst, const Place& src_place, const void* src, size_t bytes) {
  if (bytes == 0) return;
  if (dst_place == src_place) {
    memcpy_d2d(dst_place, dst, src, bytes);
  } else if (src_place.is_cpu()) {
    memcpy_h2d(dst_place, dst, src, bytes);
  } else if (dst_place.is_cpu()) {
    memcpy_d2h(src_place, dst, src, bytes);
  } else if (dst_place.type_id() == src_place.type_id() && resolve(src_place).first->iface.memory_copy_p2p) {
    auto [e, sdev] = resolve(src_place);
    OAR_Device* ddev = resolve(dst_place).second;
    OAR_DEVICE_CALL(*e, memory_copy_p2p, ddev, sdev, dst, src, bytes);
  } else {
    // Two devices without a peer copy (two types, or a table without the slot): d2h, h2d.
    std::unique_ptr<char[]> host(new char[bytes]);
    memcpy_d2h(src_place, host.get(), src, bytes);
    memcpy_h2d(dst_place, dst, host.get(), bytes);
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

/// Python's plugin discovery (python/oar/_plugins.py) calls this through ctypes, so the
/// loader needs no binding: 0 and the device type in `out`, or -1 and the error ("Kind:
/// message") in `out`, truncated to `out_size` bytes.
extern "C" __attribute__((visibility("default"))) int oar_load_plugin(const char* path, char* out, size_t out_size) {
  std::string text;
  int rc = 0;
  try {
    text = oar::backends::DeviceManager::instance().load_plugin(path != nullptr ? path : "");
  } catch (const std::exception& e) {
    text = e.what();
    rc = -1;
  }
  if (out != nullptr && out_size > 0) {
    const size_t n = std::min(text.size(), out_size - 1);
    std::memcpy(out, text.data(), n);
    out[n] = '\0';
  }
  return rc;
}
