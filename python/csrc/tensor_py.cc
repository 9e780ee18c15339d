// The oar.Tensor class: properties, NumPy and DLPack interop, autograd entry points.
// Op methods (x.add, x.sum, ...) are added by the generated bindings.
#include <dlpack/dlpack.h>
#include <pybind11/functional.h>
#include <pybind11/numpy.h>

#include <cstring>

#include "oar_generated/ops_api.h"
#include "paddle_core/autograd/engine.h"
#include "paddle_core/autograd/grad_mode.h"
#include "paddle_core/autograd/node.h"
#include "paddle_core/meta/view_meta.h"
#include "python/csrc/py_convert.h"

namespace oar::python {

void set_tensor_type(PyTypeObject* t);

namespace {

py::dtype numpy_dtype(DataType t) {
  switch (t) {
    case DataType::BOOL: return py::dtype("bool");
    case DataType::INT8: return py::dtype("int8");
    case DataType::UINT8: return py::dtype("uint8");
    case DataType::INT16: return py::dtype("int16");
    case DataType::INT32: return py::dtype("int32");
    case DataType::INT64: return py::dtype("int64");
    case DataType::FLOAT16: return py::dtype("float16");
    case DataType::BFLOAT16: return py::dtype("uint16");  // NumPy has no bfloat16 (as Paddle)
    case DataType::FLOAT32: return py::dtype("float32");
    case DataType::FLOAT64: return py::dtype("float64");
    default: break;
  }
  OAR_THROW(InvalidType, "numpy: unsupported dtype");
}

// Zero-copy NumPy view of the tensor's memory; the array keeps the storage alive.
py::array to_numpy(const Tensor& t) {
  const DenseTensor& d = t.dense();
  OAR_ENFORCE(d.place().is_cpu(), Unimplemented, "numpy: only CPU tensors can be viewed as NumPy "
              "arrays; copy to CPU first");
  std::vector<py::ssize_t> shape(d.dims().begin(), d.dims().end());
  std::vector<py::ssize_t> strides;
  for (int64_t s : d.strides()) strides.push_back(s * static_cast<int64_t>(size_of(d.dtype())));
  auto* keep = new std::shared_ptr<Storage>(d.storage());
  py::capsule owner(keep, [](void* p) { delete static_cast<std::shared_ptr<Storage>*>(p); });
  void* ptr = d.raw_data();
  static char empty_buf[8];
  if (ptr == nullptr) ptr = empty_buf;
  return py::array(numpy_dtype(d.dtype()), shape, strides, ptr, owner);
}

// ---- DLPack
struct DLPackCtx {
  std::shared_ptr<Storage> storage;
  std::vector<int64_t> shape, strides;
  DLManagedTensor managed;
};

DLDataType to_dl_dtype(DataType t) {
  DLDataType d{};
  d.lanes = 1;
  d.bits = static_cast<uint8_t>(size_of(t) * 8);
  switch (t) {
    // kDLBool (6) is DLPack >= 0.8 (our header is 0.6); NumPy and PyTorch read it as bool.
    case DataType::BOOL: d.code = static_cast<uint8_t>(6); d.bits = 8; break;
    case DataType::INT8: case DataType::INT16: case DataType::INT32: case DataType::INT64:
      d.code = kDLInt; break;
    case DataType::UINT8: d.code = kDLUInt; break;
    case DataType::BFLOAT16: d.code = kDLBfloat; break;
    default: d.code = kDLFloat; break;
  }
  return d;
}

DataType from_dl_dtype(DLDataType d) {
  OAR_ENFORCE(d.lanes == 1, InvalidType, "from_dlpack: vector dtypes (lanes=", d.lanes,
              ") are not supported");
  switch (d.code) {
    case kDLInt:
      if (d.bits == 8) return DataType::INT8;
      if (d.bits == 16) return DataType::INT16;
      if (d.bits == 32) return DataType::INT32;
      if (d.bits == 64) return DataType::INT64;
      break;
    case kDLUInt:
      if (d.bits == 8) return DataType::UINT8;
      break;
    case kDLFloat:
      if (d.bits == 16) return DataType::FLOAT16;
      if (d.bits == 32) return DataType::FLOAT32;
      if (d.bits == 64) return DataType::FLOAT64;
      break;
    case kDLBfloat:
      if (d.bits == 16) return DataType::BFLOAT16;
      break;
    case 6:  // kDLBool in DLPack >= 0.8
      if (d.bits == 8) return DataType::BOOL;
      break;
    default: break;
  }
  OAR_THROW(InvalidType, "from_dlpack: unsupported DLPack dtype (code ", int(d.code), ", bits ",
            int(d.bits), ")");
}

py::capsule to_dlpack(const Tensor& t) {
  const DenseTensor& d = t.dense();
  OAR_ENFORCE(d.place().is_cpu(), Unimplemented, "to_dlpack: only CPU tensors are supported yet");
  auto* ctx = new DLPackCtx;
  ctx->storage = d.storage();
  ctx->shape = d.dims().vec();
  ctx->strides = d.strides().vec();
  DLTensor& dl = ctx->managed.dl_tensor;
  dl.data = ctx->storage ? ctx->storage->data() : nullptr;
  dl.device = {kDLCPU, 0};
  dl.ndim = d.rank();
  dl.dtype = to_dl_dtype(d.dtype());
  dl.shape = ctx->shape.data();
  dl.strides = ctx->strides.data();
  dl.byte_offset = d.offset() * size_of(d.dtype());
  ctx->managed.manager_ctx = ctx;
  ctx->managed.deleter = [](DLManagedTensor* m) { delete static_cast<DLPackCtx*>(m->manager_ctx); };
  return py::capsule(&ctx->managed, "dltensor", [](PyObject* cap) {
    // Only delete when nobody consumed it (a consumer renames it "used_dltensor").
    if (PyCapsule_IsValid(cap, "dltensor")) {
      auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(cap, "dltensor"));
      if (m && m->deleter) m->deleter(m);
    }
  });
}

Tensor from_dlpack(py::object obj) {
  py::object cap = obj;
  if (py::hasattr(obj, "__dlpack__")) cap = obj.attr("__dlpack__")();
  OAR_ENFORCE(PyCapsule_IsValid(cap.ptr(), "dltensor"), InvalidArgument,
              "from_dlpack: expected an object with __dlpack__ or an unconsumed 'dltensor' capsule");
  auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(cap.ptr(), "dltensor"));
  const DLTensor& dl = m->dl_tensor;
  OAR_ENFORCE(dl.device.device_type == kDLCPU, Unimplemented,
              "from_dlpack: only CPU tensors are supported yet (device type ",
              int(dl.device.device_type), ")");
  DataType dt = from_dl_dtype(dl.dtype);
  Dims dims(dl.shape, dl.shape + dl.ndim);
  Dims strides = dl.strides ? Dims(dl.strides, dl.strides + dl.ndim) : contiguous_strides(dims);
  const size_t esize = size_of(dt);
  OAR_ENFORCE(dl.byte_offset % esize == 0, InvalidArgument,
              "from_dlpack: byte_offset is not a multiple of the element size");
  int64_t span = 1;
  for (int i = 0; i < dims.size(); ++i) span += (dims[i] - 1) * strides[i];
  if (dims.numel() == 0) span = 0;
  auto storage = std::make_shared<Storage>(dl.data, span * esize + dl.byte_offset, CPUPlace(),
                                           [m] { if (m->deleter) m->deleter(m); });
  PyCapsule_SetName(cap.ptr(), "used_dltensor");
  DenseTensor d(dims, dt, CPUPlace());
  d.set_storage(storage, dl.byte_offset / esize);
  d.set_view(dims, strides, dl.byte_offset / esize);
  return Tensor(std::move(d));
}

