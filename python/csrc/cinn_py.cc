// oar._C.cinn: the fusion compiler's switches and counters (python/oar/jit, tests).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "cinn/pipeline.h"
#include "cinn/runtime/runtime.h"

namespace py = pybind11;

namespace oar::python {

void bind_cinn(py::module_& m) {
  cinn::register_cinn();
  py::module_ cm = m.def_submodule("cinn", "the fusion compiler (cinn/)");
  cm.def("compiled_with_cinn", &cinn::compiled_with_cinn, "True when the LLVM code generator was built");
  cm.def("stages", &cinn::cinn_stages, "the passes of the cinn pipeline, in order");
  cm.def("cache_dir", &cinn::cache_dir, "the disk cache folder in use ('' when off)");
  cm.def("reset_cache_stats", &cinn::reset_cache_stats);
  cm.def("forget_memory_cache", &cinn::forget_memory_cache,
         "forget the in-memory key -> kernel map (the next compile reads the disk cache)");
  cm.def("cache_stats", [] {
    const cinn::CacheStats s = cinn::cache_stats();
    py::dict d;
    d["compiles"] = s.compiles;
    d["memory_hits"] = s.memory_hits;
    d["disk_hits"] = s.disk_hits;
    d["disk_writes"] = s.disk_writes;
    d["corrupt"] = s.corrupt;
    d["fallbacks"] = s.fallbacks;
    d["kernels"] = s.kernels;
    d["accuracy_checks"] = s.accuracy_checks;
    d["accuracy_failures"] = s.accuracy_failures;
    d["compile_seconds"] = s.compile_seconds;
    d["compile_threads"] = s.compile_threads;
    d["load_seconds"] = s.load_seconds;
    return d;
  });
}

}  // namespace oar::python
