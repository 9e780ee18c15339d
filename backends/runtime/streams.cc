#include "backends/runtime/streams.h"

#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>
#include <utility>

#include "backends/runtime/caching_allocator.h"
#include "backends/runtime/device_manager.h"
#include "paddle_core/base/errors.h"

namespace oar::backends {
namespace {

constexpr int kFastIds = 16;  // device ids with a lock-free slot (all real ones)

struct Call {
  const OAR_DeviceInterface& iface;
  OAR_Device* dev;
  std::string type;
};
Call call_for(const Place& place) {
  DeviceManager& dm = DeviceManager::instance();
  std::string type = DeviceManager::device_type_of(place);
  return Call{dm.interface(type), dm.device(place), std::move(type)};
}

// The thread's chosen stream per place; null means the default one.
thread_local OAR_Stream t_current[kMaxDeviceTypes][kFastIds] = {};
thread_local std::map<std::pair<int, int>, OAR_Stream>* t_current_far = nullptr;

// Whether any thread ever chose a stream (set_current_stream) on a place of this device
// type: until then every thread's current stream is the default one, found without
// reading a thread_local (liboar_core is dlopen'ed, so each read of one is a
// __tls_get_addr call; an initial-exec model does not fit the static TLS left beside
// OpenBLAS). Set once, never cleared; relaxed: only the setting thread's own slots
// differ from the default, and it sees its own store.
std::atomic<bool> g_chosen[kMaxDeviceTypes] = {};

OAR_Stream& current_slot(const Place& place) {
  const int id = place.device_id();
  if (id < kFastIds) return t_current[place.type_id()][id];
  if (t_current_far == nullptr) t_current_far = new std::map<std::pair<int, int>, OAR_Stream>();  // per thread
  return (*t_current_far)[{place.type_id(), id}];
}

}  // namespace

namespace {
// The default streams of small ids, lock-free (written once each, at creation).
std::atomic<OAR_Stream> g_default[kMaxDeviceTypes][kFastIds] = {};

[[gnu::noinline]] OAR_Stream default_stream_slow(const Place& place) {
  static auto* mu = new std::mutex();
  static auto* far = new std::map<std::pair<int, int>, OAR_Stream>();
  const int id = place.device_id();
  std::lock_guard<std::mutex> lock(*mu);
  OAR_Stream& s = (*far)[{place.type_id(), id}];
  if (s == nullptr) s = create_stream(place);  // never destroyed: the device outlives it
  if (id < kFastIds) g_default[place.type_id()][id].store(s, std::memory_order_release);
  return s;
}

inline OAR_Stream default_stream_fast(const Place& place) {
  const int id = place.device_id();
  if (id < kFastIds) {
    if (OAR_Stream s = g_default[place.type_id()][id].load(std::memory_order_acquire)) return s;
  }
  return default_stream_slow(place);
}
}  // namespace

OAR_Stream default_stream(const Place& place) { return place.is_cpu() ? nullptr : default_stream_fast(place); }

OAR_Stream current_stream(const Place& place) {
  if (place.is_cpu()) return nullptr;
  // Every kernel and device allocation asks.
  if (!g_chosen[place.type_id()].load(std::memory_order_relaxed)) return default_stream_fast(place);
  OAR_Stream s = current_slot(place);
  return s != nullptr ? s : default_stream_fast(place);
}

OAR_Stream set_current_stream(const Place& place, OAR_Stream stream) {
  if (place.is_cpu()) return nullptr;
  OAR_Stream prev = current_stream(place);
  if (stream != nullptr) g_chosen[place.type_id()].store(true, std::memory_order_relaxed);
  current_slot(place) = stream;
  return prev;
}

#define OAR_STREAM_CALL(c, slot, ...) check_status((c).iface.slot(__VA_ARGS__), (c).type, #slot)

OAR_Stream create_stream(const Place& place, unsigned int flags) {
  Call c = call_for(place);
  OAR_Stream s = nullptr;
  if (flags != OAR_STREAM_DEFAULT && c.iface.create_stream_with_flags != nullptr) {
    OAR_STREAM_CALL(c, create_stream_with_flags, c.dev, flags, &s);
  } else {
    OAR_STREAM_CALL(c, create_stream, c.dev, &s);
  }
  return s;
}
// Waits for the stream's work (its failure is thrown and the stream kept), makes the
// place's caching allocator forget it, and refuses the default stream.
void destroy_stream(const Place& place, OAR_Stream stream) {
  Call c = call_for(place);
  if (!place.is_cpu()) {
    OAR_ENFORCE(stream != nullptr, InvalidArgument, "destroy_stream: null stream of ", place.str());
    const OAR_Stream heir = default_stream(place);
    OAR_ENFORCE(stream != heir, InvalidArgument, "destroy_stream: the default stream of ", place.str(),
                " is never destroyed");
    // Its queued work may still use blocks freed on it (a failure there is thrown and the
    // stream stays); then the allocator forgets it, so no later free or poll touches it.
    OAR_STREAM_CALL(c, synchronize_stream, c.dev, stream);
    if (CachingAllocator* a = existing_caching_allocator(place)) a->forget_stream(stream, heir);
    if (current_slot(place) == stream) current_slot(place) = nullptr;  // this thread's; others' are theirs
  }
  OAR_STREAM_CALL(c, destroy_stream, c.dev, stream);
}
void synchronize_stream(const Place& place, OAR_Stream stream) {
  Call c = call_for(place);
  OAR_STREAM_CALL(c, synchronize_stream, c.dev, stream);
}
OAR_Event create_event(const Place& place) {
  Call c = call_for(place);
  OAR_Event e = nullptr;
  OAR_STREAM_CALL(c, create_event, c.dev, &e);
  return e;
}
void destroy_event(const Place& place, OAR_Event event) {
  Call c = call_for(place);
  OAR_STREAM_CALL(c, destroy_event, c.dev, event);
}
void record_event(const Place& place, OAR_Stream stream, OAR_Event event) {
  Call c = call_for(place);
  OAR_STREAM_CALL(c, record_event, c.dev, stream, event);
}
void synchronize_event(const Place& place, OAR_Event event) {
  Call c = call_for(place);
  OAR_STREAM_CALL(c, synchronize_event, c.dev, event);
}
void stream_wait_event(const Place& place, OAR_Stream stream, OAR_Event event) {
  Call c = call_for(place);
  if (c.iface.stream_wait_event == nullptr) {
    OAR_STREAM_CALL(c, synchronize_event, c.dev, event);
    return;
  }
  OAR_STREAM_CALL(c, stream_wait_event, c.dev, stream, event);
}

void memcpy_async(const Place& dst_place, void* dst, const Place& src_place, const void* src, size_t bytes,
                  OAR_Stream stream) {
  if (bytes == 0) return;
  const Place& device = dst_place.is_cpu() ? src_place : dst_place;
  OAR_ENFORCE(dst_place.is_cpu() || src_place.is_cpu() || dst_place == src_place, Unimplemented, "memcpy_async ",
              src_place.str(), " -> ", dst_place.str(), ": copies between two devices go through the host");
  Call c = call_for(device);
  auto slot = src_place.is_cpu()   ? c.iface.async_memory_copy_h2d
              : dst_place.is_cpu() ? c.iface.async_memory_copy_d2h
                                   : c.iface.async_memory_copy_d2d;
  if (slot == nullptr || stream == nullptr) {
    DeviceManager::instance().memcpy(dst_place, dst, src_place, src, bytes);
    return;
  }
  check_status(slot(c.dev, stream, dst, src, bytes), c.type, "async_memory_copy");
}

void* pinned_allocate(const Place& place, size_t bytes) {
  Call c = call_for(place);
  void* p = nullptr;
  if (c.iface.host_memory_allocate == nullptr) {
    p = std::malloc(bytes == 0 ? 1 : bytes);
    OAR_ENFORCE(p != nullptr, ResourceExhausted, "pinned_allocate: out of host memory for ", bytes, " bytes");
    return p;
  }
  OAR_STREAM_CALL(c, host_memory_allocate, c.dev, &p, bytes);
  return p;
}
void pinned_deallocate(const Place& place, void* ptr, size_t bytes) {
  Call c = call_for(place);
  if (c.iface.host_memory_deallocate == nullptr) {
    std::free(ptr);
    return;
  }
  OAR_STREAM_CALL(c, host_memory_deallocate, c.dev, ptr, bytes);
}

}  // namespace oar::backends
