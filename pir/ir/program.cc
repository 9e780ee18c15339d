#include "pir/ir/program.h"

#include "pir/ir/printer.h"

namespace oar::pir {

Program::Program(IrContext* ctx) : ctx_(ctx) {
  module_ = Operation::create(ctx->op_info("builtin.module"), {}, {}, {}, 1);
  module_->region(0).add_block();
}
Program::~Program() { module_->destroy(); }

void Program::set_parameter(const std::string& name, std::shared_ptr<DenseTensor> data) {
  params_[name] = std::move(data);
}
std::shared_ptr<DenseTensor> Program::parameter(const std::string& name) const {
  auto it = params_.find(name);
  return it == params_.end() ? nullptr : it->second;
}
std::vector<std::string> Program::parameter_names() const {
  std::vector<std::string> out;
  for (const auto& [n, _] : params_) out.push_back(n);
  return out;
}
size_t Program::num_ops() const {
  size_t n = 0;
  module_->walk([&](Operation*) { ++n; });
  return n;
}
std::string Program::str() const { return print_program(*this); }

}  // namespace oar::pir
