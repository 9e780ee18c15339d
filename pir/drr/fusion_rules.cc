// The fusion rules shipped with Oar, written with DRR (see drr.h):
//   matmul + add(bias)             -> fused_linear
//   matmul + add(bias) + relu/gelu -> fused_linear_activation (and fused_linear + act)
//   layer norm from primitives     -> layer_norm
//     mean, subtract, pow(2) or diff*diff, mean, add eps, rsqrt, multiply, scale, bias
//   conv2d + add(reshape(bias) or a per-channel bias) [+ relu] -> fused_conv2d
//   conv2d + relu, fused_conv2d + relu                          -> fused_conv2d(relu)
//   conv2d + inference batch_norm (weights and statistics held by parameters or
//     constants) -> fused_conv2d(x, w * s, beta - mean * s), s = gamma / sqrt(var + eps);
//     the fold_parameters pass then computes the new filter and bias once
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

// ---- convolutions

/// The channel axis of a conv2d's activations.
int channel_axis(const Match& m, const char* fmt) {
  const std::string f = m.attr(fmt).as_string();
  return f == "NHWC" ? 3 : (f == "NCHW" ? 1 : -1);
}

/// `bias` broadcasts over the conv output `out` with one value per channel: right-aligned
/// against out's dims, it is 1 everywhere except at the channel axis, where it is C.
bool per_channel(const Match& m, const char* out, const char* bias, const char* fmt) {
  Type o = m.type(out), b = m.type(bias);
  const int axis = channel_axis(m, fmt);
  if (!o.is_tensor() || !b.is_tensor() || o.rank() != 4 || axis < 0 || b.has_dynamic_dims()) return false;
  if (b.dtype() != o.dtype() || b.rank() > 4 || b.rank() < 1) return false;
  const int64_t c = o.dims()[axis];
  if (c == kDynamic) return false;
  for (int i = 0; i < b.rank(); ++i) {
    const int od = 4 - b.rank() + i;
    const int64_t want = od == axis ? c : 1;
    if (b.dims()[i] != want) return false;
  }
  return 4 - b.rank() <= axis;  // the channel dim is present in the bias
}

/// `b` holds exactly C = the conv output's channel count values (reshaped into `rb`).
bool channel_values(const Match& m, const char* out, const char* b, const char* fmt) {
  Type o = m.type(out), t = m.type(b);
  const int axis = channel_axis(m, fmt);
  return axis >= 0 && o.is_tensor() && o.rank() == 4 && t.is_tensor() && !t.has_dynamic_dims() &&
         t.dtype() == o.dtype() && o.dims()[axis] != kDynamic && t.numel() == o.dims()[axis];
}

const std::vector<std::pair<std::string, std::string>> kConvAttrs = {
    {"strides", "strides"}, {"paddings", "paddings"}, {"dilations", "dilations"}, {"groups", "groups"},
    {"data_format", "fmt"}};

std::vector<std::pair<std::string, ResultAttr>> conv_result_attrs(const std::string& act) {
  return {{"strides", bind("strides")},     {"paddings", bind("paddings")}, {"dilations", bind("dilations")},
          {"groups", bind("groups")},       {"data_format", bind("fmt")},
          {"activation", compute([act](const Match&, IrContext* c) { return c->str_attr(act); })}};
}

/// conv2d + add(reshape(b)) [+ relu], b holding one value per channel.
std::shared_ptr<DrrRule> conv_reshaped_bias_rule(bool relu) {
  auto r = std::make_shared<DrrRule>(relu ? "conv2d_bias_relu_to_fused_conv2d" : "conv2d_bias_to_fused_conv2d");
  auto& s = r->source();
  s.op("pd_op.conv2d", {"x", "w"}, {"conv"}, kConvAttrs)
      .op("pd_op.reshape", {"b"}, {"rb"})
      .op("pd_op.add", {"conv", "rb"}, {relu ? "lin" : "out"});
  if (relu) s.op("pd_op.relu", {"lin"}, {"out"});
  s.require([](const Match& m) {
    return per_channel(m, "conv", "rb", "fmt") && channel_values(m, "conv", "b", "fmt");
  });
  r->result().op("pd_op.fused_conv2d", {"x", "w", "b"}, {"out"}, conv_result_attrs(relu ? "relu" : ""));
  return r;
}

/// conv2d + add(bias) [+ relu], bias already per-channel shaped ([C, 1, 1], [C] for NHWC...).
std::shared_ptr<DrrRule> conv_bias_rule(bool relu) {
  auto r = std::make_shared<DrrRule>(relu ? "conv2d_channel_bias_relu_to_fused_conv2d"
                                          : "conv2d_channel_bias_to_fused_conv2d");
  auto& s = r->source();
  s.op("pd_op.conv2d", {"x", "w"}, {"conv"}, kConvAttrs).op("pd_op.add", {"conv", "b"}, {relu ? "lin" : "out"});
  if (relu) s.op("pd_op.relu", {"lin"}, {"out"});
  s.require([](const Match& m) { return per_channel(m, "conv", "b", "fmt"); });
  r->result().op("pd_op.fused_conv2d", {"x", "w", "b"}, {"out"}, conv_result_attrs(relu ? "relu" : ""));
  return r;
}

