// Oar's thread pool behind parallel_for (Note [Thread pool], docs/notes/thread_pool.md).
// One region at a time: the caller publishes the region's chunks in one atomic word, wakes
// the sleeping workers only when the region is long enough to repay the wake (the
// calibrated wake_grain) and otherwise posts it only to workers still awake, then claims
// chunks itself. A worker claims chunks of the newest region with a compare-exchange that
// also checks the region's sequence number, so a worker that wakes after its region ended
// finds nothing to do and never touches the ended region's body. After a region a worker
// stays awake spin_us (regions often come back to back), then sleeps on a futex.
#include <immintrin.h>
#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <new>
#include <thread>
#include <vector>

#include "paddle_core/base/errors.h"
#include "phi_kernels/cpu/parallel.h"
#include "phi_kernels/cpu/parallel_pool.h"
#include "phi_kernels/cpu/parallel_spin.h"

namespace oar::phi {
namespace parallel_detail {
namespace {

int64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

void futex_wait(std::atomic<uint32_t>* word, uint32_t expected) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT_PRIVATE, expected, nullptr, nullptr, 0);
}

void futex_wake_all(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
}

// An integer environment variable in [lo, hi]; `fallback` when unset or empty.
int64_t env_int(const char* name, int64_t lo, int64_t hi, int64_t fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  errno = 0;
  const long long x = std::strtoll(v, &end, 10);
  OAR_ENFORCE(errno == 0 && end != v && *end == '\0' && x >= lo && x <= hi, InvalidArgument, name,
              ": expected an integer in [", lo, ", ", hi, "], got '", v, "'");
  return x;
}

constexpr int64_t kMaxWakeGrain = int64_t{1} << 26;

struct Settings {
  int64_t spin_ns;     // -1: adaptive (SpinPolicy)
  int64_t wake_grain;  // -1: calibrate
};

const Settings& settings() {  // throws (and is retried at the next region) on a bad value
  static const Settings s{std::max<int64_t>(env_int("OAR_PARALLEL_SPIN_US", 0, 100000, -1) * 1000, -1),
                          env_int("OAR_PARALLEL_WAKE_GRAIN", 0, kMaxWakeGrain, -1)};
  return s;
}

thread_local bool t_in_region = false;  // a worker, or a caller inside its region

// The claim word: region sequence (32 bits) | chunks (16) | next unclaimed chunk (16).
constexpr uint64_t claim_word(uint32_t seq, uint64_t chunks) { return (uint64_t{seq} << 32) | (chunks << 16); }

// The last kSamples wake latencies (measured by a woken worker: from the caller's futex
// call to the worker's first look at the region) and futex calls (measured by the
// caller). Their medians decide the wake grain; every wake adds a sample, so the grain
// follows the machine's load (Note [Thread pool]).
class WakeStats {
 public:
  static constexpr int kSamples = 8;
  void add_wake(int64_t ns) {
    wake_[wake_next_.fetch_add(1, std::memory_order_relaxed) % kSamples].store(std::max<int64_t>(ns, 1));
    version_.fetch_add(1, std::memory_order_release);
  }
  void add_futex(int64_t ns) {  // the caller, under the region lock
    futex_[futex_next_++ % kSamples].store(std::max<int64_t>(ns, 1));
    version_.fetch_add(1, std::memory_order_release);
  }
  uint32_t version() const { return version_.load(std::memory_order_acquire); }
  int64_t wake_ns() const { return median(wake_); }
  int64_t futex_ns() const { return median(futex_); }
  void clear() {
    for (int i = 0; i < kSamples; ++i) wake_[i].store(0), futex_[i].store(0);
  }

