#include "pir/ir/verifier.h"

#include <atomic>
#include <string>
#include <vector>

#include "paddle_core/base/errors.h"
#include "pir/dialect/op/op_support.h"
#include "pir/ir/infer.h"
#include "pir/ir/operation.h"
#include "pir/ir/printer.h"
#include "pir/ir/program.h"

namespace oar::pir {
namespace {

std::atomic<int64_t> g_verify_epoch{1};

class Verifier {
 public:
  explicit Verifier(const VerifyOptions& o) : opts_(o), mark_(g_verify_epoch.fetch_add(1) | (int64_t(1) << 62)) {}

  void block(const Block* b, const Region* parent) {
    OAR_ENFORCE(b->parent() == parent, Internal, "verify: block parent pointer is wrong");
    size_t saved = defined_.size();
    for (size_t i = 0; i < b->num_arguments(); ++i) define(b->argument(i));
    size_t n = 0;
    for (const Operation* op : *b) {
      ++n;
      check(op->parent_block() == b, op, "its parent block pointer is wrong");
      if (op->has(kTraitTerminator)) check(op->next() == nullptr, op, "a terminator must be the last op of its block");
      this->op(op);
    }
    check_size(b, n);
    for (size_t i = saved; i < defined_.size(); ++i) defined_[i]->scratch = 0;
    defined_.resize(saved);
  }

  void op(const Operation* op) {
    ++count_;
    const OpInfo* info = op->info();
    for (size_t i = 0; i < op->num_operands(); ++i) {
      const OpOperand& slot = op->operand_slot(i);
      check(slot.owner() == op && slot.index() == i, op, "operand slot bookkeeping is corrupt");
      Value v = op->operand(i);
      if (!v) continue;
      check(v.impl()->scratch == mark_, op,
            "operand " + std::to_string(i) + " is not defined before this op (or not visible here)");
    }
    for (size_t i = 0; i < op->num_results(); ++i)
      check(bool(op->result(i).type()), op, "result " + std::to_string(i) + " has no type");
    if (info->name != "builtin.module")
      check(op->num_regions() == static_cast<size_t>(info->num_regions), op,
            "expected " + std::to_string(info->num_regions) + " region(s), got " + std::to_string(op->num_regions()));
    try {
      if (info->has_schema) schema(op);
      if (info->verify) info->verify(op);
    } catch (const Error& e) {
      check(false, op, e.message());
    }
    for (size_t r = 0; r < op->num_regions(); ++r) {
      check(op->region(r).owner() == op, op, "region owner pointer is wrong");
      for (size_t b = 0; b < op->region(r).size(); ++b) block(op->region(r).block(b), &op->region(r));
    }
    for (size_t i = 0; i < op->num_results(); ++i) define(op->result(i));
  }

