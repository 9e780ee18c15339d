// The caching allocator's stream rule on the sample device (Note [Devices]): a block
// freed on stream S is reused at once on S, and on another stream only after the event
// recorded at its free has completed; allocate() never waits for it. A deliberately slow
// stream (SAMPLE_DEVICE_DELAY_US) keeps S's work pending while the test allocates, so an
// allocator that ignored streams would hand the block to the other stream and fail here.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "backends/runtime/caching_allocator.h"
#include "backends/runtime/streams.h"
#include "paddle_core/base/errors.h"
#include "tests/cpp/backends/sample_device_util.h"

namespace oar::backends {
namespace {

using testing::sample_place;

// Restores the thread's current stream when the test ends.
struct StreamScope {
  Place place;
  OAR_Stream prev;
  StreamScope(const Place& p, OAR_Stream s) : place(p), prev(set_current_stream(p, s)) {}
  ~StreamScope() { set_current_stream(place, prev); }
};

// poll: the allocator asks the plugin's query_event; else its reaper thread waits.
void check_stream_rule(bool poll) {
  const Place p = sample_place(1);
  setenv("SAMPLE_DEVICE_DELAY_US", "400000", 1);  // each item on `slow`: 200-400 ms
  OAR_Stream slow = create_stream(p);
  unsetenv("SAMPLE_DEVICE_DELAY_US");
  OAR_Stream other = create_stream(p);
  CachingAllocator a(p, poll);
  constexpr size_t kBytes = 4096;

  void* block = nullptr;
  {
    StreamScope on_slow(p, slow);
    block = a.allocate(kBytes);
    std::vector<char> src(kBytes, 7);
    memcpy_async(p, block, CPUPlace(), src.data(), kBytes, slow);  // pending for >= 200 ms
    a.deallocate(block, kBytes);
  }
  {
    StreamScope on_other(p, other);
    void* q = a.allocate(kBytes);  // the block is still being written by `slow`
    EXPECT_NE(q, block) << "a block still in use on another stream was handed out";
    a.deallocate(q, kBytes);
  }
  {
    StreamScope on_slow(p, slow);
    void* again = a.allocate(kBytes);  // same stream: stream order makes it safe at once
    EXPECT_EQ(again, block);
    a.deallocate(again, kBytes);
  }
  synchronize_stream(p, slow);
  {
    // The event has completed (polled: at once; the reaper marks the block ready soon
    // after). allocate() only polls, so ask until it is handed out (bounded, never a hang).
    // The other blocks handed out meanwhile stay held: `other` takes its own freed blocks
    // first (per-stream bins), which would hide `slow`'s.
    StreamScope on_other(p, other);
    void* got = nullptr;
    std::vector<void*> held;
    for (int i = 0; i < 1000 && got != block; ++i) {
      void* q = a.allocate(kBytes);
      if (q == block) {
        got = q;
      } else {
        held.push_back(q);
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    }
    EXPECT_EQ(got, block) << "the block never became reusable on another stream";
    if (got != nullptr) a.deallocate(got, kBytes);
    for (void* q : held) a.deallocate(q, kBytes);
  }
  a.empty_cache();
  EXPECT_EQ(a.stats().allocated_bytes, 0);
  EXPECT_EQ(a.reserved_bytes(), 0);
  destroy_stream(p, slow);
  destroy_stream(p, other);
}

TEST(StreamAllocator, ReusesAtOnceOnItsStreamAndOnOthersOnlyAfterItsEvent) { check_stream_rule(true); }

TEST(StreamAllocator, WithoutQueryEventTheReaperMarksBlocksReady) { check_stream_rule(false); }

TEST(StreamAllocator, TracksReservedAndPeaks) {
  const Place p = sample_place(1);
  CachingAllocator a(p);
  void* x = a.allocate(1 << 20);
  void* y = a.allocate(3 << 20);
  const int64_t both = a.stats().allocated_bytes;
  EXPECT_EQ(a.reserved_bytes(), both);
  a.deallocate(y, 3 << 20);
  EXPECT_EQ(a.stats().peak_allocated_bytes, both);
  EXPECT_EQ(a.reserved_bytes(), both);  // cached, still held
  a.reset_peaks();
  EXPECT_EQ(a.stats().peak_allocated_bytes, a.stats().allocated_bytes);
  EXPECT_EQ(a.peak_reserved_bytes(), both);
  a.empty_cache();
  EXPECT_EQ(a.reserved_bytes(), a.stats().allocated_bytes);
  a.deallocate(x, 1 << 20);
  a.empty_cache();
  EXPECT_EQ(a.reserved_bytes(), 0);
}

// A stream destroyed while blocks freed on it are cached, and while a block allocated on
// it is still in use: destroy_stream waits for its work and the place's allocator forgets
// it. Before, freeing the live block recorded an event on the dead stream (a freed
// worker queue: the event never completed, or a crash), and a cached block kept a dead
// handle a new stream could be given.
TEST(StreamAllocator, DestroyingAStreamForgetsItsBlocks) {
  const Place p = sample_place(1);
  auto* a = dynamic_cast<CachingAllocator*>(caching_allocator_for(p));  // the one destroy_stream informs
  ASSERT_NE(a, nullptr);
  constexpr size_t kBytes = 12800;  // a size class no other test uses
  setenv("SAMPLE_DEVICE_DELAY_US", "200000", 1);
  OAR_Stream doomed = create_stream(p);
  unsetenv("SAMPLE_DEVICE_DELAY_US");
  OAR_Stream other = create_stream(p);
  void* cached = nullptr;
  void* live = nullptr;
  std::vector<char> src(kBytes, 3), back(kBytes, 0);
  {
    StreamScope on_doomed(p, doomed);
    cached = a->allocate(kBytes);
    live = a->allocate(kBytes);
    memcpy_async(p, cached, CPUPlace(), src.data(), kBytes, doomed);  // pending >= 100 ms
    memcpy_async(p, live, CPUPlace(), src.data(), kBytes, doomed);
    a->deallocate(cached, kBytes);  // cached on `doomed`, its event not reached yet
  }
  set_current_stream(p, doomed);
  destroy_stream(p, doomed);  // waits for both copies, then forgets the stream
  EXPECT_EQ(current_stream(p), default_stream(p)) << "the thread's current stream was the destroyed one";
  {
    // The cached block is free for every stream at once (its stream's work is done).
    StreamScope on_other(p, other);
    void* q = a->allocate(kBytes);
    EXPECT_EQ(q, cached);
    DeviceManager::instance().memcpy(CPUPlace(), back.data(), p, live, kBytes);
    EXPECT_EQ(back, src) << "destroy_stream did not wait for the stream's queued copy";
    // The live block now belongs to the default stream: its free records an event there.
    a->deallocate(live, kBytes);
    a->deallocate(q, kBytes);
  }
  {
    StreamScope on_other(p, other);
    // Takes on `other`, all held: its own cached block at once, then `live` once the
    // default stream's event completed (polled; bounded, never a hang).
    bool found = false;
    std::vector<void*> held;
    for (int i = 0; i < 400 && !found; ++i) {
      held.push_back(a->allocate(kBytes));
      found = held.back() == live;
      if (!found) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    EXPECT_TRUE(found) << "a block allocated on the destroyed stream never became reusable";
    for (void* q : held) a->deallocate(q, kBytes);
  }
  EXPECT_THROW(destroy_stream(p, default_stream(p)), Error);
  destroy_stream(p, other);
}

// Thousands of blocks live at once on two streams, small and large, freed in a shuffled
// order (the in-use table grows and closes its probe runs; the per-stream bins fill):
// every pointer is distinct while live, the counters come back to zero, each stream gets
// its own freed blocks back at once (no new device allocation), and a pointer the
// allocator never gave is reported, not taken.
TEST(StreamAllocator, ManyBlocksOnTwoStreamsComeBackIntact) {
  const Place p = sample_place(1);
  OAR_Stream s1 = create_stream(p), s2 = create_stream(p);
  CachingAllocator a(p);
  std::mt19937 rng(7);
  struct Live {
    void* ptr;
    size_t bytes;
    OAR_Stream stream;
  };
  std::vector<Live> live;
  std::set<void*> seen;
  for (int i = 0; i < 3000; ++i) {
    const OAR_Stream s = i % 2 == 0 ? s1 : s2;
    StreamScope on(p, s);
    const size_t bytes = i % 100 == 0 ? (size_t{1} << 20) + 4096 * (i % 7) : 1 + rng() % 8192;
    void* q = a.allocate(bytes);
    ASSERT_TRUE(seen.insert(q).second) << "block " << q << " handed out twice while live";
    live.push_back({q, bytes, s});
  }
  std::shuffle(live.begin(), live.end(), rng);
  for (const Live& l : live) a.deallocate(l.ptr, l.bytes);
  EXPECT_EQ(a.stats().allocated_bytes, 0);
  const int64_t device_allocs = a.stats().num_device_allocs;
  // Same sizes on the same streams again: all from each stream's own cache, at once.
  std::vector<Live> again;
  for (const Live& l : live) {
    StreamScope on(p, l.stream);
    again.push_back({a.allocate(l.bytes), l.bytes, l.stream});
  }
  EXPECT_EQ(a.stats().num_device_allocs, device_allocs) << "a stream did not get its own freed blocks back";
  for (const Live& l : again) {
    EXPECT_TRUE(seen.count(l.ptr) == 1);
    a.deallocate(l.ptr, l.bytes);
  }
  int unknown = 0;
  a.deallocate(&unknown, 4);  // logged, ignored
  EXPECT_EQ(a.stats().allocated_bytes, 0);
  a.empty_cache();
  EXPECT_EQ(a.reserved_bytes(), 0);
  destroy_stream(p, s1);
  destroy_stream(p, s2);
}

}  // namespace
}  // namespace oar::backends
