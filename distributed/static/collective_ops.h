// Collectives as ops of a program (Note [DistModel] in docs/notes/distributed.md): the
// `dist` dialect's ops are the reshard transfers (reshard_<from>_to_<to>.cc, the cross-mesh
// send/recv) a rank's program runs. While a ProgramTracer is active, reshard records each
// transfer it performs as one of these ops (the reshard planner and the SPMD rules that
// asked for it are the eager ones: no second set of rules); lower_collectives turns them
// into kernel.compiled_kernel steps that call the same transfer on the executor.
#pragma once

#include <string>
#include <vector>

#include "distributed/reshard/reshard.h"

namespace oar::pir {
class IrContext;
class Program;
}  // namespace oar::pir

namespace oar::dist {

/// One transfer: what a dist.* op does on this process's local value.
struct Transfer {
  enum class Kind { kAllReduce, kAllGather, kReduceScatter, kAllToAll, kShardSlice, kPartialInit, kSendRecv };
  Kind kind = Kind::kAllReduce;
  std::vector<int64_t> global_shape;
  ProcessMesh mesh;  // the mesh whose axis `axis` the transfer runs along (source mesh for kSendRecv)
  int axis = 0;
  ReduceType reduce = ReduceType::kRedSum;
  int64_t dim = -1;     // the split dim (gather, slice, reduce-scatter; from-dim of all-to-all)
  int64_t to_dim = -1;  // all-to-all's target dim
  // kSendRecv: the source's placements, the target mesh and placements.
  Placements from, to;
  ProcessMesh to_mesh;
};

/// The dist dialect's op name of a transfer kind ("dist.all_reduce", ...).
const char* transfer_op_name(Transfer::Kind k);
/// Runs `t` on this process's local value `x` (the transfers reshard runs eagerly).
DenseTensor run_transfer(const Transfer& t, const DenseTensor& x);

/// While a ProgramTracer is active on this thread, records `t` as an op reading `in`'s
/// value and producing `out` (a new handle); no-op otherwise.
void record_transfer(const Transfer& t, const Tensor& in, const Tensor& out);
/// While a ProgramTracer is active, notes on the op that computed `t` the layouts the dist
/// layer gave its outputs (attribute dist_attr: placements, mesh, global shape per output).
void annotate_layouts(const Tensor& t, const std::vector<std::string>& layouts);
/// Whether a ProgramTracer is active on this thread.
bool tracing_program();

/// Registers the `dist` dialect (its ops carry no side-effect-free trait: never merged or
/// dropped, so every rank issues the same collectives in the same order).
void register_dist_dialect(pir::IrContext* ctx);
/// Replaces each dist.* op of `program` (lowered to kernels otherwise) by a
/// kernel.compiled_kernel running its transfer; returns how many were replaced.
int lower_collectives(pir::Program& program);

}  // namespace oar::dist
