// What the sample device's kernels (kernels_*.cc) and collectives (collectives.cc,
// ccl_reduce.cc) use of its runtime (sample_device.cc).
// Nothing here is exported: the plugin's only public symbol is oar_init_plugin.
#pragma once

#include <oar/device_ext.h>
#include <oar/kernel_ext.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <new>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace sample {

/// One queued item of work: a move-only callable kept inline (no heap allocation) when
/// it fits kInline bytes, as a driver's fixed-size command-buffer entry; larger ones go
/// to the heap. What a stream's ring holds (std::function allocated for every kernel's
/// captures, the largest share of a tiny op's host cost).
class Work {
 public:
  static constexpr size_t kInline = 96;
  Work() = default;
  template <typename F, typename = std::enable_if_t<!std::is_same_v<std::decay_t<F>, Work>>>
  Work(F&& f) {  // NOLINT(google-explicit-constructor): lambdas convert as to std::function
    using D = std::decay_t<F>;
    if constexpr (sizeof(D) <= kInline && alignof(D) <= alignof(std::max_align_t) &&
                  std::is_nothrow_move_constructible_v<D>) {
      new (buf_) D(std::forward<F>(f));
      ops_ = &kInlineOps<D>;
    } else {
      *reinterpret_cast<D**>(buf_) = new D(std::forward<F>(f));
      ops_ = &kHeapOps<D>;
    }
  }
  Work(Work&& o) noexcept { take(o); }
  Work& operator=(Work&& o) noexcept {
    if (this != &o) {
      reset();
      take(o);
    }
    return *this;
  }
  Work(const Work&) = delete;
  Work& operator=(const Work&) = delete;
  ~Work() { reset(); }
  void operator()() { ops_->call(buf_); }
  explicit operator bool() const { return ops_ != nullptr; }
  void reset() {
    if (ops_ != nullptr) ops_->destroy(buf_);
    ops_ = nullptr;
  }

 private:
  struct Ops {
    void (*call)(void*);
    void (*move)(void* from, void* to);  // constructs at `to`, destroys `from`
    void (*destroy)(void*);
  };
  template <typename D>
  static constexpr Ops kInlineOps = {[](void* p) { (*static_cast<D*>(p))(); },
                                     [](void* from, void* to) {
    new (to) D(std::move(*static_cast<D*>(from)));
    static_cast<D*>(from)->~D();
                                     },
                                     [](void* p) { static_cast<D*>(p)->~D(); }};
  template <typename D>
  static constexpr Ops kHeapOps = {[](void* p) { (**static_cast<D**>(p))(); },
                                   [](void* from, void* to) { *static_cast<D**>(to) = *static_cast<D**>(from); },
                                   [](void* p) { delete *static_cast<D**>(p); }};
  void take(Work& o) {
    ops_ = o.ops_;
    if (ops_ != nullptr) ops_->move(o.buf_, buf_);
    o.ops_ = nullptr;
  }
  alignas(std::max_align_t) unsigned char buf_[kInline];
  const Ops* ops_ = nullptr;
};

/// The plugin's read-write view of [p, p + bytes) of device `d`'s memory (what Oar sees
/// is PROT_NONE), or null when that range is not in the device's arena.
char* host_view(const OAR_Device* d, const void* p, size_t bytes);

/// Device memory as a kernel call sees it (resolved once per call, then each tensor's
/// view costs no call): host_view's answer for ranges of one device.
struct ArenaView {
  const char* dev = nullptr;  // the device addresses [dev, dev + size); null: no device
  char* priv = nullptr;       // the plugin's read-write view of `dev`
  size_t size = 0;
  char* view(const void* p, size_t bytes) const {
    const char* c = static_cast<const char*>(p);
    if (dev == nullptr || c < dev || bytes > size || static_cast<size_t>(c - dev) > size - bytes) return nullptr;
    return priv + (c - dev);
  }
};
/// Device `d`'s memory (empty when `d` is not an initialized device of this plugin).
ArenaView arena_view(const OAR_Device* d);

/// Queues `work` on `stream`, after what is queued there (null: runs it on the calling
/// thread after all work queued on the device). `name` (static storage) is what the
/// profiler hooks record it as.
OAR_Status launch(const OAR_Device* d, OAR_Stream stream, Work&& work, const char* name = nullptr);

/// As launch, for work that can fail: a non-empty string `work` returns is a kernel
/// failure (with `status`) that the device's next synchronizing call reports (its
/// synchronize_device, synchronize_stream, a blocking copy or a copy to pageable memory),
/// as CUDA reports a failed kernel; the first failure wins until it is reported.
OAR_Status launch_checked(const OAR_Device* d, OAR_Stream stream, std::function<std::string()> work, const char* name,
                          OAR_Status status);

/// Waits for the work queued on `stream` (null: on the whole device).
OAR_Status synchronize(const OAR_Device* d, OAR_Stream stream);

/// True when SAMPLE_DEVICE_FAIL (comma-separated, read at each call) lists `what`: the
/// debug switch that makes an allocation, a copy or a kernel fail.
bool debug_fail(const std::string& what);
/// Whether SAMPLE_DEVICE_FAIL is set now (the cheap first test of debug_fail).
bool fail_env_set();

/// Called first on each stream's worker thread: its kernels run on that thread alone
/// (kernels.cc: the BLAS's own threads are off there).
void worker_thread_started();

/// Registers every kernel of kernels_*.cc (OAR_DeviceRegistration.register_kernels).
OAR_Status register_kernels(const OAR_KernelApi* api);

// ---- for the collectives
/// The read-write view of device memory [ptr, ptr + n) of device `id`, or nullptr when
/// that range is not inside the device's arena.
char* device_view(int id, const void* ptr, size_t n);
/// The device id whose arena holds [ptr, ptr + n), or -1.
int device_of(const void* ptr, size_t n);
/// Queues `work` on `stream` after what is already there. A non-empty string it returns
/// is an asynchronous failure: the stream's next synchronize_stream reports it (as CUDA's
/// cudaStreamSynchronize reports a failed kernel).
void stream_enqueue(OAR_Stream stream, std::function<std::string()> work);
/// Sets the calling thread's get_last_error_message text as is; returns `status`.
OAR_Status fail(OAR_Status status, std::string message);
/// Bytes of one element, 0 for a value outside the enum (kernels.cc).
size_t dtype_size(OAR_DataType t);
/// dst[i] = op over srcs[0..n)[i], in rank order, so every rank gets the same bits.
void reduce_into(char* dst, const std::vector<const char*>& srcs, size_t count, OAR_DataType t, OAR_ReduceOp op);
/// Fills the table's ccl_* slots (collectives.cc).
void fill_collectives(OAR_DeviceInterface* table);

// ---- the profiler hooks (profiler.cc)
/// Whether device `device_id` records its activity now (one relaxed load).
bool tracing(int device_id);
/// CLOCK_MONOTONIC in nanoseconds (the clock of OAR_TraceEvent).
uint64_t now_ns();
/// Keeps one activity of device `device_id` while it records; stream 0 is the
/// legacy default stream (blocking copies, stream-less launches).
void trace(int device_id, int stream_id, const char* name, uint64_t start_ns, uint64_t end_ns);
/// Fills the table's profiler_* slots.
void fill_profiler(OAR_DeviceInterface* table);

}  // namespace sample
