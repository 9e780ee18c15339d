// oar._C.dist: meshes, placements and SPMD rule inference for
// python/oar/distributed/auto_parallel/, and the dist metadata slot of a tensor.
// Placements cross as (kind, dim, reduce) tuples: kind 0 Replicate, 1 Shard, 2 Partial.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "distributed/mesh/dist_tensor_meta.h"
#include "distributed/spmd_rules/spmd_rule.h"
#include "distributed/static/dist_dialect.h"
#include "paddle_core/base/errors.h"
#include "paddle_core/dispatch/trace.h"
#include "pir/ir/ir_context.h"
#include "pir/trace/program_tracer.h"
#include "python/csrc/pir_py.h"
#include "python/csrc/py_convert.h"

namespace oar::python {
namespace {

using dist::Placement;
using dist::Placements;
using dist::ProcessMesh;
using dist::ReduceType;
using dist::TensorDistAttr;
using PyPlacement = std::tuple<int, int64_t, int>;
using PyPartial = std::map<int64_t, int>;

Placements to_placements(const std::vector<PyPlacement>& ps) {
  Placements out;
  for (const auto& [kind, dim, reduce] : ps) {
    OAR_ENFORCE(kind >= 0 && kind <= 2 && reduce >= 0 && reduce <= 6, InvalidArgument, "placements: bad placement (",
                kind, ", ", dim, ", ", reduce, ")");
    out.push_back({static_cast<Placement::Kind>(kind), dim, static_cast<ReduceType>(reduce)});
  }
  return out;
}

std::vector<PyPlacement> from_placements(const Placements& ps) {
  std::vector<PyPlacement> out;
  for (const Placement& p : ps) out.emplace_back(static_cast<int>(p.kind), p.dim, static_cast<int>(p.reduce));
  return out;
}

dist::SpmdAttr to_attr(const std::string& op, const std::string& name, py::handle v) {
  if (py::isinstance<py::bool_>(v)) return v.cast<bool>();
  if (py::isinstance<py::int_>(v)) return v.cast<int64_t>();
  if (py::isinstance<py::float_>(v)) return v.cast<double>();
  if (py::isinstance<py::str>(v)) return v.cast<std::string>();
  if (py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v)) {
    return py_to_int_list(v, op.c_str(), name.c_str());
  }
  OAR_THROW(InvalidType, op, ": attribute '", name, "' has unsupported type ", std::string(py::str(py::type::of(v))));
}

/// One tensor: None (absent optional input) or (shape, dims_mapping, {mesh_axis: reduce}).
dist::DistMetaTensor to_meta(const ProcessMesh& mesh, py::handle h) {
  if (h.is_none()) return {{}, TensorDistAttr(mesh, {}), false};
  auto [shape, dm, partial] = h.cast<std::tuple<std::vector<int64_t>, std::vector<int64_t>, PyPartial>>();
  TensorDistAttr a(mesh, dm);
  for (const auto& [axis, r] : partial) a.partial[axis] = static_cast<ReduceType>(r);
  return {shape, a, true};
}

py::list from_attrs(const std::vector<TensorDistAttr>& attrs) {
  py::list out;
  for (const auto& a : attrs) {
    PyPartial p;
    for (const auto& [axis, r] : a.partial) p[axis] = static_cast<int>(r);
    out.append(py::make_tuple(a.dims_mapping, p));
  }
  return out;
}

}  // namespace

