// oar._C.pylayer_apply: the autograd node of oar.autograd.PyLayer, whose backward is a
// Python function (python/oar/autograd/py_layer.py). The node holds that function until
// the graph is freed; it is called with one gradient per forward output and returns one
// per tensor input. Tensors it returns are checked against the inputs' shapes here, so a
// wrong backward fails naming the layer instead of corrupting an accumulation later.
#include "paddle_core/autograd/grad_mode.h"
#include "paddle_core/autograd/node.h"
#include "paddle_core/dispatch/trace.h"
#include "python/csrc/py_convert.h"

namespace oar::python {
namespace {

class PyLayerNode final : public GradNode {
 public:
  PyLayerNode(std::string name, py::object backward, bool materialize)
      : name_(std::move(name)), backward_(std::move(backward)), materialize_(materialize) {}
  ~PyLayerNode() override {
    if (Py_IsInitialized()) {
      py::gil_scoped_acquire gil;
      backward_ = py::object();
    } else {
      backward_.release();  // the interpreter is gone: nothing left to decref into
    }
  }
  const char* name() const override { return name_.c_str(); }
  bool materialize_grads() const override { return materialize_; }
  void release_saved() override {
    py::gil_scoped_acquire gil;
    backward_ = py::object();  // drops the context (and the tensors it saved)
  }

  std::vector<Tensor> apply(std::vector<Tensor>& grads) override {
    py::gil_scoped_acquire gil;
    OAR_ENFORCE(backward_, PreconditionNotMet, name_,
                ": trying to backward through the graph a second time; call backward(retain_graph=True) "
                "the first time");
    py::list args;
    for (const Tensor& g : grads) args.append(wrap(g));
    py::object r = backward_(args);
    std::vector<py::handle> items;
    py::tuple seq;
    if (is_tensor(r) || r.is_none()) {
      items.push_back(r);
    } else {
      OAR_ENFORCE(py::isinstance<py::tuple>(r) || py::isinstance<py::list>(r), InvalidType, name_,
                  ".backward must return a Tensor or a tuple of Tensors (None for inputs without a gradient), got ",
                  std::string(py::str(py::type::of(r).attr("__name__"))));
      seq = py::tuple(r);
      for (py::handle h : seq) items.push_back(h);
    }
    OAR_ENFORCE(items.size() == next_edges.size(), InvalidArgument, name_, ".backward returned ", items.size(),
                " gradients, but forward took ", next_edges.size(),
                " Tensor inputs (return one gradient, or None, per Tensor input)");
    std::vector<Tensor> out(items.size());
    for (size_t i = 0; i < items.size(); ++i) {
      if (items[i].is_none() || !needs_input_grad(i)) continue;
      OAR_ENFORCE(is_tensor(items[i]), InvalidType, name_, ".backward: gradient ", i,
                  " must be a Tensor or None, got ",
                  std::string(py::str(py::type::of(items[i]).attr("__name__"))));
      Tensor g = py_to_tensor(items[i], name_.c_str(), "backward result");
      OAR_ENFORCE(g.dims() == input_dims_[i], InvalidArgument, name_, ".backward: gradient ", i, " has shape ",
                  g.dims(), " but forward's Tensor input ", i, " has shape ", input_dims_[i]);
      // A gradient made in Python under no_grad stays stop_gradient=True in the leaf's .grad
      // (Paddle's rule; node.cc's AccumulateGrad reads this flag).
      if (g.stop_gradient()) g.ensure_autograd_meta().stop_gradient = true;
      out[i] = std::move(g);
    }
    return out;
  }

  std::vector<Dims> input_dims_;

 private:
  std::string name_;
  py::object backward_;
  bool materialize_;
};

}  // namespace

void bind_pylayer(py::module_& m) {
  m.def("pylayer_apply", [](const std::string& name, py::object backward, py::list inputs, py::list outputs,
                            const std::vector<bool>& differentiable, bool materialize) {
    std::vector<Tensor> ins = py_to_tensor_list(inputs, name.c_str(), "inputs");
    std::vector<Tensor> outs = py_to_tensor_list(outputs, name.c_str(), "outputs");
    OAR_ENFORCE(differentiable.size() == outs.size(), Internal, "pylayer_apply: one flag per output expected");
    py::list result;
    if (!autograd::any_requires_grad(ins)) {
      for (const Tensor& t : outs) result.append(wrap(t));
      return result;
    }
    auto node = std::make_shared<PyLayerNode>(name, std::move(backward), materialize);
    for (const Tensor& t : ins) {
      node->next_edges.push_back(autograd::gradient_edge(t));
      node->input_dims_.push_back(t.dims());
    }
    node->output_meta.resize(outs.size());
    for (size_t i = 0; i < outs.size(); ++i) {
      Tensor o = outs[i];
      const auto& d = o.dense();
      node->output_meta[i] = {d.dims(), d.dtype(), d.place()};
      if (differentiable[i] && (is_floating(o.dtype()) || is_complex(o.dtype()))) {  // eig: complex
        // An output that already has autograd state (an input returned as is, a leaf)
        // gets its own handle on the same memory, so its history is this node's.
        if (o.autograd_meta() != nullptr) {
          Tensor fresh(std::make_shared<TensorImpl>(d));
          if (trace::Tracer* tr = trace::active()) tr->record_alias(fresh, o);
          o = fresh;
        }
        autograd::set_history(o, node, static_cast<uint32_t>(i));
      }
      result.append(wrap(o));
    }
    return result;
  }, py::arg("name"), py::arg("backward"), py::arg("inputs"), py::arg("outputs"), py::arg("differentiable"),
     py::arg("materialize") = true,
     "Hangs one node on `outputs` whose backward calls backward(list of output grads) -> grads of `inputs`.");
}

}  // namespace oar::python
