"""paddle.nn.functional.flash_attention: Paddle's flash-attention entry point, computed exactly
(no tiling approximation) by scaled_dot_product_attention; on CPU Paddle runs the same math:
softmax(Q K^T * scale [+ causal mask]), dropout (upscale_in_train), times V."""
import math

from ..._C import Tensor

__all__ = ["flash_attention"]


def flash_attention(query, key, value, dropout=0.0, causal=False, return_softmax=False, *,
                    fixed_seed_offset=None, rng_name="", training=True, name=None,
                    softmax_scale=None):
    """(out, softmax or None) for query/key/value [batch, seq_len, num_heads, head_dim];
    softmax (after dropout, as Paddle returns it) is [batch, num_heads, seq_q, seq_k]."""
    import oar
    from .. import _functional_attention as A
    op = "flash_attention"
    for n, t in (("query", query), ("key", key), ("value", value)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}: {n} must be a Tensor, got {type(t).__name__}")
        if t.ndim != 4:
            raise ValueError(f"{op}: {n} must be 4-D [batch, seq_len, num_heads, head_dim], got "
                             f"shape {list(t.shape)}")
    if key.shape[-1] != query.shape[-1] or key.shape[:2] != value.shape[:2] or \
            key.shape[0] != query.shape[0] or key.shape[2] != value.shape[2]:
        raise ValueError(f"{op}: query, key and value must share batch and head_dim (key and "
                         f"value also seq_len and num_heads), got shapes {list(query.shape)}, "
                         f"{list(key.shape)} and {list(value.shape)}")
    if isinstance(dropout, bool) or not isinstance(dropout, (int, float)) or \
            not 0.0 <= dropout <= 1.0:
        raise ValueError(f"{op}: dropout must be a float in [0, 1], got {dropout!r}")
    if fixed_seed_offset is not None or rng_name:
        raise NotImplementedError(f"{op}: fixed_seed_offset and rng_name select a CUDA "
                                  f"generator; Oar's dropout draws from the default generator")
    d = query.shape[-1]
    if softmax_scale is not None:
        if isinstance(softmax_scale, bool) or not isinstance(softmax_scale, (int, float)) or \
                not math.isfinite(softmax_scale):
            raise ValueError(f"{op}: softmax_scale must be a finite float, got {softmax_scale!r}")
        query = query * (float(softmax_scale) * math.sqrt(d)) if d else query
    dropout = float(dropout)
    if not return_softmax:
        out = A.scaled_dot_product_attention(query, key, value, None, dropout, bool(causal),
                                             bool(training))
        return out, None
    A._check(query, key, value, None, dropout)
    A._ops._scaled_dot_product_attention(query[..., :0, :, :], key, value, None, bool(causal), 0.0)
    group = query.shape[2] // max(key.shape[2], 1)
    q = query.transpose([0, 2, 1, 3])
    k = A._repeat_heads(key, group).transpose([0, 2, 1, 3])
    v = A._repeat_heads(value, group).transpose([0, 2, 1, 3])
    scores = oar.matmul(q, k, transpose_y=True) * (1.0 / math.sqrt(d) if d else 1.0)
    if causal:
        import numpy as np
        from ..._creation import _full_on
        keep = oar.to_tensor(np.tril(np.ones((query.shape[1], key.shape[1]), dtype=np.bool_)),
                             place=scores.place)
        scores = oar.where(keep, scores, _full_on(scores.place, [1], float("-inf"), scores.dtype))
    weights = oar.nn.functional.softmax(scores, axis=-1)
    if dropout > 0.0 and training:
        weights = oar.nn.functional.dropout(weights, dropout, training=True)
    out = oar.matmul(weights, v).transpose([0, 2, 1, 3])
    return out, weights
