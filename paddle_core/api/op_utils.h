// Helpers the generated op functions call: argument checks, promotion casts and
// the in-place protocol. Hand-written ops use them too.
#pragma once

#include <initializer_list>

#include <vector>

#include "paddle_core/dispatch/kernel_registry.h"
#include "paddle_core/tensor/tensor.h"

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

// Note [Donated outputs]: the output 0 of an op whose kernel may write over its input 0
// (yaml `inplace_kernel`) can take that input's memory: the in-place variant passes x
// as the donor when nothing (autograd, a generic dispatch layer) needs x's old value and
// writable_in_place(x) holds; the executor passes a value no later step reads. After the
// infer-meta function the output adopts the donor's storage, so the kernel's alloc()
// writes into it and nothing is copied back.

/// `out` takes `donor`'s memory when dtype, place and dims match (`grows`: any dims;
/// alloc() keeps the memory when it is large enough, else grows it).
void adopt_donor(const DenseTensor& donor, DenseTensor* out, bool grows);
/// Makes x hold `result` (the output of a call that was given x as its donor): nothing to
/// do when the kernel wrote into x's memory, else a copy.
void write_back(const Tensor& x, const Tensor& result);
/// x may be written by a kernel directly: contiguous, not a view, its memory shared
/// with none of `others` (operands the kernel reads while writing).
bool writable_in_place(const Tensor& x, std::initializer_list<const Tensor*> others);

}  // namespace oar::ops::detail
