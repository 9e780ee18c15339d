// Backward helpers of paddle_core/ops/attention.yaml (included by the generated op files).
#pragma once

#include <tuple>

#include "oar_generated/ops_api.h"
#include "paddle_core/autograd/node.h"

namespace oar::ops {

/// Part `which` (0 query, 1 key, 2 value) of scaled_dot_product_attention's gradient.
/// The fused gradient op computes all three at once: the first call of a node
/// application runs it, later calls of the same application take their part from a
/// per-thread cache, which is dropped after the last input that needs a gradient.
inline Tensor attention_grad_part(const GradNode* node, int which, const Tensor& query,
                                  const Tensor& key, const Tensor& value,
                                  const Tensor& attn_mask,
                                  const Tensor& out, const Tensor& lse, const Tensor& grad_out,
                                  bool is_causal, double scale) {
  struct Cache {
    const GradNode* node = nullptr;
    Tensor parts[3];
    int remaining = 0;
  };
  thread_local Cache cache;
  if (cache.node != node) {
    auto [dq, dk, dv] = scaled_dot_product_attention_grad(query, key, value, attn_mask, out, lse,
                                                          grad_out, is_causal, scale);
    cache.parts[0] = dq, cache.parts[1] = dk, cache.parts[2] = dv;
    cache.node = node;
    cache.remaining = 0;
    for (int i = 0; i < 3; ++i) cache.remaining += node->needs_input_grad(i) ? 1 : 0;
  }
  Tensor r = cache.parts[which];
  if (--cache.remaining <= 0) {
    cache = Cache();
  }
  return r;
}

/// Raises NotImplemented: scaled_dot_product_attention has no second derivative.
[[noreturn]] inline Tensor attention_double_grad_unsupported() {
  OAR_THROW(Unimplemented,
            "scaled_dot_product_attention: higher-order gradients are not implemented "
            "(differentiate the composite path: matmul + softmax, e.g. with dropout_p > 0)");
}

}  // namespace oar::ops
