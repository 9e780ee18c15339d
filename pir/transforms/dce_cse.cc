// Dead-code elimination and common-subexpression elimination.
#include <unordered_map>
#include <vector>

#include "pir/ir/operation.h"
#include "pir/transforms/passes.h"

namespace oar::pir {
namespace {

// ---------------------------------------------------------------- DCE
bool dce_block(Block* b) {
  bool changed = false;
  for (Operation* op = b->back(); op;) {
    Operation* prev = op->prev();
    for (size_t r = 0; r < op->num_regions(); ++r)
      for (size_t k = 0; k < op->region(r).size(); ++k) changed |= dce_block(op->region(r).block(k));
    if (op->use_empty() && is_pure(op)) {
      op->erase();
      changed = true;
    }
    op = prev;
  }
  return changed;
}

class DcePass : public Pass {
 public:
  DcePass() : Pass("dce") {}
  bool run(Operation* anchor) override {
    bool changed = false;
    for (size_t r = 0; r < anchor->num_regions(); ++r)
      for (size_t k = 0; k < anchor->region(r).size(); ++k) changed |= dce_block(anchor->region(r).block(k));
    return changed;
  }
};

// ---------------------------------------------------------------- CSE
inline size_t mix(size_t h, size_t v) { return h ^ (v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2)); }

struct OpKey {
  Operation* op;
};
bool commutes(const Operation* op) { return op->has(kTraitCommutative) && op->num_operands() >= 2; }
void* operand_key(const Operation* op, size_t i) {
  if (commutes(op) && i < 2) {
    void* a = op->operand(0).impl();
    void* b = op->operand(1).impl();
    return i == 0 ? std::min(a, b) : std::max(a, b);
  }
  return op->operand(i).impl();
}
struct OpKeyHash {
  size_t operator()(const OpKey& k) const {
    const Operation* op = k.op;
    size_t h = std::hash<const void*>()(op->info());
    for (size_t i = 0; i < op->num_operands(); ++i) h = mix(h, std::hash<void*>()(operand_key(op, i)));
    for (const auto& a : op->attributes()) h = mix(h, std::hash<const void*>()(a.value.storage()));
    for (size_t i = 0; i < op->num_results(); ++i) h = mix(h, std::hash<const void*>()(op->result(i).type().storage()));
    return h;
  }
};
struct OpKeyEq {
  bool operator()(const OpKey& x, const OpKey& y) const {
    const Operation *a = x.op, *b = y.op;
    if (a == b) return true;
    if (a->info() != b->info() || a->num_operands() != b->num_operands() ||
        a->num_results() != b->num_results() || a->attributes().size() != b->attributes().size())
      return false;
    for (size_t i = 0; i < a->num_operands(); ++i)
      if (operand_key(a, i) != operand_key(b, i)) return false;
    for (size_t i = 0; i < a->num_results(); ++i)
      if (a->result(i).type() != b->result(i).type()) return false;
    for (size_t i = 0; i < a->attributes().size(); ++i)
      if (a->attributes()[i].name != b->attributes()[i].name ||
          a->attributes()[i].value != b->attributes()[i].value)
        return false;
    return true;
  }
};

class CsePass : public Pass {
 public:
  CsePass() : Pass("cse") {}
  bool run(Operation* anchor) override {
    changed_ = false;
    table_.clear();
    table_.reserve(1024);
    for (size_t r = 0; r < anchor->num_regions(); ++r)
      for (size_t k = 0; k < anchor->region(r).size(); ++k) block(anchor->region(r).block(k));
    return changed_;
  }

 private:
  void block(Block* b) {
    std::vector<Operation*> added;  // scope: entries to drop when leaving the block
    for (Operation* op = b->front(); op;) {
      Operation* next = op->next();
      for (size_t r = 0; r < op->num_regions(); ++r)
        for (size_t k = 0; k < op->region(r).size(); ++k) block(op->region(r).block(k));
      if (is_pure(op) && !op->has(kTraitRandom) && op->num_results() > 0) {
        auto [it, inserted] = table_.emplace(OpKey{op}, op);
        if (!inserted) {
          op->replace_all_uses_with(it->second->results());
          op->erase();
          changed_ = true;
        } else {
          added.push_back(op);
        }
      }
      op = next;
    }
    for (Operation* op : added) table_.erase(OpKey{op});
  }
  std::unordered_map<OpKey, Operation*, OpKeyHash, OpKeyEq> table_;
  bool changed_ = false;
};

}  // namespace

std::unique_ptr<Pass> create_dce_pass() { return std::make_unique<DcePass>(); }
std::unique_ptr<Pass> create_cse_pass() { return std::make_unique<CsePass>(); }

}  // namespace oar::pir
