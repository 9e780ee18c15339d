#include "backends/runtime/device_tracer.h"

#include <mutex>
#include <utility>

#include "backends/runtime/device_manager.h"

namespace oar::backends {
namespace {
struct Recording {
  std::string type;
  int id;
};
std::mutex g_mu;
std::vector<Recording> g_recording;  // the devices profiler_start was called on

Place place_of(const std::string& type, int id) { return CustomPlace(type, id); }

struct Sink {
  const std::string* type;
  std::vector<DeviceTraceEvent>* out;
};
void collect_one(void* user_data, const OAR_TraceEvent* e) {
  auto* sink = static_cast<Sink*>(user_data);
  if (e == nullptr || e->struct_size < sizeof(OAR_TraceEvent)) return;  // a shorter struct: nothing safe to read
  sink->out->push_back(DeviceTraceEvent{e->name != nullptr ? e->name : "?", e->start_ns, e->end_ns, *sink->type,
                                        e->device_id, e->stream_id});
}
}  // namespace

int start_device_tracing() {
  std::lock_guard<std::mutex> lock(g_mu);
  DeviceManager& dm = DeviceManager::instance();
  for (const std::string& type : dm.device_types()) {
    if (type == "cpu" || type == "gpu") continue;  // built-in: traced by the host tracer
    const OAR_DeviceInterface& t = dm.interface(type);
    if (t.profiler_start == nullptr || t.profiler_stop == nullptr || t.profiler_collect == nullptr) continue;
    for (int id = 0; id < dm.device_count(type); ++id) {
      OAR_Device* dev = dm.device(place_of(type, id));
      check_status(t.profiler_start(dev), type, "profiler_start");
      g_recording.push_back({type, id});
    }
  }
  return static_cast<int>(g_recording.size());
}

std::vector<DeviceTraceEvent> stop_device_tracing() {
  std::lock_guard<std::mutex> lock(g_mu);
  DeviceManager& dm = DeviceManager::instance();
  std::vector<DeviceTraceEvent> events;
  std::vector<Recording> recording = std::exchange(g_recording, {});
  for (const Recording& r : recording) {
    const OAR_DeviceInterface& t = dm.interface(r.type);
    const Place place = place_of(r.type, r.id);
    OAR_Device* dev = dm.device(place);
    dm.synchronize(place);  // queued work finishes inside the recording
    check_status(t.profiler_stop(dev), r.type, "profiler_stop");
    Sink sink{&r.type, &events};
    check_status(t.profiler_collect(dev, collect_one, &sink), r.type, "profiler_collect");
  }
  return events;
}

}  // namespace oar::backends
