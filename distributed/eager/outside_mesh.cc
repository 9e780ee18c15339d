// Ops on processes outside their mesh. Note [Dist layer] ("Outside the mesh") in
// docs/notes/distributed.md.
#include "distributed/eager/outside_mesh.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "distributed/reshard/reshard.h"
#include "paddle_core/autograd/grad_mode.h"
#include "paddle_core/autograd/node.h"
#include "paddle_core/base/errors.h"
#include "pir/ir/infer.h"
#include "pir/ir/ir_context.h"
#include "pir/ir/op_info.h"

namespace oar::dist {
namespace {

using dispatch::AttrValue;
using dispatch::OpCall;

/// An empty local value: every dim 0 (a 0-d value keeps its one element, zero).
DenseTensor empty_local(DataType dtype, const Place& place, size_t rank) {
  DenseTensor out(Dims(std::vector<int64_t>(rank, 0)), dtype, place);
  void* p = out.alloc();
  const size_t bytes = static_cast<size_t>(out.numel()) * size_of(dtype);
  if (bytes != 0) std::memset(p, 0, bytes);
  return out;
}

Placements grad_layout(Placements p) {
  for (Placement& q : p) {
    if (q.is_partial()) q = Placement::replicate();
  }
  return p;
}

/// The backward of an op this process skipped: no computation, an empty gradient (laid
/// out as its input, Partial as Replicate) for each input that needs one, so that the
/// gradient reaches the nodes below, a cross-mesh reshard's transfer among them.
class SkippedGradNode : public GradNode {
 public:
  struct In {
    ProcessMesh mesh;
    Placements placements;
    std::vector<int64_t> global_shape;
    DataType dtype;
    Place place;
  };
  explicit SkippedGradNode(std::string op, std::vector<In> ins)
      : op_(std::move(op) + "Grad(skipped)"), ins_(std::move(ins)) {}
  std::vector<Tensor> apply(std::vector<Tensor>& /*grads*/) override {
    std::vector<Tensor> out(next_edges.size());
    for (size_t i = 0; i < next_edges.size() && i < ins_.size(); ++i) {
      if (!next_edges[i].valid()) continue;
      const In& in = ins_[i];
      out[i] = make_dist(empty_local(in.dtype, in.place, in.global_shape.size()), in.mesh, grad_layout(in.placements),
                         in.global_shape);
    }
    return out;
  }
  const char* name() const override { return op_.c_str(); }
  bool materialize_grads() const override { return false; }  // never allocate a global-size zero

