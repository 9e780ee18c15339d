// The `cinn_fuse` pass: reduce-centred grouping on the op dialect (Note [Fusion
// legality] in docs/notes/cinn.md). Ops are visited in program order; an op the loop IR
// can lower joins the groups of its producers when the merged group stays legal:
//   - loop spaces: every operand and result of every member has a class (full, row,
//     col, scalar) in the group's space F, a reduction reduces F's last axis;
//   - no cycles: no path leaves the merged group and comes back into it through an
//     op outside it (a backward walk from the members' outside operands);
//   - membership: FLAGS_allow_cinn_ops / FLAGS_deny_cinn_ops, float32/float64/bfloat16, one
//     float dtype per group (bool masks of compares and where's condition aside; an op on
//     masks only, a logical op, an expand or a where of masks, joins a group of any dtype).
// Then groups over one loop space (the same dims: equal symbols, Note [Symbolic shapes])
// that read a common input merge (horizontal fusion) when no path joins them. A group
// with a reduction or at least two ops becomes a cinn.fusion placed where its last
// member was; outside ops between its members that read it move after it.
#include <algorithm>
#include <numeric>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "cinn/dialect.h"
#include "cinn/pipeline.h"
#include "cinn/schedule/loop_ir.h"
#include "cinn/shape/shape_analysis.h"
#include "pir/ir/builder.h"
#include "pir/pass/pass.h"

namespace oar::cinn {
using namespace pir;  // NOLINT

namespace {

struct Group {
  std::vector<Operation*> ops;
  std::vector<int64_t> space;
  DataType dtype = DataType::UNDEFINED;  // the one float dtype (Note [Select and masks]);
                                         // UNDEFINED while it holds ops on masks only
  bool reduce = false;
  bool alive = true;
};

class Fuser {
 public:
  explicit Fuser(Block* block) : block_(block) {
    int i = 0;
    for (Operation* op : *block) pos_[op] = i++;
  }

  void run() {
    std::vector<Operation*> ops;
    for (Operation* op : *block_) ops.push_back(op);
    for (Operation* op : ops) visit(op);
    horizontal();
    recompute_producers();
    for (Group& g : groups_)
      if (g.alive && (g.reduce || g.ops.size() >= 2) && !lone_middle_reduction(g)) emit(g);
  }
  bool changed() const { return changed_; }

 private:
  // A middle-axis reduction alone (x.sum(axis=1) of [a, b, c]) stays the eager kernel:
  // measured 0.57x-1.13x of it at 1 thread (bench/cinn_middle_axis.py, docs/notes/cinn.md);
  // with elementwise producers the group wins (1.5x-4.6x).
  static bool lone_middle_reduction(const Group& g) {
    for (Operation* op : g.ops)
      if (column_outer_of(op) <= 0) return false;
    return true;
  }
  // The column reductions of a group keep the same leading axes (LoopKernel::col_outer):
  // -1 when `ops` have none, -2 when they disagree, else the count.
  static int outer_of(const std::vector<Operation*>& ops, int k = -1) {
    for (Operation* op : ops) {
      const int o = column_outer_of(op);
      if (o < 0 || k == -2) continue;
      k = k < 0 ? o : k == o ? k : -2;
    }
    return k;
  }
  // Two dtypes one group may hold: equal, or one of them a group of masks only's.
  static bool joinable(DataType a, DataType b) {
    return a == b || a == DataType::UNDEFINED || b == DataType::UNDEFINED;
  }
  static DataType joined(DataType a, DataType b) { return a == DataType::UNDEFINED ? b : a; }
  int group_of(Operation* op) const {
    auto it = member_.find(op);
    return it == member_.end() ? -1 : it->second;
  }

