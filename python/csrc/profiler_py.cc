// oar._C.profiler: the recorders behind oar.profiler (Note [Profiler] in
// docs/notes/devices.md): the host tracer (eager ops, executor steps, backward nodes,
// RecordEvent) and the devices' profiler hooks.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <tuple>
#include <vector>

#include "backends/runtime/device_tracer.h"
#include "paddle_core/base/errors.h"
#include "paddle_core/base/host_tracer.h"

namespace py = pybind11;

namespace oar::python {

void bind_profiler(py::module_& m) {
  py::module_ p = m.def_submodule("profiler", "host and device tracing for oar.profiler");
  p.def(
      "start",
      [](bool devices) {
    if (profiler::recording()) OAR_THROW(PreconditionNotMet, "profiler: a profiler is already recording");
    const int n = devices ? backends::start_device_tracing() : 0;
    profiler::start_recording();
    return n;
      },
      py::arg("devices"), "Starts recording (and the devices' hooks when `devices`); returns the devices recording.");
  p.def(
      "stop",
      []() {
    using HostRow = std::tuple<std::string, uint64_t, uint64_t, uint64_t, int>;
    using DeviceRow = std::tuple<std::string, uint64_t, uint64_t, std::string, int>;
    std::vector<backends::DeviceTraceEvent> dev;
    std::string failure;
    try {
      dev = backends::stop_device_tracing();
    } catch (const Error& e) {
      failure = e.what();  // host recording stops anyway
    }
    std::vector<profiler::HostEvent> host = profiler::stop_recording();
    if (!failure.empty()) OAR_THROW(PreconditionNotMet, "profiler: collecting device events failed: ", failure);
    std::vector<HostRow> h;
    h.reserve(host.size());
    for (auto& e : host) h.emplace_back(std::move(e.name), e.start_ns, e.end_ns, e.thread_id, static_cast<int>(e.type));
    std::vector<DeviceRow> d;
    d.reserve(dev.size());
    for (auto& e : dev)
      d.emplace_back(std::move(e.name), e.start_ns, e.end_ns, e.device_type + ":" + std::to_string(e.device_id),
                     e.stream_id);
    return std::make_pair(std::move(h), std::move(d));
      },
      "Stops recording; returns (host events, device events) as tuples.");
  p.def("recording", &profiler::recording, "Whether a profiler records now.");
  p.def("now_ns", &profiler::now_ns, "CLOCK_MONOTONIC in nanoseconds (the timeline's clock).");
  p.def(
      "record",
      [](std::string name, int type, uint64_t start_ns, uint64_t end_ns) {
    profiler::record(std::move(name), static_cast<profiler::EventType>(type), start_ns, end_ns);
      },
      py::arg("name"), py::arg("type"), py::arg("start_ns"), py::arg("end_ns"),
      "Adds one host event while recording (RecordEvent, Profiler.step).");
}

}  // namespace oar::python
