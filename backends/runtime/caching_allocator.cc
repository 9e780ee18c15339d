#include "backends/runtime/caching_allocator.h"

#include <glog/logging.h>

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <new>
#include <utility>

#include "backends/runtime/device_manager.h"
#include "backends/runtime/streams.h"
#include "paddle_core/base/errors.h"
#include "paddle_core/base/flags.h"

namespace oar::backends {

namespace {
size_t round_up(size_t n, size_t unit) { return (n + unit - 1) / unit * unit; }

// Requests beyond this are certainly unsatisfiable; refusing them keeps round_up
// from overflowing.
constexpr size_t kMaxRequest = size_t{1} << 56;
}  // namespace

CachingAllocator::CachingAllocator(const Place& place, bool poll_events)
    : place_(place), device_type_(DeviceManager::device_type_of(place)) {
  DeviceManager& dm = DeviceManager::instance();
  iface_ = &dm.interface(device_type_);
  device_ = dm.device(place);
  size_t min_chunk = 0;
  check_status(iface_->device_min_chunk_size(device_, &min_chunk), device_type_, "device_min_chunk_size");
  small_unit_ = std::max(kSmallUnit, min_chunk);
  large_unit_ = std::max(kLargeUnit, min_chunk);
  small_free_.resize(kSmallMax / small_unit_ + 1);
  streams_ = !place.is_cpu();
  poll_ = poll_events && iface_->query_event != nullptr;
}

CachingAllocator::~CachingAllocator() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_reaper_ = true;
  }
  reap_cv_.notify_all();
  if (reaper_.joinable()) reaper_.join();  // it waits for the events still pending
  std::lock_guard<std::mutex> lock(mu_);
  release_cache_locked();
  for (OAR_Event e : event_pool_) iface_->destroy_event(device_, e);
}

void CachingAllocator::arm_event_locked(FreeBlock& fb) {
  fb.lazy = false;
  OAR_Event event = nullptr;
  if (!event_pool_.empty()) {
    event = event_pool_.back();
    event_pool_.pop_back();
  } else if (iface_->create_event(device_, &event) != OAR_SUCCESS) {
    event = nullptr;
  }
  if (event == nullptr || iface_->record_event(device_, fb.stream, event) != OAR_SUCCESS) {
    // No event to poll: wait here, so the block is safe for every stream.
    iface_->synchronize_stream(device_, fb.stream);
    fb.done = true;
    if (event != nullptr) event_pool_.push_back(event);
  } else if (poll_) {
    fb.event = event;  // polled when another stream wants the block
  } else {
    fb.ready = std::make_shared<bool>(false);
    pending_.emplace_back(event, fb.ready);
    if (!reaper_.joinable()) reaper_ = std::thread([this] { reap(); });
    reap_cv_.notify_one();
  }
}

bool CachingAllocator::reusable_elsewhere_locked(FreeBlock& fb) {
  if (fb.done) return true;
  if (fb.lazy) arm_event_locked(fb);
  if (fb.ready != nullptr) return *fb.ready;  // the reaper's mark
  if (fb.event == nullptr) return false;
  // OAR_ERROR_NOT_READY while the stream has not reached it; a failure counts as not yet.
  if (iface_->query_event(device_, fb.event) != OAR_SUCCESS) return false;
  recycle_event_locked(fb);
  fb.done = true;
  return true;
}

size_t CachingAllocator::round_size(size_t bytes) const {
  OAR_ENFORCE(bytes <= kMaxRequest, ResourceExhausted, "allocate: cannot allocate ", bytes, " bytes on ", place_.str());
  const size_t small = round_up(std::max<size_t>(bytes, 1), small_unit_);
  return is_small(small) ? small : round_up(bytes, large_unit_);
}

