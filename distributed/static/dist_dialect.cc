// The dist dialect: #dist.placements, dist.shard_annotate, the transfer ops and the update
// ops' names. Note [Static auto-parallel passes] in docs/notes/distributed.md.
#include "distributed/static/dist_dialect.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "paddle_core/base/errors.h"
#include "phi_kernels/funcs/optimizer_update.h"
#include "pir/ir/ir_context.h"
#include "pir/ir/kinds.h"
#include "pir/ir/operation.h"
#include "pir/ir/parser.h"
#include "pir/ir/printer.h"
#include "pir/serialize/binary_io.h"

namespace oar::dist {
namespace {

using Kind = Transfer::Kind;
constexpr Kind kKinds[] = {Kind::kAllReduce,  Kind::kAllGather,   Kind::kReduceScatter, Kind::kAllToAll,
                           Kind::kShardSlice, Kind::kPartialInit, Kind::kSendRecv};
constexpr const char* kPlacementsKind = "dist.placements";
constexpr const char* kReduceNames[] = {"sum", "max", "min", "prod", "avg", "any", "all"};
constexpr int kNumReduce = 7;

// ---- #dist.placements
struct PlacementsStorage : pir::detail::AttrStorage {
  ProcessMesh mesh;
  Placements placements;
};

void placements_key(std::string& k, const pir::detail::AttrStorage& s) {
  const auto& a = static_cast<const PlacementsStorage&>(s);
  auto ints = [&](const std::vector<int64_t>& v) {
    pir::key_i64(k, static_cast<int64_t>(v.size()));
    for (int64_t x : v) pir::key_i64(k, x);
  };
  ints(a.mesh.shape());
  ints(a.mesh.process_ids());
  for (const std::string& n : a.mesh.dim_names()) pir::key_str(k, n);
  pir::key_i64(k, static_cast<int64_t>(a.placements.size()));
  for (const Placement& p : a.placements) {
    pir::key_i64(k, static_cast<int64_t>(p.kind));
    pir::key_i64(k, p.is_shard() ? p.dim : -1);
    pir::key_i64(k, p.is_partial() ? static_cast<int64_t>(p.reduce) : -1);
  }
}

void placements_verify(const pir::detail::AttrStorage& s) {
  const auto& a = static_cast<const PlacementsStorage&>(s);
  OAR_ENFORCE(static_cast<int64_t>(a.placements.size()) == a.mesh.ndim(), InvalidArgument, kPlacementsKind, ": ",
              a.placements.size(), " placements for a mesh of rank ", a.mesh.ndim(), " (", a.mesh.to_string(),
              "); give one per mesh axis");
  for (const Placement& p : a.placements)
    OAR_ENFORCE(!p.is_shard() || p.dim >= 0, InvalidArgument, kPlacementsKind, ": Shard(", p.dim,
                ") has a negative dim; write the dim counted from 0");
}

void append_ints(std::string& out, const std::vector<int64_t>& v) {
  out.push_back('[');
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out += ", ";
    pir::append_int(out, v[i]);
  }
  out.push_back(']');
}

void placements_print(std::string& out, pir::Attribute attr) {
  const auto& a = attr.storage_as<PlacementsStorage>();
  out += "#dist.placements<[";
  for (size_t i = 0; i < a.placements.size(); ++i) out += (i ? ", " : "") + placement_text(a.placements[i]);
  out += "], mesh = ";
  append_ints(out, a.mesh.shape());
  out += ", ids = ";
  append_ints(out, a.mesh.process_ids());
  out += ", names = [";
  for (size_t i = 0; i < a.mesh.dim_names().size(); ++i) {
    if (i) out += ", ";
    pir::print_string(out, a.mesh.dim_names()[i]);
  }
  out += "]>";
}

std::vector<int64_t> parse_ints(pir::AsmParser& p) {
  std::vector<int64_t> v;
  p.expect('[');
  if (p.accept(']')) return v;
  do v.push_back(p.integer());
  while (p.accept(','));
  p.expect(']');
  return v;
}

Placement parse_placement(pir::AsmParser& p) {
  const size_t at = p.pos();
  const std::string kind(p.ident());
  p.expect('(');
  Placement out;
  if (kind == "Replicate") {
    out = Placement::replicate();
  } else if (kind == "Shard") {
    out = Placement::shard(p.integer());
  } else if (kind == "Partial") {
    const std::string r(p.ident());
    int i = 0;
    while (i < kNumReduce && r != kReduceNames[i]) ++i;
    if (i == kNumReduce) p.fail_at(at, "unknown reduce type '" + r + "' (sum, max, min, prod, avg, any, all)");
    out = Placement::partial(static_cast<ReduceType>(i));
  } else {
    p.fail_at(at, "expected Shard(d), Replicate() or Partial(reduce), got '" + kind + "'");
  }
  p.expect(')');
  return out;
}

pir::Attribute placements_parse(pir::AsmParser& p, pir::AttrKind) {
  p.expect('<');
  Placements ps;
  p.expect('[');
  if (!p.accept(']')) {
    do ps.push_back(parse_placement(p));
    while (p.accept(','));
    p.expect(']');
  }
  p.expect(',');
  p.expect_str("mesh");
  p.expect('=');
  std::vector<int64_t> shape = parse_ints(p);
  p.expect(',');
  p.expect_str("ids");
  p.expect('=');
  std::vector<int64_t> ids = parse_ints(p);
  p.expect(',');
  p.expect_str("names");
  p.expect('=');
  std::vector<std::string> names;
  p.expect('[');
  if (!p.accept(']')) {
    do names.push_back(p.string_lit());
    while (p.accept(','));
    p.expect(']');
  }
  p.expect('>');
  return placements_attr(p.ctx(), ProcessMesh(std::move(shape), std::move(ids), std::move(names)), ps);
}

void placements_write(pir::BinaryWriter& w, pir::Attribute attr) {
  const auto& a = attr.storage_as<PlacementsStorage>();
  auto ints = [&](const std::vector<int64_t>& v) {
    w.varint(v.size());
    for (int64_t x : v) w.zigzag(x);
  };
  ints(a.mesh.shape());
  ints(a.mesh.process_ids());
  for (const std::string& n : a.mesh.dim_names()) w.str(n);
  w.varint(a.placements.size());
  for (const Placement& p : a.placements) {
    w.byte(static_cast<uint8_t>(p.kind));
    w.zigzag(p.dim);
    w.byte(static_cast<uint8_t>(p.reduce));
  }
}

pir::Attribute placements_read(pir::BinaryReader& r, pir::AttrKind) {
  auto ints = [&] {
    std::vector<int64_t> v(r.count());
    for (int64_t& x : v) x = r.zigzag();
    return v;
  };
  std::vector<int64_t> shape = ints();
  std::vector<int64_t> ids = ints();
  std::vector<std::string> names;
  for (size_t i = 0; i < shape.size(); ++i) names.push_back(r.str());
  Placements ps(r.count(3));
  for (Placement& p : ps) {
    const uint8_t kind = r.byte();
    if (kind > 2) r.fail("dist.placements: bad placement kind " + std::to_string(kind));
    p.kind = static_cast<Placement::Kind>(kind);
    p.dim = r.zigzag();
    const uint8_t red = r.byte();
    if (red >= kNumReduce) r.fail("dist.placements: bad reduce type " + std::to_string(red));
    p.reduce = static_cast<ReduceType>(red);
  }
  return placements_attr(r.ctx(), ProcessMesh(std::move(shape), std::move(ids), std::move(names)), ps);
}

const PlacementsStorage& storage(pir::Attribute a, const std::string& what) {
  OAR_ENFORCE(is_placements_attr(a), InvalidArgument, what, " must be a #dist.placements, got ",
              a ? a.str() : std::string("nothing"));
  return a.storage_as<PlacementsStorage>();
}

// ---- dist.shard_annotate(x) {placements} -> y, y of x's type.
void verify_shard_annotate(const pir::Operation* op) {
  OAR_ENFORCE(op->num_operands() == 1 && op->num_results() == 1, InvalidArgument, kShardAnnotateOp,
              " takes one operand and gives one result");
  OAR_ENFORCE(op->operand(0) && op->operand(0).type().is_tensor(), InvalidArgument, kShardAnnotateOp,
              ": the operand must be a tensor");
  OAR_ENFORCE(op->result(0).type() == op->operand(0).type(), InvalidArgument, kShardAnnotateOp, ": the result's type ",
              op->result(0).type().str(), " must be the operand's ", op->operand(0).type().str());
  storage(op->attr("placements"), std::string(kShardAnnotateOp) + ": attribute 'placements'");
}

// ---- the transfer ops' attributes: a placement as one integer: Shard(d) -> d,
// Replicate -> -1, Partial(r) -> -2 - r.
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

class DistDialect : public pir::Dialect {
 public:
  DistDialect() : Dialect("dist") {}
  void initialize(pir::IrContext* ctx) override {
    pir::AttrKindInfo k;
    k.name = kPlacementsKind;
    k.key = placements_key;
    k.print = placements_print;
    k.parse = placements_parse;
    k.write = placements_write;
    k.read = placements_read;
    k.verify = placements_verify;
    ctx->register_attr_kind(k);
    pir::OpInfo a;
    a.name = kShardAnnotateOp;
    a.dialect = "dist";
    a.verify = verify_shard_annotate;
    ctx->register_op(a);
    for (Kind t : kKinds) {
      pir::OpInfo i;
      i.name = transfer_op_name(t);
      i.dialect = "dist";
      ctx->register_op(i);
    }
    // The update ops (update_ops.h): every fused rule, plus adamw (adam with decoupled decay).
    std::vector<std::string> names = {"adamw"};
    for (const auto& r : phi::update_rules()) names.emplace_back(r.name);
    for (const std::string& r : names) {
      pir::OpInfo i;
      i.name = "dist." + r + "_update";
      i.dialect = "dist";
      ctx->register_op(i);
    }
  }
};

const bool registered = (pir::register_dialect_loader("dist", &register_dist_dialect), true);

}  // namespace

