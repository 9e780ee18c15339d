// dist-partition{rank=r}: the global program cut to rank r's. Note [Static auto-parallel
// passes] in docs/notes/distributed.md.
#include <algorithm>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "distributed/spmd_rules/local_attrs.h"
#include "distributed/static/dist_dialect.h"
#include "distributed/static/static_passes.h"
#include "paddle_core/base/errors.h"
#include "pir/ir/builder.h"
#include "pir/ir/ir_context.h"
#include "pir/pass/pass.h"

namespace oar::dist {
namespace {

class PartitionPass : public pir::Pass {
 public:
  PartitionPass() : Pass("dist-partition"), rank_(default_partition_rank()) {}

  void set_option(const std::string& key, const std::string& value) override {
    if (key != "rank") Pass::set_option(key, value);
    size_t used = 0;
    int64_t r = -1;
    try {
      r = std::stoll(value, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    OAR_ENFORCE(used == value.size() && r >= 0, InvalidArgument,
                "dist-partition: option rank must be an integer >= 0, got '", value, "'");
    rank_ = r;
  }

  bool run(pir::Operation* anchor) override {
    bool changed = false;
    global_.clear();
    for (pir::Operation* op : top_level_ops(anchor)) changed |= partition(op);
    return changed;
  }

 private:
  int64_t rank_;
  // The global shape of each value whose type was made local (ops later in the block read it).
  std::unordered_map<const void*, std::vector<int64_t>> global_;

  const std::vector<int64_t>& global_dims(pir::Value v) const {
    auto it = global_.find(v.impl());
    return it != global_.end() ? it->second : v.type().dims();
  }

  /// Gives `v` (laid out as `a`) the type of rank_'s shard; outside the mesh, an empty
  /// value (every dim 0; a 0-d value keeps its one element), as eager holds there.
  void localize(pir::Value v, pir::Attribute a, const pir::Operation* op) {
    if (!v.type().is_tensor()) return;
    const ProcessMesh& mesh = attr_mesh(a);
    const std::vector<int64_t> g = v.type().dims();
    pir::IrContext* ctx = op->info()->ctx;
    if (!mesh.contains(rank_)) {
      global_[v.impl()] = g;
      v.set_type(ctx->tensor_type(v.type().dtype(), std::vector<int64_t>(g.size(), 0)));
      return;
    }
    TensorDistAttr d;
    try {
      d = to_dist_attr(mesh, attr_placements(a), static_cast<int64_t>(g.size()));
    } catch (const Error& e) {
      OAR_THROW(InvalidArgument, "dist-partition: ", describe_op(op), ": ", describe_value(v), " with placements ",
                to_string(attr_placements(a)), ": ", e.message());
    }
    global_[v.impl()] = g;
    v.set_type(ctx->tensor_type(v.type().dtype(), local_shape(g, d, mesh.coord(rank_))));
  }

  /// reshape / expand / sum_to's shape and squeeze's axes: rank_'s (local_attrs.h, the
  /// dist layer's own code).
  void localize_attrs(pir::Operation* op, pir::Attribute out) {
    const std::string& name = op->name();
    if (name.rfind("pd_op.", 0) != 0 || op->num_operands() == 0 || !op->operand(0)) return;
    const std::string base = name.substr(6);
    pir::IrContext* ctx = op->info()->ctx;
    const std::vector<int64_t>& g = global_dims(op->operand(0));
    if (base == "squeeze") {
      pir::Attribute axis = op->attr("axis");
      if (axis && axis.is(pir::AttrKind::kShape) && axis.as_shape().empty())
        op->set_attr("axis", ctx->shape_attr(global_squeeze_axes(g)));
      return;
    }
    pir::Attribute shape = op->attr("shape");
    if (!has_local_shape_attr(base) || !shape || !shape.is(pir::AttrKind::kShape)) return;
    const ProcessMesh& mesh = attr_mesh(out);
    const int64_t out_rank = static_cast<int64_t>(global_dims(op->result(0)).size());
    TensorDistAttr d = to_dist_attr(mesh, attr_placements(out), out_rank);
    op->set_attr("shape", ctx->shape_attr(local_shape_attr(base, shape.as_shape(), g, d, mesh.coord(rank_))));
  }

  /// Whether rank_ takes no part in `op` (laid out by `out`): an op of another mesh (a
  /// pipeline stage); a dist.send_recv runs on the ranks of both its meshes. Inputs and
  /// parameters stay (with empty types), so every rank's program has the same signature.
  bool outside(const pir::Operation* op, pir::Attribute out) const {
    const std::string& name = op->name();
    if (name == "builtin.input" || name == "builtin.parameter" || out.size() == 0) return false;
    if (name == transfer_op_name(Transfer::Kind::kSendRecv))
      return !transfer_of(op).mesh.contains(rank_) && !attr_mesh(out.element(0)).contains(rank_);
    return !attr_mesh(out.element(0)).contains(rank_);
  }

  /// Removes `op`; an op of this rank still reading one of its results (a dist.send_recv
  /// receiving it, an output) reads an empty value instead (pd_op.full of every dim 0, or
  /// of one element for a 0-d value), as eager holds outside the mesh.
  void remove(pir::Operation* op) {
    pir::IrContext* ctx = op->info()->ctx;
    pir::Builder b(ctx);
    b.set_insertion_point(op);
    for (size_t i = 0; i < op->num_results(); ++i) {
      pir::Value r = op->result(i);
      if (r.use_empty()) continue;
      OAR_ENFORCE(r.type().is_tensor(), Unimplemented, "dist-partition: ", describe_op(op), " gives ",
                  describe_value(r), " outside rank ", rank_, "'s mesh, read on rank ", rank_);
      const std::vector<int64_t> zeros(r.type().dims().size(), 0);
      pir::Value e = b.op("pd_op.full", {},
                          {{"shape", ctx->shape_attr(zeros)},
                           {"dtype", ctx->dtype_attr(r.type().dtype())},
                           {"fill_value", ctx->float_attr(0.0)},
                           {"place", ctx->place_attr(CPUPlace())}});
      global_[e.impl()] = r.type().dims();
      r.replace_all_uses_with(e);
    }
    op->erase();
  }

  bool empty_global(pir::Value v) const {
    if (!v.type().is_tensor()) return false;
    const std::vector<int64_t>& g = global_dims(v);
    return std::find(g.begin(), g.end(), int64_t{0}) != g.end();
  }

  /// `op`'s one result, of its local type already, as a pd_op.full of that shape instead.
  void replace_by_empty(pir::Operation* op) {
    pir::IrContext* ctx = op->info()->ctx;
    pir::Builder b(ctx);
    b.set_insertion_point(op);
    pir::Value r = op->result(0);
    pir::Value e = b.op("pd_op.full", {},
                        {{"shape", ctx->shape_attr(r.type().dims())},
                         {"dtype", ctx->dtype_attr(r.type().dtype())},
                         {"fill_value", ctx->float_attr(0.0)},
                         {"place", ctx->place_attr(CPUPlace())}});
    global_[e.impl()] = global_dims(r);
    global_.erase(r.impl());
    r.replace_all_uses_with(e);
    op->erase();
  }

  bool partition(pir::Operation* op) {
    const std::string& name = op->name();
    if (name == kShardAnnotateOp) {
      // The annotated value is its input's (dist-reshard moved it there when they differed).
      op->result(0).replace_all_uses_with(op->operand(0));
      op->erase();
      return true;
    }
    if (name == "builtin.combine") {  // a Tensor[] operand: the vector of its elements' local types
      std::vector<pir::Type> elems;
      for (size_t i = 0; i < op->num_operands(); ++i) elems.push_back(op->operand(i).type());
      pir::Type t = op->info()->ctx->vector_type(elems);
      if (t == op->result(0).type()) return false;
      op->result(0).set_type(t);
      return true;
    }
    pir::Attribute out = op->attr(kDistOut);
    if (!out) return false;
    if (outside(op, out)) {
      remove(op);
      return true;
    }
    for (size_t i = 0; i < op->num_results() && i < out.size(); ++i) localize(op->result(i), out.element(i), op);
    if (is_transfer_op(name) && op->num_results() == 1 && empty_global(op->result(0))) {
      // A zero-size tensor moves nothing (eager's reshard skips it too): every rank takes
      // its empty local value, made in place of the transfer.
      replace_by_empty(op);
      return true;
    }
    if (is_transfer_op(name)) {
      // The group rank_'s transfer runs over, as DistModel's programs print it.
      pir::IrContext* ctx = op->info()->ctx;
      for (auto& a : transfer_attrs(ctx, transfer_of(op), rank_)) op->set_attr(a.name, a.value);
    } else if (op->num_results() > 0 && out.size() > 0) {
      localize_attrs(op, out.element(0));
    }
    op->remove_attr(kDistIn);
    op->remove_attr(kDistOut);
    return true;
  }
};

}  // namespace

std::unique_ptr<pir::Pass> create_dist_partition_pass() { return std::make_unique<PartitionPass>(); }

}  // namespace oar::dist
