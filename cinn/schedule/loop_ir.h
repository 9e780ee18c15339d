// The loop IR of a fused group (Note [Fusion legality], "Lowering" in docs/notes/cinn.md).
//
// A group computes over one loop space F = [d0, ..., dk-1]: rows R = d0*...*dk-2 and
// columns C = dk-1, with reductions along the column axis only. Every value of the group
// has a class relative to F (numpy broadcasting, right-aligned):
//   kFull   [R, C]       one element per (row, column)
//   kRow    [R, 1]       one per row (a reduction's result, keepdim or not)
//   kCol    [C]          one per column, the same for every row (a weight, a bias)
//   kScalar [] / [1..]   one for all
//   kBcast  [b, 1, L, C] a group input whose leading axes are each 1 or the space's
//                        (static), its last the columns: an attention mask [b, 1, Lq, Lk]
//                        over scores [b, h, Lq, Lk] (Note [Broadcast inputs])
//   kBrow   [1, C, 1, 1] a group input with one value per row that several rows share:
//                        every row axis 1 or the space's, the last 1 (batch_norm's
//                        per-channel mean over [N, C, H, W]; Note [Channel reductions])
// A reduction node of class kRow sums along the columns (per row); one of class kCol sums
// over the rows (a column reduction, Note [Column reductions]): it is only an output.
// The kernel is a list of nodes in dependency order. Codegen emits, per row, one loop
// over the columns per reduction (its operand inlined), then one loop writing the kFull
// outputs; elementwise nodes are inlined where they are used (recomputed, never stored).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "paddle_core/tensor/dtype.h"

namespace oar::pir {
class Operation;
class Type;
class Value;
}  // namespace oar::pir