 private:
  std::string op_;
  std::vector<In> ins_;
};

pir::Attribute to_ir_attr(pir::IrContext* c, const AttrValue& v) {
  struct Visit {
    pir::IrContext* c;
    pir::Attribute operator()(bool b) const { return c->bool_attr(b); }
    pir::Attribute operator()(int64_t i) const { return c->int_attr(i); }
    pir::Attribute operator()(double d) const { return c->float_attr(d); }
    pir::Attribute operator()(const std::string& s) const { return c->str_attr(s); }
    pir::Attribute operator()(const std::vector<int64_t>& v) const { return c->shape_attr(v); }
    pir::Attribute operator()(const std::vector<double>& v) const {
      std::vector<pir::Attribute> e;
      for (double d : v) e.push_back(c->float_attr(d));
      return c->array_attr(e);
    }
    pir::Attribute operator()(DataType t) const { return c->dtype_attr(t); }
    pir::Attribute operator()(const Place& p) const { return c->place_attr(p); }
    pir::Attribute operator()(const Scalar& s) const { return c->scalar_attr(s); }
  };
  return std::visit(Visit{c}, v);
}

pir::Type global_type(pir::IrContext* c, const Tensor& t) {
  const DistTensorMeta* m = dist_meta(t);
  return c->tensor_type(t.dtype(), m != nullptr ? m->global_shape : t.dense().dims().vec());
}

}  // namespace

bool skip_outside_mesh(OpCall& call, const ProcessMesh& mesh, const std::vector<Tensor*>& ins,
                       const std::vector<TensorDistAttr>& out_attrs) {
  pir::IrContext* c = pir::IrContext::global();
  const pir::OpInfo* info = c->op_info(std::string("pd_op.") + call.op->name);
  if (info == nullptr || info->infer == nullptr) return false;
  std::vector<pir::Type> types;
  for (const dispatch::Value& v : call.inputs) {
    if (v.is_list) {
      std::vector<pir::Type> elems;
      for (const Tensor& t : v.list) elems.push_back(global_type(c, t));
      types.push_back(c->vector_type(elems));
    } else {
      types.push_back(v.tensor.defined() ? global_type(c, v.tensor) : pir::Type());
    }
  }
  std::vector<pir::NamedAttribute> attrs;
  for (size_t i = 0; i < call.attrs.size() && i < call.op->attrs.size(); ++i) {
    attrs.push_back({call.op->attrs[i], to_ir_attr(c, call.attrs[i])});
  }
  std::sort(attrs.begin(), attrs.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  std::vector<pir::Type> results;
  try {
    results = pir::infer_result_types(c, info, types, attrs);
  } catch (const Error&) {
    return false;  // the inference rejects what the kernel may take: run on the empty values
  }
  auto known = [](const pir::Type& t) { return t.is_tensor() && !t.has_dynamic_dims(); };
  for (const pir::Type& t : results) {
    bool ok = t.is_vector() ? true : known(t);
    for (size_t i = 0; t.is_vector() && i < t.size(); ++i) ok = ok && known(t.element(i));
    if (!ok) return false;  // a data-dependent shape: only running the op can tell it
  }

  Place place;
  for (const Tensor* t : ins) {
    if (t->defined()) {
      place = t->place();
      break;
    }
  }
  size_t flat = 0;
  std::vector<Tensor*> made;
  auto make = [&](const pir::Type& ty) {
    const size_t rank = ty.dims().size();
    TensorDistAttr attr = flat < out_attrs.size() && out_attrs[flat].dims_mapping.size() == rank
                              ? out_attrs[flat]
                              : TensorDistAttr::replicated(mesh, static_cast<int64_t>(rank));
    ++flat;
    return make_dist(empty_local(ty.dtype(), place, rank), mesh, to_placements(attr), ty.dims());
  };
  call.outputs.clear();
  for (const pir::Type& ty : results) {
    if (ty.is_vector()) {
      std::vector<Tensor> list;
      for (size_t i = 0; i < ty.size(); ++i) list.push_back(make(ty.element(i)));
      call.outputs.emplace_back(std::move(list));
    } else {
      call.outputs.emplace_back(make(ty));
    }
  }
  for (dispatch::Value& v : call.outputs) {
    if (v.is_list) {
      for (Tensor& t : v.list) made.push_back(&t);
    } else {
      made.push_back(&v.tensor);
    }
  }

  bool needs_grad = false;
  for (const Tensor* t : ins) needs_grad = needs_grad || (t->defined() && t->requires_grad());
  if (!needs_grad || !autograd::grad_enabled()) return true;
  std::vector<SkippedGradNode::In> metas;
  std::vector<Edge> edges;
  for (const Tensor* t : ins) {
    edges.push_back(autograd::gradient_edge(*t));
    const DistTensorMeta* m = t->defined() ? dist_meta(*t) : nullptr;
    if (m == nullptr) {
      metas.push_back({mesh, {}, {}, DataType::UNDEFINED, place});
      edges.back() = Edge();
      continue;
    }
    metas.push_back({m->mesh, m->placements, m->global_shape, t->dtype(), t->place()});
  }
  auto node = std::make_shared<SkippedGradNode>(call.op->name, std::move(metas));
  node->next_edges = std::move(edges);
  for (size_t i = 0; i < made.size(); ++i) {
    if (!is_floating(made[i]->dtype()) && !is_complex(made[i]->dtype())) continue;
    autograd::set_history(*made[i], node, static_cast<uint32_t>(i));
    node->output_meta[i].dims = Dims(dist_meta(*made[i])->global_shape);
  }
  node->output_meta.resize(made.size());
  return true;
}

}  // namespace oar::dist
