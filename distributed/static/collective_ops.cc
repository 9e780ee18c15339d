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
constexpr Kind kKinds[] = {Kind::kAllReduce,  Kind::kAllGather,   Kind::kReduceScatter, Kind::kAllToAll,
                           Kind::kShardSlice, Kind::kPartialInit, Kind::kSendRecv};

// A placement as one integer in an attribute: Shard(d) -> d, Replicate -> -1,
// Partial(r) -> -2 - r.
std::vector<int64_t> encode(const Placements& p) {
  std::vector<int64_t> out;
  for (const Placement& q : p)
    out.push_back(q.is_shard() ? q.dim : q.is_replicate() ? -1 : -2 - static_cast<int64_t>(q.reduce));
  return out;
}
Placements decode(const std::vector<int64_t>& v) {
  Placements out;
  for (int64_t c : v)
    out.push_back(c >= 0    ? Placement::shard(c)
                  : c == -1 ? Placement::replicate()
                            : Placement::partial(static_cast<ReduceType>(-2 - c)));
  return out;
}

ReduceType reduce_from_name(const std::string& s) {
  for (int r = 0; r <= static_cast<int>(ReduceType::kRedAll); ++r)
    if (s == reduce_type_name(static_cast<ReduceType>(r))) return static_cast<ReduceType>(r);
  OAR_THROW(InvalidArgument, "dist dialect: unknown reduce type '", s, "'");
}

std::vector<pir::NamedAttribute> to_attrs(pir::IrContext* c, const Transfer& t) {
  std::vector<pir::NamedAttribute> a = {{"global_shape", c->shape_attr(t.global_shape)},
                                        {"mesh_shape", c->shape_attr(t.mesh.shape())},
                                        {"mesh_ids", c->shape_attr(t.mesh.process_ids())}};
  if (t.kind == Kind::kSendRecv) {
    a.push_back({"from", c->shape_attr(encode(t.from))});
    a.push_back({"to_mesh_shape", c->shape_attr(t.to_mesh.shape())});
    a.push_back({"to_mesh_ids", c->shape_attr(t.to_mesh.process_ids())});
    a.push_back({"to", c->shape_attr(encode(t.to))});
    return a;
  }
  a.push_back({"axis", c->int_attr(t.axis)});
  // The group this rank's transfer runs over (printed only; the step derives it again).
  const int me = current_rank();
  if (t.mesh.contains(me)) a.push_back({"group", c->shape_attr(t.mesh.axis_group(t.axis, me).process_ids())});
  if (t.kind == Kind::kAllReduce || t.kind == Kind::kReduceScatter || t.kind == Kind::kPartialInit)
    a.push_back({"reduce", c->str_attr(reduce_type_name(t.reduce))});
  if (t.kind != Kind::kAllReduce && t.kind != Kind::kPartialInit) a.push_back({"dim", c->int_attr(t.dim)});
  if (t.kind == Kind::kAllToAll) a.push_back({"to_dim", c->int_attr(t.to_dim)});
  return a;
}

Transfer from_op(const pir::Operation* op) {
  Transfer t;
  bool found = false;
  for (Kind k : kKinds) {
    if (op->name() == transfer_op_name(k)) {
      t.kind = k;
      found = true;
    }
  }
  OAR_ENFORCE(found, InvalidArgument, "lower_collectives: ", op->name(), " is not a dist dialect op");
  auto need = [&](const char* name) {
    pir::Attribute a = op->attr(name);
    OAR_ENFORCE(static_cast<bool>(a), InvalidArgument, op->name(), ": attribute '", name, "' is missing");
    return a;
  };
  t.global_shape = need("global_shape").as_shape();
  t.mesh = ProcessMesh(need("mesh_shape").as_shape(), need("mesh_ids").as_shape());
  if (t.kind == Kind::kSendRecv) {
    t.from = decode(need("from").as_shape());
    t.to_mesh = ProcessMesh(need("to_mesh_shape").as_shape(), need("to_mesh_ids").as_shape());
    t.to = decode(need("to").as_shape());
    return t;
  }
  t.axis = static_cast<int>(need("axis").as_int());
  OAR_ENFORCE(t.axis >= 0 && t.axis < t.mesh.ndim(), InvalidArgument, op->name(), ": axis ", t.axis,
              " is outside the mesh's ", t.mesh.ndim(), " axes");
  if (t.kind == Kind::kAllReduce || t.kind == Kind::kReduceScatter || t.kind == Kind::kPartialInit)
    t.reduce = reduce_from_name(need("reduce").as_string());
  if (t.kind != Kind::kAllReduce && t.kind != Kind::kPartialInit) t.dim = need("dim").as_int();
  if (t.kind == Kind::kAllToAll) t.to_dim = need("to_dim").as_int();
  return t;
}

// ---- the executor's step of a transfer (one slot per distinct op, step_slots.h).
std::string slot_name(const pir::Operation* op) {
  std::string key = op->name();
  for (const auto& a : op->attributes()) key += " " + std::string(a.name) + "=" + a.value.str();
  return step_slot("dist_collective", key, [op] {
    auto t = std::make_shared<const Transfer>(from_op(op));
    return SlotFn([t](dispatch::KernelCall& call) {
      OAR_ENFORCE(call.inputs[0]->size() == 1, Internal, "dist collective step: one input expected");
      call.outputs.assign(1, run_transfer(*t, call.in(0)));
    });
  });
}

class DistDialect : public pir::Dialect {
 public:
  DistDialect() : Dialect("dist") {}
  void initialize(pir::IrContext* ctx) override {
    for (Kind k : kKinds) {
      pir::OpInfo i;
      i.name = transfer_op_name(k);
      i.dialect = "dist";
      ctx->register_op(i);
    }
    register_update_ops(ctx);
  }
};

}  // namespace

const char* transfer_op_name(Transfer::Kind k) {
  switch (k) {
    case Kind::kAllReduce:
      return "dist.all_reduce";
    case Kind::kAllGather:
      return "dist.all_gather";
    case Kind::kReduceScatter:
      return "dist.reduce_scatter";
    case Kind::kAllToAll:
      return "dist.all_to_all";
    case Kind::kShardSlice:
      return "dist.shard_slice";
    case Kind::kPartialInit:
      return "dist.partial_init";
    case Kind::kSendRecv:
      return "dist.send_recv";
  }
  return "dist.unknown";
}

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
  if (!ctx->has_dialect("dist")) register_dist_dialect(ctx);
  tracer->record_custom(transfer_op_name(t.kind), {in}, to_attrs(ctx, t), {out});
}

void annotate_layouts(const Tensor& t, const std::vector<std::string>& layouts) {
  pir::ProgramTracer* tracer = program_tracer();
  if (tracer == nullptr) return;
  std::string text;
  for (const std::string& l : layouts) text += (text.empty() ? "" : "; ") + l;
  tracer->annotate(t, "dist_attr", text);
}

void register_dist_dialect(pir::IrContext* ctx) {
  if (!ctx->has_dialect("dist")) ctx->register_dialect(std::make_unique<DistDialect>());
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
