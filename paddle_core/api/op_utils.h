// Helpers the generated op functions call: argument checks, promotion casts and
// the in-place protocol. Hand-written ops use them too.
#pragma once

#include <initializer_list>

#include <vector>

#include "paddle_core/api/tensor.h"
#include "paddle_core/dispatch/kernel_registry.h"

namespace oar::ops::detail {

void check_defined(const Tensor& t, const char* op, const char* arg);
void check_nonempty(const std::vector<Tensor>& ts, const char* op, const char* arg);
/// `t` cast to `dtype` (a differentiable cast), or `t` itself when it already is.
Tensor cast_if_needed(const Tensor& t, DataType dtype);

/// In-place ops: a leaf that requires grad may not be written in place.
void check_inplace_allowed(const Tensor& x, const char* op);
/// What the out-of-place op reads for x: x itself, or a copy when autograd records
/// (the backward may need x's old value, which the in-place write destroys).
/// `records`: some input of the op requires grad (and grad mode is on).
Tensor inplace_source(const Tensor& x, bool records);
inline Tensor inplace_source(const Tensor& x) { return inplace_source(x, x.requires_grad()); }
/// Another input `y` of an in-place op on x: a copy when it shares x's memory and
/// autograd records (the write would change what the backward reads), else y.
Tensor inplace_operand(const Tensor& y, const Tensor& x, bool records);
/// Writes `result` into x's memory, bumps x's version and moves x's autograd
/// history to result's node.
void commit_inplace(const Tensor& x, const Tensor& result, const char* op);

// Note [Donated outputs]: the in-place variant of an op whose kernel may write over its
// input 0 (yaml `inplace_kernel`) runs the out-of-place op inside a DonateScope; that
// op's output then starts as x's DenseTensor (take_donated, after its infer_meta), so
// the kernel's alloc() reuses x's memory and nothing is copied back. Keyed by the op's
// name: another op called on the way (a cast) never takes it. Only when no autograd
// record or trace needs x's old value and writable_in_place(x) holds.
class DonateScope {
 public:
  /// `any_shape`: the output may differ in shape (append_row, which grows x's memory).
  DonateScope(const char* op, const Tensor& x, bool any_shape = false);
  ~DonateScope();
  DonateScope(const DonateScope&) = delete;
  DonateScope& operator=(const DonateScope&) = delete;
};
/// The output of `op` becomes the donated x when one is pending for `op` with the same
/// dims (unless any_shape: then it only takes x's memory), dtype and place.
void take_donated(const char* op, DenseTensor* out);
/// x may be written by a kernel directly: contiguous, not a view, its memory shared
/// with none of `others` (operands the kernel reads while writing).
bool writable_in_place(const Tensor& x, std::initializer_list<const Tensor*> others);

}  // namespace oar::ops::detail
