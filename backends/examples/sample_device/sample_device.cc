// The sample device: an emulated asynchronous accelerator behind the C device ABI
// (oar/device_ext.h), built only against that header. It exists to keep Oar honest:
//
//  - device memory lives in a separate arena that the host cannot read. A memfd is
//    mapped twice: once PROT_NONE (the "device addresses" handed to Oar; every page is a
//    guard page, so host code that reads device memory without a copy crashes at once)
//    and once read-write at another address, which only this plugin's copies use;
//  - each stream is a worker thread that runs its queued work in order, always later
//    than it was queued (idle, it naps 100 us at a time for 5 ms, then sleeps until a
//    launch wakes it; SAMPLE_DEVICE_NAP_US / _NAPPING_US change both); SAMPLE_DEVICE_DELAY_US=N
//    (read when a stream is created) adds a random N/2..N us delay before each item, to
//    expose missing synchronization;
//  - blocking copies first wait for all work queued on the device's blocking streams
//    (CUDA's legacy default stream; a stream made with OAR_STREAM_NON_BLOCKING is not
//    waited for, ABI 1.3); async copies are queued on their stream. An async copy to or from
//    pageable (non-pinned) host memory stages through a private buffer or waits, as CUDA
//    does, so only pinned memory is truly asynchronous;
//  - events fire when their stream reaches them; pinned host memory; memory stats;
//    every optional 1.1 slot: stream queries and callbacks, memset (blocking and queued),
//    peer copies between its two devices, unified (host) memory, properties;
//  - collectives between processes over POSIX shared memory (collectives.cc).
//
// Two devices (ids 0 and 1), each with its own arena (SAMPLE_DEVICE_MEMORY_MB, default
// 1024, reserved lazily: untouched pages cost nothing).
//
// Its C kernels (kernels_*.cc, through oar/kernel_ext.h) are host loops queued on the
// kernel's stream, reading and writing device memory through the plugin's read-write
// view. Failures leave a message for get_last_error_message; SAMPLE_DEVICE_FAIL (read at
// each call; comma-separated: alloc, h2d, d2h, d2d, p2p, memset, kernel, kernel:<op>) forces them.
#include "sample_device.h"

#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

extern char** environ;  // NOLINT: POSIX

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace {

constexpr int kNumDevices = 2;
constexpr size_t kAlign = 512;  // the allocation granularity (device_min_chunk_size)

// A stream's wake-up handshake (Stream::enqueue and run) is a Dekker pair: the host stores
// queued_ then loads sleeping_, the worker stores sleeping_ then loads queued_; each side
// needs a full fence between its store and its load. On the host's side that fence (an
// xchg on x86) is paid per launch and waits for the line of queued_, which the worker
// reads from the other core, and for the slot's stores. With membarrier(2) the worker,
// which goes to sleep only after 5 ms of naps (run), pays for both: its heavy barrier makes
// every running thread of the process pass a full fence, so the host's side needs only
// a compiler barrier (the pattern of folly's asymmetric barriers). Registered once per
// process; without it (an old kernel, a seccomp filter) both sides fence.
bool asymmetric_fences() {
  static const bool ok = syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
  return ok;
}
// The worker's side: a full fence on every running thread of the process. Registered
// again should the process have lost it (a forked child).
void heavy_fence(bool asym) {
  if (asym && syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0) return;
  if (asym && syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0 &&
      syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0)
    return;
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

size_t env_size(const char* name, size_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::strtoull(v, nullptr, 10) : fallback;
}

// ---- the arena: device addresses (no access) and the plugin's private view of them
struct Arena {
  std::mutex mu;
  char* dev = nullptr;   // PROT_NONE: what Oar sees
  char* priv = nullptr;  // read-write: what the plugin's copies touch
  size_t size = 0;
  size_t used = 0;
  std::map<size_t, size_t> free_blocks;  // offset -> size, coalesced
  std::map<size_t, size_t> live;         // offset -> size

  OAR_Status init(size_t bytes) {
    size = bytes;
    const int fd = memfd_create("oar_sample_device", 0);
    if (fd < 0 || ftruncate(fd, static_cast<off_t>(size)) != 0) return OAR_ERROR_DEVICE;
    void* d = mmap(nullptr, size, PROT_NONE, MAP_SHARED | MAP_NORESERVE, fd, 0);
    void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
    close(fd);
    if (d == MAP_FAILED || p == MAP_FAILED) return OAR_ERROR_DEVICE;
    dev = static_cast<char*>(d);
    priv = static_cast<char*>(p);
    free_blocks[0] = size;
    return OAR_SUCCESS;
  }
  bool contains(const void* p, size_t n) const {
    const char* c = static_cast<const char*>(p);
    return dev != nullptr && c >= dev && n <= size && c - dev <= static_cast<ptrdiff_t>(size - n);
  }
  char* host_view(const void* p) const { return priv + (static_cast<const char*>(p) - dev); }

  OAR_Status allocate(void** out, size_t n) {
    n = (std::max<size_t>(n, 1) + kAlign - 1) / kAlign * kAlign;
    std::lock_guard<std::mutex> lock(mu);
    for (auto it = free_blocks.begin(); it != free_blocks.end(); ++it) {  // first fit
      if (it->second < n) continue;
      const size_t off = it->first, rest = it->second - n;
      free_blocks.erase(it);
      if (rest > 0) free_blocks[off + n] = rest;
      live[off] = n;
      used += n;
      *out = dev + off;
      return OAR_SUCCESS;
    }
    return OAR_ERROR_OUT_OF_MEMORY;
  }
  OAR_Status deallocate(void* p) {
    std::lock_guard<std::mutex> lock(mu);
    auto it = contains(p, 0) ? live.find(static_cast<char*>(p) - dev) : live.end();
    if (it == live.end()) return OAR_ERROR_INVALID_ARGUMENT;
    size_t off = it->first, n = it->second;
    live.erase(it);
    used -= n;
    auto next = free_blocks.lower_bound(off);
    if (next != free_blocks.end() && next->first == off + n) {
      n += next->second;
      free_blocks.erase(next);
    }
    auto prev = free_blocks.lower_bound(off);
    if (prev != free_blocks.begin() && (--prev, prev->first + prev->second == off)) {
      prev->second += n;
    } else {
      free_blocks[off] = n;
    }
    return OAR_SUCCESS;
  }
};

// ---- streams and events
// An event is shared by its handle and by every record and wait queued on a stream, so
// destroy_event may come before a stream reaches them (as cudaEventDestroy may): a
// temporary event that a stream waits on (Stream.wait_stream) is freed with its Python
// object while the wait is still queued.
struct Event {
  std::mutex mu;
  std::condition_variable cv;
  uint64_t recorded = 0;  // records queued so far
  uint64_t reached = 0;   // records the stream has passed
  void wait() {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return reached >= recorded; });
  }
};
struct EventHandle {
  std::shared_ptr<Event> event = std::make_shared<Event>();
};
std::shared_ptr<Event> event_of(OAR_Event e) { return reinterpret_cast<EventHandle*>(e)->event; }

