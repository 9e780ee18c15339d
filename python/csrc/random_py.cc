// Hand-written bindings of the global random generator: oar._C.ops._seed,
// _get_rng_state and _set_rng_state (oar.seed / get_rng_state / set_rng_state).
// The state is a list [seed, engine state text] (see paddle_core/tensor/generator.h).
#include "paddle_core/tensor/generator.h"
#include "python/csrc/py_convert.h"

namespace oar::python {

namespace {
uint64_t to_u64(py::handle h, const char* what) {
  OAR_ENFORCE(py::isinstance<py::int_>(h) && !py::isinstance<py::bool_>(h), InvalidType,
              "set_rng_state: ", what, " must be an int, got ",
              py::str(py::type::handle_of(h)).cast<std::string>());
  // Accept negative seeds as their two's-complement (as Paddle does).
  py::int_ v = py::reinterpret_borrow<py::int_>(h);
  py::int_ mask(static_cast<unsigned long long>(~0ULL));
  return py::cast<uint64_t>(v & mask);
}
}  // namespace

void bind_random(py::module_& ops) {
  ops.def(
      "_seed",
      [](py::handle seed) {
        OAR_ENFORCE(py::isinstance<py::int_>(seed), InvalidType, "seed: expected an int, got ",
                    py::str(py::type::handle_of(seed)).cast<std::string>());
        default_generator().manual_seed(to_u64(seed, "seed"));
      },
      py::arg("seed"));
  ops.def("_get_rng_state", [] {
    const GeneratorState s = default_generator().get_state();
    py::list l;
    l.append(py::int_(s.seed));
    l.append(py::str(s.engine));
    return l;
  });
  ops.def(
      "_set_rng_state",
      [](py::handle state) {
    // Paddle returns a list of per-device states; accept [[seed, state]] too.
    py::handle st = state;
    if ((py::isinstance<py::list>(st) || py::isinstance<py::tuple>(st)) && py::len(st) == 1) {
      st = py::reinterpret_borrow<py::sequence>(st)[0];
    }
    OAR_ENFORCE((py::isinstance<py::list>(st) || py::isinstance<py::tuple>(st)) && py::len(st) == 2, InvalidArgument,
                "set_rng_state: expected the [seed, engine state] list returned by "
                "get_rng_state, got ",
                py::repr(state).cast<std::string>().substr(0, 200));
    py::sequence seq = py::reinterpret_borrow<py::sequence>(st);
    OAR_ENFORCE(py::isinstance<py::str>(seq[1]), InvalidType,
                "set_rng_state: the engine state must be the str returned by get_rng_state, got ",
                py::str(py::type::handle_of(seq[1])).cast<std::string>());
    default_generator().set_state({to_u64(seq[0], "seed"), seq[1].cast<std::string>()});
      },
      py::arg("state"));
}

}  // namespace oar::python
