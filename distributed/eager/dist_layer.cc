// The dist dispatch layer. Note [Dist layer] in docs/notes/distributed.md.
#include "distributed/eager/dist_layer.h"

#include <atomic>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "distributed/eager/outside_mesh.h"
#include "distributed/reshard/reshard.h"
#include "distributed/spmd_rules/local_attrs.h"
#include "distributed/spmd_rules/spmd_rule.h"
#include "distributed/static/collective_ops.h"
#include "paddle_core/api/dist_dims.h"
#include "paddle_core/autograd/accumulate_hooks.h"
#include "paddle_core/autograd/grad_mode.h"
#include "paddle_core/autograd/node.h"
#include "paddle_core/base/errors.h"
#include "paddle_core/dispatch/dispatch.h"

namespace oar::dist {
namespace {

using dispatch::AttrValue;
using dispatch::OpCall;

// Ops run below this layer (a composite kernel's inner ops) see the local shards: the
// layer handles only the outermost call.
thread_local int tls_depth = 0;
// Aliases noted while an op runs below the layer (the saved outputs of its grad node):
// they get the outputs' dist metadata once the layer has set it.
thread_local std::vector<std::pair<std::shared_ptr<TensorImpl>, const TensorImpl*>>* tls_pending = nullptr;

void copy_meta(const std::shared_ptr<TensorImpl>& to, const DistTensorMeta& m) {
  auto meta = std::make_unique<DistTensorMeta>(m);
  meta->grad_hooked = false;
  to->dist = std::move(meta);
}

void dist_alias(const Tensor& alias, const Tensor& of) {
  if (!alias.defined() || !of.defined() || alias.impl()->dist) return;
  if (const DistTensorMeta* m = dist_meta(of)) {
    copy_meta(alias.impl(), *m);
  } else if (tls_pending != nullptr && tls_depth == 1) {
    tls_pending->emplace_back(alias.impl(), of.impl().get());
  }
}

/// After a dist leaf's .grad is accumulated: lay it out as the leaf (Partial as
/// Replicate), or as its grad_placements when set, so an optimizer updates each shard
/// with its own gradient.
void reshard_leaf_grad(const Tensor& leaf) {
  const DistTensorMeta* m = dist_meta(leaf);
  if (m == nullptr) return;
  const Tensor held = leaf.grad();  // through Tensor::grad(), as every reader of .grad
  if (!held.defined()) return;
  const Tensor g = dist_meta(held) ? held : as_replicated(held, m->mesh);
  Placements want = m->grad_placements.empty() ? m->placements : m->grad_placements;
  for (Placement& p : want) {
    if (p.is_partial()) p = Placement::replicate();
  }
  autograd::GradModeGuard no_grad(false);
  Tensor r = reshard(g, m->mesh, want);
  if (!r.same_impl(held)) leaf.autograd_meta()->grad = r.impl();
}

std::vector<Tensor*> flat_inputs(OpCall& call) {
  std::vector<Tensor*> out;
  for (dispatch::Value& v : call.inputs) {
    if (v.is_list) {
      for (Tensor& t : v.list) out.push_back(&t);
    } else {
      out.push_back(&v.tensor);
    }
  }
  return out;
}

std::vector<Tensor*> flat_outputs(OpCall& call) {
  std::vector<Tensor*> out;
  for (dispatch::Value& v : call.outputs) {
    if (v.is_list) {
      for (Tensor& t : v.list) out.push_back(&t);
    } else {
      out.push_back(&v.tensor);
    }
  }
  return out;
}

int attr_index(const OpCall& call, const char* name) {
  const auto& names = call.op->attrs;
  for (size_t i = 0; i < names.size(); ++i) {
    if (std::string(names[i]) == name) return static_cast<int>(i);
  }
  return -1;
}

bool to_spmd_attr(const AttrValue& v, SpmdAttr* out) {
  return std::visit(
      [out](const auto& x) {
    using T = std::decay_t<decltype(x)>;
    if constexpr (std::is_same_v<T, Scalar>) {
      *out = x.to_double();
      return true;
    } else if constexpr (std::is_constructible_v<SpmdAttr, T> && !std::is_same_v<T, DataType> &&
                         !std::is_same_v<T, Place> && !std::is_same_v<T, std::vector<double>>) {
      *out = x;
      return true;
    } else {
      return false;
    }
      },
      v);
}

const std::vector<int64_t>& global_of(const Tensor& t) { return dist_meta(t)->global_shape; }

/// squeeze() without axes gets the global size-1 axes (a shard of size 1 must stay).
void globalize_attrs(OpCall& call, const std::vector<Tensor*>& ins) {
  if (std::string(call.op->name) != "squeeze" || ins.empty() || !ins[0]->defined()) return;
  int ai = attr_index(call, "axis");
  if (ai < 0 || !std::get<std::vector<int64_t>>(call.attrs[ai]).empty()) return;
  call.attrs[ai] = global_squeeze_axes(global_of(*ins[0]));
}

/// Attributes naming global output sizes become this process's sizes (Note [SPMD rules],
/// "Local attributes"; local_attrs.h, shared with the dist-partition pass).
void localize_attrs(OpCall& call, const std::vector<Tensor*>& ins, const TensorDistAttr& out,
                    const std::vector<int64_t>& coord) {
  const std::string op = call.op->name;
  if (!has_local_shape_attr(op)) return;
  int ai = attr_index(call, "shape");
  if (ai < 0 || ins.empty() || !ins[0]->defined()) return;
  call.attrs[ai] = local_shape_attr(op, std::get<std::vector<int64_t>>(call.attrs[ai]), global_of(*ins[0]), out, coord);
}

/// An output's global shape from its local one: a dim split over mesh axis a has the
/// global size of the input dim split over a with the same local size (the rule gives
/// both one letter); otherwise the shards are taken as even.
std::vector<int64_t> global_shape_of(const Tensor& out, const TensorDistAttr& attr, const std::vector<Tensor*>& ins,
                                     const ProcessMesh& mesh) {
  std::vector<int64_t> shape = out.dense().dims().vec();
  for (size_t d = 0; d < shape.size() && d < attr.dims_mapping.size(); ++d) {
    const int64_t axis = attr.dims_mapping[d];
    if (axis < 0) continue;
    bool found = false;
    for (const Tensor* t : ins) {
      const DistTensorMeta* m = t->defined() ? dist_meta(*t) : nullptr;
      if (m == nullptr) continue;
      for (size_t e = 0; e < m->placements.size(); ++e) {
        const Placement& p = m->placements[e];
        if (static_cast<int64_t>(e) != axis || !p.is_shard()) continue;
        const int64_t dim = p.dim < 0 ? p.dim + t->rank() : p.dim;
        if (t->dense().dims()[static_cast<int>(dim)] == shape[d]) {
          shape[d] = m->global_shape[dim];
          found = true;
        }
      }
      if (found) break;
    }
    if (!found) shape[d] *= mesh.shape()[axis];
  }
  return shape;
}

/// Runs the op below the layer on the local shards (dist_dims() local meanwhile).
void run_local(OpCall& call, std::vector<std::pair<std::shared_ptr<TensorImpl>, const TensorImpl*>>* pending) {
  struct Scope {
    Scope(decltype(tls_pending) p) {  // NOLINT
      ++tls_depth;
      tls_pending = p;
    }
    ~Scope() {
      --tls_depth;
      tls_pending = nullptr;
    }
  } scope(pending);
  dispatch::call_next(call, dispatch::Layer::kDist);
}

void dist_layer(OpCall& call) {
  if (tls_depth > 0) {
    dispatch::call_next(call, dispatch::Layer::kDist);
    return;
  }
  std::vector<Tensor*> ins = flat_inputs(call);
  const DistTensorMeta* first = nullptr;
  for (Tensor* t : ins) {
    if (t->defined() && (first = dist_meta(*t)) != nullptr) break;
  }
  if (first == nullptr) {
    dispatch::call_next(call, dispatch::Layer::kDist);
    return;
  }
  const std::string op = call.op->name;
  const ProcessMesh mesh = first->mesh;
  for (Tensor* t : ins) {
    if (!t->defined()) continue;
    const DistTensorMeta* m = dist_meta(*t);
    if (m == nullptr) {
      *t = as_replicated(*t, mesh);  // an ordinary tensor takes part as a replicated one
      continue;
    }
    OAR_ENFORCE(m->mesh == mesh, Unimplemented, op, ": inputs on different meshes (", mesh.to_string(), " and ",
                m->mesh.to_string(), "); reshard them onto one mesh first");
    if (!m->grad_hooked && t->requires_grad() && t->is_leaf()) {
      const_cast<DistTensorMeta*>(m)->grad_hooked = true;
      autograd::add_post_accumulate_hook(*t, reshard_leaf_grad);
    }
  }
  const int me = current_rank();
  std::vector<TensorDistAttr> out_attrs;
  std::vector<int64_t> coord;
  const bool inside = mesh.contains(me);
  bool fallback = true;
  {
    globalize_attrs(call, ins);
    SpmdContext ctx;
    ctx.op = op;
    for (Tensor* t : ins) {
      if (!t->defined()) {
        ctx.inputs.push_back({{}, TensorDistAttr(mesh, {}), false});
        continue;
      }
      const DistTensorMeta* m = dist_meta(*t);
      ctx.inputs.push_back({m->global_shape, to_dist_attr(mesh, m->placements, t->rank()), true});
    }
    for (size_t i = 0; i < call.attrs.size(); ++i) {
      SpmdAttr a;
      if (to_spmd_attr(call.attrs[i], &a)) ctx.attrs[call.op->attrs[i]] = a;
    }
    bool list_output = false;
    ctx.num_outputs = op_num_outputs(op, &list_output);
    fallback = call.op->spmd_rule == nullptr || list_output;
    SpmdInfo info;
    if (fallback) {                   // the replicated fallback: every process runs the whole op
      spmd_rule_or_fallback(op, "");  // reported once
      for (const DistMetaTensor& m : ctx.inputs) info.inputs.push_back(TensorDistAttr::replicated(mesh, m.rank()));
    } else {
      info = infer_forward(spmd_rule_or_fallback(op, call.op->spmd_rule), ctx);
    }
    out_attrs = info.outputs;
    if (inside) {
      coord = mesh.coord(me);
      for (size_t i = 0; i < ins.size(); ++i) {
        if (!ins[i]->defined()) continue;
        Placements want = to_placements(info.inputs[i]);
        *ins[i] = reshard(*ins[i], mesh, want);
      }
      if (!fallback && !out_attrs.empty()) localize_attrs(call, ins, out_attrs[0], coord);
    }
  }
  // Outside the mesh: no kernel, empty outputs with their global shapes, and a grad node
  // that only hands empty gradients on (outside_mesh.cc). Side-effect ops and ops without
  // shape inference still run on the empty local values.
  if (!inside && !call.op->side_effect && skip_outside_mesh(call, mesh, ins, out_attrs)) return;
  std::vector<std::pair<std::shared_ptr<TensorImpl>, const TensorImpl*>> pending;
  run_local(call, &pending);
  std::vector<Tensor*> outs = flat_outputs(call);
  const bool tracing = tracing_program();
  std::vector<std::string> layouts;
  Tensor first_out;
  for (size_t i = 0; i < outs.size(); ++i) {
    Tensor& o = *outs[i];
    if (!o.defined()) continue;
    TensorDistAttr attr = i < out_attrs.size() ? out_attrs[i] : TensorDistAttr::replicated(mesh, o.rank());
    auto meta = std::make_unique<DistTensorMeta>();
    meta->mesh = mesh;
    meta->placements = to_placements(attr);
    meta->set_global_shape(inside ? global_shape_of(o, attr, ins, mesh) : o.dense().dims().vec());
    for (auto& [alias, of] : pending) {
      if (of == o.impl().get() && !alias->dist) copy_meta(alias, *meta);
    }
    if (AutogradMeta* am = o.autograd_meta();
        am != nullptr && am->grad_fn != nullptr && am->output_nr < am->grad_fn->output_meta.size()) {
      am->grad_fn->output_meta[am->output_nr].dims = Dims(meta->global_shape);
    }
    if (tracing) {  // Note [DistModel]: the program notes each output's layout on its op
      std::string ids, dims;
      for (int64_t r : mesh.process_ids()) ids += (ids.empty() ? "" : ",") + std::to_string(r);
      for (int64_t d : meta->global_shape) dims += (dims.empty() ? "" : ",") + std::to_string(d);
      layouts.push_back(to_string(meta->placements) + " on [" + ids + "] of [" + dims + "]");
      if (!first_out.defined()) first_out = o;
    }
    o.impl()->dist = std::move(meta);
  }
  if (tracing && first_out.defined()) annotate_layouts(first_out, layouts);
}

std::atomic<bool> g_enabled{false};

const Dims* global_dims(const TensorImpl& t) {
  if (tls_depth > 0 || t.dist == nullptr) return nullptr;
  return &static_cast<const DistTensorMeta*>(t.dist.get())->global_dims;
}

}  // namespace

void enable_dist_layer() {
  if (g_enabled.exchange(true)) return;
  g_global_dims_fn.store(&global_dims, std::memory_order_release);
  dispatch::set_layer(dispatch::Layer::kDist, &dist_layer, &dist_alias, /*everywhere=*/true);
}

}  // namespace oar::dist