  void visit(Operation* op) {
    if (!op_allowed(op->name()) || !can_lower_op(op)) return;
    std::vector<int64_t> space = op_space(op);
    if (!fits_space(op, space, false)) return;
    const std::string& nm = op->name();
    const bool reduce = nm == "pd_op.sum" || nm == "pd_op.max" || nm == "pd_op.min" || nm == "pd_op.amax" ||
                        nm == "pd_op.amin" || nm == "pd_op.mean" || nm == "pd_op.sum_to";
    // The producers' groups this op may merge with (UNDEFINED: an op on masks only, which
    // takes the dtype of the first group it merges with).
    DataType dt = group_dtype(op);
    std::vector<int> cands;
    for (Value v : op->operands())
      if (Operation* d = v.defining_op(); d && d->parent_block() == block_)
        if (int g = group_of(d); g >= 0 && std::find(cands.begin(), cands.end(), g) == cands.end()) cands.push_back(g);
    std::vector<int> merged;
    std::vector<int64_t> mspace = space;
    for (int g : cands) {
      if (!joinable(groups_[g].dtype, dt)) continue;
      std::vector<int64_t> s = merge_space(mspace, groups_[g], op, merged);
      if (s.empty()) continue;
      std::vector<int> trial = merged;
      trial.push_back(g);
      if (!acyclic(trial, op) || reads_cross_row(trial, op)) continue;
      merged = trial;
      mspace = s;
      dt = joined(dt, groups_[g].dtype);
    }
    int target;
    if (merged.empty()) {
      groups_.push_back(Group{});
      target = static_cast<int>(groups_.size()) - 1;
    } else {
      target = merged[0];
      for (size_t i = 1; i < merged.size(); ++i) {
        Group& from = groups_[merged[i]];
        for (Operation* m : from.ops) member_[m] = target;
        groups_[target].ops.insert(groups_[target].ops.end(), from.ops.begin(), from.ops.end());
        groups_[target].reduce |= from.reduce;
        from.ops.clear();
        from.alive = false;
      }
    }
    Group& g = groups_[target];
    g.ops.push_back(op);
    g.space = mspace;
    g.dtype = dt;
    g.reduce |= reduce;
    member_[op] = target;
  }

  bool emitted(const Group& g) const { return g.alive && (g.reduce || g.ops.size() >= 2); }

  // Horizontal fusion: two groups over the same loop space that read a common input and
  // have no path between them (the merged set acyclic) become one kernel: one pass over
  // the rows, the shared input read once, their reductions in one sweep (Note [Reduction
  // sweeps]). Groups that share nothing stay apart: merging them saves no memory traffic
  // on CPU and would move the ops between them. A lone elementwise op joins a kernel that
  // reads its input (LayerNorm's dx-like g * w next to the column sums of g).
  void horizontal() {
    for (size_t i = 0; i < groups_.size(); ++i) {
      if (!groups_[i].alive || groups_[i].ops.empty()) continue;
      for (size_t j = i + 1; j < groups_.size(); ++j) {
        Group& a = groups_[i];
        Group& b = groups_[j];
        if (!b.alive || b.ops.empty() || (!emitted(a) && !emitted(b))) continue;
        if (!joinable(a.dtype, b.dtype) || !same_dims(a.space, b.space) || !share_input(a, b) ||
            outer_of(b.ops, outer_of(a.ops)) == -2)
          continue;
        if (!acyclic({static_cast<int>(i), static_cast<int>(j)}, b.ops[0]) ||
            reads_cross_row({static_cast<int>(i), static_cast<int>(j)}, b.ops[0]))
          continue;
        for (Operation* m : b.ops) member_[m] = static_cast<int>(i);
        a.ops.insert(a.ops.end(), b.ops.begin(), b.ops.end());
        a.reduce |= b.reduce;
        a.dtype = joined(a.dtype, b.dtype);
        b.ops.clear();
        b.alive = false;
      }
    }
  }
  bool share_input(const Group& a, const Group& b) const {
    std::unordered_set<const void*> ins;
    for (Operation* m : a.ops)
      for (Value v : m->operands()) ins.insert(v.impl());
    for (Operation* m : b.ops)
      for (Value v : m->operands())
        if (ins.count(v.impl()) && group_of(v.defining_op()) < 0) return true;
    return false;
  }

