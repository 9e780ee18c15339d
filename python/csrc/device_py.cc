// oar._C device bindings (python/oar/_device.py, python/oar/device/): plugin loading,
// device types, streams and events, synchronization, memory stats (Note [Devices]).
#include <pybind11/stl.h>

#include <algorithm>
#include <memory>

#include "backends/runtime/caching_allocator.h"
#include "backends/runtime/device_manager.h"
#include "backends/runtime/streams.h"
#include "paddle_core/tensor/allocator.h"
#include "python/csrc/py_convert.h"

namespace oar::python {
namespace {

using backends::DeviceManager;

// A stream of a place. Streams are never destroyed (as PyTorch pools its streams): a
// block the caching allocator handed out on a stream records an event on that stream
// when it is freed, which may be long after the Python object is gone.
struct PyStream {
  Place place;
  OAR_Stream handle = nullptr;
};

struct PyEvent {
  Place place;
  OAR_Event handle = nullptr;
  bool recorded = false;
  ~PyEvent() {
    if (handle != nullptr) {
      try {
        backends::destroy_event(place, handle);
      } catch (...) {
      }
    }
  }
};

std::shared_ptr<PyStream> wrap_stream(const Place& place, OAR_Stream s) {
  auto p = std::make_shared<PyStream>();
  p->place = place;
  p->handle = s;
  return p;
}

// The allocator of a device place, as the caching allocator (which every registered
// device gets unless its backend brought its own).
backends::CachingAllocator* caching(const Place& place) {
  auto* a = dynamic_cast<backends::CachingAllocator*>(get_allocator(place));
  OAR_ENFORCE(a != nullptr, Unimplemented, "memory stats: the allocator of ", place.str(),
              " is not Oar's caching allocator");
  return a;
}

// Event.query / Stream.query: whether the work is done, without waiting (a table without
// the 1.1 query slot waits instead, which answers the same). A device error is raised.
bool query_done(const Place& place, OAR_Event event, OAR_Stream stream) {
  DeviceManager& dm = DeviceManager::instance();
  const std::string type = DeviceManager::device_type_of(place);
  const OAR_DeviceInterface& t = dm.interface(type);
  OAR_Device* d = dm.device(place);
  OAR_Status st;
  if (event != nullptr) {
    st = t.query_event != nullptr ? t.query_event(d, event) : t.synchronize_event(d, event);
  } else {
    st = t.query_stream != nullptr ? t.query_stream(d, stream) : t.synchronize_stream(d, stream);
  }
  if (st == OAR_ERROR_NOT_READY) return false;
  backends::check_status(st, type, event != nullptr ? "query_event" : "query_stream");
  return true;
}

void check_place(const Place& place, const char* op) {
  if (place.is_cpu()) return;
  DeviceManager& dm = DeviceManager::instance();
  const std::string type = DeviceManager::device_type_of(place);
  OAR_ENFORCE(dm.has_device_type(type), InvalidArgument, op, ": device type '", type, "' is not registered");
  const int n = dm.device_count(type);
  OAR_ENFORCE(place.device_id() < n, InvalidArgument, op, ": ", place.str(), " does not exist ('", type, "' has ", n,
              " device(s))");
}

}  // namespace

void bind_device(py::module_& m) {
  m.def("_load_plugin", [](const std::string& path) {
    DeviceManager& dm = DeviceManager::instance();
    std::vector<std::string> before = dm.device_types();
    dm.load_plugin(path);
    for (const std::string& t : dm.device_types()) {
      if (std::find(before.begin(), before.end(), t) == before.end()) return t;
    }
    return std::string();
  });
  m.def("_device_types", [] { return DeviceManager::instance().device_types(); });
  m.def("_device_count", [](const std::string& t) { return DeviceManager::instance().device_count(t); });
  m.def("_check_place", [](const Place& p, const std::string& op) { check_place(p, op.c_str()); });
  m.def("_synchronize", [](const Place& p) {
    py::gil_scoped_release nogil;
    if (!p.is_cpu()) DeviceManager::instance().synchronize(p);
  });

  py::class_<PyEvent, std::shared_ptr<PyEvent>>(m, "_Event")
      .def(py::init([](const Place& place) {
        check_place(place, "Event");
        auto e = std::make_shared<PyEvent>();
        e->place = place;
        if (!place.is_cpu()) e->handle = backends::create_event(place);
        return e;
      }))
      .def_readonly("place", &PyEvent::place)
      .def_readonly("recorded", &PyEvent::recorded)
      .def(
          "record",
          [](PyEvent& e, PyStream& s) {
    OAR_ENFORCE(s.place == e.place, InvalidArgument, "Event.record: the event is of ", e.place.str(),
                ", the stream of ", s.place.str());
    if (e.handle != nullptr) backends::record_event(e.place, s.handle, e.handle);
    e.recorded = true;
          })
      .def(
          "synchronize",
          [](PyEvent& e) {
    py::gil_scoped_release nogil;
    if (e.handle != nullptr) backends::synchronize_event(e.place, e.handle);
          })
      .def("query", [](PyEvent& e) {
        // Never recorded: nothing to wait for (as CUDA).
        return e.handle == nullptr || !e.recorded || query_done(e.place, e.handle, nullptr);
      });

  py::class_<PyStream, std::shared_ptr<PyStream>>(m, "_Stream")
      .def(py::init([](const Place& place) {
        check_place(place, "Stream");
        auto s = std::make_shared<PyStream>();
        s->place = place;
        if (!place.is_cpu()) {
          s->handle = backends::create_stream(place);
        }
        return s;
      }))
      .def_readonly("place", &PyStream::place)
      .def_property_readonly("handle", [](const PyStream& s) { return reinterpret_cast<uintptr_t>(s.handle); })
      .def(
          "synchronize",
          [](PyStream& s) {
    py::gil_scoped_release nogil;
    if (s.handle != nullptr) backends::synchronize_stream(s.place, s.handle);
          })
      .def("query", [](PyStream& s) { return s.handle == nullptr || query_done(s.place, nullptr, s.handle); })
      .def("wait_event", [](PyStream& s, PyEvent& e) {
        OAR_ENFORCE(s.place == e.place, InvalidArgument, "Stream.wait_event: the stream is of ", s.place.str(),
                    ", the event of ", e.place.str());
        if (s.handle != nullptr && e.handle != nullptr) backends::stream_wait_event(s.place, s.handle, e.handle);
      });
  m.def("_current_stream", [](const Place& p) {
    check_place(p, "current_stream");
    return wrap_stream(p, backends::current_stream(p));
  });
  m.def("_set_current_stream",
        [](PyStream& s) { return wrap_stream(s.place, backends::set_current_stream(s.place, s.handle)); });

  m.def("_device_properties", [](const Place& p) {
    check_place(p, "get_device_properties");
    const OAR_DeviceProperties props = DeviceManager::instance().properties(p);
    py::dict d;
    d["name"] = std::string(props.name);
    d["total_memory"] = props.total_memory;
    d["compute_units"] = props.compute_units;
    d["max_threads_per_block"] = props.max_threads_per_block;
    d["major"] = props.compute_capability_major;
    d["minor"] = props.compute_capability_minor;
    d["runtime_version"] = props.runtime_version;
    d["driver_version"] = props.driver_version;
    d["supports_fp16"] = props.supports_fp16 != 0;
    d["supports_bf16"] = props.supports_bf16 != 0;
    return d;
  });
  m.def("_memory_stats", [](const Place& p) {
    check_place(p, "memory stats");
    backends::CachingAllocator* a = caching(p);
    AllocatorStats s = a->stats();
    py::dict d;
    d["allocated"] = s.allocated_bytes;
    d["max_allocated"] = s.peak_allocated_bytes;
    d["reserved"] = a->reserved_bytes();
    d["max_reserved"] = a->peak_reserved_bytes();
    return d;
  });
  m.def("_reset_peak_memory", [](const Place& p) {
    check_place(p, "reset_max_memory_allocated");
    caching(p)->reset_peaks();
  });
  m.def("_empty_cache", [](const Place& p) {
    check_place(p, "empty_cache");
    py::gil_scoped_release nogil;
    get_allocator(p)->empty_cache();
  });
}

}  // namespace oar::python