struct HookHandle {
  std::weak_ptr<GradNode> node;
  int64_t id;
  void remove() {
    if (auto n = node.lock()) n->remove_pre_hook(id);
  }
};

}  // namespace

void bind_tensor(py::module_& m, PyTensorClass& cls) {
  set_tensor_type(reinterpret_cast<PyTypeObject*>(cls.ptr()));
  py::class_<HookHandle>(m, "HookRemoveHelper").def("remove", &HookHandle::remove);

  // oar.Tensor(data): a new tensor sharing a Tensor's memory, or copying array data.
  cls.def(py::init([](py::handle data) {
        if (is_tensor(data)) return std::make_shared<TensorImpl>(py_to_tensor(data, "Tensor", "data").dense());
        return tensor_from_python(data, DataType::UNDEFINED, "Tensor").impl();
      }), py::arg("data"));
  cls.def_property_readonly("shape", [](const TensorImpl& t) { return t.dense.dims().vec(); })
      .def_property_readonly("dtype", [](const TensorImpl& t) { return t.dense.dtype(); })
      .def_property_readonly("place", [](const TensorImpl& t) { return t.dense.place(); })
      .def_property_readonly("ndim", [](const TensorImpl& t) { return t.dense.rank(); })
      .def("dim", [](const TensorImpl& t) { return t.dense.rank(); })
      .def_property_readonly("size", [](const TensorImpl& t) { return t.dense.numel(); })
      .def("numel", [](const TensorImpl& t) { return t.dense.numel(); })
      .def_property_readonly("strides", [](const TensorImpl& t) { return t.dense.strides().vec(); })
      .def("get_strides", [](const TensorImpl& t) { return t.dense.strides().vec(); })
      .def_property_readonly("offset", [](const TensorImpl& t) { return t.dense.offset(); })
      .def("is_contiguous", [](const TensorImpl& t) { return t.dense.is_contiguous(); })
      .def("_is_initialized", [](const TensorImpl& t) { return t.dense.initialized(); })
      .def("data_ptr", [](const TensorImpl& t) { return reinterpret_cast<uintptr_t>(t.dense.raw_data()); })
      .def("_share_storage_with", [](std::shared_ptr<TensorImpl> a, std::shared_ptr<TensorImpl> b) {
        return a->dense.storage() == b->dense.storage();
      })
      .def_property("name", [](const TensorImpl& t) { return t.name; },
                    [](TensorImpl& t, std::string n) { t.name = std::move(n); })
      .def_property("stop_gradient",
                    [](std::shared_ptr<TensorImpl> t) { return Tensor(t).stop_gradient(); },
                    [](std::shared_ptr<TensorImpl> t, bool v) { Tensor(t).set_stop_gradient(v); })
      .def_property_readonly("is_leaf", [](std::shared_ptr<TensorImpl> t) { return Tensor(t).is_leaf(); })
      .def_property_readonly("_grad_fn_name", [](std::shared_ptr<TensorImpl> t) -> py::object {
        const auto& fn = Tensor(t).grad_fn();
        if (!fn) return py::none();
        return py::str(fn->name());
      })
      .def_property(
          "grad", [](std::shared_ptr<TensorImpl> t) { return wrap(Tensor(t).grad()); },
          [](std::shared_ptr<TensorImpl> t, py::handle g) {
            AutogradMeta& meta = Tensor(t).ensure_autograd_meta();
            if (g.is_none()) {
              meta.grad.reset();
              return;
            }
            Tensor gt = py_to_tensor(g, "grad", "value");
            OAR_ENFORCE(gt.dims() == t->dense.dims(), InvalidArgument, "grad: assigned gradient "
                        "has shape ", gt.dims(), " but the tensor has shape ", t->dense.dims());
            meta.grad = gt.impl();
          })
      .def_property_readonly("inplace_version", [](std::shared_ptr<TensorImpl> t) { return Tensor(t).version(); })
      .def_property_readonly("_version", [](std::shared_ptr<TensorImpl> t) { return Tensor(t).version(); })
      .def("numpy", [](std::shared_ptr<TensorImpl> t) { return to_numpy(Tensor(t)); })
      .def("__array__", [](std::shared_ptr<TensorImpl> t, py::object dtype, py::object copy) -> py::object {
        py::array a = to_numpy(Tensor(t));
        if (!dtype.is_none()) return a.attr("astype")(dtype);
        return std::move(a);
      }, py::arg("dtype") = py::none(), py::arg("copy") = py::none())
      .def("__dlpack__", [](std::shared_ptr<TensorImpl> t, py::object stream, py::kwargs) {
        return to_dlpack(Tensor(t));
      }, py::arg("stream") = py::none())
      .def("__dlpack_device__", [](const TensorImpl&) { return py::make_tuple(int(kDLCPU), 0); })
      .def("backward", [](std::shared_ptr<TensorImpl> t, py::handle grad_tensor, bool retain_graph) {
        std::vector<Tensor> g;
        if (!grad_tensor.is_none()) g.push_back(py_to_tensor(grad_tensor, "backward", "grad_tensor"));
        autograd::backward({Tensor(t)}, g, retain_graph);
      }, py::arg("grad_tensor") = py::none(), py::arg("retain_graph") = false)
      .def("register_hook", [](std::shared_ptr<TensorImpl> t, py::function fn) {
        Tensor self(t);
        OAR_ENFORCE(!self.stop_gradient(), PreconditionNotMet,
                    "register_hook: cannot register a hook on a tensor with stop_gradient=True");
        GradHook hook = [fn](const Tensor& g) -> Tensor {
          py::object r = fn(wrap(g));
          return r.is_none() ? Tensor() : py_to_tensor(r, "hook", "return value");
        };
        Edge e = autograd::gradient_edge(self);
        if (self.is_leaf()) {
          // Keep the accumulator (and so the hook) alive as long as the tensor.
          self.autograd_meta()->hooked_accumulator = e.node;
        }
        int64_t id = e.node->add_pre_hook(e.input_nr, std::move(hook));
        return HookHandle{e.node, id};
      })
      .def("retain_grads", [](std::shared_ptr<TensorImpl> t) {
        Tensor self(t);
        if (self.is_leaf() || self.stop_gradient()) return;
        if (self.autograd_meta()->retain_grads) return;
        self.autograd_meta()->retain_grads = true;
        std::weak_ptr<TensorImpl> weak = t;
        self.grad_fn()->add_pre_hook(self.autograd_meta()->output_nr, [weak](const Tensor& g) {
          if (auto p = weak.lock()) {
            AutogradMeta& meta = Tensor(p).ensure_autograd_meta();
            Tensor gd(g.dense());
            meta.grad = meta.grad ? ops::add(Tensor(meta.grad), gd).impl() : gd.impl();
          }
          return Tensor();
        });
      })
      .def("clear_gradient", [](std::shared_ptr<TensorImpl> t, bool set_to_zero) {
        AutogradMeta* meta = t->autograd.get();
        if (!meta || !meta->grad) return;
        if (set_to_zero) {
          DenseTensor& g = meta->grad->dense;
          if (g.numel() > 0) std::memset(g.raw_data(), 0, g.numel() * size_of(g.dtype()));
          Tensor(meta->grad).bump_version();
        } else {
          meta->grad.reset();
        }
      }, py::arg("set_to_zero") = true)
      .def("detach", [](std::shared_ptr<TensorImpl> t) {
        return wrap(Tensor(std::make_shared<TensorImpl>(t->dense)));
      })
      .def("detach_", [](py::object self) {
        auto t = self.cast<std::shared_ptr<TensorImpl>>();
        t->autograd.reset();
        return self;
      })
      .def("_copy_from", [](std::shared_ptr<TensorImpl> t, std::shared_ptr<TensorImpl> src) {
        // Raw data copy (optimizers, set_value); no autograd.
        OAR_ENFORCE(src->dense.numel() == t->dense.numel(), InvalidArgument,
                    "copy: source has ", src->dense.numel(), " elements, destination ",
                    t->dense.numel());
        DenseTensor s = src->dense;
        if (s.dims() != t->dense.dims()) s = ReshapeView(s, t->dense.dims().vec());
        copy_into(s, &t->dense);
        Tensor(t).bump_version();
      })
      .def("_item_double", [](std::shared_ptr<TensorImpl> t) {
        OAR_ENFORCE(t->dense.numel() == 1, InvalidArgument, "item: only a tensor with one element "
                    "can be converted to a Python scalar, got shape ", t->dense.dims());
        return ops::cast(Tensor(t), DataType::FLOAT64).dense().data<double>()[0];
      });

  m.def("to_tensor", [](py::handle data, py::handle dtype, py::handle place, bool stop_gradient) {
    Tensor t = tensor_from_python(data, py_to_dtype(dtype, "to_tensor", "dtype"), "to_tensor");
    t.set_stop_gradient(stop_gradient);
    return wrap(t);
  }, py::arg("data"), py::arg("dtype") = py::none(), py::arg("place") = py::none(),
     py::arg("stop_gradient") = true);
  m.def("from_dlpack", [](py::object o) { return wrap(from_dlpack(o)); });
  m.def("to_dlpack", [](std::shared_ptr<TensorImpl> t) { return to_dlpack(Tensor(t)); });

  // ---- autograd
  m.def("backward", [](py::handle tensors, py::handle grads, bool retain_graph) {
    std::vector<Tensor> ts = py_to_tensor_list(tensors, "backward", "tensors");
    std::vector<Tensor> gs;
    if (!grads.is_none()) {
      for (py::handle g : grads) gs.push_back(g.is_none() ? Tensor() : py_to_tensor(g, "backward", "grad_tensors"));
    }
    autograd::backward(ts, gs, retain_graph);
  }, py::arg("tensors"), py::arg("grad_tensors") = py::none(), py::arg("retain_graph") = false);
  m.def("grad", [](py::handle outputs, py::handle inputs, py::handle grad_outputs,
                   py::handle retain_graph, bool create_graph, bool allow_unused) {
    auto as_list = [](py::handle h, const char* arg) {
      if (is_tensor(h)) return std::vector<Tensor>{py_to_tensor(h, "grad", arg)};
      return py_to_tensor_list(h, "grad", arg);
    };
    std::vector<Tensor> outs = as_list(outputs, "outputs");
    std::vector<Tensor> ins = as_list(inputs, "inputs");
    std::vector<Tensor> gos;
    if (!grad_outputs.is_none()) {
      if (is_tensor(grad_outputs)) {
        gos.push_back(py_to_tensor(grad_outputs, "grad", "grad_outputs"));
      } else {
        for (py::handle g : grad_outputs) gos.push_back(g.is_none() ? Tensor() : py_to_tensor(g, "grad", "grad_outputs"));
      }
    }
    bool retain = retain_graph.is_none() ? create_graph : retain_graph.cast<bool>();
    auto res = autograd::grad(outs, ins, gos, retain, create_graph, allow_unused);
    return wrap_result(res);
  }, py::arg("outputs"), py::arg("inputs"), py::arg("grad_outputs") = py::none(),
     py::arg("retain_graph") = py::none(), py::arg("create_graph") = false,
     py::arg("allow_unused") = false);
  m.def("is_grad_enabled", &autograd::grad_enabled);
  m.def("set_grad_enabled", &autograd::set_grad_enabled);
}

}  // namespace oar::python
