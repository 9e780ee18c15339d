// The decomposition table: `pd_op.<op>` -> a function that runs the op's compiled
// `decomp:` expression (oar::decomp::<op>) on an EvalContext. Generated from the op
// definition files by paddle_core/ops/generator/gen_decomp_table.py.
#pragma once

#include <string>
#include <unordered_map>

namespace oar::pir {
struct EvalContext;
}

namespace oar::cinn {

using DecompFn = void (*)(pir::EvalContext&);
const std::unordered_map<std::string, DecompFn>& decomp_table();

}  // namespace oar::cinn
