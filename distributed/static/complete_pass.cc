// dist-complete: placements for every value of a global program through the ops' SPMD
// rules. Note [Static auto-parallel passes] in docs/notes/distributed.md.
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "distributed/spmd_rules/spmd_rule.h"
#include "distributed/static/dist_dialect.h"
#include "distributed/static/static_passes.h"
#include "paddle_core/base/errors.h"
#include "pir/ir/ir_context.h"
#include "pir/ir/printer.h"
#include "pir/pass/pass.h"

namespace oar::dist {
namespace {

bool to_spmd(pir::Attribute a, SpmdAttr* out) {
  switch (a.kind()) {
    case pir::AttrKind::kBool:
      *out = a.as_bool();
      return true;
    case pir::AttrKind::kInt:
      *out = a.as_int();
      return true;
    case pir::AttrKind::kFloat:
      *out = a.as_float();
      return true;
    case pir::AttrKind::kString:
      *out = a.as_string();
      return true;
    case pir::AttrKind::kShape:
      *out = a.as_shape();
      return true;
    default:
      return false;
  }
}

std::string placements_list(const std::vector<FlatOperand>& ins, const std::vector<TensorDistAttr>& attrs) {
  std::string s;
  for (size_t i = 0; i < ins.size(); ++i) {
    if (!ins[i].value) continue;
    s += "\n  operand " + std::to_string(i) + ": " + describe_value(ins[i].value) + " as " +
         to_string(to_placements(attrs[i]));
  }
  return s;
}

class CompletePass : public pir::Pass {
 public:
  CompletePass() : Pass("dist-complete") {}

  bool run(pir::Operation* anchor) override {
    bool changed = false;
    for (pir::Operation* op : top_level_ops(anchor)) changed |= complete(op);
    return changed;
  }

 private:
  pir::IrContext* ctx_ = nullptr;

  /// The layout of `v` as a rule input: its placements, Replicate when it has none.
  static TensorDistAttr input_attr(pir::Value v, const ProcessMesh& mesh, const pir::Operation* op) {
    const int64_t rank = static_cast<int64_t>(v.type().dims().size());
    pir::Attribute a = layout_of(v);
    if (!a) return TensorDistAttr::replicated(mesh, rank);
    try {
      return to_dist_attr(mesh, attr_placements(a), rank);
    } catch (const Error& e) {
      OAR_THROW(InvalidArgument, "dist-complete: ", describe_op(op), ": ", describe_value(v), " has placements ",
                to_string(attr_placements(a)), ": ", e.message());
    }
  }

  static bool is_update(const std::string& name) {
    return name.rfind("dist.", 0) == 0 && name.size() > 12 && name.compare(name.size() - 7, 7, "_update") == 0;
  }

  /// dist.<rule>_update (update_ops.h: lr, step, the parameters, their gradients, the state
  /// lists; results: the parameters, then the states): each parameter's update is
  /// elementwise over it, its gradient and its states, so all of them take the parameter's
  /// placements (Partial as Replicate, as eager's post-accumulate hook lays gradients out)
  /// and so do the results; lr and step are replicated.
  /// A state with leading dims of its own before its parameter's (ASGD's window
  /// [batch_num, *shape]) keeps those dims whole and the parameter's layout after them.
  static TensorDistAttr with_leading_dims(TensorDistAttr a, int64_t rank) {
    const int64_t k = rank - static_cast<int64_t>(a.dims_mapping.size());
    if (k > 0) a.dims_mapping.insert(a.dims_mapping.begin(), k, -1);
    return a;
  }

  static SpmdInfo update_rule(const pir::Operation* op, const SpmdContext& sc) {
    pir::Attribute lrs = op->attr("lr_scale");
    OAR_ENFORCE(lrs && lrs.is(pir::AttrKind::kArray), InvalidArgument, "dist-complete: ", describe_op(op),
                ": attribute 'lr_scale' (one per parameter) is missing");
    const size_t n = lrs.size();
    const ProcessMesh& m = sc.mesh();
    pir::Attribute skip_attr = op->attr("skip_input");  // a last operand, a replicated bool
    const size_t skip = skip_attr && skip_attr.as_bool() ? 1 : 0, operands = sc.inputs.size() - skip;
    OAR_ENFORCE(n > 0 && sc.inputs.size() >= 2 + 2 * n + skip && (operands - 2) % n == 0 &&
                    op->num_results() == operands - 2 - n,
                InvalidArgument, "dist-complete: ", describe_op(op), ": ", sc.inputs.size(), " operands and ",
                op->num_results(), " results do not fit ", n, " parameters");
    SpmdInfo info;
    std::vector<TensorDistAttr> param;
    for (size_t i = 0; i < n; ++i) {
      TensorDistAttr a = sc.inputs[2 + i].attr;
      a.partial.clear();
      param.push_back(a);
    }
    for (size_t i = 0; i < sc.inputs.size(); ++i) {
      info.inputs.push_back(i < 2 || i >= operands ? TensorDistAttr::replicated(m, sc.inputs[i].rank())
                                                   : with_leading_dims(param[(i - 2) % n], sc.inputs[i].rank()));
    }
    for (size_t i = 0; i < op->num_results(); ++i) {
      const int64_t rank = static_cast<int64_t>(op->result(i).type().dims().size());
      info.outputs.push_back(with_leading_dims(i < n ? param[i] : param[(i - n) % n], rank));
    }
    return info;
  }