 private:
  static int64_t median(const std::atomic<int64_t>* a) {  // -1 before the first sample
    int64_t v[kSamples];
    int k = 0;
    for (int i = 0; i < kSamples; ++i)
      if (const int64_t x = a[i].load(std::memory_order_relaxed); x > 0) v[k++] = x;
    if (k == 0) return -1;
    std::nth_element(v, v + k / 2, v + k);
    return v[k / 2];
  }
  std::atomic<int64_t> wake_[kSamples] = {}, futex_[kSamples] = {};
  std::atomic<uint32_t> wake_next_{0}, version_{0};
  uint32_t futex_next_ = 0;
};

// A sleeping pool that no region woke for this long (or 1000 futex calls, where a wake
// costs the caller more: a busy machine) is woken once anyway, so that the wake grain
// keeps following the machine at a cost of at most 0.1% of the caller's time.
constexpr int64_t kProbeNs = 50000000;

class Pool {
 public:
  void run(int64_t n, int64_t cost, int team, ChunkFn fn, void* body);
  ParallelInfo info();
  void lock_for_fork() {
    if (!t_in_region) busy_.lock();
  }
  void unlock_after_fork() {
    if (!t_in_region) busy_.unlock();
  }
  void reset_in_child() {  // the workers do not exist in the child
    new (&busy_) std::mutex();
    workers_ = 0;
    sleepers_.store(0);
  }

 private:
  void start_workers(int count);
  void worker_main(int id);
  int64_t run_chunks(uint32_t seq, int limit);
  uint32_t post(int64_t n, int64_t chunk, int64_t chunks, ChunkFn fn, void* body);
  void calibrate();
  void wake(int64_t t0);
  void update_grain();
  void record(const RegionOutcome& o);

