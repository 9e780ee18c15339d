#include <gflags/gflags.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "backends/runtime/caching_allocator.h"
#include "backends/runtime/device_manager.h"
#include "paddle_core/base/errors.h"
#include "paddle_core/base/flags.h"

namespace oar::backends {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

bool aligned64(const void* p) { return reinterpret_cast<uintptr_t>(p) % 64 == 0; }

TEST(CachingAllocator, ReusesFreedSmallBlock) {
  CachingAllocator a(CPUPlace());
  void* p = a.allocate(1000);
  a.deallocate(p, 1000);
  void* q = a.allocate(900);  // same 1024-byte size class
  EXPECT_EQ(p, q);
  EXPECT_EQ(a.stats().num_device_allocs, 1);
  a.deallocate(q, 900);
}

TEST(CachingAllocator, ReusesLargeBlockBestFitWithinSlack) {
  CachingAllocator a(CPUPlace());
  void* big = a.allocate(4 * kMiB);
  a.deallocate(big, 4 * kMiB);
  void* small = a.allocate(kMiB + 1);  // 4 MiB is far too big for it: new block
  EXPECT_NE(small, big);
  void* fit = a.allocate(3 * kMiB + kMiB / 2);  // within 25%: reuses the 4 MiB block
  EXPECT_EQ(fit, big);
  EXPECT_EQ(a.stats().num_device_allocs, 2);
  EXPECT_EQ(a.stats().allocated_bytes, static_cast<int64_t>(4 * kMiB + a.round_size(kMiB + 1)));
  a.deallocate(fit, 3 * kMiB + kMiB / 2);
  a.deallocate(small, kMiB + 1);
  EXPECT_EQ(a.stats().allocated_bytes, 0);
}

// Among free blocks of the best-fitting size the newest is reused (its bytes are the
// likeliest still in cache); with first-in-first-out reuse a loop that frees and allocates
// one output walks through every cached block of that size, each cold.
TEST(CachingAllocator, ReusesNewestLargeBlockOfBestSize) {
  CachingAllocator a(CPUPlace());
  void* p[3];
  for (auto& q : p) q = a.allocate(4 * kMiB);
  for (auto& q : p) a.deallocate(q, 4 * kMiB);  // freed p0, p1, p2: p2 is the newest
  for (int round = 0; round < 4; ++round) {
    void* q = a.allocate(4 * kMiB);
    EXPECT_EQ(q, p[2]) << round;
    a.deallocate(q, 4 * kMiB);
  }
  void* q0 = a.allocate(4 * kMiB);
  void* q1 = a.allocate(4 * kMiB);
  void* q2 = a.allocate(4 * kMiB);
  EXPECT_EQ(q0, p[2]);
  EXPECT_EQ(q1, p[1]);
  EXPECT_EQ(q2, p[0]);
  EXPECT_EQ(a.stats().num_device_allocs, 3);
  // A better-fitting (smaller) size still wins over a newer larger one.
  a.deallocate(q1, 4 * kMiB);
  void* big = a.allocate(5 * kMiB);
  a.deallocate(big, 5 * kMiB);
  EXPECT_EQ(a.allocate(4 * kMiB), p[1]);
  for (void* q : {q0, q2, static_cast<void*>(p[1])}) a.deallocate(q, 4 * kMiB);
}

TEST(CachingAllocator, RoundsSizes) {
  CachingAllocator a(CPUPlace());
  EXPECT_EQ(a.round_size(0), 512u);
  EXPECT_EQ(a.round_size(1), 512u);
  EXPECT_EQ(a.round_size(513), 1024u);
  EXPECT_EQ(a.round_size(kMiB), kMiB);
  EXPECT_EQ(a.round_size(kMiB + 1), kMiB + 128 * 1024);
  EXPECT_THROW(a.round_size(SIZE_MAX), Error);
}

TEST(CachingAllocator, BlocksAre64ByteAlignedAndWritable) {
  CachingAllocator a(CPUPlace());
  for (size_t n : {size_t{1}, size_t{3}, size_t{100}, size_t{4097}, kMiB, kMiB + 1, 5 * kMiB}) {
    void* p = a.allocate(n);
    EXPECT_TRUE(aligned64(p)) << n;
    std::memset(p, 0xAB, n);
    a.deallocate(p, n);
  }
}

// backends/cpu/cpu_device.cc: CPU blocks of 4 MiB and more start on a 2 MiB boundary (a
// transparent huge page, advised with madvise) and stay writable end to end.
TEST(CachingAllocator, LargeCpuBlocksStartOnAHugePage) {
  CachingAllocator a(CPUPlace());
  for (size_t n : {4 * kMiB, 5 * kMiB + 3, 64 * kMiB}) {
    void* p = a.allocate(n);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % (2 * kMiB), 0u) << n;
    std::memset(p, 0xCD, n);
    EXPECT_EQ(static_cast<unsigned char*>(p)[n - 1], 0xCD);
    a.deallocate(p, n);
  }
  a.empty_cache();
}

TEST(CachingAllocator, StatsTrackAllocatedPeakCached) {
  CachingAllocator a(CPUPlace());
  void* p = a.allocate(1000);  // 1024
  void* q = a.allocate(3000);  // 3072
  AllocatorStats s = a.stats();
  EXPECT_EQ(s.allocated_bytes, 4096);
  EXPECT_EQ(s.peak_allocated_bytes, 4096);
  EXPECT_EQ(s.cached_bytes, 0);
  EXPECT_EQ(s.num_device_allocs, 2);
  a.deallocate(p, 1000);
  s = a.stats();
  EXPECT_EQ(s.allocated_bytes, 3072);
  EXPECT_EQ(s.peak_allocated_bytes, 4096);
  EXPECT_EQ(s.cached_bytes, 1024);
  a.deallocate(q, 3000);
  EXPECT_EQ(a.stats().cached_bytes, 4096);
  EXPECT_EQ(a.stats().allocated_bytes, 0);
}

