// The host side of paddle.profiler's timeline (Note [Profiler] in docs/notes/devices.md).
//
// Every eager op entry, every executor step, every backward node and every Python
// RecordEvent opens an OpScope. With no profiler recording, a scope costs one relaxed
// atomic load; while one records, it appends one HostEvent to a mutex-guarded buffer.
// Timestamps are CLOCK_MONOTONIC nanoseconds, the clock the device ABI's trace events
// use, so host and device activity share one time axis.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace oar::profiler {

/// What a host event is (the values of paddle.profiler.TracerEventType).
enum class EventType : uint8_t {
  kOperator = 0,            // an eager op or an executor step
  kProfileStep = 2,         // one Profiler.step() interval
  kUserDefined = 7,         // RecordEvent(event_type=UserDefined)
  kForward = 9,             // RecordEvent(event_type=Forward)
  kBackward = 10,           // a grad node's apply
  kOptimization = 11,       // RecordEvent(event_type=Optimization)
  kPythonUserDefined = 14,  // paddle.profiler.RecordEvent's default
};

struct HostEvent {
  std::string name;
  uint64_t start_ns = 0, end_ns = 0;
  uint64_t thread_id = 0;  // the OS thread id
  EventType type = EventType::kOperator;
};

namespace detail {
extern std::atomic<bool> g_recording;
}  // namespace detail

/// Whether a profiler records now (one relaxed load: the whole cost when it does not).
inline bool recording() { return detail::g_recording.load(std::memory_order_relaxed); }
/// CLOCK_MONOTONIC in nanoseconds.
uint64_t now_ns();
/// Clears the buffer and starts recording.
void start_recording();
/// Stops recording and hands back what was recorded, in no particular order.
std::vector<HostEvent> stop_recording();
/// Appends one event when recording (the calling thread's id); past 2^20 events, drops it.
void record(std::string name, EventType type, uint64_t start_ns, uint64_t end_ns);

/// Records [construction, destruction) under `name` when a profiler records at
/// construction; `name` must outlive the scope (op names are literals).
class OpScope {
 public:
  explicit OpScope(const char* name, EventType type = EventType::kOperator) {
    if (__builtin_expect(recording(), 0) && name != nullptr) begin(name, type);
  }
  ~OpScope() {
    if (__builtin_expect(name_ != nullptr, 0)) end();
  }
  OpScope(const OpScope&) = delete;
  OpScope& operator=(const OpScope&) = delete;

 private:
  void begin(const char* name, EventType type);
  void end();
  const char* name_ = nullptr;
  EventType type_ = EventType::kOperator;
  uint64_t start_ns_ = 0;
};

}  // namespace oar::profiler
