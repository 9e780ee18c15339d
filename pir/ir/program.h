// Program: a builtin.module op (one region, one block) plus the parameters the
// program reads by name (builtin.parameter) with their data when known.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "paddle_core/tensor/dense_tensor.h"
#include "pir/ir/ir_context.h"
#include "pir/ir/operation.h"

namespace oar::pir {

class Program {
 public:
  explicit Program(IrContext* ctx = IrContext::global());
  ~Program();
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;

  IrContext* context() const { return ctx_; }
  Operation* module() const { return module_; }
  /// The module's body.
  Block* block() const { return &*module_->region(0).front(); }

  /// Parameter data by name (owned by the program, shared with whoever reads it).
  void set_parameter(const std::string& name, std::shared_ptr<DenseTensor> data);
  /// nullptr when the program has no data for `name`.
  std::shared_ptr<DenseTensor> parameter(const std::string& name) const;
  /// Forgets `name`'s data (its builtin.parameter op is the caller's to erase).
  void remove_parameter(const std::string& name) { params_.erase(name); }
  std::vector<std::string> parameter_names() const;
  const std::map<std::string, std::shared_ptr<DenseTensor>>& parameters() const { return params_; }

  /// Number of ops in the module, nested ones included (the module itself excluded).
  size_t num_ops() const;
  /// The textual form (see pir/ir/printer.h).
  std::string str() const;

 private:
  IrContext* ctx_;
  Operation* module_;
  std::map<std::string, std::shared_ptr<DenseTensor>> params_;
};

}  // namespace oar::pir