void bind_spmd(py::module_& m) {
  py::module_ d = m.def_submodule("dist", "auto-parallel metadata: meshes, placements, SPMD rules");
  d.def("check_mesh", [](std::vector<int64_t> shape, std::vector<int64_t> ids, std::vector<std::string> names) {
    return ProcessMesh(std::move(shape), std::move(ids), std::move(names)).dim_names();
  });
  d.def("dims_mapping",
        [](std::vector<int64_t> shape, std::vector<int64_t> ids, const std::vector<PyPlacement>& ps, int64_t rank) {
    TensorDistAttr a = dist::to_dist_attr(ProcessMesh(shape, ids), to_placements(ps), rank);
    PyPartial p;
    for (const auto& [axis, r] : a.partial) p[axis] = static_cast<int>(r);
    return py::make_tuple(a.dims_mapping, p);
  });
  d.def("placements",
        [](std::vector<int64_t> shape, std::vector<int64_t> ids, std::vector<int64_t> dm, const PyPartial& partial) {
    TensorDistAttr a(ProcessMesh(shape, ids), dm);
    for (const auto& [axis, r] : partial) a.partial[axis] = static_cast<ReduceType>(r);
    dist::validate(a, static_cast<int64_t>(dm.size()));
    return from_placements(dist::to_placements(a));
  });
  // (local shape, local offset) of process `pid`'s shard.
  d.def("local_shard", [](const std::vector<int64_t>& global_shape, std::vector<int64_t> shape,
                          std::vector<int64_t> ids, const std::vector<PyPlacement>& ps, int64_t pid) {
    ProcessMesh mesh(shape, ids);
    TensorDistAttr a = dist::to_dist_attr(mesh, to_placements(ps), static_cast<int64_t>(global_shape.size()));
    std::vector<int64_t> c = mesh.coord(pid);
    return py::make_tuple(dist::local_shape(global_shape, a, c), dist::local_offset(global_shape, a, c));
  });
  d.def(
      "infer_spmd",
      [](const std::string& op, std::vector<int64_t> mesh_shape, const py::list& inputs, const py::dict& attrs,
         int num_outputs, py::object outputs, std::string rule) {
    ProcessMesh mesh(mesh_shape, [&] {
      std::vector<int64_t> ids;
      int64_t n = 1;
      for (int64_t s : mesh_shape) n *= s;
      for (int64_t i = 0; i < n; ++i) ids.push_back(i);
      return ids;
    }());
    dist::SpmdContext ctx;
    ctx.op = op;
    for (py::handle h : inputs) ctx.inputs.push_back(to_meta(mesh, h));
    for (auto [k, v] : attrs) {
      std::string name = py::str(k);
      ctx.attrs[name] = to_attr(op, name, v);
    }
    ctx.num_outputs = num_outputs;
    const dist::SpmdRule& r = rule.empty() ? dist::spmd_rule_for_op(op) : dist::spmd_rule_or_fallback(op, rule);
    dist::SpmdInfo info;
    if (outputs.is_none()) {
      info = dist::infer_forward(r, ctx);
    } else {
      std::vector<dist::DistMetaTensor> outs;
      for (py::handle h : outputs.cast<py::list>()) outs.push_back(to_meta(mesh, h));
      ctx.num_outputs = static_cast<int>(outs.size());
      info = dist::infer_reverse(r, ctx, outs);
    }
    return py::make_tuple(from_attrs(info.inputs), from_attrs(info.outputs));
      },
      py::arg("op"), py::arg("mesh_shape"), py::arg("inputs"), py::arg("attrs") = py::dict(),
      py::arg("num_outputs") = 1, py::arg("outputs") = py::none(), py::arg("rule") = "",
      "SPMD inference on mesh_shape (ids 0..n-1). inputs: None or (shape, dims_mapping, {axis: reduce}). "
      "Forward, or reverse when outputs are given. Returns (input attrs, output attrs) as (dims_mapping, partial).");
  // Note [Static auto-parallel passes]: the global program's annotations.
  d.def(
      "placements_attr",
      [](std::vector<int64_t> shape, std::vector<int64_t> ids, std::vector<std::string> names,
         const std::vector<PyPlacement>& ps) {
    ProcessMesh mesh(std::move(shape), std::move(ids), std::move(names));
    return dist::placements_attr(pir::IrContext::global(), mesh, to_placements(ps)).str();
      },
      py::arg("mesh_shape"), py::arg("process_ids"), py::arg("dim_names"), py::arg("placements"),
      "The text of #dist.placements for this mesh and placements ((kind, dim, reduce) tuples); validates.");
  d.def(
      "shard_annotate",
      [](py::handle x, std::vector<int64_t> shape, std::vector<int64_t> ids, std::vector<std::string> names,
         const std::vector<PyPlacement>& ps) {
    Tensor t = py_to_tensor(x, "shard_annotate", "x");
    ProcessMesh mesh(std::move(shape), std::move(ids), std::move(names));
    Placements p = to_placements(ps);
    dist::to_dist_attr(mesh, p, t.rank());  // the count, the Shard dims against x's rank
    auto* tracer = dynamic_cast<pir::ProgramTracer*>(trace::active());
    if (tracer == nullptr) return false;
    pir::IrContext* ctx = pir::IrContext::global();
    for (Placement& q : p)
      if (q.is_shard() && q.dim < 0) q.dim += t.rank();
    tracer->record_custom(dist::kShardAnnotateOp, {t}, {{"placements", dist::placements_attr(ctx, mesh, p)}}, {t});
    return true;
      },
      py::arg("x"), py::arg("mesh_shape"), py::arg("process_ids"), py::arg("dim_names"), py::arg("placements"),
      "While a program is traced: records dist.shard_annotate(x) {placements} and binds x to its result, so "
      "later ops read the annotated value; returns whether it recorded (False outside a trace).");
  // DistModel (Note [DistModel]): after dist-complete, the placements of each program
  // output's value (its annotation's, or its defining op's dist_out); None for one without.
  d.def(
      "output_placements",
      [](const ProgramRef& prog) {
    py::list out;
    for (pir::Operation* op : *prog->p->block()) {
      if (op->name() != "builtin.output") continue;
      pir::Value v = op->operand(0);
      pir::Operation* def = v.defining_op();
      pir::Attribute p;
      if (def != nullptr && def->name() == dist::kShardAnnotateOp) {  // its placements are its result's
        p = def->attr("placements");
      } else if (pir::Attribute a = def ? def->attr("dist_out") : pir::Attribute();
                 a && a.kind() == pir::AttrKind::kArray && v.index() < a.size()) {
        p = a.element(v.index());
      }
      if (!p) {
        out.append(py::none());
        continue;
      }
      const ProcessMesh& mesh = dist::attr_mesh(p, def->name() + "'s dist_out");
      out.append(py::make_tuple(mesh.shape(), mesh.process_ids(), mesh.dim_names(),
                                from_placements(dist::attr_placements(p))));
    }
    return out;
      },
      py::arg("program"), "(mesh shape, process ids, dim names, placements) of each output's value, or None.");
  d.def("spmd_rule_name", &dist::spmd_rule_name);
  d.def("spmd_rule_names", &dist::spmd_rule_names);
  d.def("replicated_fallback_ops", &dist::replicated_fallback_ops);

  // ---- the dist metadata slot of a tensor
  d.def("set_dist_meta",
        [](py::handle t, std::vector<int64_t> shape, std::vector<int64_t> ids, std::vector<std::string> names,
           const std::vector<PyPlacement>& ps, std::vector<int64_t> global_shape) {
    Tensor x = py_to_tensor(t, "shard_tensor", "x");
    auto meta = std::make_unique<dist::DistTensorMeta>();
    meta->mesh = ProcessMesh(std::move(shape), std::move(ids), std::move(names));
    meta->placements = to_placements(ps);
    dist::to_dist_attr(meta->mesh, meta->placements, static_cast<int64_t>(global_shape.size()));  // validates
    meta->set_global_shape(std::move(global_shape));
    x.impl()->dist = std::move(meta);
  });
  // None for an ordinary tensor, else (mesh shape, process ids, dim names, placements, global shape).
  d.def("get_dist_meta", [](py::handle t) -> py::object {
    const dist::DistTensorMeta* m = dist::dist_meta(py_to_tensor(t, "Tensor", "self"));
    if (!m) return py::none();
    return py::make_tuple(m->mesh.shape(), m->mesh.process_ids(), m->mesh.dim_names(), from_placements(m->placements),
                          m->global_shape);
  });
  // Replaces t's data by `local`'s (shard_tensor of a Parameter, in place).
  d.def("set_local_value", [](py::handle t, py::handle local) {
    Tensor x = py_to_tensor(t, "shard_tensor", "x");
    Tensor l = py_to_tensor(local, "shard_tensor", "local");
    x.impl()->dense = l.dense();
    x.bump_version();
  });
  // Changes a dist tensor's placements in place, keeping the rest of its metadata (its
  // local value must be changed to match by the caller); for_grad: the placements its
  // accumulated gradient is resharded to (empty: the tensor's own).
  d.def("set_placements", [](py::handle t, const std::vector<PyPlacement>& ps, bool for_grad) {
    Tensor x = py_to_tensor(t, "set_placements", "x");
    auto* m = const_cast<dist::DistTensorMeta*>(dist::dist_meta(x));
    if (m == nullptr) OAR_THROW(InvalidArgument, "set_placements: the tensor is not a dist tensor");
    Placements p = to_placements(ps);
    if (!p.empty()) dist::to_dist_attr(m->mesh, p, static_cast<int64_t>(m->global_shape.size()));  // validates
    if (for_grad) {
      m->grad_placements = std::move(p);
    } else {
      if (p.empty()) OAR_THROW(InvalidArgument, "set_placements: placements must not be empty");
      m->placements = std::move(p);
    }
  });
  // DistModel's global trace (Note [DistModel]): a dist tensor stands for its whole value as an
  // ordinary tensor while the step is traced (take), then gets its metadata back (put).
  struct HeldDistMeta {
    std::unique_ptr<DistMeta> meta;
  };
  py::class_<HeldDistMeta>(d, "HeldDistMeta");
  d.def("take_dist_meta", [](py::handle t) {
    Tensor x = py_to_tensor(t, "take_dist_meta", "x");
    OAR_ENFORCE(x.impl()->dist != nullptr, InvalidArgument, "take_dist_meta: the tensor is not a dist tensor");
    return HeldDistMeta{std::move(x.impl()->dist)};
  });
  d.def("put_dist_meta", [](py::handle t, HeldDistMeta& held) {
    Tensor x = py_to_tensor(t, "put_dist_meta", "x");
    OAR_ENFORCE(held.meta != nullptr, InvalidArgument, "put_dist_meta: the metadata was already put back");
    x.impl()->dist = std::move(held.meta);
  });
  d.def("is_dist", [](py::handle t) { return dist::dist_meta(py_to_tensor(t, "Tensor", "self")) != nullptr; });
  // The local shard as an ordinary tensor sharing its memory.
  d.def("local_value", [](py::handle t) {
    Tensor x = py_to_tensor(t, "_local_value", "self");
    return wrap(Tensor(x.dense()));
  });
}

}  // namespace oar::python
