// oar._C._amp_set_state / _amp_get_state: the per-thread autocast state that
// oar.amp.auto_cast sets (paddle_core/dispatch/amp.h); _amp_default_ops: the ops
// whose definitions declare a category (`amp:` in paddle_core/ops/*.yaml);
// _set_op_observer: oar.amp.debugging's per-op callback (paddle_core/dispatch/op_observer.h).
#include <pybind11/stl.h>

#include "paddle_core/dispatch/amp.h"
#include "paddle_core/dispatch/dispatch.h"
#include "paddle_core/dispatch/op_observer.h"
#include "python/csrc/py_convert.h"

namespace oar::python {

namespace {

py::list wrap_values(const std::vector<dispatch::Value>& values) {
  py::list out;
  for (const dispatch::Value& v : values) {
    if (v.is_list) {
      for (const Tensor& t : v.list) {
        if (t.defined()) out.append(wrap(t));
      }
    } else if (v.tensor.defined()) {
      out.append(wrap(v.tensor));
    }
  }
  return out;
}

}  // namespace

void bind_amp(py::module_& m) {
  // fn(op_name, inputs, outputs) after every eager op this thread runs; None removes it.
  m.def(
      "_set_op_observer",
      [](py::object fn) {
    if (fn.is_none()) {
      amp::set_op_observer(nullptr);
      return;
    }
    OAR_ENFORCE(PyCallable_Check(fn.ptr()), InvalidType, "_set_op_observer: fn must be callable or None");
    auto holder = std::shared_ptr<py::object>(new py::object(std::move(fn)), [](py::object* o) {
      if (Py_IsInitialized()) {
        py::gil_scoped_acquire gil;
        delete o;
      } else {
        o->release();
        delete o;
      }
    });
    amp::set_op_observer([holder](const dispatch::OpCall& call) {
      py::gil_scoped_acquire gil;
      (*holder)(call.op->name, wrap_values(call.inputs), wrap_values(call.outputs));
    });
      },
      py::arg("fn"));
  m.def("_has_op_observer", [] { return amp::has_op_observer(); });
  m.def("_amp_set_state", [](int level, py::handle dtype, std::vector<std::string> white,
                             std::vector<std::string> black) {
    OAR_ENFORCE(level >= 0 && level <= 2, InvalidArgument,
                "auto_cast: level must be 0, 1 or 2 (O0/O1/O2), got ", level);
    amp::set_state(static_cast<amp::Level>(level), py_to_dtype(dtype, "auto_cast", "dtype"),
                   std::move(white), std::move(black));
  });
  m.def(
      "_amp_default_ops",
      [](const std::string& category) {
    OAR_ENFORCE(category == "white" || category == "black", InvalidArgument,
                "_amp_default_ops: category must be 'white' or 'black', got '", category, "'");
    return amp::default_ops(category == "white" ? amp::Category::kWhite : amp::Category::kBlack);
      },
      py::arg("category"));
  m.def("_amp_get_state", [] {
    const amp::State& s = amp::state();
    std::vector<std::string> white(s.white.begin(), s.white.end());
    std::vector<std::string> black(s.black.begin(), s.black.end());
    return py::make_tuple(static_cast<int>(s.level), std::string(dtype_name(s.dtype)), white, black);
  });
}

}  // namespace oar::python