std::shared_ptr<DrrRule> conv_relu_rule() {
  auto r = std::make_shared<DrrRule>("conv2d_relu_to_fused_conv2d");
  r->source().op("pd_op.conv2d", {"x", "w"}, {"conv"}, kConvAttrs).op("pd_op.relu", {"conv"}, {"out"});
  r->result().op("pd_op.fused_conv2d", {"x", "w", ""}, {"out"}, conv_result_attrs("relu"));
  return r;
}

/// fused_conv2d without activation + relu -> fused_conv2d(relu) (with or without a bias).
std::shared_ptr<DrrRule> fused_conv_relu_rule(bool bias) {
  auto r = std::make_shared<DrrRule>(bias ? "fused_conv2d_relu" : "fused_conv2d_nobias_relu");
  auto attrs = kConvAttrs;
  attrs.push_back({"activation", "act"});
  r->source()
      .op("pd_op.fused_conv2d", {"x", "w", bias ? "b" : ""}, {"conv"}, attrs)
      .op("pd_op.relu", {"conv"}, {"out"})
      .require([](const Match& m) { return m.attr("act").as_string().empty(); });
  r->result().op("pd_op.fused_conv2d", {"x", "w", bias ? "b" : ""}, {"out"}, conv_result_attrs("relu"));
  return r;
}

/// Held by a parameter or a constant (so fold_parameters can compute from it).
bool is_weight(Value v) {
  Operation* d = v ? v.defining_op() : nullptr;
  return d && (d->name() == "builtin.parameter" || d->name() == "builtin.constant");
}

/// conv2d + batch_norm in inference (running statistics) -> fused_conv2d with the
/// normalization folded into the filter and the bias.
std::shared_ptr<DrrRule> conv_batch_norm_rule() {
  auto r = std::make_shared<DrrRule>("conv2d_batch_norm_to_fused_conv2d");
  r->source()
      .op("pd_op.conv2d", {"x", "w"}, {"conv"}, kConvAttrs)
      .op("pd_op.batch_norm", {"conv", "mean", "var", "gamma", "beta"}, {"out"},
          {{"training", "training"}, {"epsilon", "eps"}, {"data_format", "bn_fmt"}})
      .require([](const Match& m) {
        if (m.attr("training").as_bool()) return false;
        if (m.attr("fmt").as_string() != m.attr("bn_fmt").as_string() || channel_axis(m, "fmt") < 0) return false;
        Type w = m.type("w");
        if (!w.is_tensor() || w.rank() != 4 || w.has_dynamic_dims() || !is_floating(w.dtype())) return false;
        for (const char* p : {"w", "mean", "var", "gamma", "beta"}) {
          if (!is_weight(m.tensor(p))) return false;
          Type t = m.type(p);
          if (!t.is_tensor() || t.dtype() != w.dtype()) return false;
          if (std::string(p) != "w" && (t.rank() != 1 || t.dims()[0] != w.dims()[0])) return false;
        }
        return true;
      });
  auto& res = r->result();
  res.op("pd_op.scale", {"var"}, {"var_eps"},
         {{"scale", compute([](const Match&, IrContext* c) { return c->float_attr(1.0); })},
          {"bias", bind("eps")},
          {"bias_after_scale", compute([](const Match&, IrContext* c) { return c->bool_attr(true); })}})
      .op("pd_op.rsqrt", {"var_eps"}, {"rstd"})
      .op("pd_op.multiply", {"gamma", "rstd"}, {"s"})
      .op("pd_op.reshape", {"s"}, {"s4"},
          {{"shape", compute([](const Match& m, IrContext* c) {
              return c->shape_attr({m.type("w").dims()[0], 1, 1, 1});
            })}})
      .op("pd_op.multiply", {"w", "s4"}, {"w2"})
      .op("pd_op.multiply", {"mean", "s"}, {"ms"})
      .op("pd_op.subtract", {"beta", "ms"}, {"b2"})
      .op("pd_op.fused_conv2d", {"x", "w2", "b2"}, {"out"}, conv_result_attrs(""));
  return r;
}

}  // namespace

std::vector<std::shared_ptr<DrrRule>> fusion_rules() {
  return {layer_norm_rule(false),      layer_norm_rule(true),         linear_act_rule("relu"),
          linear_act_rule("gelu"),     fused_linear_act_rule("relu"), fused_linear_act_rule("gelu"),
          linear_rule(),               conv_batch_norm_rule(),        conv_reshaped_bias_rule(true),
          conv_reshaped_bias_rule(false), conv_bias_rule(true),       conv_bias_rule(false),
          fused_conv_relu_rule(true),  fused_conv_relu_rule(false),   conv_relu_rule()};
}

}  // namespace oar::pir::drr