  // The space of `g` (plus the groups already chosen) with `op` added: the larger of the
  // two spaces when every member fits it; empty when none fits.
  std::vector<int64_t> merge_space(const std::vector<int64_t>& cur, const Group& g, Operation* op,
                                   const std::vector<int>& chosen) const {
    int k = outer_of(g.ops, outer_of({op}));
    for (int c : chosen) k = outer_of(groups_[c].ops, k);
    if (k == -2) return {};
    for (const std::vector<int64_t>* s : {&cur, &g.space}) {
      bool ok = fits_space(op, *s, false);
      for (Operation* m : g.ops) ok = ok && fits_space(m, *s, false);
      for (int c : chosen)
        for (Operation* m : groups_[c].ops) ok = ok && fits_space(m, *s, false);
      if (ok) return *s;
    }
    return {};
  }

  // Note [Channel reductions]: a cheap elementwise op d of group G whose result is read
  // outside G only by the members of one other kernel H is computed again in H instead of
  // written by G and read back: d with the cheap ops of G it is computed from (at most
  // kCone ops; their other operands, the leaves, come from outside G), cloned after d.
  // Only when the clones fit H's space, H stays legal, and at most one leaf is a value of
  // H's full space that H does not read already (else H would read more than it saves).
  // batch_norm's `d = x - mean` feeds its variance's group and the normalization's; its
  // backward's `dy * w * rstd` chains feed the next group.
  static constexpr size_t kCone = 6;
  static bool cheap(const Operation* op) {
    static const std::unordered_set<std::string> names = {
        "pd_op.add",   "pd_op.subtract", "pd_op.multiply", "pd_op.divide", "pd_op.maximum", "pd_op.minimum",
        "pd_op.scale", "pd_op.square",   "pd_op.neg",      "pd_op.abs",    "pd_op.relu",    "pd_op.expand"};
    return names.count(op->name()) && op->num_results() == 1;
  }
  // d and the cheap members of group `g` it is computed from, operands first; false when
  // a member it reads is not cheap or the cone grows past kCone.
  bool cone_of(Operation* d, int g, std::vector<Operation*>& cone) const {
    if (std::find(cone.begin(), cone.end(), d) != cone.end()) return true;
    for (Value v : d->operands()) {
      Operation* e = v.defining_op();
      if (!e || group_of(e) != g) continue;
      if (!cheap(e) || !cone_of(e, g, cone)) return false;
    }
    cone.push_back(d);
    return cone.size() <= kCone;
  }
  void recompute_producers() {
    for (size_t gi = 0; gi < groups_.size(); ++gi) {
      if (!emitted(groups_[gi])) continue;
      const int g = static_cast<int>(gi);
      std::vector<Operation*> ops = groups_[gi].ops;
      for (Operation* d : ops) {
        if (!cheap(d)) continue;
        int h = -1;
        bool one = true;
        for (OpOperand* u = d->result(0).first_use(); u && one; u = u->next_use()) {
          const int gu = group_of(u->owner());
          if (gu == g) continue;
          one = gu >= 0 && (h < 0 || h == gu) && emitted(groups_[gu]);
          h = gu;
        }
        std::vector<Operation*> cone;
        if (!one || h < 0 || !cone_of(d, g, cone)) continue;
        Group& hg = groups_[h];
        std::unordered_set<const void*> in_cone, h_reads;
        for (Operation* c : cone) in_cone.insert(c->result(0).impl());
        for (Operation* m : hg.ops)
          for (Value v : m->operands()) h_reads.insert(v.impl());
        int new_full = 0;
        bool fits = true;
        for (Operation* c : cone) {
          fits = fits && fits_space(c, hg.space, false);
          for (Value v : c->operands())
            if (!in_cone.count(v.impl()) && !h_reads.count(v.impl()) && value_dims(v) == hg.space) {
              ++new_full;
              h_reads.insert(v.impl());
            }
        }
        if (!fits || new_full > 1) continue;
        Builder b(d->info()->ctx);
        b.set_insertion_point_after(d);
        std::unordered_map<const void*, Value> clone_of;
        std::vector<Operation*> clones;
        for (Operation* c : cone) {
          std::vector<Value> args;
          for (Value v : c->operands()) {
            auto it = clone_of.find(v.impl());
            args.push_back(it == clone_of.end() ? v : it->second);
          }
          Operation* k = b.build(c->info(), args, c->attributes(), {c->result(0).type()});
          pos_[k] = pos_[d];
          clone_of[c->result(0).impl()] = k->result(0);
          clones.push_back(k);
        }
        const size_t before = hg.ops.size();
        hg.ops.insert(hg.ops.end(), clones.begin(), clones.end());
        for (Operation* k : clones) member_[k] = h;
        Operation* last = clones.back();
        hg.ops.pop_back();
        const bool legal = !reads_cross_row({h}, last) && acyclic({h}, last);
        hg.ops.push_back(last);
        if (!legal) {
          hg.ops.resize(before);
          for (auto it = clones.rbegin(); it != clones.rend(); ++it) {
            member_.erase(*it);
            pos_.erase(*it);
            (*it)->erase();
          }
          continue;
        }
        std::vector<OpOperand*> uses;
        for (OpOperand* u = d->result(0).first_use(); u; u = u->next_use())
          if (group_of(u->owner()) == h) uses.push_back(u);
        for (OpOperand* u : uses) u->set(last->result(0));
      }
    }
  }