void* CachingAllocator::allocate(size_t bytes) {
  const size_t size = round_size(bytes);
  if (streams_) return allocate_on_stream(size, bytes);
  std::lock_guard<std::mutex> lock(mu_);
  void* ptr = nullptr;
  size_t block = size;
  if (is_small(size)) {
    auto& bin = small_free_[size / small_unit_];
    if (!bin.empty()) {
      ptr = bin.back();
      bin.pop_back();
      stats_.cached_bytes -= static_cast<int64_t>(block);
    } else {
      ptr = device_allocate_locked(block, bytes);
    }
  } else {
    auto it = large_free_.lower_bound(size);
    if (it != large_free_.end() && it->first <= size + size / 4) {
      // The most recently freed block of the best-fitting size, still in cache (Note [Hot
      // reuse of large blocks], docs/notes/cpu_speed_steps.md): equal sizes keep their
      // insertion order in the multimap, so the last of the range is the newest.
      it = std::prev(large_free_.upper_bound(it->first));
      block = it->first;
      ptr = it->second;
      large_free_.erase(it);
      stats_.cached_bytes -= static_cast<int64_t>(block);
    } else {
      ptr = device_allocate_locked(block, bytes);
    }
    large_live_.emplace(ptr, block);
  }
  stats_.allocated_bytes += static_cast<int64_t>(block);
  stats_.peak_allocated_bytes = std::max(stats_.peak_allocated_bytes, stats_.allocated_bytes);
  return ptr;
}

void CachingAllocator::deallocate(void* ptr, size_t bytes) {
  if (ptr == nullptr) return;
  if (streams_) return deallocate_on_stream(ptr);
  size_t block = round_size(bytes);
  std::lock_guard<std::mutex> lock(mu_);
  if (!is_small(block)) {
    auto it = large_live_.find(ptr);
    OAR_ENFORCE(it != large_live_.end(), InvalidArgument, "deallocate: ", ptr, " (", bytes,
                " bytes) was not allocated by the caching allocator of ", place_.str());
    block = it->second;
    large_live_.erase(it);
  }
  stats_.allocated_bytes -= static_cast<int64_t>(block);
  const int64_t limit = std::max<int64_t>(FLAGS_oar_allocator_cache_limit_mb, 0) << 20;
  if (stats_.cached_bytes + static_cast<int64_t>(block) > limit) {
    device_free_locked(ptr, block);
    return;
  }
  if (is_small(block)) {
    small_free_[block / small_unit_].push_back(ptr);
  } else {
    large_free_.emplace(block, ptr);
  }
  stats_.cached_bytes += static_cast<int64_t>(block);
}

void CachingAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(mu_);
  release_cache_locked();
}

AllocatorStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

int64_t CachingAllocator::reserved_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return reserved_;
}

int64_t CachingAllocator::peak_reserved_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return peak_reserved_;
}

void CachingAllocator::reset_peaks() {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.peak_allocated_bytes = stats_.allocated_bytes;
  peak_reserved_ = reserved_;
}

void CachingAllocator::forget_stream(OAR_Stream stream, OAR_Stream heir) {
  if (!streams_ || stream == nullptr) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto forget = [&](FreeBlock& fb) {
    recycle_event_locked(fb);  // complete: the stream's work is done
    fb.ready.reset();          // a reaper still waiting on its event finds it complete
    fb.done = true;
    fb.lazy = false;
    fb.stream = heir;
  };
  for (auto& [block, fb] : stream_free_) {
    if (fb.stream == stream) forget(fb);
  }
  auto dead = std::find_if(bins_.begin(), bins_.end(), [&](const auto& b) { return b->stream == stream; });
  if (dead != bins_.end() && stream != heir) {
    std::unique_ptr<StreamBins> gone = std::move(*dead);
    bins_.erase(dead);
    last_bins_ = nullptr;
    StreamBins& to = bins_locked(heir);
    for (size_t cls = 0; cls < gone->small.size(); ++cls) {
      for (FreeBlock& fb : gone->small[cls]) {
        forget(fb);
        to.small[cls].push_back(std::move(fb));
      }
    }
  }
  live_.for_each([&](LiveTable::Entry& e) {
    if (e.stream == stream) e.stream = heir;
  });
}

void CachingAllocator::LiveTable::grow() {
  std::vector<Entry> old = std::move(slots_);
  const size_t cap = old.empty() ? 64 : old.size() * 2;
  slots_.assign(cap, Entry{});
  mask_ = cap - 1;
  shift_ = 64 - __builtin_ctzll(cap);
  size_ = 0;
  for (const Entry& e : old) {
    if (e.ptr != nullptr) insert(e.ptr, e.block, e.stream);
  }
}

CachingAllocator::StreamBins& CachingAllocator::find_bins_locked(OAR_Stream stream) {
  for (auto& b : bins_) {
    if (b->stream == stream) return *(last_bins_ = b.get());
  }
  bins_.push_back(
      std::make_unique<StreamBins>(StreamBins{stream, std::vector<std::vector<FreeBlock>>(small_free_.size())}));
  return *(last_bins_ = bins_.back().get());
}

