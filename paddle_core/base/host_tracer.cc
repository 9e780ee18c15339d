#include "paddle_core/base/host_tracer.h"

#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <mutex>
#include <utility>

namespace oar::profiler {
namespace detail {
std::atomic<bool> g_recording{false};
}  // namespace detail

namespace {
constexpr size_t kMaxEvents = size_t{1} << 20;  // a forgotten profiler stops growing here (~100 MB)

std::mutex& buffer_mu() {
  static std::mutex* mu = new std::mutex;  // never destroyed: ops may run in static destructors
  return *mu;
}
std::vector<HostEvent>& buffer() {
  static auto* events = new std::vector<HostEvent>;
  return *events;
}
uint64_t thread_id() {
  thread_local const uint64_t id = static_cast<uint64_t>(::syscall(SYS_gettid));
  return id;
}
}  // namespace

uint64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

void start_recording() {
  std::lock_guard<std::mutex> lock(buffer_mu());
  buffer().clear();
  detail::g_recording.store(true, std::memory_order_relaxed);
}

std::vector<HostEvent> stop_recording() {
  std::lock_guard<std::mutex> lock(buffer_mu());
  detail::g_recording.store(false, std::memory_order_relaxed);
  return std::exchange(buffer(), std::vector<HostEvent>());
}

void record(std::string name, EventType type, uint64_t start_ns, uint64_t end_ns) {
  if (!recording()) return;
  HostEvent e{std::move(name), start_ns, end_ns, thread_id(), type};
  std::lock_guard<std::mutex> lock(buffer_mu());
  if (recording() && buffer().size() < kMaxEvents) buffer().push_back(std::move(e));
}

void OpScope::begin(const char* name, EventType type) {
  name_ = name;
  type_ = type;
  start_ns_ = now_ns();
}

void OpScope::end() { record(name_, type_, start_ns_, now_ns()); }

}  // namespace oar::profiler
