// The `dist` dialect (Note [Static auto-parallel passes] and Note [DistModel] in
// docs/notes/distributed.md): the attribute kind #dist.placements (a mesh and one placement
// per mesh axis), the annotation op dist.shard_annotate of a global program, the transfer
// ops reshard runs (dist.all_reduce, ...), and the optimizer update ops. Needs no process
// group: pir_opt, the C++ tests and the static passes use it without Gloo.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "distributed/mesh/placement.h"
#include "distributed/reshard/transfer.h"
#include "pir/ir/attribute.h"

namespace oar::pir {
class IrContext;
class Operation;
}  // namespace oar::pir

namespace oar::dist {

/// The dist dialect's op name of a transfer kind ("dist.all_reduce", ...).
const char* transfer_op_name(Transfer::Kind k);
/// Whether `name` is a transfer op's name.
bool is_transfer_op(const std::string& name);
/// A transfer op's attributes. `rank` >= 0 inside the mesh adds `group`, the ranks that
/// rank's transfer runs over (printed only; the step derives it again).
std::vector<pir::NamedAttribute> transfer_attrs(pir::IrContext* ctx, const Transfer& t, int64_t rank);
/// The transfer a dist.* transfer op describes (InvalidArgument naming a missing or bad
/// attribute).
Transfer transfer_of(const pir::Operation* op);

/// The op that says "this value has these placements" in a global program.
constexpr const char* kShardAnnotateOp = "dist.shard_annotate";

/// #dist.placements<[Shard(0), Replicate()], mesh = [2, 2], ids = [0, 1, 2, 3], names = ["dp", "mp"]>.
/// InvalidArgument when the count differs from the mesh's rank or a Shard dim is negative
/// (the tensor-rank check is the passes').
pir::Attribute placements_attr(pir::IrContext* ctx, const ProcessMesh& mesh, const Placements& placements);
bool is_placements_attr(pir::Attribute a);
/// The mesh and placements of a #dist.placements (InvalidArgument naming `what` for
/// another attribute).
const ProcessMesh& attr_mesh(pir::Attribute a, const std::string& what = "attribute");
const Placements& attr_placements(pir::Attribute a, const std::string& what = "attribute");
/// A placement's text in the attribute: Shard(d), Replicate(), Partial(sum|max|min|prod|avg|any|all).
std::string placement_text(const Placement& p);

/// Registers the `dist` dialect into `ctx` (idempotent). Linking this file also makes it
/// loadable by name, so IrContext::global() has it.
void register_dist_dialect(pir::IrContext* ctx);

}  // namespace oar::dist