class Stream {
 public:
  Stream(int device_id, bool non_blocking)
      : device_id_(device_id),
        non_blocking_(non_blocking),
        id_(next_id_.fetch_add(1) + 1),
        max_delay_us_(env_size("SAMPLE_DEVICE_DELAY_US", 0)),
        nap_(std::max<size_t>(env_size("SAMPLE_DEVICE_NAP_US", 100), 1)),
        napping_for_(env_size("SAMPLE_DEVICE_NAPPING_US", 5000)),
        asym_(asymmetric_fences()),
        worker_([this] { run(); }) {}
  ~Stream() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_.store(true);
    }
    cv_.notify_all();
    worker_.join();
  }
  /// Queues `work`; the profiler hooks record it as `name` (static storage; null: not recorded).
  /// The ring is a driver's command buffer: fixed-size entries preallocated with the
  /// stream, no allocation per item, published by one atomic store; the worker's lock is
  /// taken only to wake it when it sleeps. A full ring makes the host wait for the worker.
  void enqueue(sample::Work&& work, const char* name = nullptr) {
    // Host threads sharing a stream take turns on a one-word lock (one exchange in, one
    // plain store out; a pthread mutex costs a second atomic and two calls per launch).
    // The worker never takes it. Contended only when several host threads launch at once.
    while (push_busy_.exchange(true, std::memory_order_acquire)) {
      while (push_busy_.load(std::memory_order_relaxed)) std::this_thread::yield();
    }
    const uint64_t q = queued_.load(std::memory_order_relaxed);
    // The worker's progress is read again only when the ring looks full from the last
    // look: its counter's cache line stays with the worker.
    while (q - taken_seen_ >= kRing) {
      taken_seen_ = taken_.load(std::memory_order_acquire);
      if (q - taken_seen_ >= kRing) std::this_thread::yield();
    }
    Item& slot = ring_[q % kRing];
    slot.work = std::move(work);
    slot.name = name;
    queued_.store(q + 1, std::memory_order_release);
    push_busy_.store(false, std::memory_order_release);
    // The store of queued_ before the load of sleeping_ (asymmetric_fences above).
    if (asym_) {
      std::atomic_signal_fence(std::memory_order_seq_cst);
    } else {
      std::atomic_thread_fence(std::memory_order_seq_cst);
    }
    if (sleeping_.load(std::memory_order_relaxed)) {
      std::lock_guard<std::mutex> lock(mu_);  // the worker is between its check and its wait, or waits
      cv_.notify_one();
    }
  }
  void synchronize() {
    const uint64_t target = queued_.load(std::memory_order_seq_cst);
    if (done_.load(std::memory_order_acquire) >= target) return;
    std::unique_lock<std::mutex> lock(mu_);
    wake_for_sync();
    waiters_.fetch_add(1, std::memory_order_seq_cst);
    idle_.wait(lock, [&] { return done_.load(std::memory_order_seq_cst) >= target; });
    waiters_.fetch_sub(1, std::memory_order_relaxed);
  }
  bool non_blocking() const { return non_blocking_; }
  /// True when everything queued so far has run (query_stream).
  bool idle() { return done_.load(std::memory_order_acquire) >= queued_.load(std::memory_order_acquire); }
  /// Work that may fail asynchronously (a collective): its error waits for take_error.
  void enqueue_checked(std::function<std::string()> work) {  // collectives: rare, may allocate
    enqueue([this, work = std::move(work)] {
      std::string e = work();
      if (e.empty()) return;
      std::lock_guard<std::mutex> lock(mu_);
      if (error_.empty()) error_ = std::move(e);
    });
  }
  /// The first asynchronous failure since the last call ("" when none).
  std::string take_error() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::exchange(error_, std::string());
  }

 private:
  // Idle, the worker naps nap_ at a time, reading queued_ once per nap, for napping_for_ before
  // it sleeps until a launch wakes it: a GPU's queue, which the host fills without the
  // device polling the host's memory. It does not spin: each poll of queued_ pulls the
  // line the host writes per launch into this core's cache, so the host's next launch
  // waits for it (the worker took one item per poll: ~1 transfer per launch; now one per
  // batch of a nap's launches), and where the scheduler puts the worker on the host's own
  // core, spinning took half its time (row 2b 1.6-2x). A nap needs no wake-up from the
  // host (its launches stay plain stores); synchronize ends one early (wake_for_sync).
  void wake_for_sync() {  // under mu_
    if (napping_) cv_.notify_one();
  }
  void run() {
    sample::worker_thread_started();
    // SCHED_BATCH: the worker's wake-ups (its naps' ends) do not preempt a host thread on
    // the same CPU (where the scheduler puts both on one core, or under taskset -c 0; row
    // 2b pinned to one CPU 1.32-1.33x -> 1.24-1.27x); it still gets its fair share.
    sched_param param{};
    pthread_setschedparam(pthread_self(), SCHED_BATCH, &param);  // best effort
    std::mt19937 rng(std::random_device{}());
    uint64_t t = 0;  // items taken (taken_'s value; only this thread writes it)
    for (;;) {
      uint64_t q = queued_.load(std::memory_order_acquire);
      if (q == t && !stop_.load(std::memory_order_relaxed)) {
        const auto until = std::chrono::steady_clock::now() + napping_for_;
        std::unique_lock<std::mutex> lock(mu_);
        napping_ = true;
        do {  // a missed notify costs at most one nap: launches never need one
          cv_.wait_for(lock, nap_);
          q = queued_.load(std::memory_order_acquire);
        } while (q == t && !stop_.load(std::memory_order_relaxed) && std::chrono::steady_clock::now() < until);
        napping_ = false;
      }
      if (q == t) {
        std::unique_lock<std::mutex> lock(mu_);
        sleeping_.store(true, std::memory_order_seq_cst);
        // Pairs with enqueue's store of queued_ then load of sleeping_: either the
        // predicate sees the item, or enqueue sees sleeping_ and notifies under mu_.
        heavy_fence(asym_);
        cv_.wait(lock, [&] {
          q = queued_.load(std::memory_order_seq_cst);
          return stop_.load() || q != t;
        });
        sleeping_.store(false, std::memory_order_relaxed);
      }
      if (q == t) return;  // stopping, and nothing left
      // The whole batch queued_ showed, without reading it again.
      for (; t != q; ++t) {
        Item& slot = ring_[t % kRing];
        sample::Work work = std::move(slot.work);
        const char* name = slot.name;
        taken_.store(t + 1, std::memory_order_release);  // the slot may be refilled from here
        // Between N/2 and N: work always finishes well after it was queued.
        if (max_delay_us_ > 0) {
          std::this_thread::sleep_for(std::chrono::microseconds(max_delay_us_ / 2 + rng() % (max_delay_us_ / 2 + 1)));
        }
        if (name != nullptr && sample::tracing(device_id_)) {
          const uint64_t t0 = sample::now_ns();
          work();
          sample::trace(device_id_, id_, name, t0, sample::now_ns());
        } else {
          work();
        }
        work.reset();
        done_.fetch_add(1, std::memory_order_seq_cst);
        if (waiters_.load(std::memory_order_seq_cst) > 0) {
          std::lock_guard<std::mutex> lock(mu_);  // a synchronize is between its check and its wait, or waits
          idle_.notify_all();
        }
      }
    }
  }

  std::mutex mu_;  // the worker's sleep and synchronize's wait (and error_)
  std::condition_variable cv_, idle_;
  // Each slot on two cache lines of its own: the worker's take of one item does not pull
  // the line the host fills for the next.
  struct alignas(64) Item {
    sample::Work work;
    const char* name = nullptr;
  };
  static constexpr uint64_t kRing = 1024;
  std::vector<Item> ring_ = std::vector<Item>(kRing);
  // Items queued, taken by the worker, run. The producers' words and the worker's sit on
  // separate cache lines, so a launch does not pull the line the worker writes per item.
  // The producers' lock on a line of its own: the worker never reads it, so taking it
  // (a locked exchange) finds the line in the host's cache, not pulled away by the
  // worker's polling of queued_.
  alignas(64) std::atomic<bool> push_busy_{false};  // orders producers (host threads sharing a stream)
  uint64_t taken_seen_ = 0;  // the producers' last read of taken_ (under push_busy_)
  alignas(64) std::atomic<uint64_t> queued_{0};  // written by producers, read by the worker (once per nap or batch)
  alignas(64) std::atomic<uint64_t> taken_{0};
  std::atomic<uint64_t> done_{0};
  alignas(64) std::atomic<bool> stop_{false};  // read-mostly: written once, at the end
  std::atomic<bool> sleeping_{false};          // the worker waits on cv_ (enqueue must wake it)
  std::atomic<int> waiters_{0};                // synchronize calls waiting on idle_
  bool napping_ = false;                       // the worker naps on cv_ (under mu_)
  std::string error_;  // the first failure of enqueue_checked work not yet reported
  const int device_id_;
  const bool non_blocking_;  // OAR_STREAM_NON_BLOCKING: the blocking calls do not wait for it
  const int id_;  // the profiler's stream number (0: the legacy default stream)
  static inline std::atomic<int> next_id_{0};
  const size_t max_delay_us_;  // SAMPLE_DEVICE_DELAY_US when the stream was created
  // Idle, the worker naps nap_ at a time (SAMPLE_DEVICE_NAP_US, default 100) for
  // napping_for_ (SAMPLE_DEVICE_NAPPING_US, default 5000) before it sleeps until woken.
  const std::chrono::microseconds nap_, napping_for_;
  const bool asym_;            // asymmetric_fences(): the worker's fence covers enqueue's
  std::thread worker_;         // last: starts after the members it reads
};