namespace oar::cinn {

enum class VClass : uint8_t { kFull, kRow, kCol, kScalar, kBcast, kBrow, kNone };

/// The class of a tensor of dims `dims` in loop space `space` (kNone: incompatible).
VClass classify(const std::vector<int64_t>& dims, const std::vector<int64_t>& space);
/// Two dims lists equal, a dynamic dim (-1) equal only to another dynamic one. Note
/// [Fusion legality]: the runtime checks that such dims agree on the actual inputs.
bool same_dims(const std::vector<int64_t>& a, const std::vector<int64_t>& b);

/// The dims fusion legality compares: the value's type dims, or, while a DimsScope is
/// alive on this thread, what it returns (the shape analysis's encoding: equal exactly
/// when proven or assumed equal; Note [Symbolic shapes]).
std::vector<int64_t> value_dims(pir::Value v);
struct DimsScope {
  explicit DimsScope(std::function<std::vector<int64_t>(pir::Value)> f);
  ~DimsScope();
  DimsScope(const DimsScope&) = delete;
  DimsScope& operator=(const DimsScope&) = delete;
  std::function<std::vector<int64_t>(pir::Value)> prev;
};

struct Node {
  enum Kind : uint8_t { kInput, kConst, kUnary, kBinary, kReduce, kSelect };
  Kind kind = kInput;
  std::string op;      // unary: exp log log1p expm1 sqrt rsqrt reciprocal tanh erf abs neg relu sigmoid;
                       // binary: add sub mul div max min, erfe (erf(a) given b = exp(-a^2),
                       // share_erf_exp), lt le gt ge eq ne (1 or 0: a mask, Note [Select
                       // and masks]; logical ops are mul max ne eq of masks); reduce: sum
                       // max min; select: a != 0 ? b : c
  int a = -1, b = -1;  // operand nodes
  int c = -1;          // kSelect: the value where the mask `a` is 0
  int input = -1;      // kInput: the group input
  double value = 0;    // kConst
  VClass cls = VClass::kFull;
};

struct LoopKernel {
  DataType dtype = DataType::FLOAT32;
  std::vector<Node> nodes;         // dependency order
  std::vector<VClass> inputs;      // per group input
  std::vector<int> outputs;        // node per group output (kFull or kRow)
  std::vector<int> out_rank_drop;  // dims the output has fewer than the space: 1 when a kRow
                                   // output drops the column axis (keepdim=false); a kCol
                                   // output (a column sum) is [1, ..., 1, C] of rank k - drop
  int ref_input = -1;              // an input of class kFull: gives R and C at run time (-1: none)
  std::vector<int64_t> space;      // F as the IR knows it (-1: dynamic)
  std::vector<char> bool_in;       // per input: 1 for a bool mask (bytes, loaded as 1 or 0)
  std::vector<char> bool_out;      // per output: 1 for a bool mask (stored as bytes, v != 0)
  int col_outer = 0;               // Note [Column reductions]: leading axes its column
                                   // reductions keep (sum(axis=1) of [a, b, c]: 1); the rows
                                   // of one index of those axes reduce into one output row
  int col_axes = 1;                // the space's trailing axes the column axis merges
                                   // (Note [Channel reductions]: [N, C, H, W] as [N, C, H*W])
  std::vector<std::vector<int64_t>> bcast;  // per input: a kBcast or kBrow input's dims padded
                                            // with leading 1s to the space's rank (else empty)
  /// Note [Channel reductions]: a sum or mean over the last axis and others that keeps
  /// some row axes (batch_norm's statistics, axes (0, 2, 3) of [N, C, H, W]). Its node is
  /// a kRow sum; the run time folds the row sums into the output element of each row's
  /// kept indices, in row order.
  struct ChanOut {
    std::vector<int64_t> keep;   // the kept axes' dims, 1 elsewhere (the space's rank, last 1);
                                 // empty: not a channel reduction
    std::vector<int64_t> shape;  // the output's dims (static)
    bool mean = false;           // divide by the reduced count
  };
  std::vector<ChanOut> chan;  // per output
  /// Canonical text: the compile cache's key (with the dtype, target, compiler version).
  std::string text() const;
};

/// True when the fusion pass may put `op` into a group (its lowering below exists and
/// its dtypes are supported); `why` says what is missing otherwise.
bool can_lower_op(const pir::Operation* op, std::string* why = nullptr);
/// The float dtype a group holding `op` computes in (a compare's or a logical op's
/// operands', else the result's); UNDEFINED for an op without a lowering or without float
/// values. One group, one such dtype (Note [Select and masks]).
DataType group_dtype(const pir::Operation* op);
/// An op of bool operands and a bool result that the loop IR lowers (logical and/or/xor/
/// not of masks, an expand of a mask, a where of masks): it has no dtype of its own and
/// computes in its group's (float32 in a group of such ops only).
bool masks_only(const pir::Operation* op);
/// The leading axes a column reduction keeps (LoopKernel::col_outer; > 0 for sum/max/
/// min/mean over the middle axes); -1 for an op that is no column reduction. One group's
/// column reductions must agree.
int column_outer_of(const pir::Operation* op);
/// A column or channel reduction (Notes [Column reductions], [Channel reductions]): its
/// result is complete only after every row, so no member of its group may read it.
bool cross_row_reduction(const pir::Operation* op);
/// The loop space an op computes over: a reduction's input dims, else its result dims.
std::vector<int64_t> op_space(const pir::Operation* op);
/// True when every operand and result of `op` has a class in `space` that the lowering
/// accepts (results kFull or kRow; a reduction reads kFull). An operand made by a column
/// reduction fails when `sums_in_group` (the lowering: a group's own values); the fuser
/// passes false, since a sum made by another kernel is an ordinary input, and keeps a sum
/// from being read inside its own group with cross_row_reduction.
bool fits_space(const pir::Operation* op, const std::vector<int64_t>& space, bool sums_in_group = true);

/// A kBcast input's row for loop row r (Note [Broadcast inputs]):
/// sum over the terms of (r / div % mod) * stride; its element (r, c) is at row * C + c.
struct BcastTerm {
  int64_t div, mod, stride;
};
std::vector<BcastTerm> bcast_terms(const LoopKernel& k, int input);
/// The same terms for any dims `d` (padded to the space's rank) whose non-1 row axes and
/// every row axis after the first of them are static in `space`: a kBrow input's row or a
/// channel reduction's output element for loop row r.
std::vector<BcastTerm> row_terms(const std::vector<int64_t>& space, const std::vector<int64_t>& d);

/// `dims` padded with leading 1s to `rank`, its last `col_axes` dims merged into one (their
/// product; -1 when one is dynamic): a value's dims in a space whose column axis merges them.
std::vector<int64_t> merge_cols(const std::vector<int64_t>& dims, size_t rank, int col_axes);
/// Lowers a cinn.fusion op to its loop kernel; throws Unimplemented naming the op that
/// has no lowering.
LoopKernel lower_fusion(const pir::Operation* fusion);

}  // namespace oar::cinn

namespace oar::cinn {
/// The one-pass variance (Note [Reduction sweeps] in docs/notes/cinn.md): rewrites every
/// `sum((X - sum(X)/C)^2)` (LayerNorm's and var's two dependent reductions) into
/// reductions the code generator computes in one sweep over the row, with the row's
/// first element K as the shift (unary `first`): Y = X - K,
///   sum((X - mean)^2) = max(sum(Y*Y) - sum(Y)^2 / C, 0),   mean = sum(Y) / C + K.
/// Returns the number of rewrites. lower_fusion calls it.
int one_pass_variance(LoopKernel& k);
/// Note [erf shares exp] (docs/notes/cinn.md): every float32/bf16 erf(z) of a kernel that
/// also computes exp(-z^2) (as exp of c^2 x^2 terms: GELU's backward) becomes the binary
/// `erfe`(z, that exp node), computed from it. Returns the number of rewrites; lower_fusion
/// calls it.
int share_erf_exp(LoopKernel& k);
}  // namespace oar::cinn
