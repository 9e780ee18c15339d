// oar._C._saved_tensors_hooks_push / _pop / _top: the pack/unpack pairs of
// oar.autograd.saved_tensors_hooks (paddle_core/autograd/node.h: SavedTensorHooks).
// pack gets each tensor a grad node saves while the context is active and may return
// anything; unpack gets that back when the backward reads the tensor and must return a
// Tensor of the saved shape and dtype. Errors raised by either propagate to the caller
// (the op that saved, or backward).
#include <sstream>

#include "paddle_core/autograd/node.h"
#include "python/csrc/py_convert.h"

namespace oar::python {
namespace {

// Drops a Python reference, with the GIL, unless the interpreter is already gone.
void drop(py::object& o) {
  if (!o) return;
  if (Py_IsInitialized()) {
    py::gil_scoped_acquire gil;
    o = py::object();
  } else {
    o.release();
  }
}

struct Packed {
  py::object value;
  Dims dims;
  DataType dtype;
  ~Packed() { drop(value); }
};

class PySavedTensorHooks final : public SavedTensorHooks {
 public:
  PySavedTensorHooks(py::object pack, py::object unpack) : pack_(std::move(pack)), unpack_(std::move(unpack)) {}
  ~PySavedTensorHooks() override {
    drop(pack_);
    drop(unpack_);
  }

  std::shared_ptr<void> pack(const Tensor& t) override {
    py::gil_scoped_acquire gil;
    auto p = std::make_shared<Packed>();
    p->dims = t.dims();
    p->dtype = t.dtype();
    p->value = pack_(wrap(t));
    return p;
  }

  Tensor unpack(const std::shared_ptr<void>& packed) override {
    py::gil_scoped_acquire gil;
    const auto* p = static_cast<const Packed*>(packed.get());
    py::object r = unpack_(p->value);
    OAR_ENFORCE(is_tensor(r), InvalidType, "saved_tensors_hooks: unpack_hook must return a Tensor, got ",
                std::string(py::str(py::type::of(r).attr("__name__"))));
    Tensor t = py_to_tensor(r, "saved_tensors_hooks", "unpack_hook's result");
    if (t.dims() != p->dims || t.dtype() != p->dtype) {
      std::ostringstream got, want;
      got << t.dims();
      want << p->dims;
      OAR_THROW(InvalidArgument, "saved_tensors_hooks: unpack_hook returned a tensor of shape ", got.str(),
                " and dtype ", dtype_name(t.dtype()), "; the saved tensor had shape ", want.str(), " and dtype ",
                dtype_name(p->dtype));
    }
    return t;
  }

  py::object pack_, unpack_;
};

}  // namespace

void bind_saved_tensor_hooks(py::module_& m) {
  m.def(
      "_saved_tensors_hooks_push",
      [](py::object pack, py::object unpack) {
    OAR_ENFORCE(PyCallable_Check(pack.ptr()), InvalidType, "saved_tensors_hooks: pack_hook must be callable, got ",
                std::string(py::str(py::type::of(pack).attr("__name__"))));
    OAR_ENFORCE(PyCallable_Check(unpack.ptr()), InvalidType, "saved_tensors_hooks: unpack_hook must be callable, got ",
                std::string(py::str(py::type::of(unpack).attr("__name__"))));
    autograd::push_saved_tensor_hooks(std::make_shared<PySavedTensorHooks>(std::move(pack), std::move(unpack)));
      },
      py::arg("pack_hook"), py::arg("unpack_hook"));
  m.def("_saved_tensors_hooks_pop", [] { autograd::pop_saved_tensor_hooks(); });
  // (pack_hook, unpack_hook) of the innermost active context, or None (PyLayer's
  // save_for_backward packs through it).
  m.def("_saved_tensors_hooks_top", []() -> py::object {
    auto* h = dynamic_cast<PySavedTensorHooks*>(autograd::saved_tensor_hooks().get());
    if (h == nullptr) return py::none();
    return py::make_tuple(h->pack_, h->unpack_);
  });
}

}  // namespace oar::python
