// Pattern rewriting: a RewritePattern matches an op (by root name) and rewrites it
// through a PatternRewriter; apply_patterns_greedily runs a set of patterns on a
// worklist until nothing matches (MLIR's greedy driver). Ops the rewriter creates,
// and users of replaced values, go back on the worklist; dead pure ops are erased.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "pir/ir/builder.h"

namespace oar::pir {

class PatternRewriter : public Builder {
 public:
  explicit PatternRewriter(IrContext* ctx) : Builder(ctx) {}
  /// Replaces every use of op's results with `values`, then erases op.
  void replace_op(Operation* op, const std::vector<Value>& values);
  /// Erases an op whose results are unused.
  void erase_op(Operation* op);
  /// from.replace_all_uses_with(to), telling the driver which ops changed.
  void replace_all_uses_with(Value from, Value to);
  /// The op's operands/attributes changed in place.
  void notify_changed(Operation* op);

  struct Hooks {
    virtual ~Hooks() = default;
    virtual void on_erase(Operation* op) = 0;
    virtual void on_changed(Operation* op) = 0;
  };
  void set_hooks(Hooks* h) { hooks_ = h; }

 private:
  Hooks* hooks_ = nullptr;
};

class RewritePattern {
 public:
  /// `root`: the op name this pattern matches ("" matches every op).
  explicit RewritePattern(std::string root, int benefit = 1) : root_(std::move(root)), benefit_(benefit) {}
  virtual ~RewritePattern() = default;
  const std::string& root() const { return root_; }
  int benefit() const { return benefit_; }
  /// Rewrites `op` and returns true, or returns false leaving the IR untouched.
  virtual bool match_and_rewrite(Operation* op, PatternRewriter& rewriter) const = 0;
  /// A name for debugging/statistics.
  virtual std::string name() const { return root_; }

 private:
  std::string root_;
  int benefit_;
};

class RewritePatternSet {
 public:
  void add(std::unique_ptr<RewritePattern> p) { patterns_.push_back(std::move(p)); }
  const std::vector<std::unique_ptr<RewritePattern>>& patterns() const { return patterns_; }
  bool empty() const { return patterns_.empty(); }

 private:
  std::vector<std::unique_ptr<RewritePattern>> patterns_;
};

struct GreedyConfig {
  /// Stop after this many successful rewrites per op in the region (guards cycles).
  int max_rewrites_per_op = 8;
  /// Erase pure ops whose results are unused.
  bool erase_dead = true;
  /// Visit ops last-to-first first (fusion: the largest pattern, anchored at its last
  /// op, is seen before its sub-patterns).
  bool bottom_up = false;
};

/// Applies `patterns` to every op nested in `root` until a fixed point. Returns true
/// when anything changed.
bool apply_patterns_greedily(Operation* root, const RewritePatternSet& patterns,
                             const GreedyConfig& config = {});

/// True when removing `op` (unused) cannot change what the program does.
bool is_pure(const Operation* op);

/// True when a cf.while body's next condition is the same in every iteration (Note
/// [Bounded loops]): a loop whose condition holds once would then never end.
bool loop_condition_is_fixed(const Block* body);

}  // namespace oar::pir
