// The static auto-parallel passes over a global program: dist-complete, dist-reshard,
// dist-partition (Note [Static auto-parallel passes] in docs/notes/distributed.md), and
// what they share: where the placements of a value are recorded, an op's tensor operands,
// and the names errors give ops and values.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "distributed/reshard/transfer.h"
#include "pir/ir/attribute.h"
#include "pir/ir/operation.h"

namespace oar::dist {

/// The attributes dist-complete records on an op: the placements its rule asks of each
/// tensor operand (dist_in) and those of each result (dist_out), arrays of #dist.placements.
constexpr const char* kDistIn = "dist_in";
constexpr const char* kDistOut = "dist_out";

/// A tensor operand as a rule sees it: a Tensor[] operand (a builtin.combine's result)
/// contributes its elements in place. `user` is the op reading `value` directly (the op
/// itself, or the combine), `index` the operand number there; `value` is null for an
/// absent optional operand.
struct FlatOperand {
  pir::Operation* user = nullptr;
  size_t index = 0;
  pir::Value value;
};
std::vector<FlatOperand> flat_operands(pir::Operation* op);

/// The ops of `anchor`'s blocks (the module's top level), in order: a snapshot, so a pass
/// may insert and erase while it walks them. Nested regions are not entered.
std::vector<pir::Operation*> top_level_ops(pir::Operation* anchor);

/// The #dist.placements dist-complete gave `v` (its producer's dist_out, or the
/// annotation's placements); null when none.
pir::Attribute layout_of(pir::Value v);

/// "pd_op.matmul (op #4 of its block)".
std::string describe_op(const pir::Operation* op);
/// "result 0 of pd_op.matmul (op #4 of its block), tensor<4x8xf64>".
std::string describe_value(pir::Value v);

/// The placements a value has after transfer `t` ran on it (laid out as `p` before).
void apply_transfer(Placements& p, const Transfer& t);

/// The process's rank when dist-partition is given none: PADDLE_TRAINER_ID, else 0.
int64_t default_partition_rank();

}  // namespace oar::dist
