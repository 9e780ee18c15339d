// The device side of paddle.profiler's timeline (Note [Profiler] in docs/notes/devices.md):
// drives the ABI's optional profiler_start / profiler_stop / profiler_collect slots of
// every registered device that has them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace oar::backends {

/// One device activity, as a plugin's profiler_collect reported it.
struct DeviceTraceEvent {
  std::string name;       // the kernel or copy
  uint64_t start_ns = 0;  // CLOCK_MONOTONIC
  uint64_t end_ns = 0;
  std::string device_type;  // "sample"
  int device_id = 0;
  int stream_id = 0;
};

/// Calls profiler_start on every device of every type whose table has it (initializing
/// those devices). Returns how many devices record.
int start_device_tracing();
/// Waits for each recording device, calls profiler_stop and then profiler_collect, and
/// returns what they recorded. A no-op (empty) when start_device_tracing started none.
std::vector<DeviceTraceEvent> stop_device_tracing();

}  // namespace oar::backends