struct Device {
  std::once_flag init;
  OAR_Status init_status = OAR_SUCCESS;
  Arena arena;
  std::mutex mu;
  std::set<Stream*> streams;
  /// Waits for the work queued on every stream (synchronize_device).
  void synchronize() { wait_streams(false); }
  /// Waits for the work queued on the blocking streams: what a blocking copy, memset or
  /// stream-less launch waits for first (CUDA's legacy default stream).
  void synchronize_blocking() { wait_streams(true); }
  void wait_streams(bool blocking_only) {
    std::vector<Stream*> all;
    {
      std::lock_guard<std::mutex> lock(mu);
      for (Stream* s : streams) {
        if (!blocking_only || !s->non_blocking()) all.push_back(s);
      }
    }
    for (Stream* s : all) s->synchronize();
  }
  // A kernel's failure found while its work ran (launch_checked): kept until a call that
  // waits for the device's work reports it, as CUDA reports a failed kernel from the next
  // synchronizing call. The first one wins.
  std::mutex error_mu;
  OAR_Status error_status = OAR_SUCCESS;
  std::string error_message;
  void set_kernel_error(OAR_Status status, std::string message) {
    std::lock_guard<std::mutex> lock(error_mu);
    if (error_status != OAR_SUCCESS) return;
    error_status = status;
    error_message = std::move(message);
  }
  /// Reports (and clears) a kernel failure: OAR_SUCCESS when there was none.
  OAR_Status take_kernel_error() {
    std::lock_guard<std::mutex> lock(error_mu);
    const OAR_Status s = std::exchange(error_status, OAR_SUCCESS);
    if (s != OAR_SUCCESS) sample::fail(s, std::exchange(error_message, std::string()));
    return s;
  }
};

Device g_devices[kNumDevices];
thread_local int t_current = 0;
std::mutex g_pinned_mu;
std::map<const char*, size_t> g_pinned;  // pinned host blocks: start -> size

bool is_pinned(const void* p, size_t n) {
  std::lock_guard<std::mutex> lock(g_pinned_mu);
  auto it = g_pinned.upper_bound(static_cast<const char*>(p));
  if (it == g_pinned.begin()) return false;
  --it;
  return static_cast<const char*>(p) + n <= it->first + it->second;
}