void* CachingAllocator::take_small_locked(size_t size, OAR_Stream stream) {
  const size_t cls = size / small_unit_;
  StreamBins& own = bins_locked(stream);
  if (auto& bin = own.small[cls]; !bin.empty()) {  // freed on this stream: reusable at once, in stream order
    void* ptr = bin.back().ptr;
    recycle_event_locked(bin.back());  // another stream may have armed it meanwhile
    bin.pop_back();
    return ptr;
  }
  for (auto& other : bins_) {  // other streams' blocks once their free events completed
    if (other.get() == &own) continue;
    auto& bin = other->small[cls];
    for (size_t i = 0; i < bin.size(); ++i) {  // oldest first: the likeliest done
      if (!reusable_elsewhere_locked(bin[i])) continue;
      void* ptr = bin[i].ptr;
      recycle_event_locked(bin[i]);
      bin.erase(bin.begin() + static_cast<std::ptrdiff_t>(i));
      return ptr;
    }
  }
  return nullptr;
}

void* CachingAllocator::take_free_locked(size_t size, OAR_Stream stream, size_t* block) {
  // Large blocks (small ones are in the streams' bins): at most 25% more (the waste bound).
  const size_t limit = is_small(size) ? size : size + size / 4;
  for (auto it = stream_free_.lower_bound(size); it != stream_free_.end() && it->first <= limit; ++it) {
    if (it->second.stream != stream && !reusable_elsewhere_locked(it->second)) continue;  // in use over there
    void* ptr = it->second.ptr;
    *block = it->first;
    recycle_event_locked(it->second);  // re-recording a pending event is allowed (as in CUDA)
    free_nodes_.push_back(stream_free_.extract(it));
    free_nodes_.back().mapped().ready.reset();
    return ptr;
  }
  return nullptr;
}

void* CachingAllocator::allocate_on_stream(size_t size, size_t bytes) {
  OAR_Stream stream = current_stream(place_);
  std::lock_guard<std::mutex> lock(mu_);
  size_t block = size;
  void* ptr = is_small(size) ? take_small_locked(size, stream) : take_free_locked(size, stream, &block);
  if (ptr != nullptr) {
    stats_.cached_bytes -= static_cast<int64_t>(block);
  } else {
    ptr = device_allocate_locked(block, bytes);
  }
  live_.insert(ptr, block, stream);
  stats_.allocated_bytes += static_cast<int64_t>(block);
  stats_.peak_allocated_bytes = std::max(stats_.peak_allocated_bytes, stats_.allocated_bytes);
  return ptr;
}

void CachingAllocator::deallocate_on_stream(void* ptr) {
  std::unique_lock<std::mutex> lock(mu_);
  LiveTable::Entry live;
  if (!live_.take(ptr, &live)) {
    // Called from tensor destructors: report, never throw.
    LOG(ERROR) << "deallocate: " << ptr << " was not allocated by the caching allocator of " << place_.str();
    return;
  }
  const size_t block = live.block;
  stats_.allocated_bytes -= static_cast<int64_t>(block);
  const int64_t limit = std::max<int64_t>(FLAGS_oar_allocator_cache_limit_mb, 0) << 20;
  if (stats_.cached_bytes + static_cast<int64_t>(block) > limit) {
    // Back to the device, which may hand it out at once: its stream must be done with it.
    OAR_Status st = iface_->synchronize_stream(device_, live.stream);
    LOG_IF(ERROR, st != OAR_SUCCESS) << "device '" << device_type_ << "': synchronize_stream failed with "
                                     << status_name(st);
    device_free_locked(ptr, block);
    return;
  }
  // Reuse on the same stream needs no event (its later work runs after the uses queued
  // before this free); one is recorded only when another stream asks for the block. A
  // tiny op on a device stream so records no event per freed output.
  if (is_small(block)) {
    bins_locked(live.stream)
        .small[block / small_unit_]
        .push_back(FreeBlock{ptr, live.stream, nullptr, nullptr, false, /*lazy=*/true});
    stats_.cached_bytes += static_cast<int64_t>(block);
    return;
  }
  FreeBlock fb{ptr, live.stream, nullptr, nullptr, false, /*lazy=*/true};
  if (free_nodes_.empty()) {
    stream_free_.emplace(block, std::move(fb));
  } else {
    auto node = std::move(free_nodes_.back());
    free_nodes_.pop_back();
    node.key() = block;
    node.mapped() = std::move(fb);
    stream_free_.insert(std::move(node));
  }
  stats_.cached_bytes += static_cast<int64_t>(block);
}

