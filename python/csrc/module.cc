// oar._C: the extension module. Errors, dtypes, places, the Tensor class, the
// generated op functions (oar._C.ops), and runtime settings.
#include <omp.h>
#include <pybind11/stl.h>

#include <glog/logging.h>

#include "oar_generated/ops_py.h"
#include "paddle_core/base/flags.h"
#include "paddle_core/dispatch/kernel_registry.h"
#include "phi_kernels/cpu/parallel_pool.h"
#include "phi_kernels/funcs/lowp_gemm.h"
#include "python/csrc/py_convert.h"

namespace oar::python {
void bind_tensor(py::module_& m, PyTensorClass& cls);
void bind_optimizer(py::module_& m);
void bind_random(py::module_& ops);
void bind_size(py::module_& m);  // size_py.cc: oar.Size, what Tensor.shape returns
void bind_amp(py::module_& m);  // amp_py.cc: autocast state
void bind_saved_tensor_hooks(py::module_& m);  // saved_hooks_py.cc: autograd.saved_tensors_hooks
void bind_pir(py::module_& m);  // pir_py.cc
void bind_pylayer(py::module_& m);  // pylayer_py.cc: oar.autograd.PyLayer's node
void bind_inference(py::module_& m);  // inference_py.cc: the C++ predictor and saved-model loader
void bind_cinn(py::module_& m);       // cinn_py.cc: the fusion compiler
void bind_spmd(py::module_& m);       // spmd_py.cc: meshes, placements, SPMD rules, dist tensor metadata
void bind_distributed(py::module_& m);  // distributed_py.cc: stores, process groups, grad hooks
void bind_device(py::module_& m);       // device_py.cc: plugins, streams, events, memory stats
void bind_profiler(py::module_& m);     // profiler_py.cc: host and device tracing
void bind_pinned(py::module_& m);       // pinned_py.cc: Tensor.pin_memory, is_pinned
}  // namespace oar::python

using namespace oar;          // NOLINT
using namespace oar::python;  // NOLINT

