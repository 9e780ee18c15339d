// oar._C._amp_set_state / _amp_get_state: the per-thread autocast state that
// oar.amp.auto_cast sets (paddle_core/dispatch/amp.h); _amp_default_ops: the ops
// whose definitions declare a category (`amp:` in paddle_core/ops/*.yaml).
#include <pybind11/stl.h>

#include "paddle_core/dispatch/amp.h"
#include "python/csrc/py_convert.h"

namespace oar::python {

void bind_amp(py::module_& m) {
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
