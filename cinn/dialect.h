// The cinn dialect: the fusion compiler's IR ops (Note [Fusion legality] in
// docs/notes/cinn.md).
//   %r... = "cinn.fusion"(%in...) ({ ^bb0(%a...): <pd_op ops> "cinn.yield"(%v...) })
// A fused group: the region is isolated from above (its block arguments are the group's
// inputs, typed like the operands) and yields the group's outputs, so the region alone
// is the group's canonical text (the compile cache's key).
#pragma once

#include <vector>

#include "pir/ir/operation.h"

namespace oar::pir {
class Builder;
class IrContext;
}  // namespace oar::pir

namespace oar::cinn {

inline constexpr const char* kFusionOp = "cinn.fusion";
inline constexpr const char* kYieldOp = "cinn.yield";

/// Registers the dialect into `ctx` (idempotent).
void register_cinn_dialect(pir::IrContext* ctx);

/// Clones the ops of `fusion`'s region at `b`'s insertion point, its block arguments
/// replaced by `args`; returns the values it yields.
std::vector<pir::Value> clone_fusion_body(pir::Builder& b, const pir::Operation* fusion,
                                          const std::vector<pir::Value>& args);
/// Replaces a cinn.fusion by the ops of its region (the unfused program): the fallback
/// of a group that does not compile.
void inline_fusion(pir::Operation* fusion);

}  // namespace oar::cinn