void CachingAllocator::reap() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    reap_cv_.wait(lock, [&] { return stop_reaper_ || !pending_.empty(); });
    if (pending_.empty()) return;  // stopping, nothing left to wait for
    auto [event, ready] = pending_.front();
    pending_.pop_front();
    lock.unlock();
    OAR_Status st = iface_->synchronize_event(device_, event);
    LOG_IF(ERROR, st != OAR_SUCCESS) << "device '" << device_type_ << "': synchronize_event failed with "
                                     << status_name(st);
    lock.lock();
    *ready = true;
    event_pool_.push_back(event);
  }
}

void* CachingAllocator::device_allocate_locked(size_t block, size_t requested) {
  void* ptr = nullptr;
  OAR_Status status = iface_->device_memory_allocate(device_, &ptr, block);
  if (status == OAR_ERROR_OUT_OF_MEMORY || (status == OAR_SUCCESS && ptr == nullptr)) {
    // The cache may hold the memory we need, in blocks of the wrong size.
    release_cache_locked();
    ptr = nullptr;
    status = iface_->device_memory_allocate(device_, &ptr, block);
    if (status == OAR_ERROR_OUT_OF_MEMORY || (status == OAR_SUCCESS && ptr == nullptr)) {
      const std::string why = DeviceManager::instance().last_error_message(device_type_);  // the plugin's words
      OAR_THROW(ResourceExhausted, "out of memory on ", place_.str(), ": cannot allocate ", requested,
                " bytes (block of ", block, " bytes) with ", stats_.allocated_bytes,
                " bytes in use; free tensors or lower the batch size", why.empty() ? "" : " (", why,
                why.empty() ? "" : ")");
    }
  }
  check_status(status, device_type_, "device_memory_allocate");
  ++stats_.num_device_allocs;
  reserved_ += static_cast<int64_t>(block);
  peak_reserved_ = std::max(peak_reserved_, reserved_);
  return ptr;
}

void CachingAllocator::device_free_locked(void* ptr, size_t block) {
  // Called from tensor destructors: report a device failure, never throw.
  OAR_Status status = iface_->device_memory_deallocate(device_, ptr, block);
  reserved_ -= static_cast<int64_t>(block);
  LOG_IF(ERROR, status != OAR_SUCCESS) << "device '" << device_type_ << "': device_memory_deallocate(" << ptr << ", "
                                       << block << ") failed with " << status_name(status);
}

void CachingAllocator::release_cache_locked() {
  for (size_t i = 0; i < small_free_.size(); ++i) {
    for (void* ptr : small_free_[i]) device_free_locked(ptr, i * small_unit_);
    small_free_[i].clear();
  }
  for (const auto& [block, ptr] : large_free_) device_free_locked(ptr, block);
  large_free_.clear();
  bool stream_blocks = !stream_free_.empty();
  for (const auto& b : bins_) {
    for (const auto& bin : b->small) stream_blocks = stream_blocks || !bin.empty();
  }
  if (stream_blocks) {
    // Cached device blocks may still be in use by their streams' queued work.
    OAR_Status st = iface_->synchronize_device(device_);
    LOG_IF(ERROR, st != OAR_SUCCESS) << "device '" << device_type_ << "': synchronize_device failed with "
                                     << status_name(st);
    for (auto& [block, fb] : stream_free_) {
      recycle_event_locked(fb);
      device_free_locked(fb.ptr, block);
    }
    stream_free_.clear();
    for (auto& b : bins_) {
      for (size_t cls = 0; cls < b->small.size(); ++cls) {
        for (FreeBlock& fb : b->small[cls]) {
          recycle_event_locked(fb);
          device_free_locked(fb.ptr, cls * small_unit_);
        }
        b->small[cls].clear();
      }
    }
  }
  stats_.cached_bytes = 0;
}

