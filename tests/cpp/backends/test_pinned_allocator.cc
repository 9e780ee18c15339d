// The pinned host allocator's rule (Note [Pinned memory], docs/notes/devices.md): a freed
// block is handed out again only after the queued copies that touched it ran, host reads
// wait for queued writes, empty_cache waits before it gives blocks back. A delayed sample
// device stream (SAMPLE_DEVICE_DELAY_US) keeps copies queued long enough to catch a block
// reused too early.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "backends/runtime/device_manager.h"
#include "backends/runtime/pinned_allocator.h"
#include "backends/runtime/streams.h"
#include "paddle_core/base/errors.h"
#include "tests/cpp/backends/sample_device_util.h"

namespace oar::backends {
namespace {

using testing::DeviceBuffer;
using testing::sample_place;
using testing::slow_stream;

constexpr size_t kBytes = 4096;
constexpr size_t kCount = kBytes / sizeof(int32_t);

// Items of its streams run 50-100 ms late: a margin for a loaded machine.
constexpr int kDelayUs = 100000;

void fill(const std::shared_ptr<Storage>& s, int32_t v) {
  auto* w = static_cast<int32_t*>(s->data());
  for (size_t i = 0; i < kCount; ++i) w[i] = v;
}

TEST(PinnedAllocator, GivesCpuStoragesAndKnowsThem) {
  const Place p = sample_place();
  auto s = pinned_storage(p, 100);
  EXPECT_TRUE(s->place().is_cpu());
  EXPECT_EQ(s->bytes(), 100u);
  Place owner;
  EXPECT_TRUE(pinned_lookup(s->data(), &owner));
  EXPECT_EQ(owner, p);
  EXPECT_FALSE(pinned_lookup(static_cast<char*>(s->data()) + 8));  // only a block's base
  std::vector<char> pageable(64);
  EXPECT_FALSE(pinned_lookup(pageable.data()));
  void* base = s->data();
  s.reset();
  EXPECT_FALSE(pinned_lookup(base));  // free blocks are not pinned tensors
  EXPECT_THROW(pinned_storage(CPUPlace(), 8), Error);
  EXPECT_THROW(pinned_storage(p, size_t{1} << 60), Error);
}

TEST(PinnedAllocator, FreedBlockWithoutQueuedUsesIsReusedAtOnce) {
  const Place p = sample_place();
  auto a = pinned_storage(p, kBytes);
  void* base = a->data();
  const int64_t allocs = pinned_stats().num_device_allocs;
  a.reset();
  auto b = pinned_storage(p, kBytes - 100);  // the same rounded size
  EXPECT_EQ(b->data(), base);
  EXPECT_EQ(pinned_stats().num_device_allocs, allocs);
}

TEST(PinnedAllocator, FreedBlockIsNotReusedBeforeItsQueuedCopyRan) {
  const Place p = sample_place();
  OAR_Stream s = slow_stream(p, kDelayUs);
  DeviceBuffer dev(p, kBytes);
  auto a = pinned_storage(p, kBytes);
  fill(a, 7);
  void* base = a->data();
  memcpy_async(p, dev.ptr, CPUPlace(), a->data(), kBytes, s);  // reads the block 50-100 ms from now
  pinned_record_use(base, p, s, /*write=*/false);
  a.reset();  // freed while the copy is queued
  auto b = pinned_storage(p, kBytes);
  EXPECT_NE(b->data(), base);  // allocate did not wait, and did not take the busy block
  fill(b, -1);
  EXPECT_EQ(dev.read<int32_t>(), std::vector<int32_t>(kCount, 7));
  synchronize_stream(p, s);
  auto c = pinned_storage(p, kBytes);  // its copy ran: the block is free for everyone
  EXPECT_EQ(c->data(), base);
  destroy_stream(p, s);
}

TEST(PinnedAllocator, HostReadsWaitForQueuedWritesOnly) {
  const Place p = sample_place();
  OAR_Stream s = slow_stream(p, kDelayUs);
  DeviceBuffer dev(p, kBytes);
  std::vector<int32_t> src(kCount, 42);
  DeviceManager::instance().memcpy(p, dev.ptr, CPUPlace(), src.data(), kBytes);
  auto h = pinned_storage(p, kBytes);
  fill(h, -1);
  memcpy_async(CPUPlace(), h->data(), p, dev.ptr, kBytes, s);
  pinned_record_use(h->data(), p, s, /*write=*/true);
  EXPECT_TRUE(pinned_writes_pending());
  EXPECT_EQ(static_cast<volatile int32_t*>(h->data())[0], -1);  // still queued
  pinned_wait_writes(h->data());
  EXPECT_FALSE(pinned_writes_pending());
  EXPECT_EQ(static_cast<int32_t*>(h->data())[kCount - 1], 42);
  destroy_stream(p, s);
}

TEST(PinnedAllocator, EmptyCacheWaitsThenGivesBlocksBack) {
  const Place p = sample_place();
  OAR_Stream s = slow_stream(p, kDelayUs);
  DeviceBuffer dev(p, kBytes);
  pinned_empty_cache();
  auto a = pinned_storage(p, kBytes);
  fill(a, 9);
  memcpy_async(p, dev.ptr, CPUPlace(), a->data(), kBytes, s);
  // Completes when the copy has run (stream order), before the allocator's own event.
  OAR_Event copied = create_event(p);
  record_event(p, s, copied);
  pinned_record_use(a->data(), p, s, false);
  a.reset();
  EXPECT_EQ(pinned_stats().cached_bytes, static_cast<int64_t>(kBytes));
  pinned_empty_cache();  // waits for the queued copy before host_memory_deallocate
  EXPECT_EQ(pinned_stats().cached_bytes, 0);
  // Not query_stream: the stream may still be finishing the allocator's event item.
  EXPECT_EQ(DeviceManager::instance().interface("sample").query_event(DeviceManager::instance().device(p), copied),
            OAR_SUCCESS);
  EXPECT_EQ(dev.read<int32_t>(), std::vector<int32_t>(kCount, 9));
  destroy_event(p, copied);
  destroy_stream(p, s);
}

TEST(PinnedAllocator, OutputScopeNests) {
  EXPECT_EQ(pinned_output_device(), nullptr);
  {
    PinnedOutputScope a(CustomPlace("sample", 0));
    EXPECT_EQ(*pinned_output_device(), CustomPlace("sample", 0));
    {
      PinnedOutputScope b(CustomPlace("sample", 1));
      EXPECT_EQ(*pinned_output_device(), CustomPlace("sample", 1));
    }
    EXPECT_EQ(*pinned_output_device(), CustomPlace("sample", 0));
  }
  EXPECT_EQ(pinned_output_device(), nullptr);
}

TEST(PinnedAllocator, WithoutQueryEventTheEventsAreWaitedFor) {
  // An ABI 1.0 plugin: no query_event (nor host_memory_allocate: plain host memory).
  DeviceManager& dm = DeviceManager::instance();
  if (!dm.has_device_type("testdev_v10")) dm.load_plugin(std::string(OAR_TEST_PLUGIN_DIR) + "/libtestdev_v10.so");
  const Place p = CustomPlace("testdev_v10", 0);
  ASSERT_EQ(dm.interface("testdev_v10").query_event, nullptr);
  OAR_Stream s = create_stream(p);
  auto a = pinned_storage(p, kBytes);
  void* base = a->data();
  for (int i = 0; i < 40; ++i) pinned_record_use(base, p, s, i % 2 == 0);  // kept bounded
  pinned_wait_writes(base);
  a.reset();
  auto b = pinned_storage(p, kBytes);  // synchronizes the remaining events, then reuses
  EXPECT_EQ(b->data(), base);
  destroy_stream(p, s);
}

}  // namespace
}  // namespace oar::backends
