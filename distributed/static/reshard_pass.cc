// dist-reshard: the transfers eager reshard would run, as dist.* ops of the global program,
// wherever a value's placements differ from what its consumer asks. Note [Static
// auto-parallel passes] in docs/notes/distributed.md.
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "distributed/static/dist_dialect.h"
#include "distributed/static/static_passes.h"
#include "paddle_core/base/errors.h"
#include "pir/ir/builder.h"
#include "pir/ir/ir_context.h"
#include "pir/pass/pass.h"

namespace oar::dist {
namespace {

class ReshardPass : public pir::Pass {
 public:
  ReshardPass() : Pass("dist-reshard") {}

  bool run(pir::Operation* anchor) override {
    bool changed = false;
    moved_.clear();
    for (pir::Operation* op : top_level_ops(anchor)) changed |= reshard(op);
    return changed;
  }

 private:
  // (value, target placements) -> the moved value, so several consumers asking the same
  // layout share one move (the first is before them all: ops are visited in order).
  std::map<std::pair<const void*, const void*>, pir::Value> moved_;

  /// `v` (laid out as `from`) moved to `to` by transfers inserted before `before`.
  pir::Value move(pir::Value v, pir::Attribute from, pir::Attribute to, pir::Operation* before,
                  const pir::Operation* consumer) {
    auto key = std::make_pair(static_cast<const void*>(v.impl()), static_cast<const void*>(to.storage()));
    if (auto it = moved_.find(key); it != moved_.end()) return it->second;
    const ProcessMesh& mesh = attr_mesh(from);
    const std::vector<int64_t>& shape = v.type().dims();
    const int64_t rank = static_cast<int64_t>(shape.size());
    Placements cur = normalized(attr_placements(from), rank);
    pir::IrContext* ctx = before->info()->ctx;
    pir::Builder b(ctx);
    b.set_insertion_point(before);
    pir::Value x = v;
    if (attr_mesh(to) != mesh) {
      // Another mesh (a pipeline stage): one dist.send_recv, as DistModel records it (Note
      // [Cross-mesh reshard]); only an annotation moves a value between meshes.
      OAR_ENFORCE(consumer->name() == kShardAnnotateOp, Internal, "dist-reshard: ", describe_op(consumer), " asks ",
                  describe_value(v), " for on another mesh");
      Transfer t;
      t.kind = Transfer::Kind::kSendRecv;
      t.global_shape = shape;
      t.mesh = mesh;
      t.from = cur;
      t.to_mesh = attr_mesh(to);
      t.to = normalized(attr_placements(to), rank);
      std::vector<pir::NamedAttribute> attrs = transfer_attrs(ctx, t, -1);
      attrs.push_back({kDistOut, ctx->array_attr({to})});
      x = b.build(transfer_op_name(t.kind), {x}, std::move(attrs), {v.type()})->result(0);
      moved_[key] = x;
      return x;
    }
    for (const Transfer& t : plan_reshard(shape, mesh, cur, attr_placements(to))) {
      apply_transfer(cur, t);
      std::vector<pir::NamedAttribute> attrs = transfer_attrs(ctx, t, -1);
      attrs.push_back({kDistOut, ctx->array_attr({placements_attr(ctx, mesh, cur)})});
      x = b.build(transfer_op_name(t.kind), {x}, std::move(attrs), {v.type()})->result(0);
    }
    moved_[key] = x;
    return x;
  }

  bool reshard(pir::Operation* op) {
    if (op->name() == kShardAnnotateOp) {
      pir::Value x = op->operand(0);
      pir::Attribute from = layout_of(x);
      if (!from || from == op->attr("placements")) return false;
      op->set_operand(0, move(x, from, op->attr("placements"), op, op));
      return true;
    }
    pir::Attribute want = op->attr(kDistIn);
    if (!want) return false;
    bool changed = false;
    // A Tensor[] operand's combine read by other ops too gets a copy of its own, so moving
    // its elements for this op does not move them for the others.
    for (size_t i = 0; i < op->num_operands(); ++i) {
      pir::Value v = op->operand(i);
      pir::Operation* def = v ? v.defining_op() : nullptr;
      if (def == nullptr || def->name() != "builtin.combine" || v.num_uses() < 2) continue;
      pir::Builder b(op->info()->ctx);
      b.set_insertion_point(op);
      std::vector<pir::Value> elems;
      for (size_t k = 0; k < def->num_operands(); ++k) elems.push_back(def->operand(k));
      op->set_operand(i, b.combine(elems));
    }
    size_t k = 0;
    for (const FlatOperand& f : flat_operands(op)) {
      if (!f.value) continue;
      OAR_ENFORCE(k < want.size(), InvalidArgument, "dist-reshard: ", describe_op(op), ": ", kDistIn, " has ",
                  want.size(), " entries for more tensor operands; run dist-complete again");
      pir::Attribute to = want.element(k++);
      pir::Attribute from = layout_of(f.value);
      // A value no annotation reaches is the same on every process: Replicate.
      if (!from) {
        from = placements_attr(op->info()->ctx, attr_mesh(to, std::string(kDistIn)),
                               Placements(attr_mesh(to).ndim(), Placement::replicate()));
      }
      const int64_t rank = static_cast<int64_t>(f.value.type().dims().size());
      if (normalized(attr_placements(from), rank) == normalized(attr_placements(to), rank) &&
          attr_mesh(from) == attr_mesh(to))
        continue;
      f.user->set_operand(f.index, move(f.value, from, to, f.user, op));
      changed = true;
    }
    return changed;
  }
};

}  // namespace

std::unique_ptr<pir::Pass> create_dist_reshard_pass() { return std::make_unique<ReshardPass>(); }

}  // namespace oar::dist
