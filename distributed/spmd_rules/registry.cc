// The rule table: every `spmd:` name (SPMD_RULES in op_schema.py) and its functions,
// in one screen. Several names share a rule where the ops share the shape behaviour.
#include <algorithm>
#include <iostream>
#include <mutex>
#include <set>
#include <stdexcept>

#include "distributed/spmd_rules/rules.h"
#include "paddle_core/base/errors.h"

namespace oar::dist {
namespace {

#define OAR_RULE(name) \
  SpmdRule { name##_forward, name##_reverse }

const std::map<std::string, SpmdRule>& table() {
  static const std::map<std::string, SpmdRule> t = {
      {"elementwise", OAR_RULE(elementwise)},
      {"where", OAR_RULE(elementwise)},
      {"optimizer", OAR_RULE(elementwise)},  // param, grad, moments alike; lr/betas broadcast
      {"unary", OAR_RULE(unary)},
      {"cast", OAR_RULE(unary)},
      {"dropout", OAR_RULE(unary)},  // the mask is drawn per element: split like x
      {"expand", OAR_RULE(expand)},
      {"tile", OAR_RULE(tile)},
      {"sum_to", OAR_RULE(sum_to)},
      {"reduction", OAR_RULE(reduction)},
      {"arg_reduction", OAR_RULE(arg_reduction)},
      {"along_axis", OAR_RULE(along_axis)},
      {"softmax", OAR_RULE(softmax)},
      {"cross_entropy", OAR_RULE(cross_entropy)},
      {"layer_norm", OAR_RULE(layer_norm)},
      {"layer_norm_grad", OAR_RULE(layer_norm_grad)},
      {"rms_norm", OAR_RULE(rms_norm)},
      {"matmul", OAR_RULE(matmul)},
      {"embedding", OAR_RULE(embedding)},
      {"scaled_dot_product_attention", OAR_RULE(scaled_dot_product_attention)},
      {"conv2d", OAR_RULE(conv2d)},
      {"reshape", OAR_RULE(reshape)},
      {"flatten", OAR_RULE(flatten)},
      {"squeeze", OAR_RULE(squeeze)},
      {"unsqueeze", OAR_RULE(unsqueeze)},
      {"transpose", OAR_RULE(transpose)},
      {"concat", OAR_RULE(concat)},
      {"stack", OAR_RULE(stack)},
      {"split", OAR_RULE(split)},
      {"slice", OAR_RULE(slice)},
      {"gather", OAR_RULE(gather)},
      {"index_select", OAR_RULE(gather)},
      {"replicated", OAR_RULE(replicated)},
  };
  return t;
}

std::mutex g_fallback_mu;
std::set<std::string>& fallback_ops() {
  static std::set<std::string> s;
  return s;
}

void check_info(const SpmdContext& ctx, const SpmdInfo& info, const std::vector<DistMetaTensor>* outputs) {
  OAR_ENFORCE(info.inputs.size() == ctx.inputs.size(), Internal, ctx.op, ": SPMD rule answered for ",
              info.inputs.size(), " inputs, the op has ", ctx.inputs.size());
  for (size_t i = 0; i < info.inputs.size(); ++i) {
    validate(info.inputs[i], ctx.inputs[i].defined ? ctx.inputs[i].rank() : 0, ctx.op + " input " + std::to_string(i));
  }
  for (size_t i = 0; outputs && i < info.outputs.size(); ++i) {
    validate(info.outputs[i], (*outputs)[i].rank(), ctx.op + " output " + std::to_string(i));
  }
  for (size_t i = 0; !outputs && i < info.outputs.size(); ++i) {
    validate(info.outputs[i], static_cast<int64_t>(info.outputs[i].dims_mapping.size()),
             ctx.op + " output " + std::to_string(i));
  }
}

void check_inputs(const SpmdContext& ctx) {
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    const DistMetaTensor& t = ctx.inputs[i];
    if (!t.defined) continue;
    validate(t.attr, t.rank(), ctx.op + " input " + std::to_string(i));
    OAR_ENFORCE(t.attr.mesh == ctx.mesh(), InvalidArgument, ctx.op, ": input ", i, " is on ", t.attr.mesh.to_string(),
                ", input 0 on ", ctx.mesh().to_string(), "; reshard them onto one mesh first");
  }
}

}  // namespace

int64_t SpmdContext::int_attr(const std::string& name, int64_t dflt) const {
  auto it = attrs.find(name);
  if (it == attrs.end()) return dflt;
  if (const auto* v = std::get_if<int64_t>(&it->second)) return *v;
  if (const auto* b = std::get_if<bool>(&it->second)) return *b;
  OAR_THROW(InvalidType, op, ": attribute '", name, "' must be an int");
}

bool SpmdContext::bool_attr(const std::string& name, bool dflt) const {
  auto it = attrs.find(name);
  if (it == attrs.end()) return dflt;
  if (const auto* v = std::get_if<bool>(&it->second)) return *v;
  if (const auto* i = std::get_if<int64_t>(&it->second)) return *i != 0;
  OAR_THROW(InvalidType, op, ": attribute '", name, "' must be a bool");
}

double SpmdContext::float_attr(const std::string& name, double dflt) const {
  auto it = attrs.find(name);
  if (it == attrs.end()) return dflt;
  if (const auto* v = std::get_if<double>(&it->second)) return *v;
  if (const auto* i = std::get_if<int64_t>(&it->second)) return static_cast<double>(*i);
  OAR_THROW(InvalidType, op, ": attribute '", name, "' must be a float");
}

std::string SpmdContext::str_attr(const std::string& name, const std::string& dflt) const {
  auto it = attrs.find(name);
  if (it == attrs.end()) return dflt;
  if (const auto* v = std::get_if<std::string>(&it->second)) return *v;
  OAR_THROW(InvalidType, op, ": attribute '", name, "' must be a string");
}

std::vector<int64_t> SpmdContext::ints_attr(const std::string& name, const std::vector<int64_t>& dflt) const {
  auto it = attrs.find(name);
  if (it == attrs.end()) return dflt;
  if (const auto* v = std::get_if<std::vector<int64_t>>(&it->second)) return *v;
  if (const auto* i = std::get_if<int64_t>(&it->second)) return {*i};
  OAR_THROW(InvalidType, op, ": attribute '", name, "' must be a list of ints");
}

const ProcessMesh& SpmdContext::mesh() const {
  for (const auto& t : inputs) {
    if (t.defined) return t.attr.mesh;
  }
  OAR_THROW(InvalidArgument, op, ": an SPMD rule needs at least one input tensor");
}

std::string SpmdInfo::to_string() const {
  std::string s = "SpmdInfo(inputs=[";
  for (size_t i = 0; i < inputs.size(); ++i) s += (i ? ", " : "") + inputs[i].to_string();
  s += "], outputs=[";
  for (size_t i = 0; i < outputs.size(); ++i) s += (i ? ", " : "") + outputs[i].to_string();
  return s + "])";
}

const SpmdRule* find_spmd_rule(const std::string& name) {
  auto it = table().find(name);
  return it == table().end() ? nullptr : &it->second;
}

const SpmdRule& spmd_rule_or_fallback(const std::string& op, const std::string& rule_name) {
  if (const SpmdRule* r = find_spmd_rule(rule_name)) return *r;
  std::lock_guard<std::mutex> lock(g_fallback_mu);
  if (fallback_ops().insert(op).second) {
    std::cerr << "oar.distributed: op '" << op << "' has no SPMD rule"
              << (rule_name.empty() ? "" : " (unknown rule '" + rule_name + "')")
              << "; it runs replicated on every process (correct, slow)\n";
  }
  return table().at("replicated");
}

std::vector<std::string> spmd_rule_names() {
  std::vector<std::string> names;
  for (const auto& [n, r] : table()) names.push_back(n);
  return names;
}

std::vector<std::string> replicated_fallback_ops() {
  std::lock_guard<std::mutex> lock(g_fallback_mu);
  return {fallback_ops().begin(), fallback_ops().end()};
}

/// Runs a rule; a rule reads its inputs with at(), so a call with too few inputs becomes
/// an error naming the op instead of a bare std::out_of_range.
template <typename Fn>
SpmdInfo run_rule(const SpmdContext& ctx, Fn&& fn) {
  try {
    return fn();
  } catch (const std::out_of_range&) {
    OAR_THROW(InvalidArgument, ctx.op, ": its SPMD rule needs more inputs than the ", ctx.inputs.size(), " given");
  }
}

SpmdInfo infer_forward(const SpmdRule& rule, const SpmdContext& ctx) {
  check_inputs(ctx);
  SpmdInfo info = run_rule(ctx, [&] { return rule.forward(ctx); });
  check_info(ctx, info, nullptr);
  return info;
}

SpmdInfo infer_reverse(const SpmdRule& rule, const SpmdContext& ctx, const std::vector<DistMetaTensor>& outputs) {
  check_inputs(ctx);
  for (size_t i = 0; i < outputs.size(); ++i) {
    validate(outputs[i].attr, outputs[i].rank(), ctx.op + " output " + std::to_string(i));
  }
  SpmdInfo info = run_rule(ctx, [&] { return rule.reverse(ctx, outputs); });
  OAR_ENFORCE(info.outputs.size() == outputs.size(), Internal, ctx.op, ": reverse SPMD rule answered for ",
              info.outputs.size(), " outputs, given ", outputs.size());
  check_info(ctx, info, &outputs);
  return info;
}

}  // namespace oar::dist
