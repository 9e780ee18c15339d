// From an op's name to its rule: the op's definition names it (`spmd:`), which the
// generated IR op info carries (OpInfo::spmd_rule).
#include "distributed/spmd_rules/spmd_rule.h"
#include "pir/ir/ir_context.h"
#include "pir/ir/op_info.h"

namespace oar::dist {

std::string spmd_rule_name(const std::string& op) {
  const pir::OpInfo* info = pir::IrContext::global()->find_op("pd_op." + op);
  return info ? info->spmd_rule : std::string();
}

int op_num_outputs(const std::string& op, bool* has_list) {
  const pir::OpInfo* info = pir::IrContext::global()->find_op("pd_op." + op);
  *has_list = false;
  if (info == nullptr || info->outputs.empty()) return 1;
  for (const pir::OutputSpec& o : info->outputs) *has_list = *has_list || o.is_list;
  return static_cast<int>(info->outputs.size());
}

const SpmdRule& spmd_rule_for_op(const std::string& op) { return spmd_rule_or_fallback(op, spmd_rule_name(op)); }

}  // namespace oar::dist
