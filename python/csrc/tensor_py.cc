// The oar.Tensor class: properties, NumPy and DLPack interop, autograd entry points.
// Op methods (x.add, x.sum, ...) are added by the generated bindings.
#include <pybind11/functional.h>
#include <pybind11/numpy.h>

#include <cstring>

#include "distributed/mesh/dist_tensor_meta.h"
#include "oar_generated/ops_api.h"
#include "paddle_core/api/op_utils.h"
#include "paddle_core/autograd/engine.h"
#include "paddle_core/autograd/grad_mode.h"
#include "paddle_core/autograd/node.h"
#include "paddle_core/dispatch/amp.h"
#include "paddle_core/dispatch/trace.h"
#include "paddle_core/meta/view_meta.h"
#include "python/csrc/dlpack_py.h"
#include "python/csrc/py_convert.h"

namespace oar::python {

void set_tensor_type(PyTypeObject* t);
py::object make_size(const int64_t* dims, int rank);  // size_py.cc: an oar.Size

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
    case DataType::COMPLEX64:
      return py::dtype("complex64");
    case DataType::COMPLEX128:
      return py::dtype("complex128");
    default: break;
  }
  OAR_THROW(InvalidType, "numpy: unsupported dtype");
}

// Note [numpy() copies]: Tensor.numpy() returns a new array, as Paddle's does (a deep
// copy): a snapshot such as `w0 = layer.weight.numpy()` must not follow the optimizer's
// in-place updates, nor a write to the array change the tensor. (The view, PyTorch's
// semantics, made Paddle code that compares weights before and after training see them
// unchanged, and one of Oar's own tests vacuous.) The view stays available where asked
// for: `np.asarray(t, copy=False)` (__array__'s copy=False), DLPack, and `_numpy_view()`
// for Oar's own code. A device tensor's host copy is private already, so it is not copied
// again.
//
// A NumPy array of a CPU tensor's memory (view) or a C-contiguous copy of it; of a device
// tensor, its host copy (made after the device's queued work). The array keeps the
// storage alive. A writable view marks the storage shared out (Storage::shared_out): NumPy
// writes bump no version counter. A read-only view (writable false) does not.
py::array to_numpy(const Tensor& t, bool copy, bool writable = true) {
  const DenseTensor d = on_host(t);
  if (copy && t.dense().place().is_cpu()) {
    std::vector<py::ssize_t> shape(d.dims().begin(), d.dims().end());
    py::array out(numpy_dtype(d.dtype()), shape);
    if (d.numel() > 0) {
      DenseTensor dst(d.dims(), d.dtype(), CPUPlace());  // the array's buffer, which it owns
      dst.set_storage(
          std::make_shared<Storage>(out.mutable_data(), static_cast<size_t>(out.nbytes()), CPUPlace(), [] {}), 0);
      py::gil_scoped_release nogil;
      copy_into(d, &dst);
    }
    return out;
  }
  std::vector<py::ssize_t> shape(d.dims().begin(), d.dims().end());
  std::vector<py::ssize_t> strides;
  for (int64_t s : d.strides()) strides.push_back(s * static_cast<int64_t>(size_of(d.dtype())));
  auto* keep = new std::shared_ptr<Storage>(d.storage());
  py::capsule owner(keep, [](void* p) { delete static_cast<std::shared_ptr<Storage>*>(p); });
  void* ptr = d.raw_data();
  static char empty_buf[8];
  if (ptr == nullptr) ptr = empty_buf;
  py::array view(numpy_dtype(d.dtype()), shape, strides, ptr, owner);
  if (!writable)
    view.attr("flags").attr("writeable") = false;
  else if (d.storage())
    d.storage()->mark_shared_out();
  return view;
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
        if (is_tensor(data)) {
          Tensor src = py_to_tensor(data, "Tensor", "data");
          auto impl = std::make_shared<TensorImpl>(src.dense());
          if (auto* tracer = trace::active()) tracer->record_alias(Tensor(impl), src);
          return impl;
        }
        return tensor_from_python(data, DataType::UNDEFINED, "Tensor").impl();
      }), py::arg("data"));
  cls.def_property_readonly(
         "shape",
         [](const TensorImpl& t) {
    if (t.dist) {  // a dist tensor's shape is its global one, as in Paddle (Note [Placements])
      const auto& g = static_cast<const dist::DistTensorMeta*>(t.dist.get())->global_shape;
      return make_size(g.data(), static_cast<int>(g.size()));
    }
    const Dims& d = t.dense.dims();
    return make_size(d.data(), d.size());
         })
      .def_property_readonly("dtype", [](const TensorImpl& t) { return dtype_object(t.dense.dtype()); })
      .def_property_readonly("place", [](const TensorImpl& t) { return place_object(t.dense.place()); })
      .def_property_readonly("ndim", [](const TensorImpl& t) { return t.dense.rank(); })
      .def("dim", [](const TensorImpl& t) { return t.dense.rank(); })
      .def_property_readonly("size", [](const TensorImpl& t) { return t.dense.numel(); })
      .def("numel", [](const TensorImpl& t) { return t.dense.numel(); })
      .def_property_readonly("strides", [](const TensorImpl& t) { return t.dense.strides().vec(); })
      .def("get_strides", [](const TensorImpl& t) { return t.dense.strides().vec(); })
      .def_property_readonly("offset", [](const TensorImpl& t) { return t.dense.offset(); })
      .def("is_contiguous", [](const TensorImpl& t) { return t.dense.is_contiguous(); })
      .def("_is_initialized", [](const TensorImpl& t) { return t.dense.initialized(); })
      .def(
          "data_ptr",
          [](const TensorImpl& t) {
    if (t.dense.storage()) t.dense.storage()->mark_shared_out();  // the address may be written through
    return reinterpret_cast<uintptr_t>(t.dense.raw_data());
          })
      // Tensor.set_ / resize_ / assign(x, output): this tensor takes src's memory, shape and
      // dtype (sharing src's storage). Views and tensors with a history refuse: their
      // autograd records describe the old memory.
      .def(
          "_set_dense_from",
          [](std::shared_ptr<TensorImpl> t, std::shared_ptr<TensorImpl> src) {
    OAR_ENFORCE(t->view == nullptr, InvalidArgument,
                "set_: x is a view of another tensor; its memory cannot be replaced");
    OAR_ENFORCE(!Tensor(t).grad_fn(), InvalidArgument,
                "set_: x is the output of a differentiable op (it has a grad_fn); "
                "replace the memory of a leaf tensor or call x.detach() first");
    OAR_ENFORCE(t->dist == nullptr && src->dist == nullptr, InvalidArgument,
                "set_: distributed tensors cannot share memory this way");
    t->dense = src->dense;
    Tensor(t).bump_version();
          },
          py::arg("src").none(false))  // None would arrive as a null TensorImpl
      .def(
          "_commit_cast",
          [](std::shared_ptr<TensorImpl> t, std::shared_ptr<TensorImpl> result) {
    // Tensor.cast_ (python/oar/_tensor_storage.py): x takes the result of x.cast(dtype), its
    // memory and its history, as an in-place op records. The element size may change, so
    // x's memory is replaced rather than written, which a view cannot do (its base would not
    // see it).
    const Tensor x(t), r(result);
    ops::detail::check_inplace_allowed(x, "cast_");
    OAR_ENFORCE(t->view == nullptr, InvalidArgument,
                "cast_: x is a view of another tensor, whose memory it cannot replace with "
                "another dtype's; use x.cast(dtype), or cast_ a contiguous() copy");
    OAR_ENFORCE(t->dist == nullptr, InvalidArgument, "cast_: distributed tensors are not cast in place");
    t->dense = result->dense;
    x.bump_version();
    if (r.grad_fn()) {
      AutogradMeta& meta = x.ensure_autograd_meta();
      meta.stop_gradient = false;
      meta.grad_fn = r.grad_fn();
      meta.output_nr = r.autograd_meta()->output_nr;
    } else if (x.grad_fn()) {  // the cast carries no history (an integer dtype, or no_grad)
      AutogradMeta& meta = x.ensure_autograd_meta();
      meta.grad_fn = nullptr;
      meta.stop_gradient = true;
    }
          },
          py::arg("result").none(false))
      .def(
          "_may_overlap",
          [](std::shared_ptr<TensorImpl> a, std::shared_ptr<TensorImpl> b) { return may_overlap(a->dense, b->dense); },
          py::arg("other").none(false))
      .def(
          "_share_storage_with",
          [](std::shared_ptr<TensorImpl> a, std::shared_ptr<TensorImpl> b) {
    return a->dense.storage() == b->dense.storage();
          },
          py::arg("other").none(false))
      .def_property(
          "name", [](const TensorImpl& t) { return t.name; },
          [](TensorImpl& t, std::string n) { t.name = std::move(n); })
      .def_property(
          "stop_gradient", [](std::shared_ptr<TensorImpl> t) { return Tensor(t).stop_gradient(); },
          [](std::shared_ptr<TensorImpl> t, bool v) { Tensor(t).set_stop_gradient(v); })
      .def_property_readonly("is_leaf", [](std::shared_ptr<TensorImpl> t) { return Tensor(t).is_leaf(); })
      .def_property_readonly("_grad_fn_name",
                             [](std::shared_ptr<TensorImpl> t) -> py::object {
                               const auto& fn = Tensor(t).grad_fn();
                               if (!fn) return py::none();
                               return py::str(fn->name());
                             })
      .def_property(
          "grad", [](std::shared_ptr<TensorImpl> t) { return wrap(Tensor(t).grad()); },
          [](std::shared_ptr<TensorImpl> t, py::handle g) {
    AutogradMeta& meta = Tensor(t).ensure_autograd_meta();
    meta.grad_zero_pending = false;
    if (g.is_none()) {
      meta.grad.reset();
      return;
    }
    Tensor gt = py_to_tensor(g, "grad", "value");
    OAR_ENFORCE(gt.dims() == t->dense.dims(), InvalidArgument,
                "grad: assigned gradient "
                "has shape ",
                gt.dims(), " but the tensor has shape ", t->dense.dims());
    meta.grad = gt.impl();
          })
      .def_property_readonly("inplace_version", [](std::shared_ptr<TensorImpl> t) { return Tensor(t).version(); })
      .def_property_readonly("_version", [](std::shared_ptr<TensorImpl> t) { return Tensor(t).version(); })
      .def(
          "_has_leaf_hooks",
          [](std::shared_ptr<TensorImpl> t) { return t->autograd && t->autograd->hooked_accumulator != nullptr; },
          "Whether register_hook was called on this leaf (its hooks run as its gradient accumulates: a "
          "to_static training step, whose traced backward accumulates nothing, runs such a step eagerly).")
      .def(
          "_grad_state",
          [](const std::shared_ptr<TensorImpl>& t) {
    const AutogradMeta* meta = t->autograd.get();
    if (!meta || !meta->grad) return 0;
    return meta->grad_zero_pending ? 1 : 2;
          },
          "0: no .grad; 1: the zeros of a clear_grad not written yet (Note [Deferred zeroing of .grad]); "
          "2: a gradient. Unlike reading .grad it writes nothing: to_static's training step drops "
          "pending zeros unread (_train_step.held_key).")
      .def(
          "_zero_bytes",
          [](std::shared_ptr<TensorImpl> t) -> py::object {
            // Whether every byte of a contiguous host tensor is 0 (so every element is +0), read
            // with an early exit and no temporaries: to_static's training steps drop gradients an
            // eager clear_grad zeroed (_train_step._drop_zeros). None where it cannot tell
            // cheaply (device memory, strided views); False for -0.0, which is only slower there.
            const DenseTensor& d = t->dense;
            if (!d.place().is_cpu() || !d.is_contiguous()) return py::none();
            return py::bool_(autograd::all_bytes_zero(d));
          },
          "Whether every byte is 0 (a contiguous host tensor; None elsewhere).")
      .def("numpy", [](std::shared_ptr<TensorImpl> t) { return to_numpy(Tensor(t), /*copy=*/true); })
      .def(
          "_numpy_view",
          [](std::shared_ptr<TensorImpl> t, bool writable) { return to_numpy(Tensor(t), /*copy=*/false, writable); },
          py::arg("writable") = true,
          "A NumPy view of a CPU tensor's memory (a device tensor: its host copy), for Oar's own "
          "code: numpy() copies (Note [numpy() copies]). writable=False: a read-only view.")
      .def(
          "__array__",
          [](std::shared_ptr<TensorImpl> t, py::object dtype, py::object copy) -> py::object {
            // NumPy's protocol: copy=False never copies (a view of a CPU tensor; a device
            // tensor needs a copy: ValueError); otherwise a copy, as numpy() makes.
            const bool no_copy = !copy.is_none() && !copy.cast<bool>();
            Tensor self(t);
            if (no_copy && !self.place().is_cpu())
              OAR_THROW(InvalidArgument, "__array__: a tensor on ", self.place().str(),
                        " cannot be seen by NumPy without a copy (copy=False)");
            if (dtype.is_none()) return to_numpy(self, !no_copy);
            py::object want = py::module_::import("numpy").attr("dtype")(dtype);
            if (want.equal(numpy_dtype(self.dtype()))) return to_numpy(self, !no_copy);
            if (no_copy)
              OAR_THROW(InvalidArgument, "__array__: converting ", dtype_name(self.dtype()), " to ",
                        py::str(want).cast<std::string>(), " needs a copy (copy=False)");
            return to_numpy(self, /*copy=*/false, /*writable=*/false).attr("astype")(want);  // the one copy
          },
          py::arg("dtype") = py::none(), py::arg("copy") = py::none())
      .def(
          "__dlpack__",
          [](std::shared_ptr<TensorImpl> t, py::handle stream, py::handle max_version, py::handle dl_device,
             py::handle copy) {
    // A device tensor is exported as a host copy (the consumer reads it on the CPU).
    Tensor self(t);
    if (self.place().is_cpu()) wait_host_writes(self.dense());
    return tensor_dlpack(self.place().is_cpu() ? self : Tensor(on_host(self)), stream, max_version, dl_device, copy);
          },
          py::arg("stream") = py::none(), py::kw_only(), py::arg("max_version") = py::none(),
          py::arg("dl_device") = py::none(), py::arg("copy") = py::none())
      .def("__dlpack_device__", [](const TensorImpl&) { return py::make_tuple(1 /* kDLCPU */, 0); })
      .def(
          "backward",
          [](std::shared_ptr<TensorImpl> t, py::handle grad_tensor, bool retain_graph) {
    std::vector<Tensor> g;
    if (!grad_tensor.is_none()) g.push_back(py_to_tensor(grad_tensor, "backward", "grad_tensor"));
    autograd::backward({Tensor(t)}, g, retain_graph);
          },
          py::arg("grad_tensor") = py::none(), py::arg("retain_graph") = false)
      .def(
          "register_hook",
          [](std::shared_ptr<TensorImpl> t, py::function fn) {
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
      .def(
          "retain_grads",
          [](std::shared_ptr<TensorImpl> t) {
    Tensor self(t);
    if (self.is_leaf() || self.stop_gradient()) return;
    if (self.autograd_meta()->retain_grads) return;
    self.autograd_meta()->retain_grads = true;
    std::weak_ptr<TensorImpl> weak = t;
    self.grad_fn()->add_pre_hook(self.autograd_meta()->output_nr, [weak](const Tensor& g) {
      if (auto p = weak.lock()) {
        AutogradMeta& meta = Tensor(p).ensure_autograd_meta();
        Tensor gd(g.dense());
        meta.grad = meta.grad && !meta.grad_zero_pending ? ops::add(Tensor(meta.grad), gd).impl() : gd.impl();
        meta.grad_zero_pending = false;  // a pending clear's zeros add nothing
      }
      return Tensor();
    });
          })
      .def(
          "clear_gradient",
          [](std::shared_ptr<TensorImpl> t, bool set_to_zero) {
    AutogradMeta* meta = t->autograd.get();
    if (!meta || !meta->grad) return;
    if (set_to_zero) {
      autograd::clear_grad_to_zero(*t);
    } else {
      meta->grad.reset();
      meta->grad_zero_pending = false;
    }
          },
          py::arg("set_to_zero") = true)
      .def(
          "detach",
          [](std::shared_ptr<TensorImpl> t) {
    Tensor d(std::make_shared<TensorImpl>(t->dense));
    if (auto* tracer = trace::active()) tracer->record_alias(d, Tensor(t));
    return wrap(d);
          })
      .def(
          "detach_",
          [](py::object self) {
    auto t = self.cast<std::shared_ptr<TensorImpl>>();
    t->autograd.reset();
    return self;
          })
      .def(
          "_copy_from",
          [](std::shared_ptr<TensorImpl> t, std::shared_ptr<TensorImpl> src) {
    // Raw data copy (optimizers, set_value); no autograd.
    OAR_ENFORCE(src->dense.numel() == t->dense.numel(), InvalidArgument, "copy: source has ", src->dense.numel(),
                " elements, destination ", t->dense.numel());
    DenseTensor s = src->dense;
    if (s.dims() != t->dense.dims()) s = ReshapeView(s, t->dense.dims().vec());
    trace::Tracer* tracer = trace::active();
    if (tracer != nullptr) tracer->check_write(Tensor(t));  // a refused write leaves t as it was
    copy_into(s, &t->dense);
    Tensor(t).bump_version();
    if (tracer != nullptr) tracer->record_write(Tensor(t), Tensor(src));
          },
          py::arg("src").none(false))
      .def("_item_double", [](std::shared_ptr<TensorImpl> t) {
        OAR_ENFORCE(t->dense.numel() == 1, InvalidArgument, "item: only a tensor with one element "
                    "can be converted to a Python scalar, got shape ", t->dense.dims());
        return on_host(ops::cast(Tensor(t), DataType::FLOAT64)).data<double>()[0];
      });

  m.def("to_tensor", [](py::handle data, py::handle dtype, py::handle place, bool stop_gradient) {
    Tensor t = tensor_from_python(data, py_to_dtype(dtype, "to_tensor", "dtype"), "to_tensor");
    const Place p = py_to_place(place, "to_tensor", "place");  // None: the current device
    if (p != t.place()) t = ops::copy_to(t, p, true);
    t.set_stop_gradient(stop_gradient);
    return wrap(t);
  }, py::arg("data"), py::arg("dtype") = py::none(), py::arg("place") = py::none(),
     py::arg("stop_gradient") = true);
  m.def("from_dlpack", [](py::handle o) { return wrap(tensor_from_dlpack(o)); });
  m.def("to_dlpack", [](py::handle x) {
    return tensor_to_dlpack(py_to_tensor(x, "to_dlpack", "x"), /*versioned=*/false, /*copy=*/false);
  });

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
                   py::handle retain_graph, bool create_graph, bool allow_unused, bool stop_at_inputs) {
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
    auto res = autograd::grad(outs, ins, gos, retain, create_graph, allow_unused, stop_at_inputs);
    return wrap_result(res);
  }, py::arg("outputs"), py::arg("inputs"), py::arg("grad_outputs") = py::none(),
     py::arg("retain_graph") = py::none(), py::arg("create_graph") = false,
     py::arg("allow_unused") = false, py::arg("stop_at_inputs") = false);
  m.def("is_grad_enabled", &autograd::grad_enabled);
  m.def("set_grad_enabled", &autograd::set_grad_enabled);
  // (min, max) of a contiguous int32/int64 CPU tensor with elements, in one pass; None
  // otherwise (the caller's NumPy path): the index checks of embedding and one_hot.
  m.def(
      "_int_min_max",
      [](py::handle h) -> py::object {
        if (!is_tensor(h)) return py::none();
        const Tensor t = py_to_tensor(h, "_int_min_max", "x");
        if (dist::dist_meta(t) != nullptr || !t.place().is_cpu()) return py::none();
        const DenseTensor& d = t.dense();
        if (d.numel() == 0 || !d.is_contiguous()) return py::none();
        wait_host_writes(d);
        auto scan = [&](const auto* p) {
          auto lo = p[0], hi = p[0];
          for (int64_t i = 1; i < d.numel(); ++i) {
            lo = std::min(lo, p[i]);
            hi = std::max(hi, p[i]);
          }
          return py::make_tuple(static_cast<int64_t>(lo), static_cast<int64_t>(hi));
        };
        if (d.dtype() == DataType::INT64) return scan(d.data<int64_t>());
        if (d.dtype() == DataType::INT32) return scan(d.data<int32_t>());
        return py::none();
      },
      py::arg("x"));
  // python/oar/nn/_inference_ops.py's no_grad_flows, but for the trace check: in one call,
  // since its per-tensor checks from Python (dtype, place, is_dist) cost ~1 us a tensor.
  m.def(
      "_no_grad_flows",
      [](const py::tuple& tensors, bool allow_f64) {
    std::vector<Tensor> ts;
    ts.reserve(tensors.size());
    for (py::handle h : tensors) {
      if (h.is_none()) continue;
      if (!is_tensor(h)) return false;
      ts.push_back(py_to_tensor(h, "_no_grad_flows", "tensors"));
    }
    if (autograd::any_requires_grad(ts) || amp::state().level != amp::Level::kO0) return false;
    for (const Tensor& t : ts) {
      const DataType d = t.dtype();
      if (!(d == DataType::FLOAT32 || (allow_f64 && d == DataType::FLOAT64))) return false;
      if (dist::dist_meta(t) != nullptr || !t.place().is_cpu()) return false;
    }
    return true;
      },
      py::arg("tensors"), py::arg("allow_f64"));
}

}  // namespace oar::python
