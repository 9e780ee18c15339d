// oar._C pinned-memory bindings (Tensor.pin_memory / is_pinned in python/oar/_tensor.py):
// Note [Pinned memory] (docs/notes/devices.md).
#include "backends/runtime/pinned_allocator.h"
#include "oar_generated/ops_api.h"
#include "python/csrc/py_convert.h"

namespace oar::python {
namespace {

bool is_pinned(const Tensor& t) {
  const DenseTensor& d = t.dense();
  return d.place().is_cpu() && d.storage() != nullptr && backends::pinned_lookup(d.storage()->data());
}

}  // namespace

void bind_pinned(py::module_& m) {
  m.def("_is_pinned", [](py::handle t) { return is_pinned(py_to_tensor(t, "is_pinned", "x")); });
  // A copy of x in pinned memory of `device` through the copy op (differentiable, and
  // asynchronous from a device when blocking is false); x itself when it is pinned.
  m.def("_pin_memory", [](py::handle h, const Place& device, bool blocking) {
    Tensor t = py_to_tensor(h, "pin_memory", "x");
    OAR_ENFORCE(!device.is_cpu(), InvalidArgument,
                "pin_memory: argument 'device' must be a device such as 'sample:0', got cpu");
    if (is_pinned(t)) return py::reinterpret_borrow<py::object>(h);
    backends::PinnedOutputScope scope(device);
    return wrap(ops::copy_to(t, CPUPlace(), blocking));
  });
  m.def("_pinned_empty_cache", [] {
    py::gil_scoped_release nogil;
    backends::pinned_empty_cache();
  });
  m.def("_pinned_memory_stats", [] {
    const backends::PinnedStats s = backends::pinned_stats();
    py::dict d;
    d["allocated_bytes"] = s.allocated_bytes;
    d["cached_bytes"] = s.cached_bytes;
    d["num_device_allocs"] = s.num_device_allocs;
    return d;
  });
}

}  // namespace oar::python
