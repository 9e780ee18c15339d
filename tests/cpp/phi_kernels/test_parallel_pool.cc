// Oar's thread pool behind parallel_for (Note [Thread pool]): the chunks are the same
// whoever runs them, every index is covered once, regions back to back and from two
// threads at once, nested regions, a throwing body, and a fork (Note [Fork safety]).
#include <gtest/gtest.h>
#include <omp.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "phi_kernels/cpu/parallel.h"
#include "phi_kernels/cpu/parallel_pool.h"

namespace oar::phi {
namespace {

class Threads {  // this thread's team size for one test
 public:
  explicit Threads(int n) : prev_(omp_get_max_threads()) { omp_set_num_threads(n); }
  ~Threads() { omp_set_num_threads(prev_); }

 private:
  int prev_;
};

using Chunks = std::vector<std::pair<int64_t, int64_t>>;

Chunks chunks_of(int64_t n, int64_t cost) {
  Chunks got;
  std::mutex mu;
  std::vector<uint8_t> seen(static_cast<size_t>(n), 0);
  parallel_for(
      n,
      [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) ++seen[static_cast<size_t>(i)];
    std::lock_guard<std::mutex> lock(mu);
    got.emplace_back(b, e);
      },
      cost);
  EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](uint8_t s) { return s == 1; })) << "n " << n;
  std::sort(got.begin(), got.end());
  return got;
}

Chunks expected(int64_t n, int64_t cost, int team) {
  if (cost < kParallelGrain || n == 1 || team == 1) return {{0, n}};
  Chunks c;
  const int64_t len = (n + team - 1) / team;
  for (int64_t b = 0; b < n; b += len) c.emplace_back(b, std::min(n, b + len));
  return c;
}

TEST(ParallelPool, ChunksAroundTheGrainsAtOneToThreeThreads) {
  for (int team : {1, 2, 3}) {
    Threads t(team);
    EXPECT_EQ(parallel_chunk(1000), (1000 + team - 1) / team);
    chunks_of(kParallelGrain + 5, -1);  // starts the pool and calibrates
    const int64_t wake = std::max<int64_t>(parallel_info().wake_grain, kParallelGrain);
    for (int64_t cost : {kParallelGrain - 1, kParallelGrain, kParallelGrain + 1, wake - 1, wake, wake + 1}) {
      for (int64_t n : {int64_t{1}, int64_t{2}, int64_t{3}, int64_t{7}, kParallelGrain + 1, int64_t{1} << 20}) {
        EXPECT_EQ(chunks_of(n, cost), expected(n, cost, team)) << "team " << team << " n " << n << " cost " << cost;
        // asleep, then awake: a region right after another finds the worker spinning
        std::this_thread::sleep_for(std::chrono::microseconds(300));
        chunks_of(n, cost);
        EXPECT_EQ(chunks_of(n, cost), expected(n, cost, team));
      }
    }
  }
}

