// Shape/dtype inference of the attention ops (paddle_core/ops/attention.yaml).
#pragma once

#include "paddle_core/meta/infer_meta.h"

namespace oar {

/// query [B, Sq, H, D] (or [Sq, H, D]), key [B, Sk, Hk, D], value [B, Sk, Hk, Dv] with
/// H % Hk == 0 (grouped-query attention); attn_mask (bool or float) broadcastable to
/// [B, H, Sq, Sk]. out: [B, Sq, H, Dv] in query's dtype; lse: [B, H, Sq], the log of
/// each row's softmax denominator (float32, float64 for float64 inputs).
void ScaledDotProductAttentionInferMeta(const DenseTensor& query, const DenseTensor& key,
                                        const DenseTensor& value, const DenseTensor* attn_mask,
                                        bool is_causal, double scale, DenseTensor* out,
                                        DenseTensor* lse);
/// Gradients of query, key and value: their own shapes and dtypes.
void ScaledDotProductAttentionGradInferMeta(
    const DenseTensor& query, const DenseTensor& key, const DenseTensor& value,
    const DenseTensor* attn_mask, const DenseTensor& out, const DenseTensor& lse,
    const DenseTensor& grad_out, bool is_causal, double scale, DenseTensor* query_grad,
    DenseTensor* key_grad, DenseTensor* value_grad);

}  // namespace oar
