// The sample device's profiler hooks (device_ext.h's profiler_* slots): while a device
// records, every kernel and copy its streams run, and every blocking copy, is kept
// with CLOCK_MONOTONIC start and end times until profiler_collect hands them over.
#include <time.h>

#include <atomic>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "sample_device.h"

namespace {
constexpr int kMaxDevices = 2;
constexpr size_t kMaxEvents = 1 << 20;  // per device; later ones are dropped (bounded memory)

struct Record {
  std::string name;
  uint64_t start_ns, end_ns;
  int stream_id;
};
struct DeviceTrace {
  std::atomic<bool> on{false};
  std::mutex mu;
  std::vector<Record> events;
};
DeviceTrace g_trace[kMaxDevices];

DeviceTrace* trace_of(const OAR_Device* d) {
  return d != nullptr && d->id >= 0 && d->id < kMaxDevices ? &g_trace[d->id] : nullptr;
}

OAR_Status s_profiler_start(const OAR_Device* d) {
  DeviceTrace* t = trace_of(d);
  if (t == nullptr) return sample::fail(OAR_ERROR_INVALID_ARGUMENT, "profiler_start: unknown device");
  std::lock_guard<std::mutex> lock(t->mu);
  t->events.clear();
  t->on.store(true, std::memory_order_relaxed);
  return OAR_SUCCESS;
}
OAR_Status s_profiler_stop(const OAR_Device* d) {
  DeviceTrace* t = trace_of(d);
  if (t == nullptr) return sample::fail(OAR_ERROR_INVALID_ARGUMENT, "profiler_stop: unknown device");
  t->on.store(false, std::memory_order_relaxed);
  return OAR_SUCCESS;
}
OAR_Status s_profiler_collect(const OAR_Device* d, OAR_TraceSink sink, void* user_data) {
  DeviceTrace* t = trace_of(d);
  if (t == nullptr || sink == nullptr)
    return sample::fail(OAR_ERROR_INVALID_ARGUMENT, "profiler_collect: unknown device or null sink");
  std::vector<Record> events;
  {
    std::lock_guard<std::mutex> lock(t->mu);
    events.swap(t->events);
  }
  for (const Record& r : events) {
    OAR_TraceEvent e{};
    e.struct_size = sizeof(OAR_TraceEvent);
    e.name = r.name.c_str();
    e.start_ns = r.start_ns;
    e.end_ns = r.end_ns;
    e.device_id = d->id;
    e.stream_id = r.stream_id;
    sink(user_data, &e);
  }
  return OAR_SUCCESS;
}
}  // namespace

namespace sample {

bool tracing(int device_id) {
  return device_id >= 0 && device_id < kMaxDevices && g_trace[device_id].on.load(std::memory_order_relaxed);
}

uint64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

void trace(int device_id, int stream_id, const char* name, uint64_t start_ns, uint64_t end_ns) {
  if (!tracing(device_id)) return;
  DeviceTrace& t = g_trace[device_id];
  std::lock_guard<std::mutex> lock(t.mu);
  if (t.events.size() < kMaxEvents) t.events.push_back(Record{name, start_ns, end_ns, stream_id});
}

void fill_profiler(OAR_DeviceInterface* table) {
  table->profiler_start = s_profiler_start;
  table->profiler_stop = s_profiler_stop;
  table->profiler_collect = s_profiler_collect;
}

}  // namespace sample
