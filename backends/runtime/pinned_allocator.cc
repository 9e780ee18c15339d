// Note [Pinned memory] (docs/notes/devices.md): the caching host allocator of pinned
// blocks and its reuse rule. One registry for all device types behind one mutex: pinned
// allocations are rare (a data loader's batches), and every path that reaches here
// (pin_memory, an async copy, a host read, a free) costs microseconds already.
#include "backends/runtime/pinned_allocator.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "backends/runtime/device_manager.h"
#include "backends/runtime/streams.h"
#include "paddle_core/base/errors.h"

namespace oar::backends {

std::atomic<int> detail::g_pinned_blocks_with_writes{0};

namespace {

constexpr size_t kMinBlock = 64;
constexpr size_t kPow2Max = size_t{1} << 20;  // above 1 MiB: multiples of 1 MiB
constexpr size_t kMaxRequest = size_t{1} << 46;
constexpr size_t kMaxUnpolledUses = 16;  // a table without query_event: waited for beyond this

// One queued copy that reads or writes a block, and the event recorded after it.
struct Use {
  Place place;
  OAR_Device* dev;
  const OAR_DeviceInterface* iface;
  OAR_Event event;
  bool write;
};

struct Block {
  Place place;  // the device whose host_memory_allocate gave it
  size_t size = 0;
  bool live = true;
  int writes = 0;  // uses with write=true
  std::vector<Use> uses;
};

struct Registry {
  std::mutex mu;
  std::unordered_map<const void*, Block> blocks;                     // live and free
  std::map<std::pair<int, size_t>, std::vector<void*>> free_lists;   // (device type, size)
  std::map<std::pair<int, int>, std::vector<OAR_Event>> event_pool;  // per place
  PinnedStats stats;
};

// Never destroyed: tensors freed by static destructors still return their blocks.
Registry& registry() {
  static auto* r = new Registry();
  return *r;
}

std::atomic<int>& g_blocks_with_writes = detail::g_pinned_blocks_with_writes;
std::atomic<int64_t> g_num_blocks{0};  // live and free: lets pageable copies skip the lock
thread_local const Place* t_output_device = nullptr;

size_t round_size(size_t bytes) {
  OAR_ENFORCE(bytes <= kMaxRequest, ResourceExhausted, "pin_memory: cannot allocate ", bytes,
              " bytes of pinned memory (at most ", kMaxRequest, ")");
  size_t size = std::max(bytes, kMinBlock);
  if (size <= kPow2Max) {
    size_t p = kMinBlock;
    while (p < size) p <<= 1;
    return p;
  }
  return (size + kPow2Max - 1) / kPow2Max * kPow2Max;
}

std::pair<int, int> place_key(const Place& p) { return {p.type_id(), p.device_id()}; }

bool has_query(const Use& u) { return u.iface->query_event != nullptr; }

// The use's event went back to its place's pool; the block forgets the use.
void recycle_locked(Registry& r, Block& b, size_t i) {
  Use u = b.uses[i];
  b.uses.erase(b.uses.begin() + static_cast<std::ptrdiff_t>(i));
  r.event_pool[place_key(u.place)].push_back(u.event);
  if (u.write && --b.writes == 0) g_blocks_with_writes.fetch_sub(1, std::memory_order_release);
}

// Drops the uses whose events completed. `wait`: synchronizes the pending ones first
// (every use is then done); otherwise a use without query_event counts as pending.
// Returns whether no use is left.
bool settle_locked(Registry& r, Block& b, bool wait) {
  for (size_t i = 0; i < b.uses.size();) {
    Use& u = b.uses[i];
    bool done = false;
    if (wait) {
      // A failed stream (its error is the device's to report) still passed the copy or
      // never will run it; either way the block is no longer read or written by it.
      (void)u.iface->synchronize_event(u.dev, u.event);
      done = true;
    } else if (has_query(u)) {
      // OAR_ERROR_NOT_READY while the stream has not reached it; a failure counts as not yet.
      done = u.iface->query_event(u.dev, u.event) == OAR_SUCCESS;
    }
    if (done) {
      recycle_locked(r, b, i);
    } else {
      ++i;
    }
  }
  return b.uses.empty();
}

// A free block is reusable once its uses completed: polled when every use's table has
// query_event (allocate never waits then), else the events are synchronized.
bool reusable_locked(Registry& r, Block& b) {
  const bool can_poll = std::all_of(b.uses.begin(), b.uses.end(), has_query);
  return settle_locked(r, b, !can_poll);
}

void free_block(void* ptr) noexcept {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.blocks.find(ptr);
  if (it == r.blocks.end()) return;
  Block& b = it->second;
  b.live = false;
  r.stats.allocated_bytes -= static_cast<int64_t>(b.size);
  r.stats.cached_bytes += static_cast<int64_t>(b.size);
  r.free_lists[{b.place.type_id(), b.size}].push_back(ptr);
}

void* take_free_locked(Registry& r, const Place& device, size_t size) {
  auto it = r.free_lists.find({device.type_id(), size});
  if (it == r.free_lists.end()) return nullptr;
  std::vector<void*>& list = it->second;
  for (size_t i = 0; i < list.size(); ++i) {
    void* p = list[i];
    Block& b = r.blocks.at(p);
    if (!reusable_locked(r, b)) continue;
    list.erase(list.begin() + static_cast<std::ptrdiff_t>(i));
    b.live = true;
    r.stats.cached_bytes -= static_cast<int64_t>(size);
    r.stats.allocated_bytes += static_cast<int64_t>(size);
    return p;
  }
  return nullptr;
}

}  // namespace

std::shared_ptr<Storage> pinned_storage(const Place& device, size_t bytes) {
  OAR_ENFORCE(!device.is_cpu(), InvalidArgument,
              "pin_memory: pinned memory belongs to a device (e.g. 'sample:0'), not to the CPU");
  const size_t size = round_size(bytes);
  Registry& r = registry();
  void* p = nullptr;
  {
    std::lock_guard<std::mutex> lock(r.mu);
    p = take_free_locked(r, device, size);
  }
  if (p == nullptr) {
    p = pinned_allocate(device, size);  // throws naming the device and the call
    std::lock_guard<std::mutex> lock(r.mu);
    Block& b = r.blocks[p];
    b = Block{};
    g_num_blocks.fetch_add(1, std::memory_order_relaxed);
    b.place = device;
    b.size = size;
    r.stats.allocated_bytes += static_cast<int64_t>(size);
    r.stats.num_device_allocs += 1;
  }
  return std::make_shared<Storage>(p, bytes, CPUPlace(), [p] { free_block(p); });
}

bool pinned_lookup(const void* base, Place* device) {
  if (base == nullptr || g_num_blocks.load(std::memory_order_relaxed) == 0) return false;
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.blocks.find(base);
  if (it == r.blocks.end() || !it->second.live) return false;
  if (device != nullptr) *device = it->second.place;
  return true;
}

void pinned_record_use(const void* base, const Place& device, OAR_Stream stream, bool write) {
  if (base == nullptr || device.is_cpu() || g_num_blocks.load(std::memory_order_relaxed) == 0) return;
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.blocks.find(base);
  if (it == r.blocks.end()) return;
  Block& b = it->second;
  DeviceManager& dm = DeviceManager::instance();
  const std::string type = DeviceManager::device_type_of(device);
  Use u{device, dm.device(device), &dm.interface(type), nullptr, write};
  // Keep the list short: completed uses go, and without query_event the oldest is waited
  // for once there are many (a tensor copied in a loop).
  settle_locked(r, b, false);
  while (!has_query(u) && b.uses.size() >= kMaxUnpolledUses) {
    (void)b.uses.front().iface->synchronize_event(b.uses.front().dev, b.uses.front().event);
    recycle_locked(r, b, 0);
  }
  std::vector<OAR_Event>& pool = r.event_pool[place_key(device)];
  if (!pool.empty()) {
    u.event = pool.back();
    pool.pop_back();
  } else if (u.iface->create_event(u.dev, &u.event) != OAR_SUCCESS) {
    u.event = nullptr;
  }
  if (u.event == nullptr || u.iface->record_event(u.dev, stream, u.event) != OAR_SUCCESS) {
    // No event to remember: wait here, so the block is safe at once.
    if (u.event != nullptr) pool.push_back(u.event);
    check_status(u.iface->synchronize_stream(u.dev, stream), type, "synchronize_stream");
    return;
  }
  b.uses.push_back(u);
  if (write && b.writes++ == 0) g_blocks_with_writes.fetch_add(1, std::memory_order_release);
}

void pinned_wait_writes(const void* base) {
  if (g_blocks_with_writes.load(std::memory_order_acquire) == 0 || base == nullptr) return;
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.blocks.find(base);
  if (it == r.blocks.end() || it->second.writes == 0) return;
  Block& b = it->second;
  for (size_t i = 0; i < b.uses.size();) {
    Use& u = b.uses[i];
    if (!u.write) {
      ++i;
      continue;
    }
    // The held lock keeps the event from being recycled and recorded again meanwhile; a
    // failed stream is reported by the device's next synchronizing call (the host read's).
    (void)u.iface->synchronize_event(u.dev, u.event);
    recycle_locked(r, b, i);
  }
}

void pinned_empty_cache() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  for (auto& [key, list] : r.free_lists) {
    for (void* p : list) {
      auto it = r.blocks.find(p);
      Block& b = it->second;
      settle_locked(r, b, true);  // the rule: never given back while a copy may touch it
      try {
        pinned_deallocate(b.place, p, b.size);
      } catch (...) {
        // A device that refuses to take it back keeps it; the block is forgotten all the same.
      }
      r.stats.cached_bytes -= static_cast<int64_t>(b.size);
      r.blocks.erase(it);
      g_num_blocks.fetch_sub(1, std::memory_order_relaxed);
    }
    list.clear();
  }
}

PinnedStats pinned_stats() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  return r.stats;
}

PinnedOutputScope::PinnedOutputScope(const Place& device) : prev_(t_output_device), device_(device) {
  t_output_device = &device_;
}
PinnedOutputScope::~PinnedOutputScope() { t_output_device = prev_; }
const Place* pinned_output_device() { return t_output_device; }

}  // namespace oar::backends