  void schema(const Operation* op) {
    const OpInfo* info = op->info();
    std::string names;
    for (const auto& in : info->inputs) names += (names.empty() ? "" : ", ") + in.name;
    OAR_ENFORCE(op->num_operands() == info->inputs.size(), InvalidArgument, "expected ",
                info->inputs.size(), " operand(s) (", names, "), got ", op->num_operands());
    std::vector<Type> types;
    for (size_t i = 0; i < info->inputs.size(); ++i) {
      Value v = op->operand(i);
      const InputSpec& in = info->inputs[i];
      types.push_back(v ? v.type() : Type());
      if (in.kind == InputSpec::kOptional && !v) continue;
      OAR_ENFORCE(bool(v), InvalidArgument, "operand ", i, " ('", in.name, "') is required but null");
      if (in.kind == InputSpec::kList) {
        bool ok = v.type().is_vector();
        for (size_t k = 0; ok && k < v.type().size(); ++k) ok = v.type().element(k).is_tensor();
        OAR_ENFORCE(ok, InvalidArgument, "operand ", i, " ('", in.name,
                    "') must be a vector of tensors (from builtin.combine), got ", v.type().str());
      } else {
        OAR_ENFORCE(v.type().is_tensor(), InvalidArgument, "operand ", i, " ('", in.name,
                    "') must be a tensor, got ", v.type().str());
      }
    }
    for (const auto& a : op->attributes()) {
      int idx = info->attr_index(a.name);
      // The layouts a DistModel step ran with (Note [DistModel]); the placements dist-complete
      // gives each operand and result (Note [Static auto-parallel passes]).
      if (idx < 0 && (a.name == "dist_attr" || a.name == "dist_in" || a.name == "dist_out")) continue;
      if (idx < 0) {
        std::string known;
        for (const auto& s : info->attrs) known += (known.empty() ? "" : ", ") + s.name;
        OAR_THROW(InvalidArgument, "unknown attribute '", a.name, "' (the op takes: ",
                  known.empty() ? "none" : known, ")");
      }
      const AttrSpec& spec = info->attrs[idx];
      OAR_ENFORCE(attr_kind_matches(spec.type, a.value), InvalidArgument, "attribute '", a.name,
                  "' must be ", spec.type, ", got ", a.value.str());
    }
    for (const auto& spec : info->attrs)
      OAR_ENFORCE(bool(spec.default_value) || bool(op->attr(spec.name)), InvalidArgument,
                  "required attribute '", spec.name, "' (", spec.type, ") is missing");
    OAR_ENFORCE(op->num_results() == info->outputs.size(), InvalidArgument, "expected ",
                info->outputs.size(), " result(s), got ", op->num_results());
    for (size_t i = 0; i < info->outputs.size(); ++i) {
      Type t = op->result(i).type();
      OAR_ENFORCE(info->outputs[i].is_list ? t.is_vector() : t.is_tensor(), InvalidArgument, "result ", i,
                  " ('", info->outputs[i].name, "') must be a ", info->outputs[i].is_list ? "vector" : "tensor",
                  ", got ", t.str());
    }
    if (opts_.check_inferred_types && info->infer) {
      std::vector<Type> inferred = infer_result_types(ctx_of(op), info, types, op->attributes());
      for (size_t i = 0; i < inferred.size() && i < op->num_results(); ++i)
        OAR_ENFORCE(inferred[i] == op->result(i).type(), InvalidArgument, "result ", i, " has type ",
                    op->result(i).type().str(), " but shape inference gives ", inferred[i].str());
    }
  }

  void define(Value v) {
    for (OpOperand* u = v.first_use(); u; u = u->next_use())
      OAR_ENFORCE(u->owner() && u->index() < u->owner()->num_operands() &&
                      u->owner()->operand(u->index()) == v,
                  Internal, "verify: the use list of a value is corrupt");
    v.impl()->scratch = mark_;
    defined_.push_back(v.impl());
  }

  void check(bool ok, const Operation* op, const std::string& msg) {
    if (ok) return;
    std::string text = print_op(op);
    if (text.size() > 300) text = text.substr(0, 300) + "...";
    while (!text.empty() && text.back() == '\n') text.pop_back();
    OAR_THROW(InvalidArgument, "verify: op '", op->name(), "' (op #", count_, "): ", msg, "\n  in: ", text);
  }
  void check_size(const Block* b, size_t n) {
    OAR_ENFORCE(b->size() == n, Internal, "verify: block size bookkeeping is corrupt");
  }

  static IrContext* ctx_of(const Operation* op) { return op->info()->ctx; }

  void clear_all() {
    for (auto* v : defined_) v->scratch = 0;
    defined_.clear();
  }

 private:
  VerifyOptions opts_;
  int64_t mark_;
  std::vector<detail::ValueImpl*> defined_;
  size_t count_ = 0;
};

}  // namespace

void verify_program(const Program& p, const VerifyOptions& opts) {
  Verifier v(opts);
  try {
    v.op(p.module());
  } catch (...) {
    v.clear_all();
    throw;
  }
  v.clear_all();
}

void verify_op(const Operation* op, const VerifyOptions& opts) {
  Verifier v(opts);
  // Values defined outside `op` are visible: mark every value an operand refers to
  // that is not defined inside it.
  std::vector<Value> outside;
  const_cast<Operation*>(op)->walk([&](Operation* inner) {
    for (size_t i = 0; i < inner->num_operands(); ++i) {
      Value x = inner->operand(i);
      if (!x) continue;
      Operation* def = x.defining_op();
      Operation* owner = x.is_block_argument() ? x.parent_block()->parent_op() : def;
      if (!owner || !owner->is_inside(op) || owner == op) outside.push_back(x);
    }
  });
  for (size_t i = 0; i < op->num_operands(); ++i)
    if (op->operand(i)) outside.push_back(op->operand(i));
  for (Value x : outside) v.define(x);
  try {
    v.op(op);
  } catch (...) {
    v.clear_all();
    throw;
  }
  v.clear_all();
}

}  // namespace oar::pir
