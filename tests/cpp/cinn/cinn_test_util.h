// Helpers the fusion compiler's C++ tests share: a program parsed and run through
// cinn_fuse, and its cinn.fusion ops in program order.
#pragma once

#include <memory>
#include <vector>

#include "cinn/pipeline.h"
#include "pir/pass/pass.h"
#include "tests/cpp/pir/pir_test_util.h"

namespace oar::cinn::test_util {

inline std::unique_ptr<pir::Program> fused(const char* text) {
  auto p = pir::parse_program(pir::IrContext::global(), text);
  pir::PassManager pm;
  pm.add_pass("cinn_fuse");
  pm.run(*p);
  return p;
}

inline std::vector<const pir::Operation*> fusions(const pir::Program& p) {
  std::vector<const pir::Operation*> fs;
  for (const pir::Operation* op : *p.block())
    if (op->name() == "cinn.fusion") fs.push_back(op);
  return fs;
}

}  // namespace oar::cinn::test_util
