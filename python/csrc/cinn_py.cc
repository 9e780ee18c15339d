// oar._C.cinn: the fusion compiler's switches and counters (python/oar/jit, tests).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <unordered_map>

#include "cinn/codegen/cuda_codegen.h"
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
  cm.def("compiled_with_nvrtc", &cinn::compiled_with_nvrtc, "True when the CUDA C generator can call NVRTC");
  cm.def(
      "cuda_target", [] { return cinn::cuda_codegen_target(90); }, "'nvrtc-<version> sm_90' ('' without NVRTC)");
  cm.def(
      "cuda_kernels",
      [] {
    py::list out;
    for (const auto& [name, k] : cinn::loaded_kernels()) {
      py::dict d;
      d["name"] = name;
      d["schedule"] = cinn::gpu_schedule(k).name();
      d["block"] = cinn::gpu_schedule(k).block;
      d["loop_kernel"] = k.text();
      d["source"] = cinn::cuda_source(k, name);
      py::list init;
      for (cinn::GpuOutputInit i : cinn::gpu_output_init(k)) init.append(cinn::gpu_output_init_name(i));
      d["output_init"] = init;
      d["col_outer"] = k.col_outer > 0;  // the kernel takes `inner` after `cols`
      out.append(d);
    }
    return out;
      },
      "the CUDA C of every kernel this process compiled: [{name, schedule, block, loop_kernel, source, "
      "output_init, col_outer}]");
  cm.def("record_kernel_calls", &cinn::record_kernel_calls, py::arg("on"), py::arg("max_bytes") = int64_t{1} << 20,
         "record the first call of each kernel (inputs and outputs up to max_bytes), for GPU replay; "
         "returns the previous (on, max_bytes)");
  cm.def(
      "take_kernel_calls",
      [] {
    std::unordered_map<std::string, cinn::LoopKernel> kernels;
    for (auto& [name, k] : cinn::loaded_kernels()) kernels.emplace(name, std::move(k));
    auto tensors = [](const std::vector<cinn::RecordedTensor>& ts) {
      py::list l;
      for (const cinn::RecordedTensor& t : ts)
        l.append(py::make_tuple(dtype_name(t.dtype), t.dims, py::bytes(t.bytes)));
      return l;
    };
    py::list out;
    for (const cinn::KernelCallRecord& c : cinn::take_kernel_calls()) {
      py::dict d;
      d["name"] = c.name;
      d["rows"] = c.rows;
      d["cols"] = c.cols;
      d["inner"] = c.inner;
      d["inputs"] = tensors(c.inputs);
      d["outputs"] = tensors(c.outputs);
      auto it = kernels.find(c.name);
      if (it != kernels.end()) {
        const cinn::LaunchDims l = cinn::gpu_launch_dims(cinn::gpu_schedule(it->second), c.rows, c.cols);
        d["grid"] = l.grid;
        d["block"] = l.block;
      }
      out.append(d);
    }
    return out;
      },
      "the recorded calls since the last take: [{name, rows, cols, inner, inputs, outputs, grid, block}], each "
      "tensor (dtype name, dims, bytes); grid and block for a 132-multiprocessor GPU");
  cm.def(
      "nvrtc_compile",
      [](const std::string& source, const std::string& name, bool cubin, int sm) {
    cinn::NvrtcResult r = cinn::nvrtc_compile(source, name, cubin, sm);
    py::dict d;
    d["binary"] = py::bytes(r.binary);
    d["log"] = r.log;
    d["seconds"] = r.seconds;
    return d;
      },
      py::arg("source"), py::arg("name"), py::arg("cubin") = true, py::arg("sm") = 90,
      "compiles CUDA C with NVRTC: {binary (PTX text or CUBIN), log, seconds}; raises with NVRTC's log");
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
    d["shape_fallbacks"] = s.shape_fallbacks;
    d["recompiles"] = s.recompiles;
    d["class_hits"] = s.class_hits;
    d["compile_seconds"] = s.compile_seconds;
    d["compile_threads"] = s.compile_threads;
    d["load_seconds"] = s.load_seconds;
    return d;
  });
}

}  // namespace oar::python
