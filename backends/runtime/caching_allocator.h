// CachingAllocator: keeps freed blocks for reuse instead of returning them to the device.
//
// Why: a fresh page costs ~11 us to fault in on our VMs, so a 64 MiB tensor allocated
// anew each step costs ~185 ms, against ~1.6 ms when its block is reused. Device
// allocators (cudaMalloc) are slower still and synchronize.
//
// Block sizes (no splitting or merging, so a block is always one device allocation):
//  - small, up to 1 MiB: rounded up to 512 B multiples (or the device's min chunk if
//    larger); one exact-size free list per size class, O(1) reuse;
//  - large: rounded up to 128 KiB multiples; best-fit from a size-ordered free list,
//    taking a block at most 25% larger than the rounded request (bounds the waste).
// allocate(0) gets a real smallest block, so each call returns a unique pointer.
// Freed blocks stay cached while the cache holds at most FLAGS_oar_allocator_cache_limit_mb
// (read at each free); a block that does not fit goes back to the device at once.
// Stats count block bytes (rounded sizes), i.e. the memory actually held.
//
// Streams (a device place; the CPU has none): each block belongs to the stream that was
// current when it was allocated (backends/runtime/streams.h). Freed, it is reused at once
// by a request on that stream (stream order keeps its old work first), but by another
// stream only once an event recorded on its stream at the free has completed. allocate()
// only polls, so it never blocks (Note [Devices], docs/notes/devices.md): with the
// plugin's query_event (ABI 1.1) it asks the event itself, and only when another stream
// wants the block (a free costs one record_event, nothing more); without it a reaper
// thread waits on the events and marks the blocks ready. Blocks are never
// split; splitting large device blocks is the CUDA backend's (take_free_locked is the hook).
// Small blocks freed on a stream wait in that stream's own size-class bins (as CUDA
// caching allocators keep per-stream pools), so the current stream's request finds its
// block without a search; blocks in use are found by pointer in an open-addressing table.
// A stream destroyed (backends::destroy_stream, after waiting for its work) is forgotten:
// its cached blocks become free for every stream and its blocks still in use move to the
// default stream, so no later free or poll touches the dead stream.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "backends/include/oar/device_ext.h"
#include "paddle_core/tensor/allocator.h"
#include "paddle_core/tensor/place.h"

namespace oar::backends {

/// Thread-safe (one mutex). Memory comes from the device table of `place`
/// (device_memory_allocate / device_memory_deallocate).
class CachingAllocator : public Allocator {
 public:
  /// Throws NotFound when the place's device type is not registered.
  /// `poll_events` false: the reaper thread even when the plugin has query_event (tests).
  explicit CachingAllocator(const Place& place, bool poll_events = true);
  /// Returns cached blocks to the device; blocks still in use are not touched.
  ~CachingAllocator() override;
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  /// A cached block if one fits, else a new device block. When the device is out of
  /// memory, empties the cache and retries once, then throws ResourceExhausted.
  void* allocate(size_t bytes) override;
  /// `bytes` must be the size passed to allocate(); nullptr is ignored.
  void deallocate(void* ptr, size_t bytes) override;
  void empty_cache() override;
  AllocatorStats stats() const override;

  const Place& place() const { return place_; }
  /// The block size a request of `bytes` gets.
  size_t round_size(size_t bytes) const;
  /// Device memory held (in use + cached) now and at most since the last reset.
  int64_t reserved_bytes() const;
  int64_t peak_reserved_bytes() const;
  /// Starts the peaks (allocated and reserved) again from the current values.
  void reset_peaks();
  /// `stream` is about to be destroyed and its queued work is done (the caller waited for
  /// it): its cached blocks become reusable by every stream at once, and its blocks still
  /// in use belong to `heir` (the default stream) from now on.
  void forget_stream(OAR_Stream stream, OAR_Stream heir);

  /// fork() handlers (Note [Fork safety], docs/notes/fork_safety.md): the parent holds the
  /// lock across fork() so that no other thread holds it in the child's copy; the child
  /// gets fresh synchronization objects and forgets the parent's reaper thread.
  void lock_for_fork();
  void unlock_in_parent_after_fork();
  void reset_in_child_after_fork();

 private:
  // A freed device block and the stream it belongs to, with the event recorded at its
  // free: polled through query_event (`event`, owned by the block until it completes), or
  // waited for by the reaper thread, which sets `ready`. `done`: completed, or no event.
  struct FreeBlock {
    void* ptr;
    OAR_Stream stream;
    OAR_Event event = nullptr;
    std::shared_ptr<bool> ready;  // read and written under mu_
    bool done = false;
    // No event recorded yet: the block was freed on `stream` and only that stream has
    // asked for it since (which may reuse it at once, in stream order). The event is
    // recorded when another stream first wants it (arm_event_locked); recorded then, it
    // still comes after every use queued before the free.
    bool lazy = false;
  };
  void arm_event_locked(FreeBlock& fb);
  bool reusable_elsewhere_locked(FreeBlock& fb);
  void recycle_event_locked(FreeBlock& fb) {
    // Only a polled event is the block's; the reaper's goes back to the pool from the reaper.
    if (fb.event != nullptr) event_pool_.push_back(fb.event);
    fb.event = nullptr;
  }
  bool is_small(size_t block) const { return block <= kSmallMax; }
  void* device_allocate_locked(size_t block, size_t requested);
  void device_free_locked(void* ptr, size_t block);
  void release_cache_locked();
  void* allocate_on_stream(size_t size, size_t bytes);
  void deallocate_on_stream(void* ptr);
  void* take_free_locked(size_t size, OAR_Stream stream, size_t* block);
  void* take_small_locked(size_t size, OAR_Stream stream);

