// The IR's graph: Value (an OpResult or a BlockArgument, with the list of its uses),
// Operation (operands, results, attributes, regions), Block (an ordered list of
// operations with arguments) and Region (a list of blocks owned by an operation).
//
// Invariants: every OpOperand holding a value is on that value's use list (so
// replace_all_uses_with is O(uses)); an Operation in a Block is owned by it; results
// and block arguments have stable addresses for the life of their owner.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "pir/ir/attribute.h"
#include "pir/ir/op_info.h"
#include "pir/ir/type.h"

namespace oar::pir {

class Operation;
class Block;
class Region;
class OpOperand;

namespace detail {
/// The storage of a Value.
struct ValueImpl {
  Type type;
  OpOperand* first_use = nullptr;
  Operation* op = nullptr;  // defining op (results)
  Block* block = nullptr;   // owning block (block arguments)
  uint32_t index = 0;       // result number / argument number
  mutable int64_t scratch = 0;  // per-walk numbering (printer, verifier, serializer)
};
}  // namespace detail

/// An SSA value; the null Value stands for an absent optional operand.
class Value {
 public:
  Value() = default;
  explicit Value(detail::ValueImpl* impl) : impl_(impl) {}
  explicit operator bool() const { return impl_ != nullptr; }
  bool operator==(Value o) const { return impl_ == o.impl_; }
  bool operator!=(Value o) const { return impl_ != o.impl_; }
  detail::ValueImpl* impl() const { return impl_; }

  Type type() const { return impl_->type; }
  void set_type(Type t) const { impl_->type = t; }
  /// The defining op, nullptr for a block argument.
  Operation* defining_op() const { return impl_->op; }
  bool is_block_argument() const { return impl_->block != nullptr; }
  /// Result number or argument number.
  uint32_t index() const { return impl_->index; }
  /// The block that holds the definition (for results: the defining op's block).
  Block* parent_block() const;

  OpOperand* first_use() const { return impl_->first_use; }
  bool use_empty() const { return impl_->first_use == nullptr; }
  bool has_one_use() const;
  size_t num_uses() const;
  /// Every use of this value now uses `v` instead.
  void replace_all_uses_with(Value v) const;

 private:
  detail::ValueImpl* impl_ = nullptr;
};

/// A use of a value by an operation (an intrusive node of the value's use list).
class OpOperand {
 public:
  OpOperand() = default;
  OpOperand(const OpOperand&) = delete;
  OpOperand& operator=(const OpOperand&) = delete;
  ~OpOperand() { unlink(); }

  Value get() const { return Value(value_); }
  void set(Value v);
  Operation* owner() const { return owner_; }
  uint32_t index() const { return index_; }
  OpOperand* next_use() const { return next_; }

 private:
  friend class Operation;
  void link();
  void unlink();
  detail::ValueImpl* value_ = nullptr;
  OpOperand* next_ = nullptr;
  OpOperand** prev_ = nullptr;  // the pointer that points at this node
  Operation* owner_ = nullptr;
  uint32_t index_ = 0;
};

/// A list of blocks owned by an op (cf.if's branches, a while body, the module body).
class Region {
 public:
  explicit Region(Operation* owner = nullptr) : owner_(owner) {}
  Region(const Region&) = delete;
  Region& operator=(const Region&) = delete;
  ~Region();

  Operation* owner() const { return owner_; }
  size_t size() const { return blocks_.size(); }
  bool empty() const { return blocks_.empty(); }
  Block* block(size_t i) const { return blocks_[i].get(); }
  Block* front() const { return blocks_.front().get(); }
  /// Appends a new empty block.
  Block* add_block();
  /// Moves every block of `other` to the end of this region.
  void take_body(Region& other);

 private:
  friend class Operation;
  Operation* owner_;
  std::vector<std::unique_ptr<Block>> blocks_;
};

/// An ordered list of operations (doubly linked; O(1) insert and erase) with arguments.
class Block {
 public:
  explicit Block(Region* parent = nullptr) : parent_(parent) {}
  Block(const Block&) = delete;
  Block& operator=(const Block&) = delete;
  ~Block();

  Region* parent() const { return parent_; }
  /// The op that owns the region of this block (nullptr for a detached block).
  Operation* parent_op() const;

  Value add_argument(Type t);
  size_t num_arguments() const { return args_.size(); }
  Value argument(size_t i) const { return Value(args_[i].get()); }