  std::mutex busy_;                  // held by the caller of the current region
  std::atomic<uint64_t> claim_{0};   // claim_word(...) + chunks claimed so far
  std::atomic<uint32_t> seq_{0};     // the newest region's sequence (the workers' futex)
  std::atomic<int> sleepers_{0};     // workers asleep (or about to be) on seq_
  std::atomic<int> caller_cpu_{-1};  // the core the newest region's caller ran on
  std::atomic<int64_t> done_{0};     // chunks of the current region finished
  std::atomic<ChunkFn> fn_{nullptr};
  std::atomic<void*> body_{nullptr};
  std::atomic<int64_t> n_{0}, chunk_{0};
  std::atomic<bool> failed_{false};
  std::exception_ptr error_;              // the first chunk's exception; written by whoever set failed_
  std::atomic<int64_t> wake_post_ns_{0};  // when the caller woke the workers for this region (0: it did not)
  std::atomic<int64_t> spin_ns_{SpinPolicy::kMinNs};  // policy_.spin_ns(), read by the workers
  WakeStats stats_;
  // Under busy_:
  SpinPolicy policy_;
  int workers_ = 0;
  int64_t wake_grain_ = 0, last_wake_ns_ = 0, alone_ = 0;
  // The current stream of regions (Pool::run): its summed cost, the last region's end.
  int64_t stream_cost_ = 0, last_end_ns_ = 0;
  double per_ns_ = 0;           // cost units a float add does per ns (calibrate)
  uint32_t grain_version_ = 0;  // stats_.version() wake_grain_ was computed from
  bool calibrated_ = false, grain_from_env_ = false;
};

Pool& pool() {
  static Pool* p = new Pool();  // leaked: detached workers use it until the process ends
  return *p;
}

void Pool::start_workers(int count) {
  if (workers_ == 0) {
    const Settings& s = settings();
    if (s.spin_ns >= 0) policy_ = SpinPolicy(s.spin_ns);
    spin_ns_.store(policy_.spin_ns(), std::memory_order_relaxed);
    grain_from_env_ = s.wake_grain >= 0;
    if (!calibrated_) wake_grain_ = grain_from_env_ ? s.wake_grain : kMaxWakeGrain;
  }
  for (; workers_ < count; ++workers_) std::thread([this, id = workers_] { worker_main(id); }).detach();
  if (!calibrated_) calibrate();
  calibrated_ = true;
}

void Pool::worker_main(int id) {
  t_in_region = true;      // a kernel's nested parallel_for runs inline on a worker
  omp_set_num_threads(1);  // and so does a library's OpenMP (oneDNN asks only OpenMP whether it is nested)
  uint32_t seen = seq_.load(std::memory_order_acquire);
  int64_t spin_until = 0;  // asleep until the first region
  bool woken = false;
  for (;;) {
    const uint32_t s = seq_.load(std::memory_order_acquire);
    if (s != seen) {
      seen = s;
      if (woken) {  // a sample of the wake latency, if this region's caller woke us
        const int64_t t0 = wake_post_ns_.load(std::memory_order_relaxed);
        if (t0 > 0 && seq_.load(std::memory_order_acquire) == s) stats_.add_wake(now_ns() - t0);
        woken = false;
      }
      run_chunks(s, id + 1);
      spin_until = now_ns() + spin_ns_.load(std::memory_order_relaxed);
      continue;
    }
    if (now_ns() < spin_until) {
      // On the caller's core (a busy machine: the scheduler put both there) the spin
      // would take the caller's time: yield it. Elsewhere wait on the core, which keeps
      // the worker there (a yielding worker would let another job run for a whole slice).
      if (sched_getcpu() == caller_cpu_.load(std::memory_order_relaxed)) {
        sched_yield();
      } else {  // a new region ends the pauses at once (16 pauses are ~0.4 us on Zen 4)
        for (int i = 0; i < 16 && seq_.load(std::memory_order_relaxed) == seen; ++i) _mm_pause();
      }
      continue;
    }
    sleepers_.fetch_add(1, std::memory_order_seq_cst);
    if (seq_.load(std::memory_order_seq_cst) == seen) {
      futex_wait(&seq_, seen);
      woken = true;
    }
    sleepers_.fetch_sub(1, std::memory_order_seq_cst);
  }
}

// Claims and runs chunks of region `seq` until none is left; `limit` > 0 (a worker's
// id + 1) stops a worker the region's team does not include. Returns the chunks it ran.
int64_t Pool::run_chunks(uint32_t seq, int limit) {
  uint64_t w = claim_.load(std::memory_order_acquire);
  for (int64_t ran = 0;; ++ran) {
    const uint64_t chunks = (w >> 16) & 0xffff, next = w & 0xffff;
    if (static_cast<uint32_t>(w >> 32) != seq || next >= chunks || uint64_t(limit) >= chunks) return ran;
    if (!claim_.compare_exchange_weak(w, w + 1, std::memory_order_acq_rel, std::memory_order_acquire)) {
      --ran;
      continue;
    }
    // The claim succeeded, so the region is still running and its fields are its own.
    const int64_t n = n_.load(std::memory_order_relaxed), chunk = chunk_.load(std::memory_order_relaxed);
    const int64_t b = static_cast<int64_t>(next) * chunk, e = std::min(n, b + chunk);
    try {
      fn_.load(std::memory_order_relaxed)(body_.load(std::memory_order_relaxed), b, e);
    } catch (...) {
      if (!failed_.exchange(true, std::memory_order_acq_rel)) error_ = std::current_exception();
    }
    done_.fetch_add(1, std::memory_order_acq_rel);
    w = claim_.load(std::memory_order_acquire);
  }
}

uint32_t Pool::post(int64_t n, int64_t chunk, int64_t chunks, ChunkFn fn, void* body) {
  fn_.store(fn, std::memory_order_relaxed);
  body_.store(body, std::memory_order_relaxed);
  n_.store(n, std::memory_order_relaxed);
  chunk_.store(chunk, std::memory_order_relaxed);
  done_.store(0, std::memory_order_relaxed);
  failed_.store(false, std::memory_order_relaxed);
  error_ = nullptr;
  caller_cpu_.store(sched_getcpu(), std::memory_order_relaxed);
  wake_post_ns_.store(0, std::memory_order_relaxed);
  const uint32_t s = seq_.load(std::memory_order_relaxed) + 1;
  claim_.store(claim_word(s, static_cast<uint64_t>(chunks)), std::memory_order_release);
  seq_.store(s, std::memory_order_seq_cst);
  return s;
}

// While a thread runs a region's chunks: a nested parallel_for runs whole, and a library's
// OpenMP (oneDNN asks only OpenMP whether it is nested) runs on one thread.
class RegionScope {
 public:
  explicit RegionScope(int team) : team_(team) {
    t_in_region = true;
    omp_set_num_threads(1);
  }
  ~RegionScope() {
    t_in_region = false;
    omp_set_num_threads(team_);
  }
  RegionScope(const RegionScope&) = delete;
  RegionScope& operator=(const RegionScope&) = delete;

