// oar._C.pir: programs of the IR for inspection from Python (oar.pir wraps it):
// parse/print, list ops and values, build ops (shape inference included), run passes
// and the registered pipelines (pir/pass/pipelines.h), (de)serialize. Op and Value views check a generation number
// so a view of an op that a pass rewrote raises instead of reading freed memory.
#include <pybind11/stl.h>

#include "pir/drr/drr.h"
#include "pir/executor/executor.h"
#include "pir/executor/run_program.h"
#include "pir/ir/builder.h"
#include "pir/ir/parser.h"
#include "pir/ir/printer.h"
#include "pir/ir/program.h"
#include "pir/ir/verifier.h"
#include "pir/pass/pass.h"
#include "pir/pass/pipelines.h"
#include "pir/serialize/serialize.h"
#include "pir/trace/program_tracer.h"
#include "python/csrc/pir_py.h"
#include "python/csrc/py_convert.h"

namespace oar::python {
namespace {

using pir::Attribute;
using pir::AttrKind;
using pir::IrContext;
using pir::Operation;
using pir::Type;
using pir::Value;

struct PyOp {
  ProgramRef prog;
  Operation* op;
  uint64_t generation;
  Operation* get() const {
    OAR_ENFORCE(generation == prog->generation, PreconditionNotMet,
                "oar.pir: this Operation was taken before the program was transformed; list the ops again");
    return op;
  }
};
struct PyValue {
  ProgramRef prog;
  Value v;
  uint64_t generation;
  Value get() const {
    OAR_ENFORCE(generation == prog->generation, PreconditionNotMet,
                "oar.pir: this Value was taken before the program was transformed; list the values again");
    return v;
  }
};

py::object attr_to_py(Attribute a) {
  switch (a.kind()) {
    case AttrKind::kBool: return py::bool_(a.as_bool());
    case AttrKind::kInt: return py::int_(a.as_int());
    case AttrKind::kFloat: return py::float_(a.as_float());
    case AttrKind::kString: return py::str(a.as_string());
    case AttrKind::kShape: return py::cast(a.as_shape());
    case AttrKind::kArray: {
      py::list l;
      for (size_t i = 0; i < a.size(); ++i) l.append(attr_to_py(a.element(i)));
      return std::move(l);
    }
    case AttrKind::kDType: return py::cast(a.as_dtype());
    default: return py::str(a.str());  // place, dense, type, kernel_key: their text
  }
}

/// Python value -> attribute of the schema type `type` ("" when unknown).
Attribute py_to_attr(IrContext* c, py::handle h, const std::string& type, const std::string& op,
                     const std::string& name) {
  const char* o = op.c_str();
  const char* n = name.c_str();
  if (type == "int") return c->int_attr(py_to_int(h, o, n));
  if (type == "float") return c->float_attr(py_to_double(h, o, n));
  if (type == "bool") return c->bool_attr(py_to_bool(h, o, n));
  if (type == "str") return c->str_attr(py_to_string(h, o, n));
  if (type == "int[]") return c->shape_attr(py_to_int_list(h, o, n));
  if (type == "float[]") {
    std::vector<Attribute> v;
    for (double d : py_to_double_list(h, o, n)) v.push_back(c->float_attr(d));
    return c->array_attr(v);
  }
  if (type == "DataType") return c->dtype_attr(py_to_dtype(h, o, n));
  if (type == "Place") return c->place_attr(py_to_place(h, o, n));
  if (type == "Scalar") return c->scalar_attr(py_to_scalar(h, o, n));
  // no schema: infer from the Python type
  if (py::isinstance<py::bool_>(h)) return c->bool_attr(h.cast<bool>());
  if (py::isinstance<py::int_>(h)) return c->int_attr(h.cast<int64_t>());
  if (py::isinstance<py::float_>(h)) return c->float_attr(h.cast<double>());
  if (py::isinstance<py::str>(h)) return c->str_attr(h.cast<std::string>());
  if (py::isinstance<py::list>(h) || py::isinstance<py::tuple>(h)) {
    std::vector<Attribute> v;
    bool all_int = true;
    for (auto x : h) {
      v.push_back(py_to_attr(c, x, "", op, name));
      all_int &= v.back().is(AttrKind::kInt);
    }
    if (all_int) return c->shape_attr(py_to_int_list(h, o, n));
    return c->array_attr(v);
  }
  OAR_THROW(InvalidType, op, ": cannot convert attribute '", name, "' from ",
            std::string(py::str(py::type::of(h).attr("__name__"))));
}

py::object type_shape(Type t) {
  if (!t.is_tensor()) return py::none();
  return py::cast(t.dims());
}
py::object type_dtype(Type t) {
  if (t.is_tensor()) return py::cast(t.dtype());
  return py::none();
}

struct PyTracer {
  std::unique_ptr<pir::ProgramTracer> t = std::make_unique<pir::ProgramTracer>();
  std::unique_ptr<trace::TracerGuard> guard;
  pir::ProgramTracer& tracer() {
    OAR_ENFORCE(t != nullptr, PreconditionNotMet, "Tracer: finish() was already called");
    return *t;
  }
};

struct PyExecutor {
  ProgramRef prog;
  uint64_t generation = 0;
  std::shared_ptr<pir::Executor> e;
};

std::vector<PyOp> list_ops(const ProgramRef& prog, Operation* root, bool recursive) {
  std::vector<PyOp> out;
  if (recursive) {
    root->walk([&](Operation* op) { out.push_back(PyOp{prog, op, prog->generation}); }, /*post_order=*/false);
  } else {
    for (Operation* op : *root->region(0).front()) out.push_back(PyOp{prog, op, prog->generation});
  }
  return out;
}

}  // namespace

// ---- DRR passes from Python (oar.incubate.passes.ir.RegisterPass): Note [Python DRR passes]
namespace {
pir::drr::PatternOp drr_op(IrContext* ctx, py::handle h, bool source, size_t& attr_count,
                           std::vector<std::pair<std::string, Attribute>>& required) {
  auto t = h.cast<py::tuple>();
  OAR_ENFORCE(t.size() == 4, InvalidArgument, "register_drr_pass: an op is (name, inputs, outputs, attrs)");
  pir::drr::PatternOp op;
  op.name = t[0].cast<std::string>();
  const pir::OpInfo* info = ctx->op_info(op.name);
  OAR_ENFORCE(info != nullptr, InvalidArgument, "register_drr_pass: unknown op '", op.name, "'");
  op.inputs = t[1].cast<std::vector<std::string>>();
  op.outputs = t[2].cast<std::vector<std::string>>();
  for (auto [k, v] : t[3].cast<py::dict>()) {
    std::string an = py::str(k);
    int idx = info->attr_index(an);
    Attribute a = py_to_attr(ctx, v, idx >= 0 ? info->attrs[idx].type : "", info->name, an);
    if (source) {
      std::string bound = "@attr" + std::to_string(attr_count++);
      op.attr_binds.push_back({an, bound});
      required.push_back({bound, a});
    } else {
      op.attrs.push_back({an, pir::drr::value(a)});
    }
  }
  return op;
}

std::vector<std::shared_ptr<pir::drr::DrrRule>> drr_rules(IrContext* ctx, py::list py_rules) {
  std::vector<std::shared_ptr<pir::drr::DrrRule>> rules;
  for (auto h : py_rules) {
    auto t = h.cast<py::tuple>();
    OAR_ENFORCE(t.size() == 3, InvalidArgument, "register_drr_pass: a rule is (name, source ops, result ops)");
    auto rule = std::make_shared<pir::drr::DrrRule>(t[0].cast<std::string>());
    size_t attr_count = 0;
    std::vector<std::pair<std::string, Attribute>> required;
    for (auto o : t[1].cast<py::list>()) {
      pir::drr::PatternOp op = drr_op(ctx, o, true, attr_count, required);
      rule->source().op(op.name, op.inputs, op.outputs, op.attr_binds);
    }
    if (!required.empty()) {
      rule->source().require([required](const pir::drr::Match& m) {
        for (const auto& [bound, a] : required)
          if (!(m.attr(bound) == a)) return false;
        return true;
      });
    }
    for (auto o : t[2].cast<py::list>()) {
      pir::drr::PatternOp op = drr_op(ctx, o, false, attr_count, required);
      rule->result().op(op.name, op.inputs, op.outputs, op.attrs);
    }
    rules.push_back(std::move(rule));
  }
  return rules;
}

}  // namespace

void bind_pir(py::module_& m) {
  py::module_ pm = m.def_submodule("pir", "the IR: programs, ops, values, passes");
  IrContext* ctx = IrContext::global();

  py::class_<PyValue>(pm, "Value")
      .def_property_readonly("type", [](const PyValue& v) { return v.get().type().str(); })
      .def_property_readonly("shape", [](const PyValue& v) { return type_shape(v.get().type()); })
      .def_property_readonly("dtype", [](const PyValue& v) { return type_dtype(v.get().type()); })
      .def_property_readonly("is_block_argument", [](const PyValue& v) { return v.get().is_block_argument(); })
      .def_property_readonly("index", [](const PyValue& v) { return v.get().index(); })
      .def_property_readonly("num_uses", [](const PyValue& v) { return v.get().num_uses(); })
      .def_property_readonly("defining_op", [](const PyValue& v) -> py::object {
        Operation* d = v.get().defining_op();
        if (!d) return py::none();
        return py::cast(PyOp{v.prog, d, v.generation});
      })
      .def("constant", [](const PyValue& v) -> py::object {
        Operation* d = v.get().defining_op();
        if (!d || d->name() != "builtin.constant") return py::none();
        return wrap(Tensor(d->attr("value").as_dense_tensor()));
      }, "The data of a value defined by builtin.constant (an oar.Tensor), else None.")
      .def("users", [](const PyValue& v) {
        std::vector<PyOp> out;
        for (pir::OpOperand* u = v.get().first_use(); u; u = u->next_use())
          out.push_back(PyOp{v.prog, u->owner(), v.generation});
        return out;
      })
      .def("__eq__", [](const PyValue& a, const PyValue& b) { return a.v == b.v; })
      .def("__hash__", [](const PyValue& v) { return std::hash<void*>()(v.v.impl()); })
      .def("__repr__", [](const PyValue& v) { return "<oar.pir.Value " + v.get().type().str() + ">"; });

  py::class_<PyOp>(pm, "Operation")
      .def_property_readonly("name", [](const PyOp& o) { return o.get()->name(); })
      .def_property_readonly("dialect", [](const PyOp& o) { return o.get()->info()->dialect; })
      .def_property_readonly("num_regions", [](const PyOp& o) { return o.get()->num_regions(); })
      .def("operands", [](const PyOp& o) {
        std::vector<py::object> out;
        for (Value v : o.get()->operands())
          out.push_back(v ? py::cast(PyValue{o.prog, v, o.generation}) : py::none());
        return out;
      })
      .def("results", [](const PyOp& o) {
        std::vector<PyValue> out;
        for (Value v : o.get()->results()) out.push_back(PyValue{o.prog, v, o.generation});
        return out;
      })
      .def("result", [](const PyOp& o, size_t i) {
        OAR_ENFORCE(i < o.get()->num_results(), OutOfRange, "Operation.result: index ", i, " out of range (",
                    o.get()->num_results(), " results)");
        return PyValue{o.prog, o.get()->result(i), o.generation};
      })
      .def("attrs", [](const PyOp& o) {
        py::dict d;
        for (const auto& a : o.get()->attributes()) d[py::str(a.name)] = attr_to_py(a.value);
        return d;
      })
      .def("ops", [](const PyOp& o, size_t region) {
        Operation* op = o.get();
        OAR_ENFORCE(region < op->num_regions(), OutOfRange, "Operation.ops: region ", region,
                    " out of range (", op->num_regions(), " regions)");
        std::vector<PyOp> out;
        for (size_t b = 0; b < op->region(region).size(); ++b)
          for (Operation* inner : *op->region(region).block(b)) out.push_back(PyOp{o.prog, inner, o.generation});
        return out;
      }, py::arg("region") = 0)
      .def("__str__", [](const PyOp& o) { return pir::print_op(o.get()); })
      .def("__repr__", [](const PyOp& o) { return "<oar.pir.Operation " + o.get()->name() + ">"; });

  py::class_<PyProgram, ProgramRef>(pm, "Program")
      .def(py::init([ctx] { return std::make_shared<PyProgram>(std::make_unique<pir::Program>(ctx)); }))
      .def("__str__", [](const PyProgram& p) { return p.p->str(); })
      .def("__repr__",
           [](const PyProgram& p) { return "<oar.pir.Program with " + std::to_string(p.p->num_ops()) + " ops>"; })
      .def_property_readonly("num_ops", [](const PyProgram& p) { return p.p->num_ops(); })
      .def(
          "ops", [](const ProgramRef& p, bool recursive) { return list_ops(p, p->p->module(), recursive); },
          py::arg("recursive") = false, "The module's ops (every nested op too when recursive).")
      .def(
          "values",
          [](const ProgramRef& p) {
    std::vector<PyValue> out;
    p->p->module()->walk(
        [&](Operation* op) {
      for (size_t r = 0; r < op->num_regions(); ++r)
        for (size_t b = 0; b < op->region(r).size(); ++b)
          for (size_t a = 0; a < op->region(r).block(b)->num_arguments(); ++a)
            out.push_back(PyValue{p, op->region(r).block(b)->argument(a), p->generation});
      for (Value v : op->results()) out.push_back(PyValue{p, v, p->generation});
        },
        /*post_order=*/false);
    return out;
          },
          "Every value (block arguments and op results) in definition order.")
      .def("verify", [](const PyProgram& p) { pir::verify_program(*p.p); })
      .def(
          "run_passes",
          [](PyProgram& p, const std::string& pipeline, bool verify_each, bool timing) {
    pir::PassManager pm;
    pm.set_verify_each(verify_each);
    pm.add_pipeline(pipeline);
    auto t = std::make_shared<pir::PassTiming>();
    if (timing) pm.add_instrumentation(t);
    ++p.generation;
    bool changed = pm.run(*p.p);
    py::dict r;
    r["changed"] = changed;
    if (timing) {
      py::dict times;
      for (const auto& e : t->entries()) times[py::str(e.name)] = e.seconds;
      r["timing"] = times;
    }
    return r;
          },
          py::arg("pipeline"), py::arg("verify_each") = true, py::arg("timing") = false,
          "Runs passes ('dce,cse', 'cf.while(cse)') or a registered pipeline ('jit-train', 'standard').")
      .def(
          "run_pipeline",
          [](const ProgramRef& p, const std::string& name, bool lower_copy, py::object place) -> py::object {
            pir::pipeline_passes(name);  // NotFound naming the known pipelines
            const Place at = place.is_none() ? CPUPlace() : py_to_place(place, "run_pipeline", "place");
            ++p->generation;
            if (!lower_copy) {
              pir::PassManager pm;
              pm.set_place(at);
              pm.add_pipeline(name);
              pm.run(*p->p);
              return py::none();
            }
            return py::cast(std::make_shared<PyProgram>(pir::run_pipeline_lowering_copy(*p->p, name, at)));
          },
          py::arg("name"), py::arg("lower_copy") = false, py::arg("place") = py::none(),
          "Runs the registered pipeline `name` for the program to run on `place` (default the CPU). With "
          "lower_copy, this program stays in the op dialect (every pass but the final lower_to_kernel runs on "
          "it) and the lowered copy is returned.")
      .def(
          "clone", [](const PyProgram& p) { return std::make_shared<PyProgram>(pir::clone_program(*p.p)); },
          "A copy that shares the parameter data.")
      .def(
          "serialize",
          [](const PyProgram& p, bool with_parameter_data) {
    return py::bytes(pir::serialize_program(*p.p, with_parameter_data));
          },
          py::arg("with_parameter_data") = true)
      .def(
          "parameter_names", [](const PyProgram& p) { return p.p->parameter_names(); },
          "Names of the parameters the program holds an entry for (with or without data).")
      .def(
          "has_parameter_data",
          [](const PyProgram& p, const std::string& name) { return p.p->parameter(name) != nullptr; }, py::arg("name"))
      .def(
          "parameter_data",
          [](const PyProgram& p, const std::string& name) -> py::object {
            std::shared_ptr<DenseTensor> d = p.p->parameter(name);
            if (!d) return py::none();
            return wrap(Tensor(*d));
          },
          py::arg("name"), "Parameter `name`'s data as an oar.Tensor sharing its memory (None without data).")
      .def(
          "set_parameter",
          [](PyProgram& p, const std::string& name, py::handle data) {
    Tensor t = py_to_tensor(data, "Program.set_parameter", "data");
    p.p->set_parameter(name, std::shared_ptr<DenseTensor>(t.impl(), &t.impl()->dense));
          },
          py::arg("name"), py::arg("data"), "Attaches a tensor's memory (shared, no copy) as parameter data.")
      .def(
          "add_parameter",
          [ctx](const ProgramRef& p, const std::string& name, const std::vector<int64_t>& shape, py::handle dtype) {
    pir::Builder b(ctx, p->p->block());
    Value v = b.parameter(name, ctx->tensor_type(py_to_dtype(dtype, "add_parameter", "dtype"), shape));
    return PyValue{p, v, p->generation};
          },
          py::arg("name"), py::arg("shape"), py::arg("dtype") = py::str("float32"))
      .def(
          "add_op",
          [ctx](const ProgramRef& p, const std::string& name, py::list inputs, py::dict attrs) {
    const pir::OpInfo* info = ctx->op_info(name.find('.') == std::string::npos ? "pd_op." + name : name);
    std::vector<Value> operands;
    for (auto h : inputs) {
      if (h.is_none()) {
        operands.push_back(Value());
        continue;
      }
      if (py::isinstance<py::list>(h) || py::isinstance<py::tuple>(h)) {  // a Tensor[] argument
        std::vector<Value> elems;
        for (auto e : h) elems.push_back(e.cast<const PyValue&>().get());
        pir::Builder cb(ctx, p->p->block());
        operands.push_back(cb.combine(elems));
        continue;
      }
      operands.push_back(h.cast<const PyValue&>().get());
    }
    std::vector<pir::NamedAttribute> named;
    for (auto [k, v] : attrs) {
      std::string an = py::str(k);
      int idx = info->attr_index(an);
      OAR_ENFORCE(!info->has_schema || idx >= 0, InvalidArgument, info->name, ": unknown attribute '", an, "'");
      named.push_back({an, py_to_attr(ctx, v, idx >= 0 ? info->attrs[idx].type : "", info->name, an)});
    }
    pir::Builder b(ctx, p->p->block());
    Operation* op = b.build(info, operands, std::move(named));
    return PyOp{p, op, p->generation};
          },
          py::arg("name"), py::arg("inputs") = py::list(), py::arg("attrs") = py::dict(),
          "Appends an op (shape inference fills its result types); returns it.")
      .def(
          "add_constant",
          [ctx](const ProgramRef& p, py::handle data, py::handle dtype) {
    DataType dt = dtype.is_none() ? DataType::UNDEFINED : py_to_dtype(dtype, "add_constant", "dtype");
    Tensor t =
        is_tensor(data) ? py_to_tensor(data, "add_constant", "data") : tensor_from_python(data, dt, "add_constant");
    pir::Builder b(ctx, p->p->block());
    return PyValue{p, b.constant(t.dense()), p->generation};
          },
          py::arg("data"), py::arg("dtype") = py::none(), "Appends a builtin.constant holding a copy of data.")
      .def(
          "add_output",
          [ctx](const ProgramRef& p, const PyValue& v, const std::string& name) {
    pir::Builder b(ctx, p->p->block());
    b.build("builtin.output", {v.get()}, {{"name", ctx->str_attr(name)}}, {});
          },
          py::arg("value"), py::arg("name"));

  // ---- tracing eager code into a program (oar.jit.to_static)
  py::class_<PyTracer>(pm, "Tracer", "Records the ops run while active into a new program.")
      .def(py::init([] { return std::make_unique<PyTracer>(); }))
      .def("add_input", [](PyTracer& t, py::handle x, const std::string& name, const std::vector<int64_t>& dims) {
        t.tracer().add_input(py_to_tensor(x, "Tracer.add_input", "x"), name, dims);
      }, py::arg("x"), py::arg("name"), py::arg("dims"))
      .def("add_parameter", [](PyTracer& t, py::handle x, const std::string& name) {
        t.tracer().add_parameter(py_to_tensor(x, "Tracer.add_parameter", "x"), name);
      }, py::arg("x"), py::arg("name"))
      .def("start", [](PyTracer& t) {
        OAR_ENFORCE(!t.guard, PreconditionNotMet, "Tracer.start: already started");
        t.guard = std::make_unique<trace::TracerGuard>(&t.tracer());
      })
      .def("stop", [](PyTracer& t) { t.guard.reset(); })
      .def("finish", [](PyTracer& t, py::list outputs) {
        t.guard.reset();
        std::vector<Tensor> outs;
        for (auto h : outputs) outs.push_back(py_to_tensor(h, "Tracer.finish", "outputs"));
        auto prog = std::make_shared<PyProgram>(t.tracer().finish(outs));
        t.t.reset();
        return prog;
      }, py::arg("outputs"))
      .def_property_readonly("num_constants", [](PyTracer& t) { return t.tracer().num_constants(); })
      .def("begin_branch", [](PyTracer& t) { t.tracer().begin_branch(); })
      .def("end_branch", [](PyTracer& t, py::list outs) {
        t.tracer().end_branch(py_to_tensor_list(outs, "cond", "outputs"));
      }, py::arg("outputs"))
      .def("finish_if", [](PyTracer& t, py::handle pred, py::list results) {
        t.tracer().finish_if(py_to_tensor(pred, "cond", "pred"), py_to_tensor_list(results, "cond", "results"));
      }, py::arg("pred"), py::arg("results"))
      .def("begin_loop", [](PyTracer& t, py::list init, py::list placeholders,
                            const std::vector<std::vector<int64_t>>& dims) {
        t.tracer().begin_loop(py_to_tensor_list(init, "while_loop", "loop_vars"),
                              py_to_tensor_list(placeholders, "while_loop", "placeholders"), dims);
      }, py::arg("init"), py::arg("placeholders"), py::arg("dims") = std::vector<std::vector<int64_t>>{})
      .def("discard_region", [](PyTracer& t) { t.tracer().discard_region(); },
           "Drops the region last ended (traced again differently).")
      .def("end_loop", [](PyTracer& t, py::handle cond, py::list next) {
        t.tracer().end_loop(py_to_tensor(cond, "while_loop", "cond"), py_to_tensor_list(next, "while_loop", "body"));
      }, py::arg("cond"), py::arg("next"))
      .def("finish_while", [](PyTracer& t, py::handle cond, py::list init, py::list results) {
        t.tracer().finish_while(py_to_tensor(cond, "while_loop", "cond"),
                                py_to_tensor_list(init, "while_loop", "loop_vars"),
                                py_to_tensor_list(results, "while_loop", "results"));
      }, py::arg("cond"), py::arg("init"), py::arg("results"))
      .def("region_captures", [](PyTracer& t) {
        py::list caps;
        for (const Tensor& x : t.tracer().region_captures()) caps.append(wrap(x));
        return py::make_tuple(caps, t.tracer().region_random());
      }, "(tensors from outside read by the region last ended, whether it recorded a random op)")
      .def("set_source", [](PyTracer& t, PyTracer& forward) { t.tracer().set_source(&forward.tracer()); },
           py::arg("forward"), py::keep_alive<1, 2>(),
           "Trace a backward against `forward`: its values become saved<k> inputs here.")
      .def("saved", [](PyTracer& t) {
        py::list out;
        for (const Tensor& x : t.tracer().saved()) out.append(wrap(x));
        return out;
      }, "The forward tensors that became saved<k> inputs, in order.")
      .def("dims_of", [](PyTracer& t, py::handle x) { return t.tracer().dims_of(py_to_tensor(x, "Tracer.dims_of", "x")); },
           py::arg("x"))
      .def("is_traced", [](PyTracer& t, py::handle x) {
        return is_tensor(x) && t.tracer().is_traced(py_to_tensor(x, "Tracer.is_traced", "x"));
      }, py::arg("x"), "Whether x was computed from the traced inputs or parameters.");
  // Note [Input writes]: writes into inputs become outputs 'write_input:<name>' (to_static).
  auto tracer_cls = py::reinterpret_borrow<py::class_<PyTracer>>(pm.attr("Tracer"));
  tracer_cls.def(
      "allow_input_writes", [](PyTracer& t, bool on) { t.tracer().allow_input_writes(on); }, py::arg("on"),
      "Writes into inputs become outputs 'write_input:<name>' (Note [Input writes]) instead of errors.");
  tracer_cls.def(
      "write_op",
      [](PyTracer& t, py::handle x) { return t.tracer().write_op(py_to_tensor(x, "Tracer.write_op", "x")); },
      py::arg("x"), "The op that last wrote x in place while tracing ('' when none).");
  tracer_cls.def(
      "record_write",
      [](PyTracer& t, py::handle dst, py::handle src) {
    t.tracer().record_write(py_to_tensor(dst, "Tracer.record_write", "dst"),
                            py_to_tensor(src, "Tracer.record_write", "src"));
      },
      py::arg("dst"), py::arg("src"),
      "Records that src is written into dst (a parameter: builtin.set_parameter) without writing dst's memory.");
  tracer_cls.def(
      "drop_parameter", [](PyTracer& t, const std::string& name) { return t.tracer().drop_parameter(name); },
      py::arg("name"), "Takes back parameter `name`'s declaration if no op has read it; False when one has.");
  // Note [Static While]: a loop whose variables are the tensors its block writes.
  tracer_cls.def(
      "begin_open_loop", [](PyTracer& t) { t.tracer().begin_open_loop(); },
      "Starts a While block's body; tensors of the program written in it become its loop variables.");
  tracer_cls.def(
      "end_open_loop",
      [](PyTracer& t, py::handle c, const std::string& n) {
    t.tracer().end_open_loop(py_to_tensor(c, "While", "cond"), n);
      },
      py::arg("cond"), py::arg("name") = "");
  tracer_cls.def("abandon_open_loop", [](PyTracer& t) { t.tracer().abandon_open_loop(); });
  // Note [Bounded loops]: a converted loop's name (its source line) for the executor's
  // errors, and whether its traced body can change its condition.
  py::reinterpret_borrow<py::class_<PyTracer>>(pm.attr("Tracer"))
      .def(
          "finish_while",
          [](PyTracer& t, py::handle cond, py::list init, py::list results, const std::string& name) {
    t.tracer().finish_while(py_to_tensor(cond, "while_loop", "cond"),
                            py_to_tensor_list(init, "while_loop", "loop_vars"),
                            py_to_tensor_list(results, "while_loop", "results"), name);
          },
          py::arg("cond"), py::arg("init"), py::arg("results"), py::arg("name"))
      .def(
          "region_condition_fixed", [](PyTracer& t) { return t.tracer().region_condition_fixed(); },
          "Whether the loop body last ended computes a condition that no iteration changes.");
  // Static mode (python/oar/static) runs a program while it is still being recorded.
  py::reinterpret_borrow<py::class_<PyTracer>>(pm.attr("Tracer"))
      .def(
          "snapshot",
          [](PyTracer& t, py::list outputs, const std::vector<std::string>& names, bool prune,
             const std::vector<std::string>& keep_inputs, bool writes_as_outputs) {
    return std::make_shared<PyProgram>(t.tracer().snapshot(py_to_tensor_list(outputs, "snapshot", "outputs"), names,
                                                           prune, keep_inputs, writes_as_outputs));
          },
          py::arg("outputs"), py::arg("names"), py::arg("prune") = false,
          py::arg("keep_inputs") = std::vector<std::string>{}, py::arg("writes_as_outputs") = false,
          "A copy of the program so far with these outputs (pruned to an inference program with prune); "
          "tracing goes on.")
      .def_property_readonly("num_ops", [](PyTracer& t) { return t.tracer().num_ops(); });

  py::class_<PyExecutor>(pm, "Executor", "Runs a program lowered to kernels with planned buffer reuse.")
      .def(py::init([](const ProgramRef& p, py::object place) {
             auto e = std::make_unique<PyExecutor>();
             e->prog = p;
             e->generation = p->generation;
             const Place at = place.is_none() ? CPUPlace() : py_to_place(place, "Executor", "place");
             e->e = std::make_shared<pir::Executor>(*p->p, at);
             return e;
           }),
           py::arg("program"), py::arg("place") = py::none(),
           "Plans `program`'s run on `place` (default the CPU): an op-dialect program is lowered for it, "
           "parameters are moved there once.")
      .def_property_readonly("place", [](const PyExecutor& e) { return e.e->place(); })
      .def_property_readonly("input_names", [](const PyExecutor& e) { return e.e->input_names(); })
      .def_property_readonly("output_names", [](const PyExecutor& e) { return e.e->output_names(); })
      .def_property_readonly(
          "input_shapes",
          [](const PyExecutor& e) {
    std::vector<std::vector<int64_t>> out;
    for (Type t : e.e->input_types()) out.push_back(t.dims());
    return out;
          })
      .def_property_readonly(
          "input_dtypes",
          [](const PyExecutor& e) {
    std::vector<DataType> out;
    for (Type t : e.e->input_types()) out.push_back(t.dtype());
    return out;
          })
      .def_property_readonly("num_steps", [](const PyExecutor& e) { return e.e->num_steps(); })
      .def_property_readonly(
          "lowered_program_text", [](const PyExecutor& e) { return e.e->lowered_program().str(); },
          "The kernel-level program the steps run (Note [Kernel-level programs]).")
      .def_property_readonly("peak_live_tensors", [](const PyExecutor& e) { return e.e->peak_live_slots(); })
      .def(
          "run",
          [](PyExecutor& e, py::list inputs, py::dict params) {
    OAR_ENFORCE(e.generation == e.prog->generation, PreconditionNotMet,
                "Executor.run: the program was transformed after this executor was made; make a new one");
    std::vector<Tensor> ins;
    for (auto h : inputs) ins.push_back(py_to_tensor(h, "Executor.run", "inputs"));
    std::unordered_map<std::string, Tensor> ps;
    for (auto [k, v] : params) ps.emplace(py::str(k), py_to_tensor(v, "Executor.run", "params"));
    std::vector<Tensor> outs;
    {
      py::gil_scoped_release release;
      outs = e.e->run(ins, ps.empty() ? nullptr : &ps);
    }
    py::list r;
    for (const Tensor& t : outs) r.append(wrap(t));
    return r;
          },
          py::arg("inputs"), py::arg("params") = py::dict())
      .def(
          "set_profiling", [](PyExecutor& e, bool on) { e.e->set_profiling(on); }, py::arg("on"))
      .def(
          "set_differentiable", [](PyExecutor& e, bool on) { e.e->set_differentiable(on); }, py::arg("on"),
          "Run steps through the ops' eager API so autograd records them (fine-tuning a loaded program).")
      .def(
          "profile",
          [](const PyExecutor& e) {
    py::list out;
    for (const auto& p : e.e->profile()) out.append(py::make_tuple(p.name, p.calls, p.seconds));
    return out;
          },
          "Per-op (name, calls, seconds), slowest first.")
      .def("reset_profile", [](PyExecutor& e) { e.e->reset_profile(); });

  pm.def("run_program", [](PyExecutor& forward, PyExecutor& backward, py::list inputs, py::dict params,
                           py::list wrt, size_t n_out, const std::vector<int>& grad_outputs) {
    std::vector<Tensor> ins, ws;
    for (auto h : inputs) ins.push_back(py_to_tensor(h, "run_program", "inputs"));
    for (auto h : wrt) ws.push_back(py_to_tensor(h, "run_program", "wrt"));
    std::unordered_map<std::string, Tensor> ps;
    for (auto [k, v] : params) ps.emplace(py::str(k), py_to_tensor(v, "run_program", "params"));
    std::vector<Tensor> outs;
    {
      py::gil_scoped_release release;
      outs = pir::run_program(*forward.e, backward.e, backward.prog, ins, ps, ws, n_out, grad_outputs);
    }
    py::list r;
    for (const Tensor& t : outs) r.append(wrap(t));
    return r;
  }, py::arg("forward"), py::arg("backward"), py::arg("inputs"), py::arg("params"), py::arg("wrt"),
     py::arg("n_out"), py::arg("grad_outputs"),
     "Runs a forward program without autograd; its outputs get one node that runs the backward program.");

  pm.def("parse", [ctx](const std::string& text) {
    return std::make_shared<PyProgram>(pir::parse_program(ctx, text));
  }, py::arg("text"), "Parses a program in the textual form (and verifies it).");
  pm.def("deserialize", [ctx](py::bytes data) {
    std::string s = data;
    return std::make_shared<PyProgram>(pir::deserialize_program(ctx, s));
  }, py::arg("data"));
  pm.def(
      "register_drr_pass",
      [ctx](const std::string& name, py::list py_rules) {
    auto rules = drr_rules(ctx, py_rules);
    pir::register_pass(name, [name, rules] { return pir::drr::create_drr_pass(name, rules); });
      },
      py::arg("name"), py::arg("rules"),
      "Registers pass `name` applying DRR rules given as (rule name, source ops, result ops), each op "
      "(op name, input names, output names, attrs); a source op matches only with these attribute values "
      "(Note [Python DRR passes] in docs/notes/pir.md).");
  pm.def(
      "apply_drr_rules",
      [ctx](PyProgram& p, py::list py_rules) {
    pir::PassManager pm;
    pm.add_pass(pir::drr::create_drr_pass("drr_rules", drr_rules(ctx, py_rules)));
    ++p.generation;
    return pm.run(*p.p);
      },
      py::arg("program"), py::arg("rules"),
      "Applies DRR rules (as register_drr_pass takes them) to the program once, without registering a pass; "
      "returns whether it changed.");
  pm.def("registered_passes", &pir::registered_passes);
  pm.def("standard_pipeline", &pir::standard_pipeline);
  pm.def("registered_pipelines", &pir::registered_pipelines, "The named pass pipelines (pir/pass/pipelines.h).");
  pm.def(
      "pipeline", [](const std::string& name) { return pir::pipeline(name); }, py::arg("name"),
      "Pipeline `name`'s passes as text.");
  pm.def(
      "pipeline_passes", [](const std::string& name) { return pir::pipeline_passes(name); }, py::arg("name"));
  pm.def("op_names", [ctx] { return ctx->op_names(); });
  pm.def("op_info", [ctx](const std::string& name) {
    const pir::OpInfo* i = ctx->op_info(name);
    py::dict d;
    d["name"] = i->name;
    d["dialect"] = i->dialect;
    py::list ins, attrs, outs;
    for (const auto& in : i->inputs)
      ins.append(py::make_tuple(in.name, in.kind == pir::InputSpec::kTensor ? "Tensor"
                                         : in.kind == pir::InputSpec::kOptional ? "Tensor?" : "Tensor[]"));
    for (const auto& a : i->attrs)
      attrs.append(py::make_tuple(a.name, a.type, a.default_value ? py::cast(a.default_value.str()) : py::none()));
    for (const auto& o : i->outputs) outs.append(py::make_tuple(o.name, o.is_list ? "Tensor[]" : "Tensor"));
    d["inputs"] = ins;
    d["attrs"] = attrs;
    d["outputs"] = outs;
    d["pure"] = i->has(pir::kTraitPure);
    d["kernel"] = i->kernel;
    d["backward"] = i->backward;
    d["inplace"] = i->inplace;
    return d;
  }, py::arg("name"));
}

}  // namespace oar::python