std::string placement_text(const Placement& p) {
  if (p.is_shard()) return "Shard(" + std::to_string(p.dim) + ")";
  if (p.is_replicate()) return "Replicate()";
  return std::string("Partial(") + kReduceNames[static_cast<int>(p.reduce)] + ")";
}

pir::Attribute placements_attr(pir::IrContext* ctx, const ProcessMesh& mesh, const Placements& placements) {
  register_dist_dialect(ctx);
  PlacementsStorage s;
  s.mesh = mesh;
  s.placements = placements;
  return ctx->unique_attr(ctx->attr_kind(kPlacementsKind), std::move(s));
}

bool is_placements_attr(pir::Attribute a) { return a && a.kind_name() == kPlacementsKind; }

const ProcessMesh& attr_mesh(pir::Attribute a, const std::string& what) { return storage(a, what).mesh; }
const Placements& attr_placements(pir::Attribute a, const std::string& what) { return storage(a, what).placements; }

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

bool is_transfer_op(const std::string& name) {
  for (Kind k : kKinds)
    if (name == transfer_op_name(k)) return true;
  return false;
}

std::vector<pir::NamedAttribute> transfer_attrs(pir::IrContext* c, const Transfer& t, int64_t rank) {
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
  if (rank >= 0 && t.mesh.contains(rank))
    a.push_back({"group", c->shape_attr(t.mesh.axis_group(t.axis, rank).process_ids())});
  if (t.kind == Kind::kAllReduce || t.kind == Kind::kReduceScatter || t.kind == Kind::kPartialInit)
    a.push_back({"reduce", c->str_attr(reduce_type_name(t.reduce))});
  if (t.kind != Kind::kAllReduce && t.kind != Kind::kPartialInit) a.push_back({"dim", c->int_attr(t.dim)});
  if (t.kind == Kind::kAllToAll) a.push_back({"to_dim", c->int_attr(t.to_dim)});
  return a;
}

Transfer transfer_of(const pir::Operation* op) {
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

void register_dist_dialect(pir::IrContext* ctx) {
  (void)registered;
  if (!ctx->has_dialect("dist")) ctx->register_dialect(std::make_unique<DistDialect>());
}

}  // namespace oar::dist