thread_local std::string t_last_error;

// Fails a call with `status`, leaving `why` for get_last_error_message.
OAR_Status fail(OAR_Status status, const std::string& why) {
  t_last_error = "sample device: " + why;
  return status;
}
const char* s_get_last_error_message() { return t_last_error.empty() ? nullptr : t_last_error.c_str(); }

Device* dev_of(const OAR_Device* d) {
  if (d == nullptr || d->id < 0 || d->id >= kNumDevices) return nullptr;
  Device* dev = &g_devices[d->id];
  return dev->arena.dev != nullptr ? dev : nullptr;  // not initialized: invalid
}

// ---- the table
OAR_Status s_initialize() { return OAR_SUCCESS; }
OAR_Status s_finalize() { return OAR_SUCCESS; }
OAR_Status s_init_device(OAR_Device* d) {
  if (d == nullptr || d->id < 0 || d->id >= kNumDevices) return OAR_ERROR_INVALID_ARGUMENT;
  Device& dev = g_devices[d->id];
  std::call_once(dev.init, [&] { dev.init_status = dev.arena.init(env_size("SAMPLE_DEVICE_MEMORY_MB", 1024) << 20); });
  return dev.init_status;
}
OAR_Status s_deinit_device(OAR_Device* d) { return dev_of(d) ? OAR_SUCCESS : OAR_ERROR_INVALID_ARGUMENT; }
OAR_Status s_set_device(const OAR_Device* d) {
  if (d == nullptr || d->id < 0 || d->id >= kNumDevices) return OAR_ERROR_INVALID_ARGUMENT;
  t_current = d->id;
  return OAR_SUCCESS;
}
OAR_Status s_get_device(OAR_Device* d) {
  if (d == nullptr) return OAR_ERROR_INVALID_ARGUMENT;
  d->id = t_current;
  return OAR_SUCCESS;
}
OAR_Status s_get_device_count(size_t* n) {
  if (n == nullptr) return OAR_ERROR_INVALID_ARGUMENT;
  *n = kNumDevices;
  return OAR_SUCCESS;
}
OAR_Status s_synchronize_device(const OAR_Device* d) {
  Device* dev = dev_of(d);
  if (dev == nullptr) return OAR_ERROR_INVALID_ARGUMENT;
  dev->synchronize();
  return dev->take_kernel_error();
}

OAR_Status s_create_stream_with_flags(const OAR_Device* d, unsigned int flags, OAR_Stream* out) {
  Device* dev = dev_of(d);
  if (dev == nullptr || out == nullptr) return OAR_ERROR_INVALID_ARGUMENT;
  if ((flags & ~unsigned{OAR_STREAM_NON_BLOCKING}) != 0)
    return fail(OAR_ERROR_INVALID_ARGUMENT, "create_stream_with_flags: unknown flags " + std::to_string(flags));
  auto* s = new Stream(d->id, (flags & OAR_STREAM_NON_BLOCKING) != 0);
  std::lock_guard<std::mutex> lock(dev->mu);
  dev->streams.insert(s);
  *out = reinterpret_cast<OAR_Stream>(s);
  return OAR_SUCCESS;
}
OAR_Status s_create_stream(const OAR_Device* d, OAR_Stream* out) {
  return s_create_stream_with_flags(d, OAR_STREAM_DEFAULT, out);
}
OAR_Status s_destroy_stream(const OAR_Device* d, OAR_Stream stream) {
  Device* dev = dev_of(d);
  auto* s = reinterpret_cast<Stream*>(stream);
  if (dev == nullptr || s == nullptr) return OAR_ERROR_INVALID_ARGUMENT;
  {
    std::lock_guard<std::mutex> lock(dev->mu);
    if (dev->streams.erase(s) == 0) return OAR_ERROR_INVALID_ARGUMENT;
  }
  delete s;  // runs what is queued, then joins the worker
  return OAR_SUCCESS;
}
OAR_Status s_synchronize_stream(const OAR_Device* d, OAR_Stream stream) {
  if (dev_of(d) == nullptr || stream == nullptr) return OAR_ERROR_INVALID_ARGUMENT;
  auto* s = reinterpret_cast<Stream*>(stream);
  s->synchronize();
  if (std::string e = s->take_error(); !e.empty()) return sample::fail(OAR_ERROR_DEVICE, e);
  return dev_of(d)->take_kernel_error();
}
OAR_Status s_stream_wait_event(const OAR_Device* d, OAR_Stream stream, OAR_Event event) {
  if (dev_of(d) == nullptr || stream == nullptr || event == nullptr) return OAR_ERROR_INVALID_ARGUMENT;
  std::shared_ptr<Event> e = event_of(event);
  uint64_t target;
  {
    std::lock_guard<std::mutex> lock(e->mu);
    target = e->recorded;  // waits for the record queued before this call, not later ones
  }
  reinterpret_cast<Stream*>(stream)->enqueue([e, target] {
    std::unique_lock<std::mutex> lock(e->mu);
    e->cv.wait(lock, [&] { return e->reached >= target; });
  });
  return OAR_SUCCESS;
}
OAR_Status s_create_event(const OAR_Device* d, OAR_Event* out) {
  if (dev_of(d) == nullptr || out == nullptr) return OAR_ERROR_INVALID_ARGUMENT;
  *out = reinterpret_cast<OAR_Event>(new EventHandle());
  return OAR_SUCCESS;
}
OAR_Status s_destroy_event(const OAR_Device* d, OAR_Event event) {
  if (dev_of(d) == nullptr || event == nullptr) return OAR_ERROR_INVALID_ARGUMENT;
  delete reinterpret_cast<EventHandle*>(event);  // queued records and waits hold their own reference
  return OAR_SUCCESS;
}
OAR_Status s_record_event(const OAR_Device* d, OAR_Stream stream, OAR_Event event) {
  if (dev_of(d) == nullptr || stream == nullptr || event == nullptr) return OAR_ERROR_INVALID_ARGUMENT;
  std::shared_ptr<Event> e = event_of(event);
  uint64_t n;
  {
    std::lock_guard<std::mutex> lock(e->mu);
    n = ++e->recorded;
  }
  reinterpret_cast<Stream*>(stream)->enqueue([e, n] {
    std::lock_guard<std::mutex> lock(e->mu);
    e->reached = std::max(e->reached, n);
    e->cv.notify_all();
  });
  return OAR_SUCCESS;
}
OAR_Status s_query_event(const OAR_Device* d, OAR_Event event) {
  if (dev_of(d) == nullptr || event == nullptr) return OAR_ERROR_INVALID_ARGUMENT;
  std::shared_ptr<Event> e = event_of(event);
  std::lock_guard<std::mutex> lock(e->mu);
  return e->reached >= e->recorded ? OAR_SUCCESS : OAR_ERROR_NOT_READY;
}
OAR_Status s_synchronize_event(const OAR_Device* d, OAR_Event event) {
  if (dev_of(d) == nullptr || event == nullptr) return OAR_ERROR_INVALID_ARGUMENT;
  event_of(event)->wait();
  return OAR_SUCCESS;
}

