// Post-accumulate hooks: run after a leaf's gradient has been added into its .grad,
// once per backward pass that reaches the leaf. DataParallel's reducer starts a bucket's
// all-reduce from them while backward goes on (Paddle's
// Tensor._register_backward_hook / torch's register_post_accumulate_grad_hook).
//
// They live in a table keyed by the leaf rather than in AccumulateGrad so that adding
// them did not change node.h, which every generated op file includes.
#pragma once

#include <cstdint>
#include <functional>

#include "paddle_core/tensor/tensor.h"

namespace oar::autograd {

using PostAccumulateHook = std::function<void(const Tensor& leaf)>;

/// Registers `hook` on leaf tensor `leaf` (which must require grad); returns its id.
/// The hook holds no reference to the leaf: it is dropped when the leaf dies.
int64_t add_post_accumulate_hook(const Tensor& leaf, PostAccumulateHook hook);
bool remove_post_accumulate_hook(int64_t id);
/// Whether `leaf` has a post-accumulate hook (a to_static training step cannot replay one:
/// its traced backward accumulates nothing, so such a step runs eagerly).
bool has_post_accumulate_hooks(const Tensor& leaf);
/// Called by AccumulateGrad::apply after it updated `leaf`'s .grad.
void run_post_accumulate_hooks(const std::shared_ptr<TensorImpl>& leaf);

}  // namespace oar::autograd