  Operation* front() const { return first_; }
  Operation* back() const { return last_; }
  bool empty() const { return first_ == nullptr; }
  size_t size() const { return size_; }
  /// Inserts `op` (detached) before `before` (nullptr: at the end). The block owns it.
  void insert(Operation* before, Operation* op);
  void push_back(Operation* op) { insert(nullptr, op); }
  /// Unlinks `op` without destroying it; the caller owns it.
  void remove(Operation* op);

  /// Iteration: for (Operation* op : *block). Safe to erase the current op only when
  /// the next pointer is read first (use `early_inc`).
  struct Iter {
    Operation* op;
    Operation* operator*() const { return op; }
    Iter& operator++();
    bool operator!=(const Iter& o) const { return op != o.op; }
  };
  Iter begin() const { return Iter{first_}; }
  Iter end() const { return Iter{nullptr}; }

 private:
  friend class Region;
  Region* parent_;
  std::vector<std::unique_ptr<detail::ValueImpl>> args_;
  Operation* first_ = nullptr;
  Operation* last_ = nullptr;
  size_t size_ = 0;
};

class Operation {
 public:
  /// Creates a detached operation. `attrs` need not be sorted. The caller owns it
  /// until it is inserted into a block (or destroys it with destroy()).
  static Operation* create(const OpInfo* info, const std::vector<Value>& operands,
                           const std::vector<Type>& result_types,
                           std::vector<NamedAttribute> attrs, int num_regions = -1);
  /// Destroys a detached op (and everything in its regions). Its results must be unused.
  void destroy();
  /// Unlinks from its block and destroys it. Its results must be unused.
  void erase();

  const OpInfo* info() const { return info_; }
  const std::string& name() const { return info_->name; }
  bool has(OpTrait t) const { return info_->has(t); }

  // ---- operands
  size_t num_operands() const { return num_operands_; }
  Value operand(size_t i) const { return operands_[i].get(); }
  OpOperand& operand_slot(size_t i) const { return operands_[i]; }
  void set_operand(size_t i, Value v) { operands_[i].set(v); }
  std::vector<Value> operands() const;

  // ---- results
  size_t num_results() const { return num_results_; }
  Value result(size_t i) const { return Value(&results_[i]); }
  std::vector<Value> results() const;
  /// True when no result has a use.
  bool use_empty() const;
  /// Result i's uses go to values[i].
  void replace_all_uses_with(const std::vector<Value>& values);

  // ---- attributes (sorted by name)
  const std::vector<NamedAttribute>& attributes() const { return attrs_; }
  /// Null Attribute when absent.
  Attribute attr(std::string_view name) const;
  void set_attr(const std::string& name, Attribute value);
  void remove_attr(std::string_view name);

  // ---- regions
  size_t num_regions() const { return num_regions_; }
  Region& region(size_t i) const { return regions_[i]; }

  // ---- position
  Block* parent_block() const { return block_; }
  Operation* parent_op() const { return block_ ? block_->parent_op() : nullptr; }
  Operation* next() const { return next_; }
  Operation* prev() const { return prev_; }
  /// True when this op is `other` or nested in one of its regions.
  bool is_inside(const Operation* other) const;

  /// Calls fn on every op nested in this op's regions, innermost first when post_order.
  template <typename Fn> void walk(Fn&& fn, bool post_order = true);

  mutable int64_t scratch = 0;  // per-walk scratch (numbering)

 private:
  friend class Block;
  Operation() = default;
  ~Operation();
  const OpInfo* info_ = nullptr;
  Block* block_ = nullptr;
  Operation* prev_ = nullptr;
  Operation* next_ = nullptr;
  uint32_t num_operands_ = 0, num_results_ = 0, num_regions_ = 0;
  OpOperand* operands_ = nullptr;
  detail::ValueImpl* results_ = nullptr;
  Region* regions_ = nullptr;
  std::vector<NamedAttribute> attrs_;
};

inline Block::Iter& Block::Iter::operator++() {
  op = op->next();
  return *this;
}

template <typename Fn> void Operation::walk(Fn&& fn, bool post_order) {
  for (uint32_t r = 0; r < num_regions_; ++r) {
    Region& reg = regions_[r];
    for (size_t b = 0; b < reg.size(); ++b) {
      Operation* op = reg.block(b)->front();
      while (op) {
        Operation* next = op->next();  // fn may erase op
        if (!post_order) fn(op);
        op->walk(fn, post_order);
        if (post_order) fn(op);
        op = next;
      }
    }
  }
}

}  // namespace oar::pir
