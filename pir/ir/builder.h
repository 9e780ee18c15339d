// Builder: creates operations at an insertion point (before an op, or at the end of
// a block). Missing attributes take the op schema's defaults and result types come
// from the op's shape inference unless given. A Listener sees every created op
// (the pattern rewriter uses it to feed its worklist).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "pir/ir/ir_context.h"
#include "pir/ir/operation.h"

namespace oar {
class DenseTensor;
}

namespace oar::pir {

class Builder {
 public:
  struct Listener {
    virtual ~Listener() = default;
    virtual void on_op_created(Operation* op) = 0;
  };

  explicit Builder(IrContext* ctx, Block* block = nullptr) : ctx_(ctx), block_(block) {}
  IrContext* ctx() const { return ctx_; }

  void set_insertion_point(Operation* op) { block_ = op->parent_block(); before_ = op; }
  void set_insertion_point_after(Operation* op) { block_ = op->parent_block(); before_ = op->next(); }
  void set_insertion_point_to_start(Block* b) { block_ = b; before_ = b->front(); }
  void set_insertion_point_to_end(Block* b) { block_ = b; before_ = nullptr; }
  Block* block() const { return block_; }
  /// The op new ops go before (nullptr: the end of the block).
  Operation* insertion_point() const { return before_; }
  void set_listener(Listener* l) { listener_ = l; }

  /// Creates and inserts an op. Empty `result_types` means "infer them".
  Operation* build(const OpInfo* info, const std::vector<Value>& operands,
                   std::vector<NamedAttribute> attrs = {}, std::vector<Type> result_types = {},
                   int num_regions = -1);
  Operation* build(std::string_view name, const std::vector<Value>& operands,
                   std::vector<NamedAttribute> attrs = {}, std::vector<Type> result_types = {},
                   int num_regions = -1);
  /// build(...) for a one-result op; returns its result.
  Value op(std::string_view name, const std::vector<Value>& operands,
           std::vector<NamedAttribute> attrs = {});
  /// Inserts an op created elsewhere.
  void insert(Operation* op);

  // ---- builtin dialect
  Value parameter(const std::string& name, Type type);
  Operation* set_parameter(Value v, const std::string& name);
  /// A constant holding a copy of `data` (contiguous, CPU).
  Value constant(const DenseTensor& data);
  /// A constant from a dense attribute.
  Value constant(Attribute dense);
  /// A 0-D (or shaped, filled) float constant of `dtype`.
  Value constant_scalar(double v, DataType dtype, const std::vector<int64_t>& dims = {});
  Value combine(const std::vector<Value>& values);
  std::vector<Value> split(Value list);
  Operation* yield(const std::vector<Value>& values);

 private:
  IrContext* ctx_;
  Block* block_ = nullptr;
  Operation* before_ = nullptr;
  Listener* listener_ = nullptr;
};

}  // namespace oar::pir