OAR_Status s_allocate(const OAR_Device* d, void** ptr, size_t size) {
  Device* dev = dev_of(d);
  if (dev == nullptr || ptr == nullptr) return OAR_ERROR_INVALID_ARGUMENT;
  if (sample::debug_fail("alloc"))
    return fail(OAR_ERROR_OUT_OF_MEMORY,
                "allocation of " + std::to_string(size) + " bytes refused (SAMPLE_DEVICE_FAIL=alloc)");
  const OAR_Status s = dev->arena.allocate(ptr, size);
  if (s == OAR_ERROR_OUT_OF_MEMORY) {
    std::lock_guard<std::mutex> lock(dev->arena.mu);
    return fail(s, "out of device memory: " + std::to_string(size) + " bytes requested, " +
                       std::to_string(dev->arena.used) + " of " + std::to_string(dev->arena.size) +
                       " bytes in use (SAMPLE_DEVICE_MEMORY_MB)");
  }
  return s;
}
OAR_Status s_deallocate(const OAR_Device* d, void* ptr, size_t) {
  Device* dev = dev_of(d);
  return dev == nullptr ? OAR_ERROR_INVALID_ARGUMENT : dev->arena.deallocate(ptr);
}
OAR_Status s_host_allocate(const OAR_Device*, void** ptr, size_t size) {
  if (ptr == nullptr) return OAR_ERROR_INVALID_ARGUMENT;
  void* p = mmap(nullptr, std::max<size_t>(size, 1), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return OAR_ERROR_OUT_OF_MEMORY;
  std::lock_guard<std::mutex> lock(g_pinned_mu);
  g_pinned[static_cast<char*>(p)] = std::max<size_t>(size, 1);
  *ptr = p;
  return OAR_SUCCESS;
}
OAR_Status s_host_deallocate(const OAR_Device*, void* ptr, size_t) {
  std::lock_guard<std::mutex> lock(g_pinned_mu);
  auto it = g_pinned.find(static_cast<char*>(ptr));
  if (it == g_pinned.end()) return OAR_ERROR_INVALID_ARGUMENT;
  munmap(ptr, it->second);
  g_pinned.erase(it);
  return OAR_SUCCESS;
}

enum class Dir { kH2D, kD2H, kD2D };
const char* dir_name(Dir dir) { return dir == Dir::kH2D ? "h2d" : dir == Dir::kD2H ? "d2h" : "d2d"; }
// The profiler's names for copies (Paddle's timeline says "Memcpy HtoD" and so on).
const char* copy_name(Dir dir) {
  return dir == Dir::kH2D ? "Memcpy HtoD" : dir == Dir::kD2H ? "Memcpy DtoH" : "Memcpy DtoD";
}

// Checks the device side(s) of a copy and returns the private views to copy between.
OAR_Status resolve(Device* dev, Dir dir, void* dst, const void* src, size_t n, char** to, const char** from) {
  if (dev == nullptr || dst == nullptr || src == nullptr)
    return fail(OAR_ERROR_INVALID_ARGUMENT, std::string(dir_name(dir)) + " copy: null pointer or unknown device");
  const bool dst_dev = dir != Dir::kD2H, src_dev = dir != Dir::kH2D;
  if ((dst_dev && !dev->arena.contains(dst, n)) || (src_dev && !dev->arena.contains(src, n))) {
    // a host pointer where device memory belongs
    return fail(OAR_ERROR_INVALID_ARGUMENT,
                std::string(dir_name(dir)) + " copy of " + std::to_string(n) + " bytes: the " +
                    (dst_dev && !dev->arena.contains(dst, n) ? "destination" : "source") + " is not device memory");
  }
  if (sample::debug_fail(dir_name(dir)))
    return fail(OAR_ERROR_DEVICE, std::string(dir_name(dir)) + " copy of " + std::to_string(n) +
                                      " bytes failed (SAMPLE_DEVICE_FAIL=" + dir_name(dir) + ")");
  *to = dst_dev ? dev->arena.host_view(dst) : static_cast<char*>(dst);
  *from = src_dev ? dev->arena.host_view(src) : static_cast<const char*>(src);
  return OAR_SUCCESS;
}

OAR_Status blocking_copy(const OAR_Device* d, Dir dir, void* dst, const void* src, size_t n) {
  if (n == 0) return OAR_SUCCESS;
  Device* dev = dev_of(d);
  char* to;
  const char* from;
  if (OAR_Status s = resolve(dev, dir, dst, src, n, &to, &from); s != OAR_SUCCESS) return s;
  dev->synchronize_blocking();  // the legacy default stream: after everything queued on blocking streams
  if (OAR_Status s = dev->take_kernel_error(); s != OAR_SUCCESS) return s;
  const uint64_t t0 = sample::tracing(d->id) ? sample::now_ns() : 0;
  std::memcpy(to, from, n);
  if (t0 != 0) sample::trace(d->id, 0, copy_name(dir), t0, sample::now_ns());
  return OAR_SUCCESS;
}
OAR_Status s_h2d(const OAR_Device* d, void* dst, const void* src, size_t n) {
  return blocking_copy(d, Dir::kH2D, dst, src, n);
}
OAR_Status s_d2h(const OAR_Device* d, void* dst, const void* src, size_t n) {
  return blocking_copy(d, Dir::kD2H, dst, src, n);
}
OAR_Status s_d2d(const OAR_Device* d, void* dst, const void* src, size_t n) {
  return blocking_copy(d, Dir::kD2D, dst, src, n);
}

OAR_Status async_copy(const OAR_Device* d, OAR_Stream stream, Dir dir, void* dst, const void* src, size_t n) {
  if (n == 0) return OAR_SUCCESS;
  Device* dev = dev_of(d);
  char* to;
  const char* from;
  if (stream == nullptr) return OAR_ERROR_INVALID_ARGUMENT;
  if (OAR_Status s = resolve(dev, dir, dst, src, n, &to, &from); s != OAR_SUCCESS) return s;
  auto* s = reinterpret_cast<Stream*>(stream);
  if (dir == Dir::kH2D && !is_pinned(src, n)) {
    // Pageable source: the caller may reuse it at once, so take a copy now.
    auto staged = std::make_shared<std::vector<char>>(from, from + n);
    s->enqueue([to, staged] { std::memcpy(to, staged->data(), staged->size()); }, copy_name(dir));
    return OAR_SUCCESS;
  }
  s->enqueue([to, from, n] { std::memcpy(to, from, n); }, copy_name(dir));
  if (dir == Dir::kD2H && !is_pinned(dst, n)) {  // pageable target: synchronous
    s->synchronize();
    return dev->take_kernel_error();
  }
  return OAR_SUCCESS;
}
OAR_Status s_async_h2d(const OAR_Device* d, OAR_Stream s, void* dst, const void* src, size_t n) {
  return async_copy(d, s, Dir::kH2D, dst, src, n);
}
OAR_Status s_async_d2h(const OAR_Device* d, OAR_Stream s, void* dst, const void* src, size_t n) {
  return async_copy(d, s, Dir::kD2H, dst, src, n);
}
OAR_Status s_async_d2d(const OAR_Device* d, OAR_Stream s, void* dst, const void* src, size_t n) {
  return async_copy(d, s, Dir::kD2D, dst, src, n);
}

OAR_Status s_memory_stats(const OAR_Device* d, size_t* total, size_t* free_bytes) {
  Device* dev = dev_of(d);
  if (dev == nullptr || total == nullptr || free_bytes == nullptr) return OAR_ERROR_INVALID_ARGUMENT;
  std::lock_guard<std::mutex> lock(dev->arena.mu);
  *total = dev->arena.size;
  *free_bytes = dev->arena.size - dev->arena.used;
  return OAR_SUCCESS;
}
OAR_Status s_min_chunk_size(const OAR_Device* d, size_t* size) {
  if (dev_of(d) == nullptr || size == nullptr) return OAR_ERROR_INVALID_ARGUMENT;
  *size = kAlign;
  return OAR_SUCCESS;
}

// ---- ABI 1.1: queries, callbacks, memset, peer copies, unified memory, limits, properties
OAR_Status s_query_stream(const OAR_Device* d, OAR_Stream stream) {
  if (dev_of(d) == nullptr || stream == nullptr) return OAR_ERROR_INVALID_ARGUMENT;
  return reinterpret_cast<Stream*>(stream)->idle() ? OAR_SUCCESS : OAR_ERROR_NOT_READY;
}
OAR_Status s_stream_add_callback(const OAR_Device* d, OAR_Stream stream, OAR_StreamCallback callback, void* user_data) {
  if (dev_of(d) == nullptr || stream == nullptr || callback == nullptr) return OAR_ERROR_INVALID_ARGUMENT;
  reinterpret_cast<Stream*>(stream)->enqueue([callback, user_data] { callback(user_data); });
  return OAR_SUCCESS;
}
// The device range [ptr, ptr + n) as the plugin's read-write view, or a failure naming `call`.
OAR_Status device_range(Device* dev, const char* call, void* ptr, size_t n, char** view) {
  if (dev == nullptr || ptr == nullptr)
    return fail(OAR_ERROR_INVALID_ARGUMENT, std::string(call) + ": null pointer or unknown device");
  if (!dev->arena.contains(ptr, n))
    return fail(OAR_ERROR_INVALID_ARGUMENT,
                std::string(call) + " of " + std::to_string(n) + " bytes: not device memory");
  if (sample::debug_fail("memset"))
    return fail(OAR_ERROR_DEVICE,
                std::string(call) + " of " + std::to_string(n) + " bytes failed (SAMPLE_DEVICE_FAIL=memset)");
  *view = dev->arena.host_view(ptr);
  return OAR_SUCCESS;
}
OAR_Status s_memset(const OAR_Device* d, void* ptr, unsigned char value, size_t n) {
  if (n == 0) return OAR_SUCCESS;
  Device* dev = dev_of(d);
  char* to;
  if (OAR_Status s = device_range(dev, "device_memory_set", ptr, n, &to); s != OAR_SUCCESS) return s;
  dev->synchronize_blocking();  // blocking: after everything queued, as the blocking copies
  if (OAR_Status s = dev->take_kernel_error(); s != OAR_SUCCESS) return s;
  std::memset(to, value, n);
  return OAR_SUCCESS;
}
OAR_Status s_async_memset(const OAR_Device* d, OAR_Stream stream, void* ptr, unsigned char value, size_t n) {
  if (n == 0) return OAR_SUCCESS;
  if (stream == nullptr) return OAR_ERROR_INVALID_ARGUMENT;
  char* to;
  if (OAR_Status s = device_range(dev_of(d), "async_device_memory_set", ptr, n, &to); s != OAR_SUCCESS) return s;
  reinterpret_cast<Stream*>(stream)->enqueue([to, value, n] { std::memset(to, value, n); }, "Memset");
  return OAR_SUCCESS;
}
// Peer copies: both arenas are this process's memory, so the plugin copies between its views.
OAR_Status p2p_views(const OAR_Device* dd, const OAR_Device* sd, void* dst, const void* src, size_t n, Device** ddev,
                     Device** sdev, char** to, const char** from) {
  *ddev = dev_of(dd);
  *sdev = dev_of(sd);
  if (*ddev == nullptr || *sdev == nullptr || dst == nullptr || src == nullptr)
    return fail(OAR_ERROR_INVALID_ARGUMENT, "p2p copy: null pointer or unknown device");
  if (!(*ddev)->arena.contains(dst, n) || !(*sdev)->arena.contains(src, n))
    return fail(OAR_ERROR_INVALID_ARGUMENT, "p2p copy of " + std::to_string(n) + " bytes: the " +
                                                (!(*ddev)->arena.contains(dst, n) ? "destination" : "source") +
                                                " is not memory of its device");
  if (sample::debug_fail("p2p"))
    return fail(OAR_ERROR_DEVICE, "p2p copy of " + std::to_string(n) + " bytes failed (SAMPLE_DEVICE_FAIL=p2p)");
  *to = (*ddev)->arena.host_view(dst);
  *from = (*sdev)->arena.host_view(src);
  return OAR_SUCCESS;
}
OAR_Status s_p2p(const OAR_Device* dd, const OAR_Device* sd, void* dst, const void* src, size_t n) {
  if (n == 0) return OAR_SUCCESS;
  Device *ddev, *sdev;
  char* to;
  const char* from;
  if (OAR_Status s = p2p_views(dd, sd, dst, src, n, &ddev, &sdev, &to, &from); s != OAR_SUCCESS) return s;
  sdev->synchronize_blocking();  // blocking: after all work queued on both devices
  ddev->synchronize_blocking();
  if (OAR_Status s = sdev->take_kernel_error(); s != OAR_SUCCESS) return s;
  if (OAR_Status s = ddev->take_kernel_error(); s != OAR_SUCCESS) return s;
  const uint64_t t0 = sample::tracing(sd->id) ? sample::now_ns() : 0;
  std::memmove(to, from, n);
  if (t0 != 0) sample::trace(sd->id, 0, "Memcpy PtoP", t0, sample::now_ns());
  return OAR_SUCCESS;
}
OAR_Status s_async_p2p(const OAR_Device* dd, const OAR_Device* sd, OAR_Stream stream, void* dst, const void* src,
                       size_t n) {
  if (n == 0) return OAR_SUCCESS;
  if (stream == nullptr) return OAR_ERROR_INVALID_ARGUMENT;
  Device *ddev, *sdev;
  char* to;
  const char* from;
  if (OAR_Status s = p2p_views(dd, sd, dst, src, n, &ddev, &sdev, &to, &from); s != OAR_SUCCESS) return s;
  reinterpret_cast<Stream*>(stream)->enqueue([to, from, n] { std::memmove(to, from, n); }, "Memcpy PtoP");
  return OAR_SUCCESS;
}
// Unified memory: one mapping the host and the plugin both address (here: host memory).
std::mutex g_unified_mu;
std::map<void*, size_t> g_unified;
OAR_Status s_unified_allocate(const OAR_Device* d, void** ptr, size_t size) {
  if (dev_of(d) == nullptr || ptr == nullptr) return OAR_ERROR_INVALID_ARGUMENT;
  void* p = mmap(nullptr, std::max<size_t>(size, 1), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    return fail(OAR_ERROR_OUT_OF_MEMORY, "unified memory: cannot map " + std::to_string(size) + " bytes");
  std::lock_guard<std::mutex> lock(g_unified_mu);
  g_unified[p] = std::max<size_t>(size, 1);
  *ptr = p;
  return OAR_SUCCESS;
}
OAR_Status s_unified_deallocate(const OAR_Device* d, void* ptr, size_t) {
  if (dev_of(d) == nullptr) return OAR_ERROR_INVALID_ARGUMENT;
  std::lock_guard<std::mutex> lock(g_unified_mu);
  auto it = g_unified.find(ptr);
  if (it == g_unified.end()) return fail(OAR_ERROR_INVALID_ARGUMENT, "unified memory: not a unified allocation");
  munmap(ptr, it->second);
  g_unified.erase(it);
  return OAR_SUCCESS;
}
OAR_Status s_max_alloc_size(const OAR_Device* d, size_t* size) {
  Device* dev = dev_of(d);
  if (dev == nullptr || size == nullptr) return OAR_ERROR_INVALID_ARGUMENT;
  *size = dev->arena.size;  // one allocation may take the whole arena
  return OAR_SUCCESS;
}
OAR_Status s_properties(const OAR_Device* d, OAR_DeviceProperties* p) {
  Device* dev = dev_of(d);
  if (dev == nullptr || p == nullptr) return OAR_ERROR_INVALID_ARGUMENT;
    // Writes only the fields that fit in the caller's struct_size (an older runtime's struct).
#define SAMPLE_SET(field, value) \
  if (offsetof(OAR_DeviceProperties, field) + sizeof(p->field) <= p->struct_size) p->field = (value)
  if (offsetof(OAR_DeviceProperties, name) + sizeof(p->name) <= p->struct_size)
    std::snprintf(p->name, sizeof(p->name), "Oar sample device %d (emulated)", d->id);
  SAMPLE_SET(total_memory, dev->arena.size);
  SAMPLE_SET(compute_units, 1);  // a stream's worker thread runs its kernels alone
  SAMPLE_SET(max_threads_per_block, 0);
  SAMPLE_SET(compute_capability_major, 1);
  SAMPLE_SET(compute_capability_minor, 0);
  SAMPLE_SET(runtime_version, OAR_DEVICE_ABI_VERSION_MAJOR * 1000 + OAR_DEVICE_ABI_VERSION_MINOR * 10);
  SAMPLE_SET(driver_version, OAR_DEVICE_ABI_VERSION_MAJOR * 1000 + OAR_DEVICE_ABI_VERSION_MINOR * 10);
  SAMPLE_SET(supports_fp16, 0);  // its kernels are float32/float64 host loops
  SAMPLE_SET(supports_bf16, 0);
#undef SAMPLE_SET
  return OAR_SUCCESS;
}

OAR_DeviceInterface g_table = [] {
  OAR_DeviceInterface t;
  std::memset(&t, 0, sizeof(t));
  t.struct_size = sizeof(t);
  t.initialize = s_initialize;
  t.finalize = s_finalize;
  t.init_device = s_init_device;
  t.deinit_device = s_deinit_device;
  t.set_device = s_set_device;
  t.get_device = s_get_device;
  t.get_device_count = s_get_device_count;
  t.synchronize_device = s_synchronize_device;
  t.create_stream = s_create_stream;
  t.create_stream_with_flags = s_create_stream_with_flags;
  t.destroy_stream = s_destroy_stream;
  t.synchronize_stream = s_synchronize_stream;
  t.stream_wait_event = s_stream_wait_event;
  t.create_event = s_create_event;
  t.destroy_event = s_destroy_event;
  t.record_event = s_record_event;
  t.synchronize_event = s_synchronize_event;
  t.query_event = s_query_event;
  t.device_memory_allocate = s_allocate;
  t.device_memory_deallocate = s_deallocate;
  t.host_memory_allocate = s_host_allocate;
  t.host_memory_deallocate = s_host_deallocate;
  t.memory_copy_h2d = s_h2d;
  t.memory_copy_d2h = s_d2h;
  t.memory_copy_d2d = s_d2d;
  t.async_memory_copy_h2d = s_async_h2d;
  t.async_memory_copy_d2h = s_async_d2h;
  t.async_memory_copy_d2d = s_async_d2d;
  t.device_memory_stats = s_memory_stats;
  t.device_min_chunk_size = s_min_chunk_size;
  t.get_last_error_message = s_get_last_error_message;
  t.query_stream = s_query_stream;
  t.stream_add_callback = s_stream_add_callback;
  t.device_memory_set = s_memset;
  t.async_device_memory_set = s_async_memset;
  t.memory_copy_p2p = s_p2p;
  t.async_memory_copy_p2p = s_async_p2p;
  t.unified_memory_allocate = s_unified_allocate;
  t.unified_memory_deallocate = s_unified_deallocate;
  t.device_max_alloc_size = s_max_alloc_size;
  t.get_device_properties = s_properties;
  sample::fill_collectives(&t);
  sample::fill_profiler(&t);
  return t;
}();

}  // namespace

namespace sample {

bool fail_env_set() {
  // getenv compares every variable's name (~80 ns per kernel with a shell's environment).
  // Absent once, SAMPLE_DEVICE_FAIL stays absent while the environment array, its length
  // and its last entry are unchanged: glibc's setenv of a new name appends an entry (in
  // an array it may reallocate), unsetenv shifts the later ones down; both change one of
  // the three, so a check is O(1) and only a changed environment is scanned again.
  // initial-exec: a dlopen'ed plugin's thread_local otherwise costs a __tls_get_addr call per read.
  [[gnu::tls_model("initial-exec")]] thread_local char** seen = nullptr;
  [[gnu::tls_model("initial-exec")]] thread_local size_t seen_n = 0;
  [[gnu::tls_model("initial-exec")]] thread_local const char* seen_last = nullptr;
  char** env = environ;
  if (env != nullptr && env == seen && env[seen_n] == nullptr && (seen_n == 0 || env[seen_n - 1] == seen_last))
    return false;
  const bool set = std::getenv("SAMPLE_DEVICE_FAIL") != nullptr;
  size_t n = 0;
  while (env != nullptr && env[n] != nullptr) ++n;
  seen = set ? nullptr : env;
  seen_n = n;
  seen_last = n > 0 ? env[n - 1] : nullptr;
  return set;
}

bool debug_fail(const std::string& what) {
  if (!fail_env_set()) return false;
  const char* v = std::getenv("SAMPLE_DEVICE_FAIL");
  if (v == nullptr || *v == '\0') return false;
  const std::string list = std::string(",") + v + ",";
  return list.find("," + what + ",") != std::string::npos;
}

char* host_view(const OAR_Device* d, const void* p, size_t bytes) {
  Device* dev = dev_of(d);
  if (dev == nullptr || !dev->arena.contains(p, bytes)) return nullptr;
  return dev->arena.host_view(p);
}

ArenaView arena_view(const OAR_Device* d) {
  Device* dev = dev_of(d);
  if (dev == nullptr) return {};
  return {dev->arena.dev, dev->arena.priv, dev->arena.size};
}

OAR_Status launch(const OAR_Device* d, OAR_Stream stream, Work&& work, const char* name) {
  Device* dev = dev_of(d);
  if (dev == nullptr) return OAR_ERROR_INVALID_ARGUMENT;
  if (stream == nullptr) {  // no stream: after everything queued, on the calling thread
    dev->synchronize_blocking();
    const uint64_t t0 = name != nullptr && tracing(d->id) ? now_ns() : 0;
    work();
    if (t0 != 0) trace(d->id, 0, name, t0, now_ns());
    return OAR_SUCCESS;
  }
  reinterpret_cast<Stream*>(stream)->enqueue(std::move(work), name);
  return OAR_SUCCESS;
}

OAR_Status launch_checked(const OAR_Device* d, OAR_Stream stream, std::function<std::string()> work, const char* name,
                          OAR_Status status) {
  Device* dev = dev_of(d);
  if (dev == nullptr) return OAR_ERROR_INVALID_ARGUMENT;
  return launch(
      d, stream,
      [dev, status, work = std::move(work)] {
    if (std::string e = work(); !e.empty()) dev->set_kernel_error(status, std::move(e));
      },
      name);
}

OAR_Status synchronize(const OAR_Device* d, OAR_Stream stream) {
  Device* dev = dev_of(d);
  if (dev == nullptr) return OAR_ERROR_INVALID_ARGUMENT;
  if (stream == nullptr) {
    dev->synchronize();
  } else {
    reinterpret_cast<Stream*>(stream)->synchronize();
  }
  return OAR_SUCCESS;
}

char* device_view(int id, const void* ptr, size_t n) {
  if (id < 0 || id >= kNumDevices || !g_devices[id].arena.contains(ptr, n)) return nullptr;
  return g_devices[id].arena.host_view(ptr);
}
int device_of(const void* ptr, size_t n) {
  for (int id = 0; id < kNumDevices; ++id) {
    if (g_devices[id].arena.contains(ptr, n)) return id;
  }
  return -1;
}
void stream_enqueue(OAR_Stream stream, std::function<std::string()> work) {
  reinterpret_cast<Stream*>(stream)->enqueue_checked(std::move(work));
}
OAR_Status fail(OAR_Status status, std::string message) {
  t_last_error = std::move(message);
  return status;
}
}  // namespace sample

extern "C" __attribute__((visibility("default"))) void oar_init_plugin(OAR_DeviceRegistration* reg) {
  if (reg == nullptr || reg->struct_size < sizeof(OAR_DeviceRegistration)) return;
  reg->version.struct_size = sizeof(OAR_DeviceAbiVersion);
  reg->version.major = OAR_DEVICE_ABI_VERSION_MAJOR;
  reg->version.minor = OAR_DEVICE_ABI_VERSION_MINOR;
  reg->device_type = "sample";
  reg->sub_device_type = "oar emulated device";
  reg->interface = &g_table;
  reg->register_kernels = sample::register_kernels;
}
