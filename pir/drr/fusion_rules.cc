// The fusion rules shipped with Oar, written with DRR (see drr.h):
//   matmul + add(bias)             -> fused_linear
//   matmul + add(bias) + relu/gelu -> fused_linear_activation (and fused_linear + act)
//   layer norm from primitives     -> layer_norm
//     mean, subtract, pow(2) or diff*diff, mean, add eps, rsqrt, multiply, scale, bias
#include <algorithm>
#include <cmath>
#include <cstring>

#include "pir/drr/drr.h"

namespace oar::pir::drr {
namespace {

/// bias is [N] (or [1, N]) with N the matmul output's last dim.
bool bias_fits(const Match& m, const char* mm, const char* bias) {
  Type o = m.type(mm), b = m.type(bias);
  if (!o.is_tensor() || !b.is_tensor() || o.rank() < 1 || b.rank() < 1 || b.rank() > 2) return false;
  if (b.rank() == 2 && b.dims()[0] != 1) return false;
  return b.dims().back() == o.dims().back() && b.dims().back() != kDynamic && b.dtype() == o.dtype();
}

/// The value of a one-element float constant, or NaN.
double scalar_constant(Value v) {
  Operation* d = v.defining_op();
  if (!d || d->name() != "builtin.constant") return NAN;
  Attribute a = d->attr("value");
  if (!a.is(AttrKind::kDense) || a.type().numel() != 1) return NAN;
  if (a.type().dtype() == DataType::FLOAT32) {
    float f;
    std::memcpy(&f, a.bytes().data(), 4);
    return f;
  }
  if (a.type().dtype() == DataType::FLOAT64) {
    double f;
    std::memcpy(&f, a.bytes().data(), 8);
    return f;
  }
  return NAN;
}

std::shared_ptr<DrrRule> linear_rule() {
  auto r = std::make_shared<DrrRule>("matmul_add_to_fused_linear");
  r->source()
      .op("pd_op.matmul", {"x", "w"}, {"mm"}, {{"transpose_x", "tx"}, {"transpose_y", "ty"}})
      .op("pd_op.add", {"mm", "bias"}, {"out"})
      .require([](const Match& m) { return bias_fits(m, "mm", "bias"); });
  r->result().op("pd_op.fused_linear", {"x", "w", "bias"}, {"out"},
                 {{"transpose_x", bind("tx")}, {"transpose_y", bind("ty")}});
  return r;
}

Attribute activation_name(const std::string& act, const Match& m, IrContext* ctx) {
  if (act == "gelu") return ctx->str_attr(m.attr("approximate").as_bool() ? "gelu_tanh" : "gelu");
  return ctx->str_attr(act);
}

std::shared_ptr<DrrRule> linear_act_rule(const std::string& act) {
  auto r = std::make_shared<DrrRule>("matmul_add_" + act + "_to_fused_linear_activation");
  std::vector<std::pair<std::string, std::string>> act_attrs;
  if (act == "gelu") act_attrs = {{"approximate", "approximate"}};
  r->source()
      .op("pd_op.matmul", {"x", "w"}, {"mm"}, {{"transpose_x", "tx"}, {"transpose_y", "ty"}})
      .op("pd_op.add", {"mm", "bias"}, {"lin"})
      .op("pd_op." + act, {"lin"}, {"out"}, act_attrs)
      .require([](const Match& m) { return bias_fits(m, "mm", "bias"); });
  r->result().op("pd_op.fused_linear_activation", {"x", "w", "bias"}, {"out"},
                 {{"transpose_x", bind("tx")},
                  {"transpose_y", bind("ty")},
                  {"activation", compute([act](const Match& m, IrContext* c) { return activation_name(act, m, c); })}});
  return r;
}

/// fused_linear followed by the activation (when the linear part was fused first).
std::shared_ptr<DrrRule> fused_linear_act_rule(const std::string& act) {
  auto r = std::make_shared<DrrRule>("fused_linear_" + act + "_to_fused_linear_activation");
  std::vector<std::pair<std::string, std::string>> act_attrs;
  if (act == "gelu") act_attrs = {{"approximate", "approximate"}};
  r->source()
      .op("pd_op.fused_linear", {"x", "w", "bias"}, {"lin"}, {{"transpose_x", "tx"}, {"transpose_y", "ty"}})
      .op("pd_op." + act, {"lin"}, {"out"}, act_attrs);
  r->result().op("pd_op.fused_linear_activation", {"x", "w", "bias"}, {"out"},
                 {{"transpose_x", bind("tx")},
                  {"transpose_y", bind("ty")},
                  {"activation", compute([act](const Match& m, IrContext* c) { return activation_name(act, m, c); })}});
  return r;
}

/// The normalized axes are the trailing ones; returns begin_norm_axis or -1.
int64_t trailing_begin(const std::vector<int64_t>& axes, int rank) {
  if (axes.empty() || rank == 0) return -1;
  std::vector<int64_t> a;
  for (int64_t x : axes) a.push_back(x < 0 ? x + rank : x);
  std::sort(a.begin(), a.end());
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != rank - static_cast<int64_t>(a.size()) + static_cast<int64_t>(i)) return -1;
  return a.front();
}

std::shared_ptr<DrrRule> layer_norm_rule(bool square_by_multiply) {
  auto r = std::make_shared<DrrRule>(square_by_multiply ? "layer_norm_from_primitives_mul"
                                                        : "layer_norm_from_primitives_pow");
  auto& s = r->source();
  s.op("pd_op.mean", {"x"}, {"mu"}, {{"axis", "axis"}, {"keepdim", "keep1"}})
      .op("pd_op.subtract", {"x", "mu"}, {"diff"});
  if (square_by_multiply)
    s.op("pd_op.multiply", {"diff", "diff"}, {"sq"});
  else
    s.op("pd_op.pow", {"diff"}, {"sq"}, {{"y", "exponent"}});
  s.op("pd_op.mean", {"sq"}, {"var"}, {{"axis", "axis"}, {"keepdim", "keep2"}})
      .op("pd_op.add", {"var", "eps"}, {"var_eps"})
      .op("pd_op.rsqrt", {"var_eps"}, {"rstd"})
      .op("pd_op.multiply", {"diff", "rstd"}, {"norm"})
      .op("pd_op.multiply", {"norm", "gamma"}, {"scaled"})
      .op("pd_op.add", {"scaled", "beta"}, {"out"})
      .require([square_by_multiply](const Match& m) {
        if (!m.attr("keep1").as_bool() || !m.attr("keep2").as_bool()) return false;
        if (!square_by_multiply && m.attr("exponent").as_number() != 2.0) return false;
        Type x = m.type("x");
        if (!x.is_tensor() || x.has_dynamic_dims() || !is_floating(x.dtype())) return false;
        int64_t begin = trailing_begin(m.attr("axis").as_shape(), x.rank());
        if (begin < 0) return false;
        std::vector<int64_t> norm_shape(x.dims().begin() + begin, x.dims().end());
        for (const char* p : {"gamma", "beta"})
          if (m.type(p).dims() != norm_shape || m.type(p).dtype() != x.dtype()) return false;
        return !std::isnan(scalar_constant(m.tensor("eps")));
      });
  r->result().op("pd_op.layer_norm", {"x", "gamma", "beta"}, {"out", "", ""},
                 {{"epsilon", compute([](const Match& m, IrContext* c) {
                     return c->float_attr(scalar_constant(m.tensor("eps")));
                   })},
                  {"begin_norm_axis", compute([](const Match& m, IrContext* c) {
                     return c->int_attr(trailing_begin(m.attr("axis").as_shape(), m.type("x").rank()));
                   })}});
  return r;
}

}  // namespace

std::vector<std::shared_ptr<DrrRule>> fusion_rules() {
  return {layer_norm_rule(false), layer_norm_rule(true), linear_act_rule("relu"), linear_act_rule("gelu"),
          fused_linear_act_rule("relu"), fused_linear_act_rule("gelu"), linear_rule()};
}

}  // namespace oar::pir::drr