TEST(ParallelPool, BackToBackRegionsSeeTheirOwnBody) {
  Threads t(2);
  const int64_t n = 3 * kParallelGrain + 11;
  std::vector<int64_t> out(static_cast<size_t>(n));
  for (int64_t k = 0; k < 3000; ++k) {
    int64_t* o = out.data();
    parallel_for(
        n,
        [o, k](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) o[i] = i * 7 + k;
        },
        k % 3 == 0 ? int64_t{1} << 26 : n);  // some regions wake the worker, some do not
    ASSERT_EQ(out[0], k);
    ASSERT_EQ(out[static_cast<size_t>(n - 1)], (n - 1) * 7 + k);
    ASSERT_EQ(out[static_cast<size_t>(n / 2 + 1)], (n / 2 + 1) * 7 + k);
    if (k % 500 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

TEST(ParallelPool, NestedRegionsRunWholeOnTheirThread) {
  Threads t(2);
  std::atomic<int> inner_calls{0}, wrong{0};
  parallel_for(
      2,
      [&](int64_t b, int64_t e) {
    if (!in_parallel_region() || omp_get_max_threads() != 1) ++wrong;
    parallel_for(
        int64_t{1} << 20,
        [&](int64_t ib, int64_t ie) {
      ++inner_calls;
      if (ib != 0 || ie != (int64_t{1} << 20)) ++wrong;
        },
        int64_t{1} << 26);
      },
      int64_t{1} << 26);
  EXPECT_EQ(inner_calls.load(), 2);
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_FALSE(in_parallel_region());
  EXPECT_EQ(omp_get_max_threads(), 2);  // restored after the region
}

TEST(ParallelPool, AThrowingBodyRethrowsAfterTheRegion) {
  Threads t(2);
  const int64_t n = int64_t{1} << 20;
  for (int64_t cost : {n, int64_t{1} << 26}) {
    std::atomic<int64_t> covered{0};
    EXPECT_THROW(parallel_for(
                     n,
                     [&](int64_t b, int64_t e) {
      if (b > 0) throw std::runtime_error("chunk 1");
      covered += e - b;
                     },
                     cost),
                 std::runtime_error);
    EXPECT_EQ(covered.load(), n / 2);  // the other chunk still ran
    EXPECT_FALSE(in_parallel_region());
    EXPECT_EQ(chunks_of(n, cost), expected(n, cost, 2));  // and the pool still works
  }
}

TEST(ParallelPool, TwoCallingThreadsAtOnce) {
  std::atomic<int> bad{0};
  auto caller = [&bad](int64_t seed) {
    omp_set_num_threads(2);
    const int64_t n = kParallelGrain * 2 + 3;
    std::vector<int64_t> out(static_cast<size_t>(n));
    for (int64_t k = 0; k < 400; ++k) {
      int64_t* o = out.data();
      parallel_for(
          n,
          [o, k, seed](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) o[i] = i + k + seed;
          },
          int64_t{1} << 26);
      for (int64_t i = 0; i < n; i += 997)
        if (out[static_cast<size_t>(i)] != i + k + seed) ++bad;
    }
  };
  std::thread a(caller, 1), b(caller, 1000000);
  a.join();
  b.join();
  EXPECT_EQ(bad.load(), 0);
}

// A forked child runs parallel regions with both threads; the parent keeps its pool.
TEST(ParallelPool, ForkedChildRunsRegions) {
  Threads t(2);
  const int64_t n = int64_t{1} << 20;
  EXPECT_EQ(chunks_of(n, int64_t{1} << 26), expected(n, int64_t{1} << 26, 2));  // workers exist
  std::atomic<bool> stop{false};
  std::thread busy([&stop] {  // another thread's regions while the fork happens
    omp_set_num_threads(2);
    std::vector<float> v(1 << 20);
    while (!stop)
      parallel_for(
          int64_t{1} << 20, [&v](int64_t b, int64_t e) { std::fill(v.data() + b, v.data() + e, 1.f); },
          int64_t{1} << 26);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const pid_t pid = fork();
  if (pid == 0) {
    alarm(20);  // a hang (a worker that does not exist) ends the child, and fails the test
    std::vector<int64_t> out(static_cast<size_t>(n));
    bool ok = true;
    for (int64_t k = 0; k < 200 && ok; ++k) {
      int64_t* o = out.data();
      parallel_for(
          n,
          [o, k](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) o[i] = i ^ k;
          },
          k % 2 ? n : int64_t{1} << 26);
      ok = out[12345] == (12345 ^ k) && out[static_cast<size_t>(n - 1)] == ((n - 1) ^ k);
    }
    ok = ok && parallel_info().workers >= 1;  // the child started its own worker
    _exit(ok ? 0 : 1);
  }
  ASSERT_GT(pid, 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  stop = true;
  busy.join();
  EXPECT_TRUE(WIFEXITED(status)) << "child signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(chunks_of(n, int64_t{1} << 26), expected(n, int64_t{1} << 26, 2));
}

}  // namespace
}  // namespace oar::phi