namespace {
// Every CachingAllocator caching_allocator_for made, for the fork handlers. `mu` guards the
// map and creation; the CPU's allocator sits beside it (found without the mutex).
struct Registry {
  std::mutex mu;
  std::map<std::pair<int, int>, CachingAllocator*> by_place;
  CachingAllocator* cpu = nullptr;
};

Registry& registry() {
  static auto* r = new Registry();  // never destroyed, like the allocators
  return *r;
}

// Note [Fork safety]: a thread that holds an allocator's mutex at fork() (an executor or a
// predictor running without the GIL, a device's reaper) would leave the child's copy locked
// forever, and the child's first tensor would hang. The parent takes every allocator's lock
// around fork(), as glibc does for malloc's arenas. Allocator locks are leaves (nothing else
// is locked while one is held), so taking them in any order cannot deadlock.
void prepare_fork() {
  Registry& r = registry();
  r.mu.lock();
  if (r.cpu != nullptr) r.cpu->lock_for_fork();
  for (auto& [key, a] : r.by_place) a->lock_for_fork();
}

void parent_after_fork() {
  Registry& r = registry();
  for (auto& [key, a] : r.by_place) a->unlock_in_parent_after_fork();
  if (r.cpu != nullptr) r.cpu->unlock_in_parent_after_fork();
  r.mu.unlock();
}

void child_after_fork() {
  Registry& r = registry();
  for (auto& [key, a] : r.by_place) a->reset_in_child_after_fork();
  if (r.cpu != nullptr) r.cpu->reset_in_child_after_fork();
  new (&r.mu) std::mutex();
}

const bool g_fork_handlers = [] {
  pthread_atfork(prepare_fork, parent_after_fork, child_after_fork);
  return true;
}();
}  // namespace

void CachingAllocator::lock_for_fork() { mu_.lock(); }

void CachingAllocator::unlock_in_parent_after_fork() { mu_.unlock(); }

void CachingAllocator::reset_in_child_after_fork() {
  // Only the forking thread exists in the child: the mutex (held by it) and the condition
  // variable (whose waiter, the reaper, is gone) are made anew; the reaper's handle is
  // dropped without join (there is no such thread here), and a later device free starts a
  // new reaper. Blocks whose events the old reaper waited for stay cached, never reused.
  new (&mu_) std::mutex();
  new (&reap_cv_) std::condition_variable();
  if (reaper_.joinable()) new (&reaper_) std::thread();
}

namespace {
// The device places' allocators: lock-free for small ids (all real ones); creation, and
// ids past the array, take the registry's mutex. `create` false: nullptr when there is
// none yet.
CachingAllocator* device_allocator(const Place& place, bool create) {
  constexpr int kFastIds = 16;
  static std::atomic<CachingAllocator*> fast[kMaxDeviceTypes][kFastIds] = {};
  const int id = place.device_id();
  std::atomic<CachingAllocator*>* cell = id < kFastIds ? &fast[place.type_id()][id] : nullptr;
  if (cell != nullptr) {
    if (CachingAllocator* a = cell->load(std::memory_order_acquire)) return a;
  }
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.by_place.find({place.type_id(), id});
  if (it != r.by_place.end()) return it->second;
  if (!create) return nullptr;
  CachingAllocator* a = new CachingAllocator(place);
  r.by_place.emplace(std::make_pair(place.type_id(), id), a);
  if (cell != nullptr) cell->store(a, std::memory_order_release);
  return a;
}
}  // namespace

Allocator* caching_allocator_for(const Place& place) {
  if (place.is_cpu()) {
    // Storage asks for its allocator on every allocation: keep the CPU path lock-free.
    static CachingAllocator* cpu = [] {
      auto* a = new CachingAllocator(CPUPlace());
      Registry& r = registry();
      std::lock_guard<std::mutex> lock(r.mu);
      r.cpu = a;
      return a;
    }();
    return cpu;
  }
  return device_allocator(place, true);
}

CachingAllocator* existing_caching_allocator(const Place& place) {
  return place.is_cpu() ? static_cast<CachingAllocator*>(caching_allocator_for(place)) : device_allocator(place, false);
}

namespace {
// Plugin device types get this factory when the DeviceManager registers them.
const bool g_cpu_factory_registered = [] {
  register_allocator_factory(DeviceType::kCPU, caching_allocator_for);
  return true;
}();
}  // namespace

}  // namespace oar::backends