TEST(CachingAllocator, CacheLimitIsRespected) {
  gflags::FlagSaver restore_flags;
  FLAGS_oar_allocator_cache_limit_mb = 1;
  CachingAllocator a(CPUPlace());
  std::vector<void*> blocks;
  for (int i = 0; i < 3; ++i) blocks.push_back(a.allocate(kMiB / 2));
  for (void* p : blocks) a.deallocate(p, kMiB / 2);
  EXPECT_EQ(a.stats().cached_bytes, static_cast<int64_t>(kMiB));  // two fit, one went back

  FLAGS_oar_allocator_cache_limit_mb = 0;
  void* p = a.allocate(kMiB / 2);
  void* q = a.allocate(kMiB / 2);
  void* r = a.allocate(kMiB / 2);  // a device allocation: the cache held only two
  a.deallocate(p, kMiB / 2);
  a.deallocate(q, kMiB / 2);
  a.deallocate(r, kMiB / 2);
  EXPECT_EQ(a.stats().cached_bytes, 0);  // nothing new cached under a zero limit
  EXPECT_EQ(a.stats().num_device_allocs, 4);
}

TEST(CachingAllocator, EmptyCacheReturnsBlocksToTheDevice) {
  CachingAllocator a(CPUPlace());
  void* p = a.allocate(2 * kMiB);
  void* q = a.allocate(100);
  a.deallocate(p, 2 * kMiB);
  a.deallocate(q, 100);
  EXPECT_GT(a.stats().cached_bytes, 0);
  a.empty_cache();
  EXPECT_EQ(a.stats().cached_bytes, 0);
  void* r = a.allocate(100);
  EXPECT_EQ(a.stats().num_device_allocs, 3);  // a miss after empty_cache
  a.deallocate(r, 100);
}

TEST(CachingAllocator, AllocateZeroGivesUniqueFreeablePointers) {
  CachingAllocator a(CPUPlace());
  void* p = a.allocate(0);
  void* q = a.allocate(0);
  EXPECT_NE(p, nullptr);
  EXPECT_NE(q, nullptr);
  EXPECT_NE(p, q);
  a.deallocate(p, 0);
  a.deallocate(q, 0);
  a.deallocate(nullptr, 0);  // ignored
  EXPECT_EQ(a.stats().allocated_bytes, 0);
}

TEST(CachingAllocator, ForeignLargePointerIsRejected) {
  CachingAllocator a(CPUPlace());
  int x = 0;
  EXPECT_THROW(a.deallocate(&x, 8 * kMiB), Error);
}

// A device whose allocations of 64 MiB or more always fail, counting the attempts.
std::atomic<int> g_big_attempts{0};
OAR_Status oom_allocate(const OAR_Device* d, void** ptr, size_t size) {
  if (size >= 64 * kMiB) {
    ++g_big_attempts;
    return OAR_ERROR_OUT_OF_MEMORY;
  }
  return DeviceManager::instance().interface("cpu").device_memory_allocate(d, ptr, size);
}

TEST(CachingAllocator, OutOfMemoryEmptiesCacheRetriesThenThrows) {
  OAR_DeviceInterface table = DeviceManager::instance().interface("cpu");
  table.device_memory_allocate = oom_allocate;
  OAR_DeviceRegistration reg{};
  reg.struct_size = sizeof(reg);
  reg.version = {sizeof(OAR_DeviceAbiVersion), OAR_DEVICE_ABI_VERSION_MAJOR,
                 OAR_DEVICE_ABI_VERSION_MINOR};
  reg.device_type = "fake_oom";
  reg.interface = &table;
  DeviceManager::instance().register_device(reg);

  CachingAllocator a(CustomPlace("fake_oom", 0));
  a.deallocate(a.allocate(4096), 4096);
  EXPECT_EQ(a.stats().cached_bytes, 4096);
  const size_t huge = 100 * kMiB + 7;
  try {
    a.allocate(huge);
    FAIL() << "expected ResourceExhausted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kResourceExhausted);
    EXPECT_NE(e.message().find(std::to_string(huge)), std::string::npos) << e.message();
  }
  EXPECT_EQ(g_big_attempts.load(), 2);     // tried, emptied the cache, retried once
  EXPECT_EQ(a.stats().cached_bytes, 0);
  EXPECT_EQ(a.stats().allocated_bytes, 0);
}

TEST(CachingAllocator, FactoryGivesOneAllocatorPerPlace) {
  Allocator* cpu = get_allocator(CPUPlace());
  EXPECT_EQ(cpu, get_allocator(CPUPlace()));
  EXPECT_NE(dynamic_cast<CachingAllocator*>(cpu), nullptr);
  void* p = cpu->allocate(256);
  EXPECT_TRUE(aligned64(p));
  cpu->deallocate(p, 256);
}

TEST(CachingAllocator, ConcurrentUseKeepsAccountsBalanced) {
  CachingAllocator a(CPUPlace());
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&a, t] {
      std::mt19937 rng(t);
      std::vector<std::pair<void*, size_t>> live;
      for (int i = 0; i < 2000; ++i) {
        if (live.size() < 8 && rng() % 2) {
          size_t n = rng() % 3 == 0 ? rng() % (4 * kMiB) : rng() % 8192;
          live.emplace_back(a.allocate(n), n);
        } else if (!live.empty()) {
          a.deallocate(live.back().first, live.back().second);
          live.pop_back();
        }
      }
      for (auto& [p, n] : live) a.deallocate(p, n);
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(a.stats().allocated_bytes, 0);
}

}  // namespace
}  // namespace oar::backends