  // A column or channel reduction's result is complete only after every row: no member
  // of the merged set (the groups `gs` and `op`) may read one of another member
  // (batch_norm's `x - mean(x)` stays out of the mean's group; Note [Channel reductions]).
  bool reads_cross_row(const std::vector<int>& gs, Operation* op) const {
    std::vector<Operation*> all{op};
    for (int g : gs) all.insert(all.end(), groups_[g].ops.begin(), groups_[g].ops.end());
    std::unordered_set<const void*> sums;
    for (Operation* m : all)
      if (cross_row_reduction(m)) sums.insert(m->result(0).impl());
    for (Operation* m : all)
      for (Value v : m->operands())
        if (sums.count(v.impl())) return true;
    return false;
  }

  // No path from the merged set out through another op and back in: walk back from the
  // outside operands of the merged ops; reaching a member is a cycle. Only ops after the
  // earliest member can be on such a path.
  bool acyclic(const std::vector<int>& gs, Operation* op) const {
    std::unordered_set<const Operation*> in{op};
    for (int g : gs) in.insert(groups_[g].ops.begin(), groups_[g].ops.end());
    int first = pos_.at(op);
    for (const Operation* m : in) first = std::min(first, pos_.at(m));
    std::vector<Operation*> stack;
    std::unordered_set<const Operation*> seen;
    for (const Operation* m : in)
      for (Value v : m->operands())
        if (Operation* d = v ? v.defining_op() : nullptr; d && !in.count(d)) stack.push_back(d);
    while (!stack.empty()) {
      Operation* d = stack.back();
      stack.pop_back();
      auto p = pos_.find(d);
      if (p == pos_.end() || p->second < first || !seen.insert(d).second) continue;
      for (Value v : d->operands()) {
        Operation* e = v ? v.defining_op() : nullptr;
        if (!e) continue;
        if (in.count(e)) return false;
        stack.push_back(e);
      }
    }
    return true;
  }

