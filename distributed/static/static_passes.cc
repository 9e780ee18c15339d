// What the static auto-parallel passes share, and their registration. Note [Static
// auto-parallel passes] in docs/notes/distributed.md.
#include "distributed/static/static_passes.h"

#include <cstdlib>
#include <memory>
#include <string>

#include "distributed/static/dist_dialect.h"
#include "pir/ir/ir_context.h"
#include "pir/pass/pass.h"

namespace oar::dist {

std::unique_ptr<pir::Pass> create_dist_complete_pass();   // complete_pass.cc
std::unique_ptr<pir::Pass> create_dist_reshard_pass();    // reshard_pass.cc
std::unique_ptr<pir::Pass> create_dist_partition_pass();  // partition_pass.cc

namespace {
const bool registered = [] {
  pir::register_pass("dist-complete", create_dist_complete_pass);
  pir::register_pass("dist-reshard", create_dist_reshard_pass);
  pir::register_pass("dist-partition", create_dist_partition_pass);
  return true;
}();
}  // namespace

std::vector<FlatOperand> flat_operands(pir::Operation* op) {
  std::vector<FlatOperand> out;
  for (size_t i = 0; i < op->num_operands(); ++i) {
    pir::Value v = op->operand(i);
    pir::Operation* def = v ? v.defining_op() : nullptr;
    if (v && v.type().is_vector() && def != nullptr && def->name() == "builtin.combine") {
      for (size_t k = 0; k < def->num_operands(); ++k) out.push_back({def, k, def->operand(k)});
    } else {
      out.push_back({op, i, v});
    }
  }
  return out;
}

std::vector<pir::Operation*> top_level_ops(pir::Operation* anchor) {
  std::vector<pir::Operation*> ops;
  for (size_t r = 0; r < anchor->num_regions(); ++r) {
    for (size_t b = 0; b < anchor->region(r).size(); ++b) {
      for (pir::Operation* op : *anchor->region(r).block(b)) ops.push_back(op);
    }
  }
  return ops;
}

pir::Attribute layout_of(pir::Value v) {
  (void)registered;
  pir::Operation* def = v ? v.defining_op() : nullptr;
  if (def == nullptr) return {};
  if (def->name() == kShardAnnotateOp) return def->attr("placements");
  pir::Attribute out = def->attr(kDistOut);
  if (!out || !out.is(pir::AttrKind::kArray)) return {};
  for (size_t i = 0; i < def->num_results(); ++i) {
    if (def->result(i) == v) return i < out.size() ? out.element(i) : pir::Attribute();
  }
  return {};
}

std::string describe_op(const pir::Operation* op) {
  size_t n = 0;
  if (pir::Block* b = op->parent_block()) {
    for (pir::Operation* o : *b) {
      if (o == op) break;
      ++n;
    }
  }
  return op->name() + " (op #" + std::to_string(n) + " of its block)";
}

std::string describe_value(pir::Value v) {
  pir::Operation* def = v.defining_op();
  std::string s = "a block argument";
  if (def != nullptr) {
    size_t i = 0;
    while (i < def->num_results() && def->result(i) != v) ++i;
    s = "result " + std::to_string(i) + " of " + describe_op(def);
    if (pir::Attribute n = def->attr("name"); n && n.is(pir::AttrKind::kString)) s += " '" + n.as_string() + "'";
  }
  return s + ", " + v.type().str();
}

void apply_transfer(Placements& p, const Transfer& t) {
  using K = Transfer::Kind;
  Placement& q = p[t.axis];
  switch (t.kind) {
    case K::kAllReduce:
    case K::kAllGather:
      q = Placement::replicate();
      break;
    case K::kReduceScatter:
    case K::kShardSlice:
      q = Placement::shard(t.dim);
      break;
    case K::kAllToAll:
      q = Placement::shard(t.to_dim);
      break;
    case K::kPartialInit:
      q = Placement::partial(t.reduce);
      break;
    case K::kSendRecv:
      p = t.to;
      break;
  }
}

int64_t default_partition_rank() {
  const char* env = std::getenv("PADDLE_TRAINER_ID");
  return env != nullptr ? std::atoll(env) : 0;
}

}  // namespace oar::dist