  // A stream's small freed blocks, one bin per size class (index: block / small_unit_).
  struct StreamBins {
    OAR_Stream stream;
    std::vector<std::vector<FreeBlock>> small;
  };
  StreamBins& bins_locked(OAR_Stream stream) {
    return last_bins_ != nullptr && last_bins_->stream == stream ? *last_bins_ : find_bins_locked(stream);
  }
  StreamBins& find_bins_locked(OAR_Stream stream);

  // The device blocks in use: pointer -> (block size, stream). Linear probing in a
  // power-of-two table with backward-shift deletion (no tombstones, no node per entry):
  // a tiny op's allocate and free cost a multiply and a probe or two, no hashing of a
  // std::unordered_map node chain.
  class LiveTable {
   public:
    struct Entry {
      void* ptr = nullptr;  // null: an empty slot
      size_t block = 0;
      OAR_Stream stream = nullptr;
    };
    void insert(void* ptr, size_t block, OAR_Stream stream) {
      if ((size_ + 1) * 2 > slots_.size()) grow();  // at most half full: short probes
      size_t i = home(ptr);
      while (slots_[i].ptr != nullptr) i = (i + 1) & mask_;
      slots_[i] = Entry{ptr, block, stream};
      ++size_;
    }
    /// Removes `ptr`'s entry into `out`; false when there is none.
    bool take(void* ptr, Entry* out) {
      if (size_ == 0) return false;
      size_t i = home(ptr);
      while (slots_[i].ptr != ptr) {
        if (slots_[i].ptr == nullptr) return false;
        i = (i + 1) & mask_;
      }
      *out = slots_[i];
      // Backward shift: each later entry of the run moves into the hole unless its home
      // lies after the hole (cyclically), so every entry stays reachable from its home.
      for (size_t j = (i + 1) & mask_; slots_[j].ptr != nullptr; j = (j + 1) & mask_) {
        if (((j - home(slots_[j].ptr)) & mask_) >= ((j - i) & mask_)) {
          slots_[i] = slots_[j];
          i = j;
        }
      }
      slots_[i] = Entry{};
      --size_;
      return true;
    }
    template <typename F>
    void for_each(F f) {
      for (Entry& e : slots_) {
        if (e.ptr != nullptr) f(e);
      }
    }

   private:
    size_t home(const void* ptr) const {
      return static_cast<size_t>((reinterpret_cast<uintptr_t>(ptr) * 0x9E3779B97F4A7C15ull) >> shift_);
    }
    void grow();
    std::vector<Entry> slots_;
    size_t size_ = 0;
    size_t mask_ = 0;
    int shift_ = 64;
  };
  void reap();

  static constexpr size_t kSmallMax = size_t{1} << 20;  // 1 MiB
  static constexpr size_t kSmallUnit = 512;
  static constexpr size_t kLargeUnit = size_t{128} << 10;  // 128 KiB

  Place place_;
  std::string device_type_;
  const OAR_DeviceInterface* iface_;  // owned by DeviceManager, never freed
  OAR_Device* device_;                // owned by DeviceManager, never freed
  size_t small_unit_ = kSmallUnit;
  size_t large_unit_ = kLargeUnit;

  mutable std::mutex mu_;
  std::vector<std::vector<void*>> small_free_;    // index: block / small_unit_
  std::multimap<size_t, void*> large_free_;       // block size -> ptr
  std::unordered_map<void*, size_t> large_live_;  // ptr -> block size (best fit)
  AllocatorStats stats_;
  int64_t reserved_ = 0, peak_reserved_ = 0;

  // Device places only (streams_): every block by stream, and the reaper's work.
  bool streams_ = false;
  bool poll_ = false;                             // query_event polls the free events (no reaper)
  std::multimap<size_t, FreeBlock> stream_free_;  // large blocks: block size -> block
  std::vector<std::unique_ptr<StreamBins>> bins_;  // small blocks, per stream
  StreamBins* last_bins_ = nullptr;                // the stream asked last (one compare)
  LiveTable live_;
  // Nodes of stream_free_ kept for reuse (extract/insert): no malloc per large free.
  std::vector<decltype(stream_free_)::node_type> free_nodes_;
  std::deque<std::pair<OAR_Event, std::shared_ptr<bool>>> pending_;  // events to wait for
  std::vector<OAR_Event> event_pool_;
  std::condition_variable reap_cv_;
  bool stop_reaper_ = false;
  std::thread reaper_;  // started at the first device free
};

/// One CachingAllocator per place, created on first use and never destroyed (tensors
/// freed by static destructors may still reach it). The AllocatorFactory of the CPU and,
/// unless a backend registers its own, of every device type the DeviceManager registers.
Allocator* caching_allocator_for(const Place& place);
/// The place's CachingAllocator if one was created (nullptr otherwise); creates none.
CachingAllocator* existing_caching_allocator(const Place& place);

}  // namespace oar::backends
