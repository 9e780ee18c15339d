// The caching allocator's stream rule on the sample device (Note [Devices]): a block
// freed on stream S is reused at once on S, and on another stream only after the event
// recorded at its free has completed; allocate() never waits for it. A deliberately slow
// stream (SAMPLE_DEVICE_DELAY_US) keeps S's work pending while the test allocates, so an
// allocator that ignored streams would hand the block to the other stream and fail here.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
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
    StreamScope on_other(p, other);
    void* got = nullptr;
    for (int i = 0; i < 1000 && got != block; ++i) {
      void* q = a.allocate(kBytes);
      if (q == block) {
        got = q;
      } else {
        a.deallocate(q, kBytes);
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    }
    EXPECT_EQ(got, block) << "the block never became reusable on another stream";
    if (got != nullptr) a.deallocate(got, kBytes);
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
    // Two takes on `other`: its own cached block at once, and `live` once the default
    // stream's event completed (polled; bounded, never a hang).
    bool found = false;
    for (int i = 0; i < 400 && !found; ++i) {
      void* q1 = a->allocate(kBytes);
      void* q2 = a->allocate(kBytes);
      found = q1 == live || q2 == live;
      a->deallocate(q2, kBytes);
      a->deallocate(q1, kBytes);
      if (!found) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    EXPECT_TRUE(found) << "a block allocated on the destroyed stream never became reusable";
  }
  EXPECT_THROW(destroy_stream(p, default_stream(p)), Error);
  destroy_stream(p, other);
}

}  // namespace
}  // namespace oar::backends
