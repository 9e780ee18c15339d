// dist-partition{rank=r}: the global program cut to rank r's. Note [Static auto-parallel
// passes] in docs/notes/distributed.md.
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "distributed/spmd_rules/local_attrs.h"
#include "distributed/static/dist_dialect.h"
#include "distributed/static/static_passes.h"
#include "paddle_core/base/errors.h"
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
    OAR_ENFORCE(used == value.size() && r >= 0, InvalidArgument, "dist-partition: option rank must be an integer >= 0, got '",
                value, "'");
    rank_ = r;
  }

  bool run(pir::Operation* anchor) override {
    bool changed = false;
    for (size_t r = 0; r < anchor->num_regions(); ++r) {
      for (size_t b = 0; b < anchor->region(r).size(); ++b) {
        pir::Block* block = anchor->region(r).block(b);
        std::vector<pir::Operation*> ops;
        for (pir::Operation* op : *block) ops.push_back(op);
        global_.clear();
        for (pir::Operation* op : ops) changed |= partition(op);
      }
    }
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

  /// Gives `v` (laid out as `a`) the type of rank_'s shard.
  void localize(pir::Value v, pir::Attribute a, const pir::Operation* op) {
    if (!v.type().is_tensor()) return;
    const ProcessMesh& mesh = attr_mesh(a);
    const std::vector<int64_t> g = v.type().dims();
    OAR_ENFORCE(mesh.contains(rank_), Unimplemented, "dist-partition: ", describe_op(op), ": ", describe_value(v),
                " lives on ", mesh.to_string(), ", which does not hold rank ", rank_,
                " (ops of other pipeline stages are not supported by the static passes yet)");
    TensorDistAttr d;
    try {
      d = to_dist_attr(mesh, attr_placements(a), static_cast<int64_t>(g.size()));
    } catch (const Error& e) {
      OAR_THROW(InvalidArgument, "dist-partition: ", describe_op(op), ": ", describe_value(v), " with placements ",
                to_string(attr_placements(a)), ": ", e.message());
    }
    global_[v.impl()] = g;
    pir::IrContext* ctx = op->info()->ctx;
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

  bool partition(pir::Operation* op) {
    const std::string& name = op->name();
    if (name == kShardAnnotateOp) {
      // The annotated value is its input's (dist-reshard moved it there when they differed).
      op->result(0).replace_all_uses_with(op->operand(0));
      op->erase();
      return true;
    }
    pir::Attribute out = op->attr(kDistOut);
    if (!out) return false;
    for (size_t i = 0; i < op->num_results() && i < out.size(); ++i) localize(op->result(i), out.element(i), op);
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
