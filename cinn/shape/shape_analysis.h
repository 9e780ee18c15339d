// Symbolic shapes (Note [Symbolic shapes] in docs/notes/cinn.md). Every dimension of
// every value of a block gets a DimExpr: a constant, a symbol (S0, S1...: one per dynamic
// dim the analysis cannot derive) or arithmetic on them (add, mul, div, broadcast). Op
// semantics give equalities:
//   - elementwise/broadcast operands: two symbolic dims in the same (right-aligned)
//     position are assumed equal (a union of their symbols, recorded with the op that
//     implied it; broadcasting a ? against another ? at run time breaks the assumption,
//     and the kernels check it); a dim 1 broadcasts;
//   - shape-preserving ops (unary math, cast, scale, softmax...): the operand's dims;
//   - reductions: the operand's dims without (or with 1 for) the reduced axes;
//   - reshape: a dynamic result dim is the operand's element count over the static ones
//     (simplified: [S0, 64] -> [?, 4, 16] gives S0);
//   - matmul: the contraction dims are equal; transpose permutes;
//   - cinn.fusion: its block arguments take the operands' dims, its results the yields'.
// Anything else: static dims are constants, dynamic dims fresh symbols.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace oar::pir {
class Block;
class Operation;
class Program;
class Value;
}  // namespace oar::pir

namespace oar::cinn {

/// An immutable dim expression (shared nodes). Symbols are ids into a ShapeAnalysis.
class DimExpr {
 public:
  enum Kind : uint8_t { kConst, kSym, kAdd, kMul, kDiv, kBroadcast };
  DimExpr() = default;
  static DimExpr constant(int64_t v);
  static DimExpr symbol(int id);
  /// Simplifying constructors: constants fold, x*1 = x, x+0 = x, (c1*x)/c2 = (c1/c2)*x
  /// when c2 divides c1, broadcast(x, 1) = broadcast(x, x) = x.
  static DimExpr add(const DimExpr& a, const DimExpr& b);
  static DimExpr mul(const DimExpr& a, const DimExpr& b);
  static DimExpr div(const DimExpr& a, const DimExpr& b);
  static DimExpr broadcast(const DimExpr& a, const DimExpr& b);

  bool valid() const { return n_ != nullptr; }
  Kind kind() const;
  int64_t value() const;  // kConst
  int sym() const;        // kSym
  bool is_const(int64_t v) const { return valid() && kind() == kConst && value() == v; }
  const DimExpr& lhs() const;
  const DimExpr& rhs() const;

 private:
  struct Node;
  static DimExpr compound(Kind k, const DimExpr& a, const DimExpr& b);
  std::shared_ptr<const Node> n_;
};

class ShapeAnalysis {
 public:
  /// Analyzes `block` (and the blocks of its ops' regions, recursively).
  explicit ShapeAnalysis(pir::Block* block);

  /// The dims of `v` (empty when `v` is not a tensor of this block's analysis).
  std::vector<DimExpr> dims(pir::Value v) const;
  /// "[S0, 64]" with every symbol printed as its class representative.
  std::string str(pir::Value v) const;
  std::string str(const DimExpr& e) const;
  /// Dims for the fusion pass's legality (loop_ir.h: classify): constants as themselves,
  /// a symbol as -(2 + its representative), an expression as -(1000000 + an id shared
  /// by equal expressions). Two dims compare equal exactly when the analysis proves them
  /// equal (or assumed them equal from an op's semantics).
  std::vector<int64_t> encoded(pir::Value v) const;
  /// The equalities assumed: "S3 == S0 (pd_op.add)", in the order they were made.
  const std::vector<std::string>& assumptions() const { return assumed_; }
  /// The representative of a symbol's class.
  int find(int sym) const;

 private:
  DimExpr fresh();
  void unify(const DimExpr& a, const DimExpr& b, const pir::Operation* why);
  DimExpr bcast(const DimExpr& a, const DimExpr& b, const pir::Operation* why);
  void visit_block(pir::Block* block);
  void visit(pir::Operation* op);
  std::vector<DimExpr> from_type(pir::Value v);

  std::unordered_map<const void*, std::vector<DimExpr>> dims_;
  mutable std::vector<int> parent_;
  std::vector<std::string> assumed_;
  mutable std::unordered_map<std::string, int64_t> expr_ids_;
};

/// "S<id>" (built without `"S" + std::string&&`, which GCC 12 warns about falsely).
std::string symbol_name(int id);

/// The program's text with every op's result dims appended as a comment
/// (`  // [S0, 64]`) and the assumptions at the end: the `cinn_shape` dump.
std::string annotate_shapes(pir::Program& program);
/// The same for `text`, the printed form of `anchor` (a module op whose body is `block`;
/// null when `text` is a Program's form, whose module line is not an op line).
std::string annotate_shapes(const std::string& text, pir::Block* block, pir::Operation* anchor);
/// A group's symbolic signature with symbols renamed in order of first appearance
/// ("S0x64, 64 -> S0x64"): the same for every program that contains the same group,
/// whatever its symbols were numbered (part of the compile cache's key).
std::string fusion_signature(const ShapeAnalysis& a, const pir::Operation* fusion);

}  // namespace oar::cinn
