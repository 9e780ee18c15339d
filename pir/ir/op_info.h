// OpInfo: what the context knows about an op name: its dialect, traits, argument
// schema, and the interfaces it implements (shape inference, verification,
// constant evaluation, backward rule, kernel). One OpInfo per registered name;
// operations point to it, so a lookup by name happens only when an op is built.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pir/ir/attribute.h"

namespace oar::pir {

class Operation;
class IrContext;
struct InferContext;
struct EvalContext;

/// Op traits (a bit set).
enum OpTrait : uint32_t {
  kTraitPure = 1u << 0,         // no side effects: removable when unused, CSE-able
  kTraitCommutative = 1u << 1,  // the first two operands may be swapped
  kTraitTerminator = 1u << 2,   // must be the last op of its block
  kTraitInplace = 1u << 3,      // result 0 aliases (overwrites) operand 0
  kTraitView = 1u << 4,         // every result shares operand 0's storage
  kTraitRandom = 1u << 5,       // reads a random state (never folded or merged)
};

/// An input of an op's schema.
struct InputSpec {
  enum Kind : uint8_t { kTensor, kOptional, kList };
  std::string name;
  Kind kind = kTensor;
};

/// An attribute of an op's schema: name, the definition file's type ("int[]",
/// "Scalar", ...), the attribute kinds it accepts, and the default (null: required).
struct AttrSpec {
  std::string name;
  std::string type;
  Attribute default_value;
};

struct OutputSpec {
  std::string name;
  bool is_list = false;
};

/// Shape/dtype inference: reads inputs/attrs from the context, writes the result types.
using InferFn = void (*)(InferContext&);
/// Extra checks beyond the schema; throws InvalidArgument with a message.
using VerifyFn = void (*)(const Operation*);
/// Runs the op eagerly on constant inputs (constant folding).
using EvalFn = void (*)(EvalContext&);

struct OpInfo {
  IrContext* ctx = nullptr;  // the context it is registered in (set by register_op)
  std::string name;     // "pd_op.add"
  std::string dialect;  // "pd_op"
  uint32_t traits = 0;
  int num_regions = 0;
  /// Schema (ops generated from the op definition files have one; others may leave
  /// it empty and check in `verify`).
  bool has_schema = false;
  std::vector<InputSpec> inputs;
  std::vector<AttrSpec> attrs;
  std::vector<OutputSpec> outputs;

  InferFn infer = nullptr;
  VerifyFn verify = nullptr;
  EvalFn eval = nullptr;
  std::string kernel;    // kernel registry name ("" when the op has none)
  /// Inputs cast to their common dtype before the kernel runs (Paddle's promotion),
  /// and whether integer results of that promotion become the default float.
  std::vector<int> promote;
  bool promote_float = false;
  /// Which dtype picks the kernel: input index >= 0, -1 result 0, -2 the dtype
  /// attribute `kernel_dtype_attr`.
  int kernel_dtype_input = -1;
  std::string kernel_dtype_attr;
  std::string view;      // view function (no kernel: the output aliases the input)
  std::string backward;  // the backward rule: "x: <expr>; y: <expr>" from the op definition
  std::string decomp;    // the result as a C++ expression over primitive ops ("" when none)
  std::string spmd_rule;  // the SPMD rule's name ("elementwise", "matmul"...; "" when none)
  std::string inplace;   // name of the in-place variant ("pd_op.add_"), if any
  std::string inplace_of;  // for an in-place variant: the op it rewrites ("pd_op.add")

  bool has(OpTrait t) const { return (traits & t) != 0; }
  /// Index of the attribute spec `name`, -1 when none.
  int attr_index(const std::string& name) const;
};

}  // namespace oar::pir