  bool annotate(pir::Operation* op) {
    pir::Attribute a = op->attr("placements");
    const ProcessMesh& mesh = attr_mesh(a);
    const Placements& p = attr_placements(a);
    pir::Value x = op->operand(0);
    try {
      to_dist_attr(mesh, p, static_cast<int64_t>(x.type().dims().size()));
    } catch (const Error& e) {
      OAR_THROW(InvalidArgument, "dist-complete: ", describe_op(op), ": placements ", to_string(p), " on ",
                mesh.to_string(), " do not fit ", describe_value(x), ": ", e.message());
    }
    // An input or parameter read through its annotation is laid out that way from the start.
    pir::Operation* def = x.defining_op();
    if (!layout_of(x) && def != nullptr && (def->name() == "builtin.input" || def->name() == "builtin.parameter")) {
      def->set_attr(kDistOut, ctx_->array_attr({a}));
    }
    return true;
  }

  bool complete(pir::Operation* op) {
    ctx_ = op->info()->ctx;
    const std::string& name = op->name();
    if (name == kShardAnnotateOp) return annotate(op);
    if (name == "builtin.combine" || op->num_results() == 0 || is_transfer_op(name)) return false;
    std::vector<FlatOperand> ins = flat_operands(op);
    const ProcessMesh* mesh = nullptr;
    pir::Value first;
    for (const FlatOperand& f : ins) {
      pir::Attribute a = f.value ? layout_of(f.value) : pir::Attribute();
      if (!a) continue;
      if (mesh == nullptr) {
        mesh = &attr_mesh(a);
        first = f.value;
      } else {
        OAR_ENFORCE(attr_mesh(a) == *mesh, Unimplemented, "dist-complete: ", describe_op(op),
                    ": operands on different meshes: ", describe_value(first), " on ", mesh->to_string(), " and ",
                    describe_value(f.value), " on ", attr_mesh(a).to_string(), "; reshard them onto one mesh first");
      }
    }
    if (mesh == nullptr) return false;  // no dist operand: an ordinary op, the same on every rank
    OAR_ENFORCE(op->num_regions() == 0, Unimplemented, "dist-complete: ", describe_op(op),
                " has regions; control flow over dist values is not supported (its operand ", describe_value(first),
                " is laid out as ", to_string(attr_placements(layout_of(first))), " on ", mesh->to_string(), ")");
    const ProcessMesh m = *mesh;
    std::string op_name = name.rfind("pd_op.", 0) == 0 ? name.substr(6) : name;
    SpmdContext sc;
    sc.op = op_name;
    for (const FlatOperand& f : ins) {
      if (!f.value) {
        sc.inputs.push_back({{}, TensorDistAttr(m, {}), false});
        continue;
      }
      sc.inputs.push_back({f.value.type().dims(), input_attr(f.value, m, op), true});
    }
    for (const auto& a : op->attributes()) {
      SpmdAttr v;
      if (a.name != kDistIn && a.name != kDistOut && to_spmd(a.value, &v)) sc.attrs[a.name] = v;
    }
    bool list_output = false;
    for (size_t i = 0; i < op->num_results(); ++i) {
      list_output |= op->result(i).type().is_vector();
      sc.output_ranks.push_back(
          op->result(i).type().is_tensor() ? static_cast<int64_t>(op->result(i).type().dims().size()) : 0);
    }
    sc.num_outputs = static_cast<int>(op->num_results());
    const std::string& rule = op->info()->spmd_rule;
    SpmdInfo info;
    if (is_update(name)) {
      info = update_rule(op, sc);
    } else if (rule.empty() || list_output || name.rfind("pd_op.", 0) != 0) {  // the replicated fallback, as eager
      if (name.rfind("builtin.", 0) != 0) spmd_rule_or_fallback(op_name, "");  // reported once
      for (const DistMetaTensor& t : sc.inputs) info.inputs.push_back(TensorDistAttr::replicated(m, t.rank()));
      for (int64_t r : sc.output_ranks) info.outputs.push_back(TensorDistAttr::replicated(m, r));
    } else {
      try {
        info = infer_forward(spmd_rule_or_fallback(op_name, rule), sc);
      } catch (const Error& e) {
        std::vector<TensorDistAttr> given;
        for (const DistMetaTensor& t : sc.inputs) given.push_back(t.attr);
        OAR_THROW(InvalidArgument, "dist-complete: ", describe_op(op), ": its SPMD rule '", rule,
                  "' rejects the operands: ", e.message(), placements_list(ins, given));
      }
    }
    std::vector<pir::Attribute> in_attrs, out_attrs;
    for (size_t i = 0; i < ins.size(); ++i) {
      if (ins[i].value) in_attrs.push_back(placements_attr(ctx_, m, to_placements(info.inputs[i])));
    }
    for (size_t i = 0; i < op->num_results(); ++i) {
      const TensorDistAttr& o = i < info.outputs.size() ? info.outputs[i] : TensorDistAttr::replicated(m, 0);
      out_attrs.push_back(placements_attr(ctx_, m, to_placements(o)));
    }
    op->set_attr(kDistIn, ctx_->array_attr(in_attrs));
    op->set_attr(kDistOut, ctx_->array_attr(out_attrs));
    return true;
  }
};

}  // namespace

std::unique_ptr<pir::Pass> create_dist_complete_pass() { return std::make_unique<CompletePass>(); }

}  // namespace oar::dist
