// The dist dialect: reshard's transfers as ops of a rank's program, and their steps on the
// executor. Note [DistModel] in docs/notes/distributed.md.
#include "distributed/static/collective_ops.h"

#include "distributed/static/step_slots.h"
#include "distributed/static/update_ops.h"

#include <memory>
#include <string>
#include <utility>

#include "paddle_core/base/errors.h"
#include "paddle_core/dispatch/dispatch.h"
#include "paddle_core/dispatch/trace.h"
#include "pir/ir/builder.h"
#include "pir/ir/ir_context.h"
#include "pir/ir/program.h"
#include "pir/trace/program_tracer.h"

namespace oar::dist {
namespace {

using Kind = Transfer::Kind;

// ---- the executor's step of a transfer (one slot per distinct op, step_slots.h).
std::string slot_name(const pir::Operation* op) {
  std::string key = op->name();
  for (const auto& a : op->attributes()) key += " " + std::string(a.name) + "=" + a.value.str();
  return step_slot("dist_collective", key, [op] {
    auto t = std::make_shared<const Transfer>(transfer_of(op));
    return SlotFn([t](dispatch::KernelCall& call) {
      OAR_ENFORCE(call.inputs[0]->size() == 1, Internal, "dist collective step: one input expected");
      call.outputs.assign(1, run_transfer(*t, call.in(0)));
    });
  });
}

}  // namespace

DenseTensor run_transfer(const Transfer& t, const DenseTensor& x_in) {
  DenseTensor x = x_in.is_contiguous() ? x_in : contiguous(x_in);
  if (t.kind == Kind::kSendRecv) return reshard_cross_mesh_local(x, t.global_shape, t.mesh, t.from, t.to_mesh, t.to);
  const int me = current_rank();
  if (!t.mesh.contains(me)) return x;
  AxisStep s;
  s.global_shape = t.global_shape;
  s.k = t.mesh.shape()[t.axis];
  s.index = t.mesh.coord(me)[t.axis];
  s.group = group_of(t.mesh.axis_group(t.axis, me).process_ids(), "reshard");
  switch (t.kind) {
    case Kind::kAllReduce:
      return reshard_p_to_r(x, s, t.reduce);
    case Kind::kAllGather:
      return reshard_s_to_r(x, s, t.dim);
    case Kind::kReduceScatter:
      return reshard_p_to_s(x, s, t.reduce, t.dim);
    case Kind::kAllToAll:
      return reshard_s_to_s(x, s, t.dim, t.to_dim);
    case Kind::kShardSlice:
      return reshard_r_to_s(x, s, t.dim);
    case Kind::kPartialInit:
      return reshard_r_to_p(x, s, t.reduce);
    case Kind::kSendRecv:
      break;
  }
  OAR_THROW(Internal, "run_transfer: unknown transfer kind");
}

namespace {
pir::ProgramTracer* program_tracer() { return dynamic_cast<pir::ProgramTracer*>(trace::active()); }
}  // namespace

bool tracing_program() { return program_tracer() != nullptr; }

void record_transfer(const Transfer& t, const Tensor& in, const Tensor& out) {
  pir::ProgramTracer* tracer = program_tracer();
  if (tracer == nullptr) return;
  pir::IrContext* ctx = pir::IrContext::global();
  register_dist_dialect(ctx);
  tracer->record_custom(transfer_op_name(t.kind), {in}, transfer_attrs(ctx, t, current_rank()), {out});
}

void annotate_layouts(const Tensor& t, const std::vector<std::string>& layouts) {
  pir::ProgramTracer* tracer = program_tracer();
  if (tracer == nullptr) return;
  std::string text;
  for (const std::string& l : layouts) text += (text.empty() ? "" : "; ") + l;
  tracer->annotate(t, "dist_attr", text);
}

int lower_collectives(pir::Program& program) {
  std::vector<pir::Operation*> ops;
  program.module()->walk([&](pir::Operation* op) {
    if (op->info()->dialect == "dist") ops.push_back(op);
  });
  pir::IrContext* ctx = program.context();
  pir::Builder b(ctx);
  for (pir::Operation* op : ops) {
    if (is_update_op(op->name())) {
      lower_update(op, b);
      continue;
    }
    OAR_ENFORCE(op->num_operands() == 1 && op->num_results() == 1, InvalidArgument, op->name(),
                " takes one operand and gives one result");
    const std::string name = slot_name(op);
    b.set_insertion_point(op);
    pir::Operation* n = b.build("kernel.compiled_kernel", op->operands(), {{"kernel_name", ctx->str_attr(name)}},
                                {op->result(0).type()});
    op->replace_all_uses_with({n->result(0)});
    op->erase();
  }
  return static_cast<int>(ops.size());
}

}  // namespace oar::dist
