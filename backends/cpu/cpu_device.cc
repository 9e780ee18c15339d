// The CPU as a device of the C ABI (backends/include/oar/device_ext.h): the first user
// of the same table every plugin fills. CPU kernels run synchronously on the calling
// thread, so streams and events are placeholders and every wait returns at once.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "backends/include/oar/device_ext.h"
#include "backends/runtime/device_manager.h"

namespace oar::backends {
namespace {

// 64 bytes: a cache line and the widest vector load (AVX-512), so kernels may use
// aligned loads and no two tensors share a line.
constexpr size_t kCpuAlignment = 64;
// Blocks of at least kHugeBlock bytes are aligned to a transparent huge page and advised
// to use them (what NumPy does for its arrays): a kernel streaming through 64 MB with 4 KB
// pages measured 1.35-1.45x slower than through the same bytes in 2 MB pages (one
// thread, Zen 4; Note [Streaming stores] in docs/notes/cinn.md). With THP `madvise` (this
// machine's setting) only advised ranges get them; `never` ignores the advice.
constexpr size_t kHugePage = size_t{2} << 20;
constexpr size_t kHugeBlock = size_t{4} << 20;

// Non-null placeholders: callers treat a null handle as "not created".
const OAR_Stream kCpuStream = reinterpret_cast<OAR_Stream>(uintptr_t{0x5157});
const OAR_Event kCpuEvent = reinterpret_cast<OAR_Event>(uintptr_t{0xE7E7});

OAR_Status ok() { return OAR_SUCCESS; }
OAR_Status valid(const OAR_Device* d) {
  return d != nullptr && d->id == 0 ? OAR_SUCCESS : OAR_ERROR_INVALID_ARGUMENT;
}

OAR_Status cpu_initialize() { return ok(); }
OAR_Status cpu_finalize() { return ok(); }
OAR_Status cpu_init_device(OAR_Device* d) { return valid(d); }
OAR_Status cpu_deinit_device(OAR_Device* d) { return valid(d); }
OAR_Status cpu_set_device(const OAR_Device* d) { return valid(d); }
OAR_Status cpu_get_device(OAR_Device* d) {
  if (d == nullptr) return OAR_ERROR_INVALID_ARGUMENT;
  d->id = 0;
  return ok();
}
OAR_Status cpu_get_device_count(size_t* count) {
  if (count == nullptr) return OAR_ERROR_INVALID_ARGUMENT;
  *count = 1;
  return ok();
}
OAR_Status cpu_synchronize_device(const OAR_Device* d) { return valid(d); }

OAR_Status cpu_create_stream(const OAR_Device* d, OAR_Stream* s) {
  if (s == nullptr) return OAR_ERROR_INVALID_ARGUMENT;
  *s = kCpuStream;
  return valid(d);
}
OAR_Status cpu_destroy_stream(const OAR_Device* d, OAR_Stream) { return valid(d); }
OAR_Status cpu_synchronize_stream(const OAR_Device* d, OAR_Stream) { return valid(d); }
OAR_Status cpu_stream_wait_event(const OAR_Device* d, OAR_Stream, OAR_Event) { return valid(d); }
OAR_Status cpu_create_event(const OAR_Device* d, OAR_Event* e) {
  if (e == nullptr) return OAR_ERROR_INVALID_ARGUMENT;
  *e = kCpuEvent;
  return valid(d);
}
OAR_Status cpu_destroy_event(const OAR_Device* d, OAR_Event) { return valid(d); }
OAR_Status cpu_record_event(const OAR_Device* d, OAR_Stream, OAR_Event) { return valid(d); }
OAR_Status cpu_synchronize_event(const OAR_Device* d, OAR_Event) { return valid(d); }

OAR_Status cpu_allocate(const OAR_Device*, void** ptr, size_t size) {
  if (ptr == nullptr) return OAR_ERROR_INVALID_ARGUMENT;
  // posix_memalign(0) may return null; hand out a real, unique block instead.
  *ptr = nullptr;
  const size_t align = size >= kHugeBlock ? kHugePage : kCpuAlignment;
  if (posix_memalign(ptr, align, size == 0 ? kCpuAlignment : size) != 0) {
    *ptr = nullptr;
    return OAR_ERROR_OUT_OF_MEMORY;
  }
#ifdef MADV_HUGEPAGE
  // The whole huge pages inside the block (advice only: a failure changes nothing).
  if (size >= kHugeBlock) (void)madvise(*ptr, size / kHugePage * kHugePage, MADV_HUGEPAGE);
#endif
  return ok();
}
OAR_Status cpu_deallocate(const OAR_Device*, void* ptr, size_t) {
  std::free(ptr);
  return ok();
}
OAR_Status cpu_copy(const OAR_Device*, void* dst, const void* src, size_t size) {
  if (size == 0) return ok();
  if (dst == nullptr || src == nullptr) return OAR_ERROR_INVALID_ARGUMENT;
  std::memcpy(dst, src, size);
  return ok();
}
OAR_Status cpu_async_copy(const OAR_Device* d, OAR_Stream, void* dst, const void* src,
                          size_t size) {
  return cpu_copy(d, dst, src, size);
}
OAR_Status cpu_memory_stats(const OAR_Device*, size_t* total, size_t* free_bytes) {
  if (total == nullptr || free_bytes == nullptr) return OAR_ERROR_INVALID_ARGUMENT;
  const long page = sysconf(_SC_PAGESIZE);
  *total = static_cast<size_t>(sysconf(_SC_PHYS_PAGES)) * page;
  *free_bytes = static_cast<size_t>(sysconf(_SC_AVPHYS_PAGES)) * page;
  return ok();
}
OAR_Status cpu_min_chunk_size(const OAR_Device*, size_t* size) {
  if (size == nullptr) return OAR_ERROR_INVALID_ARGUMENT;
  *size = kCpuAlignment;
  return ok();
}

OAR_DeviceInterface make_cpu_interface() {
  OAR_DeviceInterface t{};
  t.struct_size = sizeof(t);
  t.initialize = cpu_initialize;
  t.finalize = cpu_finalize;
  t.init_device = cpu_init_device;
  t.deinit_device = cpu_deinit_device;
  t.set_device = cpu_set_device;
  t.get_device = cpu_get_device;
  t.get_device_count = cpu_get_device_count;
  t.synchronize_device = cpu_synchronize_device;
  t.create_stream = cpu_create_stream;
  t.destroy_stream = cpu_destroy_stream;
  t.synchronize_stream = cpu_synchronize_stream;
  t.stream_wait_event = cpu_stream_wait_event;
  t.create_event = cpu_create_event;
  t.destroy_event = cpu_destroy_event;
  t.record_event = cpu_record_event;
  t.synchronize_event = cpu_synchronize_event;
  t.device_memory_allocate = cpu_allocate;
  t.device_memory_deallocate = cpu_deallocate;
  t.host_memory_allocate = cpu_allocate;  // host memory is device memory here
  t.host_memory_deallocate = cpu_deallocate;
  t.memory_copy_h2d = cpu_copy;
  t.memory_copy_d2h = cpu_copy;
  t.memory_copy_d2d = cpu_copy;
  t.async_memory_copy_h2d = cpu_async_copy;
  t.async_memory_copy_d2h = cpu_async_copy;
  t.async_memory_copy_d2d = cpu_async_copy;
  t.device_memory_stats = cpu_memory_stats;
  t.device_min_chunk_size = cpu_min_chunk_size;
  return t;
}

// Registers at static-init time, as a plugin would from oar_init_plugin; DeviceManager
// copies the table, so a function-local one is fine.
const bool g_cpu_registered = [] {
  OAR_DeviceInterface table = make_cpu_interface();
  OAR_DeviceRegistration reg{};
  reg.struct_size = sizeof(reg);
  reg.version = {sizeof(OAR_DeviceAbiVersion), OAR_DEVICE_ABI_VERSION_MAJOR,
                 OAR_DEVICE_ABI_VERSION_MINOR};
  reg.device_type = "cpu";
  reg.sub_device_type = "host";
  reg.interface = &table;
  DeviceManager::instance().register_device(reg);
  return true;
}();

}  // namespace
}  // namespace oar::backends