PYBIND11_MODULE(_C, m) {
  m.doc() = "Oar core: tensors, ops, autograd";
  flags::init_from_env();
  if (!google::IsGoogleLoggingInitialized()) google::InitGoogleLogging("oar");

  // Typed errors -> Python exception classes. An out-of-range index or axis raises
  // OutOfRangeError, an IndexError that is also a ValueError (as NumPy's AxisError): Paddle
  // raises IndexError for an index and ValueError for an axis, and code written for it
  // catches either.
  static PyObject* out_of_range = [] {
    py::object bases = py::make_tuple(py::handle(PyExc_IndexError), py::handle(PyExc_ValueError));
    return PyErr_NewExceptionWithDoc("oar._C.OutOfRangeError",
                                     "An index or axis out of range: an IndexError and a ValueError.", bases.ptr(),
                                     nullptr);
  }();
  m.attr("OutOfRangeError") = py::handle(out_of_range);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Error& e) {
      PyObject* type = PyExc_RuntimeError;
      switch (e.kind()) {
        case ErrorKind::kInvalidArgument: type = PyExc_ValueError; break;
        case ErrorKind::kInvalidType: type = PyExc_TypeError; break;
        case ErrorKind::kOutOfRange:
          type = out_of_range;
          break;
        case ErrorKind::kUnimplemented: type = PyExc_NotImplementedError; break;
        case ErrorKind::kResourceExhausted: type = PyExc_MemoryError; break;
        default: break;
      }
      PyErr_SetString(type, e.message().c_str());
    }
  });

  py::enum_<DataType> dtype(m, "DataType");
  for (int i = 0; i < kNumDataTypes; ++i) {
    auto t = static_cast<DataType>(i);
    dtype.value(dtype_name(t), t);
  }
  // py::prepend: py::enum_ already defines __repr__/__str__; without it ours would be
  // appended as overloads that never run. Printed as Paddle prints them (paddle.float32),
  // so that the output of Paddle scripts run under `import oar as paddle` reads the same
  // (as oar.Size prints paddle.Size([...])).
  dtype
      .def(
          "__repr__", [](DataType t) { return std::string("paddle.") + dtype_name(t); }, py::prepend())
      .def(
          "__str__", [](DataType t) { return std::string("paddle.") + dtype_name(t); }, py::prepend())
      .def_property_readonly("name", [](DataType t) { return std::string(dtype_name(t)); })
      .def_property_readonly("itemsize", [](DataType t) { return size_of(t); })
      .def_property_readonly("is_floating_point", [](DataType t) { return is_floating(t); });
  m.def("promote_types", &promote_types);
  m.def("get_default_dtype", [] { return std::string(dtype_name(default_float_dtype())); });
  m.def("set_default_dtype", [](py::handle d) { set_default_float_dtype(py_to_dtype(d, "set_default_dtype", "d")); });

  py::class_<Place>(m, "Place")
      .def("__repr__", [](const Place& p) { return "Place(" + p.str() + ")"; })
      .def("__str__", [](const Place& p) { return "Place(" + p.str() + ")"; })
      .def("__eq__", [](const Place& a, const Place& b) { return a == b; })
      .def("__hash__", [](const Place& p) { return std::hash<std::string>()(p.str()); })
      .def("is_cpu_place", &Place::is_cpu)
      .def("is_gpu_place", &Place::is_gpu)
      .def("is_custom_place", &Place::is_custom)
      .def("get_device_id", &Place::device_id)
      .def("device_str", &Place::str);
  m.def("CPUPlace", [] { return CPUPlace(); });
  m.def("CUDAPlace", [](int id) { return GPUPlace(id); });
  m.def("CustomPlace", [](const std::string& t, int id) { return CustomPlace(t, id); });
  m.def("parse_place", &parse_place);
  m.def("_set_current_place", [](const Place& p) { current_place() = p; });
  m.def("_get_current_place", [] { return current_place(); });

  bind_size(m);
  PyTensorClass cls(m, "Tensor", py::dynamic_attr());
  bind_tensor(m, cls);
  py::module_ ops = m.def_submodule("ops", "generated op functions");
  bind_all_ops(ops, cls);
  bind_random(ops);
  bind_optimizer(m);
  bind_amp(m);
  bind_saved_tensor_hooks(m);
  bind_pir(m);
  bind_inference(m);
  bind_cinn(m);
  bind_spmd(m);
  bind_distributed(m);  // after the Error translator above: its CommError translator must be tried first
  bind_pylayer(m);
  bind_device(m);
  bind_profiler(m);
  bind_pinned(m);
  m.def("_generated_op_names", &generated_op_names);
  m.def("_kernel_ops", [] { return KernelRegistry::instance().ops(); });
  m.def("_kernel_dtypes", [](const std::string& op) {
    std::vector<std::string> out;
    for (DataType t : KernelRegistry::instance().dtypes(op, DeviceType::kCPU)) out.push_back(dtype_name(t));
    return out;
  });

  // ---- runtime settings
  m.def("set_num_threads", [](int n) {
    OAR_ENFORCE(n >= 1, InvalidArgument, "set_num_threads: n must be >= 1, got ", n);
    phi::set_num_threads(n);
  });
  m.def("get_num_threads", [] { return omp_get_max_threads(); });
  // Note [Thread pool]: a bad OAR_PARALLEL_* value fails the import, naming the variable.
  phi::check_parallel_env();
  m.def("_parallel_info", [] {
    const phi::ParallelInfo i = phi::parallel_info();
    py::dict d;
    d["wake_ns"] = i.wake_ns;
    d["futex_ns"] = i.futex_ns;
    d["wake_grain"] = i.wake_grain;
    d["spin_us"] = i.spin_us;
    d["workers"] = i.workers;
    d["wake_grain_from_env"] = i.wake_grain_from_env;
    d["spin_adaptive"] = i.spin_adaptive;
    d["alone"] = i.alone;
    d["paid"] = i.paid;
    d["missed"] = i.missed;
    d["late"] = i.late;
    return d;
  });
  // "amx" / "onednn" where bf16 matmuls run on the CPU's bf16 units, else "float" (through
  // float32: no bf16 units, or units slower than its float32 FMAs)
  m.def("_bf16_gemm_path", [] { return std::string(phi::bf16_gemm_path()); });
  // whether the CPU has bf16 units (AVX512-BF16, which every AMX-BF16 CPU has), whichever path runs
  m.def("_bf16_units", [] { return phi::bf16_dot_vs_fma() > 0.0; });
  m.def("set_flag", [](const std::string& name, const std::string& value) {
    OAR_ENFORCE(flags::set_flag(name, value), InvalidArgument, "set_flags: cannot set FLAGS_", name,
                " to '", value, "' (unknown flag or bad value)");
  });
  m.def("get_flag", &flags::get_flag);
  m.def("list_flags", &flags::list_flags);
  m.def("_allocator_stats", [] {
    AllocatorStats s = get_allocator(CPUPlace())->stats();
    py::dict d;
    d["allocated_bytes"] = s.allocated_bytes;
    d["peak_allocated_bytes"] = s.peak_allocated_bytes;
    d["cached_bytes"] = s.cached_bytes;
    d["num_device_allocs"] = s.num_device_allocs;
    return d;
  });
  m.def("_empty_cache", [] { get_allocator(CPUPlace())->empty_cache(); });
}
