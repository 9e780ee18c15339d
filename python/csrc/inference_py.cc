// oar._C.inference: the C++ predictor (inference/predictor/predictor.h) and the
// saved-model loader (saved_model.h) for Python. oar.inference's Config, Predictor and
// Tensor are thin wrappers of these classes, so Python and C++ run one predictor.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <filesystem>

#include "inference/predictor/params_reader.h"
#include "inference/predictor/predictor_access.h"
#include "inference/predictor/saved_model.h"
#include "pir/serialize/serialize.h"
#include "python/csrc/pir_py.h"
#include "python/csrc/py_convert.h"

namespace oar::python {
namespace {

using inference::Config;
using inference::Predictor;
using inference::PredictorAccess;
using Handle = inference::Tensor;

Tensor feed_of(py::handle x, const char* op) {
  if (is_tensor(x)) return py_to_tensor(x, op, "data");
  OAR_ENFORCE(py::isinstance<py::array>(x), InvalidType, op, ": expected a numpy.ndarray or an oar.Tensor, got ",
              std::string(py::str(py::type::of(x).attr("__name__"))));
  return tensor_from_python(x, DataType::UNDEFINED, op);
}

/// FileNotFoundError (what Python code expects of a missing file) instead of NotFound's
/// RuntimeError.
void check_exists(const std::string& f, const char* who) {
  if (std::filesystem::exists(f)) return;
  const std::string msg =
      std::string(who) + ": '" + f + "' does not exist (saved models are <prefix>.pdmodel and <prefix>.pdiparams)";
  PyErr_SetString(PyExc_FileNotFoundError, msg.c_str());
  throw py::error_already_set();
}

const Tensor& handle_data(const Handle& h, const char* who) {
  Predictor& p = PredictorAccess::owner(h);
  if (PredictorAccess::is_input(h)) {
    const Tensor& t = PredictorAccess::input(p, PredictorAccess::index(h));
    OAR_ENFORCE(t.defined(), PreconditionNotMet, who, ": input '", h.name(), "' has no data");
    return t;
  }
  const auto& outs = PredictorAccess::outputs(p);
  const auto i = static_cast<size_t>(PredictorAccess::index(h));
  OAR_ENFORCE(i < outs.size(), PreconditionNotMet, who, ": output '", h.name(), "' has no data; call run() first");
  return outs[i];
}

}  // namespace

void bind_inference(py::module_& m) {
  py::module_ im = m.def_submodule("inference", "the C++ predictor and the saved-model loader");

  im.def(
      "load_saved_model",
      [](const std::string& prog_file, const std::string& params_file) {
    check_exists(prog_file, "load_saved_model");
    check_exists(params_file, "load_saved_model");
    std::unique_ptr<pir::Program> prog;
    {
      py::gil_scoped_release release;
      prog = inference::load_saved_model(prog_file, params_file);
    }
    return std::make_shared<PyProgram>(std::move(prog));
      },
      py::arg("prog_file"), py::arg("params_file"),
      "The program of a saved model with its parameters' data attached (oar.pir.Program).");

  im.def(
      "parse_safetensors",
      [](py::buffer data, const std::string& path) {
    py::buffer_info info = data.request();
    std::string_view bytes(static_cast<const char*>(info.ptr), static_cast<size_t>(info.size * info.itemsize));
    inference::SafetensorsHeader h;
    {
      py::gil_scoped_release release;  // the checksum reads every byte
      h = inference::parse_safetensors(bytes, path);
    }
    py::list entries;
    for (const auto& e : h.entries) entries.append(py::make_tuple(e.name, e.dtype, e.shape, e.begin, e.end));
    return py::make_tuple(entries, h.data_start, h.format, h.structure);
      },
      py::arg("data"), py::arg("path"),
      "Checks a safetensors file's bytes (oar.load's reader, params_reader.h): returns ([(name, dtype, shape, "
      "begin, end)] in data order, data_start, format, structure); ValueError naming `path` when malformed.");

  im.def(
      "crc32",
      [](py::buffer data, uint32_t crc) {
    py::buffer_info info = data.request();
    if (info.ndim > 1 || (info.ndim == 1 && info.size > 1 && info.strides[0] != info.itemsize)) {
      throw py::value_error("crc32: data must be a contiguous buffer of bytes (got ndim " + std::to_string(info.ndim) +
                            ")");
    }
    std::string_view bytes(static_cast<const char*>(info.ptr), static_cast<size_t>(info.size * info.itemsize));
    py::gil_scoped_release release;
    return pir::crc32(bytes, crc);
      },
      py::arg("data"), py::arg("crc") = 0,
      "zlib.crc32(data, crc) on the pool with carry-less multiplies: the checksum oar.save writes and "
      "parse_safetensors checks.");

  py::class_<Config>(im, "Config")
      .def(py::init<>())
      .def(py::init<std::string, std::string>(), py::arg("prog_file"), py::arg("params_file"))
      .def("set_model", &Config::SetModel, py::arg("prog_file"), py::arg("params_file"))
      .def("set_prog_file", &Config::SetProgFile, py::arg("f"))
      .def("set_params_file", &Config::SetParamsFile, py::arg("f"))
      .def("prog_file", &Config::prog_file)
      .def("params_file", &Config::params_file)
      .def("set_cpu_math_library_num_threads", &Config::SetCpuMathLibraryNumThreads, py::arg("n"))
      .def("cpu_math_library_num_threads", &Config::cpu_math_library_num_threads)
      .def("switch_ir_optim", &Config::SwitchIrOptim, py::arg("x") = true)
      .def("enable_cinn", &Config::EnableCinn, py::arg("x") = true)
      .def("cinn_enabled", &Config::cinn_enabled)
      .def("ir_optim", &Config::ir_optim)
      .def("enable_memory_optim", &Config::EnableMemoryOptim, py::arg("x") = true)
      .def("enable_memory_optim_enabled", &Config::memory_optim)
      .def("_delete_pass", &Config::DeletePass, py::arg("name"))
      .def("pass_names", &Config::PassNames, "The passes create_predictor runs, in order.")
      .def("enable_profile", &Config::EnableProfile)
      .def("profile_enabled", &Config::profile_enabled)
      .def("_enable_custom_device", &Config::EnableCustomDevice, py::arg("device_type"), py::arg("device_id") = 0)
      .def("disable_custom_device", &Config::DisableCustomDevice)
      .def("use_custom_device", &Config::use_custom_device)
      .def("custom_device_type", &Config::custom_device_type)
      .def("custom_device_id", &Config::custom_device_id)
      .def("summary", &Config::Summary);

  py::class_<Handle>(im, "Tensor", "An input or output handle of a predictor (paddle.inference.Tensor).")
      .def("name", &Handle::name)
      .def(
          "reshape", [](Handle& h, const std::vector<int64_t>& shape) { h.Reshape(shape); }, py::arg("shape"))
      .def(
          "copy_from_cpu",
          [](Handle& h, py::handle data) {
    OAR_ENFORCE(PredictorAccess::is_input(h), PreconditionNotMet, "inference.Tensor.copy_from_cpu: '", h.name(),
                "' is an output");
    OAR_ENFORCE(py::isinstance<py::array>(data), InvalidType,
                "inference.Tensor.copy_from_cpu: expected a numpy.ndarray, got ",
                std::string(py::str(py::type::of(data).attr("__name__"))));
    py::object arr = py::reinterpret_borrow<py::object>(data);
    const auto& shape = PredictorAccess::reshaped(h);
    if (!shape.empty() && arr.attr("shape").cast<std::vector<int64_t>>() != shape) arr = arr.attr("reshape")(shape);
    PredictorAccess::set_input(PredictorAccess::owner(h), PredictorAccess::index(h),
                               tensor_from_python(arr, DataType::UNDEFINED, "inference.Tensor.copy_from_cpu"));
          },
          py::arg("data"))
      .def(
          "share_external_data",
          [](Handle& h, py::handle t) {
    OAR_ENFORCE(PredictorAccess::is_input(h), PreconditionNotMet, "inference.Tensor.share_external_data: '", h.name(),
                "' is an output");
    PredictorAccess::set_input(PredictorAccess::owner(h), PredictorAccess::index(h),
                               py_to_tensor(t, "inference.Tensor.share_external_data", "tensor"));
          },
          py::arg("tensor"), "The input reads this oar.Tensor's memory (no copy).")
      .def("copy_to_cpu",
           [](const Handle& h) { return wrap(handle_data(h, "inference.Tensor.copy_to_cpu")).attr("numpy")(); })
      .def("shape", &Handle::shape)
      .def(
          "type",
          [](const Handle& h) -> py::object {
            Predictor& p = PredictorAccess::owner(h);
            const int i = PredictorAccess::index(h);
            if (PredictorAccess::is_input(h)) {
              const Tensor& t = PredictorAccess::input(p, i);
              return py::cast(t.defined() ? t.dtype() : PredictorAccess::executor(p).input_types()[i].dtype());
            }
            const auto& outs = PredictorAccess::outputs(p);
            if (static_cast<size_t>(i) >= outs.size()) return py::none();
            return py::cast(outs[i].dtype());
          },
          "The dtype (an oar dtype; None for an output before run()).");

  py::class_<Predictor, std::shared_ptr<Predictor>>(im, "Predictor")
      .def(py::init([](const Config& c) {
             if (!c.prog_file().empty() && !c.params_file().empty()) {
               check_exists(c.prog_file(), "create_predictor");
               check_exists(c.params_file(), "create_predictor");
             }
             py::gil_scoped_release release;
             return inference::CreatePredictor(c);
           }),
           py::arg("config"))
      .def("get_input_names", &Predictor::GetInputNames)
      .def("get_output_names", &Predictor::GetOutputNames)
      .def("get_input_handle", &Predictor::GetInputHandle, py::arg("name"), py::keep_alive<0, 1>())
      .def("get_output_handle", &Predictor::GetOutputHandle, py::arg("name"), py::keep_alive<0, 1>())
      .def(
          "run",
          [](Predictor& p, py::handle inputs) -> py::object {
            if (inputs.is_none()) {
              py::gil_scoped_release release;
              p.Run();
              return py::bool_(true);
            }
            std::vector<Tensor> feeds;
            for (py::handle x : inputs) feeds.push_back(feed_of(x, "Predictor.run"));
            const std::vector<Tensor>* outs = nullptr;
            {
              py::gil_scoped_release release;
              outs = &PredictorAccess::run(p, std::move(feeds));
            }
            py::list r;
            for (const Tensor& t : *outs) r.append(wrap(t));
            return std::move(r);
          },
          py::arg("inputs") = py::none(),
          "Runs on the fed handles (returns True), or on a list of arrays/tensors (returns the outputs).")
      .def_property_readonly(
          "program", [](const Predictor& p) { return std::make_shared<PyProgram>(PredictorAccess::program(p)); },
          "The lowered program the predictor runs (an oar.pir.Program; do not transform it).")
      .def(
          "profile",
          [](const Predictor& p) {
    py::list out;
    for (const auto& e : p.Profile()) out.append(py::make_tuple(e.name, e.calls, e.seconds));
    return out;
          },
          "Per-op (name, calls, seconds) of the runs so far, slowest first.")
      .def("reset_profile", &Predictor::ResetProfile)
      .def(
          "set_profiling", [](Predictor& p, bool on) { PredictorAccess::executor(p).set_profiling(on); }, py::arg("on"))
      .def("config", [](const Predictor& p) { return PredictorAccess::config(p); });
}

}  // namespace oar::python