  void emit(Group& g) {
    std::sort(g.ops.begin(), g.ops.end(), [&](Operation* a, Operation* b) { return pos_[a] < pos_[b]; });
    std::unordered_set<const Operation*> in(g.ops.begin(), g.ops.end());
    std::vector<Value> inputs, outputs;
    std::unordered_set<const void*> seen_in;
    for (Operation* m : g.ops)
      for (Value v : m->operands())
        if (!in.count(v.defining_op()) && seen_in.insert(v.impl()).second) inputs.push_back(v);
    for (Operation* m : g.ops)
      for (Value r : m->results()) {
        bool outside = false;
        for (OpOperand* u = r.first_use(); u; u = u->next_use()) outside |= !in.count(u->owner());
        if (outside) outputs.push_back(r);
      }
    if (outputs.empty()) return;  // dead: dce removes it
    IrContext* ctx = g.ops[0]->info()->ctx;
    Operation* last = g.ops.back();
    // Outside ops between the members that read the group move after it (they cannot
    // feed it: the group is acyclic).
    std::unordered_set<const Operation*> tainted(in);
    std::vector<Operation*> movers;
    for (Operation* o = g.ops.front(); o != last; o = o->next()) {
      if (in.count(o)) continue;
      bool reads = false;
      for (Value v : o->operands()) reads |= v && tainted.count(v.defining_op());
      o->walk([&](Operation* inner) {
        for (Value v : inner->operands()) reads |= v && tainted.count(v.defining_op());
      });
      if (reads) {
        tainted.insert(o);
        movers.push_back(o);
      }
    }
    std::vector<Type> out_types;
    for (Value v : outputs) out_types.push_back(v.type());
    Builder b(ctx);
    b.set_insertion_point_after(last);
    Operation* f = b.build(kFusionOp, inputs, {}, out_types, 1);
    Block* body = f->region(0).add_block();
    std::unordered_map<const void*, Value> map;
    for (Value v : inputs) map[v.impl()] = body->add_argument(v.type());
    Builder inner(ctx, body);
    for (Operation* m : g.ops) {
      std::vector<Value> ops;
      for (Value v : m->operands()) ops.push_back(map.at(v.impl()));
      Operation* c = inner.build(m->info(), ops, m->attributes(), {m->result(0).type()});
      map[m->result(0).impl()] = c->result(0);
    }
    std::vector<Value> ys;
    for (Value v : outputs) ys.push_back(map.at(v.impl()));
    inner.build(kYieldOp, ys, {}, {});
    for (size_t i = 0; i < outputs.size(); ++i) outputs[i].replace_all_uses_with(f->result(i));
    Operation* after = f;
    for (Operation* o : movers) {
      block_->remove(o);
      block_->insert(after->next(), o);
      after = o;
    }
    for (auto it = g.ops.rbegin(); it != g.ops.rend(); ++it) (*it)->erase();
    changed_ = true;
  }

  Block* block_;
  std::unordered_map<const Operation*, int> pos_;
  std::unordered_map<const Operation*, int> member_;
  std::vector<Group> groups_;
  bool changed_ = false;
};

class FusePass : public Pass {
 public:
  FusePass() : Pass("cinn_fuse") {}
  bool run(Operation* anchor) override {
    register_cinn_dialect(anchor->info()->ctx);
    bool changed = false;
    for (size_t r = 0; r < anchor->num_regions(); ++r)
      for (size_t b = 0; b < anchor->region(r).size(); ++b) {
        // Legality compares symbolic dims (Note [Symbolic shapes]): "same symbol", not "both ?".
        ShapeAnalysis shapes(anchor->region(r).block(b));
        DimsScope scope([&](Value v) {
          std::vector<int64_t> e = shapes.encoded(v);
          return e.size() == v.type().dims().size() ? e : v.type().dims();
        });
        Fuser f(anchor->region(r).block(b));
        f.run();
        changed |= f.changed();
      }
    return changed;
  }
};

}  // namespace

std::unique_ptr<Pass> create_fuse_pass() { return std::make_unique<FusePass>(); }

}  // namespace oar::cinn