 private:
  int team_;
};

void Pool::run(int64_t n, int64_t cost, int team, ChunkFn fn, void* body) {
  // The same chunks as one per thread: ceil(n / team) elements each, the last ones shorter,
  // whoever runs them (a body may keep per-chunk partial results).
  const int64_t chunk = (n + team - 1) / team, chunks = (n + chunk - 1) / chunk;
  std::unique_lock<std::mutex> lock(busy_, std::try_to_lock);  // else another thread's region runs
  bool posted = false;
  uint32_t s = 0;
  if (lock.owns_lock()) {
    if (workers_ < team - 1) start_workers(team - 1);
    if (!grain_from_env_ && stats_.version() != grain_version_) update_grain();
    const bool asleep = sleepers_.load(std::memory_order_relaxed) >= std::min<int64_t>(workers_, chunks - 1);
    bool wake_them = cost >= wake_grain_;
    int64_t t0 = 0;
    if (asleep && !wake_them && !grain_from_env_) {
      t0 = now_ns();
      // Regions that each start within the spin of the last one's end are one stream to a
      // woken worker (it stays awake through them): wake it once the stream's cost reaches
      // the grain (Note [Thread pool], "Streams"). Else a probe of the wake's cost, now and then.
      if (t0 - last_end_ns_ > policy_.spin_ns() || !policy_.streams()) stream_cost_ = 0;
      stream_cost_ += cost;
      wake_them = stream_cost_ >= wake_grain_ || t0 - last_wake_ns_ >= std::max(kProbeNs, 1000 * stats_.futex_ns());
    }
    if (wake_them) stream_cost_ = 0;
    if (!asleep || wake_them) {  // else waking would cost more than it saves
      s = post(n, chunk, chunks, fn, body);
      posted = true;
      if (wake_them && sleepers_.load(std::memory_order_seq_cst) > 0) wake(t0 ? t0 : now_ns());
    } else {
      ++alone_;
      policy_.alone();
    }
  }
  RegionScope scope(team);
  if (!posted) {
    for (int64_t c = 0; c < chunks; ++c) fn(body, c * chunk, std::min(n, c * chunk + chunk));
    if (lock.owns_lock()) last_end_ns_ = now_ns();
    return;
  }
  const int64_t t_start = now_ns();
  const int64_t mine = run_chunks(s, 0);
  const int64_t t_mine = now_ns();
  for (int spins = 0; done_.load(std::memory_order_acquire) < chunks; ++spins) {
    if (spins < 4096) {
      _mm_pause();
    } else {
      sched_yield();  // a worker is running a chunk, perhaps on this core
    }
  }
  last_end_ns_ = now_ns();
  record({chunks - mine, mine, t_mine - t_start, last_end_ns_ - t_mine});
  if (failed_.load(std::memory_order_acquire)) std::rethrow_exception(error_);
}

// Measures, once, the rate of the cheapest loop parallel_for splits (a float add, cost =
// elements, of 2^20 elements, which stream from memory as a large operand does), and takes
// the first wake samples: five wakes of a sleeping worker for an empty region.
void Pool::calibrate() {
  constexpr int64_t kAdd = int64_t{1} << 20;
  int64_t add_ns = INT64_MAX;
  {
    std::vector<float> a(kAdd, 1.f), b(kAdd, 2.f), c(kAdd);
    for (int r = 0; r < 3; ++r) {
      const int64_t t0 = now_ns();
      float* __restrict cp = c.data();
      const float* __restrict ap = a.data(), * __restrict bp = b.data();
      for (int64_t i = 0; i < kAdd; ++i) cp[i] = ap[i] + bp[i];
      asm volatile("" : : "r"(cp) : "memory");
      add_ns = std::min(add_ns, now_ns() - t0);
    }
  }
  per_ns_ = static_cast<double>(kAdd) / static_cast<double>(std::max<int64_t>(add_ns, 1));
  auto noop = [](void*, int64_t, int64_t) {};
  for (int r = 0; r < 5; ++r) {
    const int64_t give_up = now_ns() + 20000000;  // a busy machine: measure what there is
    while (sleepers_.load() < workers_ && now_ns() < give_up) sched_yield();
    post(2, 1, 2, noop, nullptr);  // two empty chunks that only workers run
    wake(now_ns());
    while (done_.load(std::memory_order_acquire) < 2) sched_yield();  // a woken worker has its sample in
  }
  update_grain();
}

// Wakes the sleeping workers for the region just posted; t0: now.
void Pool::wake(int64_t t0) {
  wake_post_ns_.store(t0, std::memory_order_relaxed);
  futex_wake_all(&seq_);
  last_wake_ns_ = now_ns();
  stats_.add_futex(last_wake_ns_ - t0);
}

// What a region offered to the workers earned moves the spin and the grain's safety term
// (SpinPolicy; Note [Thread pool], "The spin adapts"). Under busy_.
void Pool::record(const RegionOutcome& o) {
  if (!policy_.record(o)) return;
  spin_ns_.store(policy_.spin_ns(), std::memory_order_relaxed);
  if (calibrated_) update_grain();
}

// wake_grain_ from the medians of the last wakes: a wake pays when the region lasts the
// wake latency plus twice the futex call, and a region that wakes a worker for nothing
// should lose at most 5% (20 futex calls) while wakes do not visibly pay, down to 20% (4
// futex calls) while regions offered to the worker keep paying (policy_.safety()).
void Pool::update_grain() {
  grain_version_ = stats_.version();
  if (grain_from_env_) return;
  const int64_t wake = stats_.wake_ns(), futex = stats_.futex_ns();
  if (wake < 0 || futex < 0) return;
  const double grain = static_cast<double>(std::max(wake + 2 * futex, policy_.safety() * futex)) * per_ns_;
  wake_grain_ = std::clamp(static_cast<int64_t>(std::min(grain, 1e18)), kParallelGrain, kMaxWakeGrain);
}

ParallelInfo Pool::info() {
  const Settings& s = settings();
  std::lock_guard<std::mutex> lock(busy_);
  ParallelInfo i;
  i.wake_ns = stats_.wake_ns();
  i.futex_ns = stats_.futex_ns();
  i.wake_grain = workers_ == 0 && !calibrated_ ? std::max<int64_t>(s.wake_grain, 0) : wake_grain_;
  i.spin_us = (workers_ > 0 || s.spin_ns < 0 ? policy_.spin_ns() : s.spin_ns) / 1000;
  i.spin_adaptive = s.spin_ns < 0;
  i.alone = alone_;
  i.paid = policy_.count(SpinPolicy::Verdict::kPaid);
  i.missed = policy_.count(SpinPolicy::Verdict::kMissed);
  i.late = policy_.count(SpinPolicy::Verdict::kLate);
  i.workers = workers_;
  i.wake_grain_from_env = s.wake_grain >= 0;
  return i;
}

}  // namespace

void run_parallel(int64_t n, int64_t cost, ChunkFn fn, void* body) {
  const int team = std::min(omp_get_max_threads(), 0xffff);
  if (team <= 1 || t_in_region || omp_in_parallel()) {
    fn(body, 0, n);
    return;
  }
  pool().run(n, cost, team, fn, body);
}

void pool_lock_for_fork() { pool().lock_for_fork(); }
void pool_unlock_in_parent() { pool().unlock_after_fork(); }
void pool_reset_in_child() { pool().reset_in_child(); }

}  // namespace parallel_detail

bool in_parallel_region() { return parallel_detail::t_in_region || omp_in_parallel(); }

ParallelInfo parallel_info() { return parallel_detail::pool().info(); }

void check_parallel_env() { parallel_detail::settings(); }

}  // namespace oar::phi
