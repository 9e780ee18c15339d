#include "pir/ir/operation.h"

#include <algorithm>
#include <cstring>

#include "paddle_core/base/errors.h"

namespace oar::pir {

// ---------------------------------------------------------------- Value
Block* Value::parent_block() const {
  return impl_->block ? impl_->block : (impl_->op ? impl_->op->parent_block() : nullptr);
}
bool Value::has_one_use() const { return impl_->first_use && !impl_->first_use->next_use(); }
size_t Value::num_uses() const {
  size_t n = 0;
  for (OpOperand* u = impl_->first_use; u; u = u->next_use()) ++n;
  return n;
}
void Value::replace_all_uses_with(Value v) const {
  if (v == *this) return;
  OAR_ENFORCE(bool(v), InvalidArgument, "replace_all_uses_with: replacement value is null");
  while (impl_->first_use) impl_->first_use->set(v);
}

// ---------------------------------------------------------------- OpOperand
void OpOperand::link() {
  if (!value_) return;
  next_ = value_->first_use;
  if (next_) next_->prev_ = &next_;
  prev_ = &value_->first_use;
  value_->first_use = this;
}
void OpOperand::unlink() {
  if (!value_) return;
  *prev_ = next_;
  if (next_) next_->prev_ = prev_;
  next_ = nullptr;
  prev_ = nullptr;
}
void OpOperand::set(Value v) {
  unlink();
  value_ = v.impl();
  link();
}

// ---------------------------------------------------------------- Region / Block
Region::~Region() { blocks_.clear(); }
Block* Region::add_block() {
  blocks_.push_back(std::make_unique<Block>(this));
  return blocks_.back().get();
}
void Region::take_body(Region& other) {
  for (auto& b : other.blocks_) {
    b->parent_ = this;
    blocks_.push_back(std::move(b));
  }
  other.blocks_.clear();
}

Block::~Block() {
  // Drop every use first (nested ones too), so ops using values of earlier ops can be
  // destroyed in any order.
  for (Operation* op = first_; op; op = op->next_) {
    op->walk([](Operation* inner) {
      for (size_t i = 0; i < inner->num_operands(); ++i) inner->set_operand(i, Value());
    });
    for (size_t i = 0; i < op->num_operands(); ++i) op->set_operand(i, Value());
  }
  Operation* op = first_;
  while (op) {
    Operation* next = op->next_;
    op->block_ = nullptr;
    delete op;
    op = next;
  }
}
Operation* Block::parent_op() const { return parent_ ? parent_->owner() : nullptr; }
Value Block::add_argument(Type t) {
  auto v = std::make_unique<detail::ValueImpl>();
  v->type = t;
  v->block = this;
  v->index = static_cast<uint32_t>(args_.size());
  args_.push_back(std::move(v));
  return Value(args_.back().get());
}
void Block::insert(Operation* before, Operation* op) {
  OAR_ENFORCE(op->block_ == nullptr, PreconditionNotMet, "Block::insert: op '", op->name(),
              "' is already in a block");
  OAR_ENFORCE(before == nullptr || before->block_ == this, InvalidArgument,
              "Block::insert: the insertion point is not in this block");
  op->block_ = this;
  if (before == nullptr) {
    op->prev_ = last_;
    op->next_ = nullptr;
    if (last_) last_->next_ = op; else first_ = op;
    last_ = op;
  } else {
    op->next_ = before;
    op->prev_ = before->prev_;
    if (before->prev_) before->prev_->next_ = op; else first_ = op;
    before->prev_ = op;
  }
  ++size_;
}
void Block::remove(Operation* op) {
  OAR_ENFORCE(op->block_ == this, InvalidArgument, "Block::remove: op is not in this block");
  if (op->prev_) op->prev_->next_ = op->next_; else first_ = op->next_;
  if (op->next_) op->next_->prev_ = op->prev_; else last_ = op->prev_;
  op->prev_ = op->next_ = nullptr;
  op->block_ = nullptr;
  --size_;
}

// ---------------------------------------------------------------- Operation
Operation* Operation::create(const OpInfo* info, const std::vector<Value>& operands,
                             const std::vector<Type>& result_types,
                             std::vector<NamedAttribute> attrs, int num_regions) {
  OAR_ENFORCE(info != nullptr, InvalidArgument, "Operation::create: null OpInfo");
  auto* op = new Operation();
  op->info_ = info;
  op->num_operands_ = static_cast<uint32_t>(operands.size());
  op->num_results_ = static_cast<uint32_t>(result_types.size());
  op->num_regions_ = static_cast<uint32_t>(num_regions < 0 ? info->num_regions : num_regions);
  if (op->num_operands_) {
    op->operands_ = new OpOperand[op->num_operands_];
    for (uint32_t i = 0; i < op->num_operands_; ++i) {
      op->operands_[i].owner_ = op;
      op->operands_[i].index_ = i;
      op->operands_[i].set(operands[i]);
    }
  }
  if (op->num_results_) {
    op->results_ = new detail::ValueImpl[op->num_results_];
    for (uint32_t i = 0; i < op->num_results_; ++i) {
      op->results_[i].type = result_types[i];
      op->results_[i].op = op;
      op->results_[i].index = i;
    }
  }
  if (op->num_regions_) {
    op->regions_ = static_cast<Region*>(::operator new(sizeof(Region) * op->num_regions_));
    for (uint32_t i = 0; i < op->num_regions_; ++i) new (&op->regions_[i]) Region(op);
  }
  std::sort(attrs.begin(), attrs.end(),
            [](const NamedAttribute& a, const NamedAttribute& b) { return a.name < b.name; });
  for (size_t i = 1; i < attrs.size(); ++i)
    OAR_ENFORCE(attrs[i].name != attrs[i - 1].name, InvalidArgument, "Operation::create: op '",
                info->name, "' has attribute '", attrs[i].name, "' twice");
  op->attrs_ = std::move(attrs);
  return op;
}

Operation::~Operation() {
  for (uint32_t i = 0; i < num_regions_; ++i) regions_[i].~Region();
  ::operator delete(regions_);
  delete[] operands_;
  delete[] results_;
}

void Operation::destroy() {
  OAR_ENFORCE(block_ == nullptr, PreconditionNotMet, "Operation::destroy: op '", name(),
              "' is still in a block (use erase)");
  OAR_ENFORCE(use_empty(), PreconditionNotMet, "Operation::destroy: a result of '", name(),
              "' still has uses");
  delete this;
}
void Operation::erase() {
  OAR_ENFORCE(use_empty(), PreconditionNotMet, "Operation::erase: a result of '", name(),
              "' still has uses");
  if (block_) block_->remove(this);
  destroy();
}

std::vector<Value> Operation::operands() const {
  std::vector<Value> v;
  v.reserve(num_operands_);
  for (uint32_t i = 0; i < num_operands_; ++i) v.push_back(operand(i));
  return v;
}
std::vector<Value> Operation::results() const {
  std::vector<Value> v;
  v.reserve(num_results_);
  for (uint32_t i = 0; i < num_results_; ++i) v.push_back(result(i));
  return v;
}
bool Operation::use_empty() const {
  for (uint32_t i = 0; i < num_results_; ++i)
    if (results_[i].first_use) return false;
  return true;
}
void Operation::replace_all_uses_with(const std::vector<Value>& values) {
  OAR_ENFORCE(values.size() == num_results_, InvalidArgument, "replace_all_uses_with: op '",
              name(), "' has ", num_results_, " results, got ", values.size(), " replacements");
  for (uint32_t i = 0; i < num_results_; ++i) result(i).replace_all_uses_with(values[i]);
}

Attribute Operation::attr(std::string_view n) const {
  for (const auto& a : attrs_)
    if (a.name == n) return a.value;
  return Attribute();
}
void Operation::set_attr(const std::string& n, Attribute value) {
  auto it = std::lower_bound(attrs_.begin(), attrs_.end(), n,
                             [](const NamedAttribute& a, const std::string& k) { return a.name < k; });
  if (it != attrs_.end() && it->name == n) it->value = value;
  else attrs_.insert(it, NamedAttribute{n, value});
}
void Operation::remove_attr(std::string_view n) {
  attrs_.erase(std::remove_if(attrs_.begin(), attrs_.end(),
                              [&](const NamedAttribute& a) { return a.name == n; }),
               attrs_.end());
}
bool Operation::is_inside(const Operation* other) const {
  for (const Operation* p = this; p; p = p->parent_op())
    if (p == other) return true;
  return false;
}

}  // namespace oar::pir
