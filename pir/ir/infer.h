// Shape inference interface: an op's InferFn reads its operand types and attributes
// from an InferContext and writes its result types. Ops of the op dialect implement
// it by calling the same infer-meta functions (paddle_core/meta) eager execution uses.
#pragma once

#include <vector>

#include "pir/ir/ir_context.h"
#include "pir/ir/operation.h"

namespace oar::pir {

struct InferContext {
  IrContext* ctx = nullptr;
  const OpInfo* info = nullptr;
  std::vector<Type> inputs;                       // one per operand (null: absent optional)
  const std::vector<NamedAttribute>* attrs = nullptr;  // sorted by name
  std::vector<Type> outputs;                      // filled by the InferFn

  /// The attribute of schema entry `i` (its default when absent); throws naming the op
  /// when required and missing.
  Attribute attr(size_t i) const;
};

/// Runs `info`'s shape inference on operands/attributes. Throws InvalidArgument naming
/// the op when it has no inference or when inference rejects the inputs.
std::vector<Type> infer_result_types(IrContext* ctx, const OpInfo* info,
                                     const std::vector<Value>& operands,
                                     const std::vector<NamedAttribute>& attrs);
/// Same on types (used by the verifier and the DRR result builder).
std::vector<Type> infer_result_types(IrContext* ctx, const OpInfo* info,
                                     const std::vector<Type>& operand_types,
                                     const std::vector<NamedAttribute>& attrs);

/// Fills the schema's default attributes that `attrs` lacks (no-op without a schema).
void fill_default_attrs(const OpInfo* info, std::vector<NamedAttribute>& attrs);

}  // namespace oar::pir
