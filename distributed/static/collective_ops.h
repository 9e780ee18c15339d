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
#include "distributed/static/dist_dialect.h"

namespace oar::pir {
class IrContext;
class Program;
}  // namespace oar::pir

namespace oar::dist {

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

// register_dist_dialect (dist_dialect.h): its ops carry no side-effect-free trait, so they
// are never merged or dropped and every rank issues the same collectives in the same order.
/// Replaces each dist.* op of `program` (lowered to kernels otherwise) by a
/// kernel.compiled_kernel running its transfer; returns how many were replaced.
int lower_collectives(pir::Program& program);

}  // namespace oar::dist
