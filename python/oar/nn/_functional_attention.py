"""oar.nn.functional.scaled_dot_product_attention (Paddle 3.x signature and layout).

Without dropout the fused kernel runs (op scaled_dot_product_attention in
paddle_core/ops/attention.yaml): it never materializes the score matrix and has a
fused backward. With dropout (dropout_p > 0 and training) or a float mask that needs a
gradient, the composite path below runs instead: matmul, mask, softmax, dropout,
matmul, all differentiable ops.
"""
import math

import numpy as np

from .. import _C

_ops = _C.ops

__all__ = ["scaled_dot_product_attention"]


def _check(query, key, value, attn_mask, dropout_p):
    op = "scaled_dot_product_attention"
    for name, t in (("query", query), ("key", key), ("value", value)):
        if not isinstance(t, _C.Tensor):
            raise TypeError(f"{op}: {name} must be a Tensor, got {type(t).__name__}")
    if attn_mask is not None and not isinstance(attn_mask, _C.Tensor):
        raise TypeError(f"{op}: attn_mask must be a Tensor or None, got {type(attn_mask).__name__}")
    if isinstance(dropout_p, bool) or not isinstance(dropout_p, (int, float)) or \
            not 0.0 <= dropout_p <= 1.0:
        raise ValueError(f"{op}: dropout_p must be a float in [0, 1], got {dropout_p!r}")


def _check_mask(query, key, attn_mask):
    if attn_mask is None:
        return
    q, k = query.shape, key.shape
    full = [q[0], q[2], q[1], k[1]] if query.ndim == 4 else [q[1], q[0], k[0]]
    m = attn_mask.shape
    ok = len(m) <= len(full) and all(a in (1, b) for a, b in zip(m[::-1], full[::-1]))
    if not ok:
        raise ValueError(f"scaled_dot_product_attention: attn_mask of shape {m} does not "
                         f"broadcast to the attention scores' shape {full}")
    if attn_mask.dtype.name != "bool" and not attn_mask.dtype.is_floating_point:
        raise TypeError("scaled_dot_product_attention: attn_mask must be bool or "
                        f"floating-point, got {attn_mask.dtype.name}")


def _repeat_heads(t, group):
    """[.., S, Hk, D] -> [.., S, Hk * group, D] (each kv head serves `group` query heads)."""
    if group == 1:
        return t
    shape = list(t.shape)
    e = _ops.unsqueeze(t, [-2])
    e = _ops.expand(e, shape[:-1] + [group, shape[-1]])
    return _ops.reshape(e, shape[:-2] + [shape[-2] * group, shape[-1]])


def _composite(query, key, value, attn_mask, dropout_p, is_causal, training):
    from . import functional as F
    from .._creation import _full_on, to_tensor
    rank = query.ndim
    perm = [0, 2, 1, 3] if rank == 4 else [1, 0, 2]
    group = query.shape[-2] // max(key.shape[-2], 1)
    q = _ops.transpose(query, perm)
    k = _ops.transpose(_repeat_heads(key, group), perm)
    v = _ops.transpose(_repeat_heads(value, group), perm)
    scores = _ops.matmul(q, k, False, True) * (1.0 / math.sqrt(query.shape[-1]))
    sq, sk = query.shape[-3], key.shape[-3]
    if is_causal:
        keep = to_tensor(np.tril(np.ones((sq, sk), dtype=np.bool_)), place=scores.place)
        scores = _ops.where(keep, scores, _full_on(scores.place, [1], float("-inf"), scores.dtype))
    if attn_mask is not None:
        if attn_mask.dtype.name == "bool":
            scores = _ops.where(attn_mask, scores, _full_on(scores.place, [1], float("-inf"), scores.dtype))
        else:
            scores = scores + attn_mask.astype(scores.dtype)
    weights = _ops.softmax(scores, -1)
    if dropout_p > 0.0 and training:
        weights = F.dropout(weights, dropout_p, training=True)
    out = _ops.matmul(weights, v)
    return _ops.transpose(out, perm)


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, training=True, name=None):
    """softmax(Q K^T / sqrt(head_dim) + mask) V for query/key/value of shape
    [batch_size, seq_len, num_heads, head_dim] (or 3-D [seq_len, num_heads, head_dim]).

    attn_mask: bool (True = attend) or float (added to the scores), broadcastable to
    [batch_size, num_heads, seq_len_q, seq_len_k]. is_causal masks keys after the query's
    position (top-left aligned). key/value may have fewer heads than query when the
    query's head count is a multiple of theirs. Returns [batch_size, seq_len, num_heads,
    head_dim_v].
    """
    _check(query, key, value, attn_mask, dropout_p)
    use_dropout = dropout_p > 0.0 and training
    mask_grad = attn_mask is not None and not attn_mask.stop_gradient
    if use_dropout or mask_grad:
        # The fused op's checks (shapes, dtypes) and messages, on an empty query block.
        _ops._scaled_dot_product_attention(query[..., :0, :, :], key, value, None, is_causal, 0.0)
        _check_mask(query, key, attn_mask)
        return _composite(query, key, value, attn_mask, dropout_p, is_causal, training)
    out, _ = _ops._scaled_dot_product_attention(query, key, value, attn_mask, is_causal, 0.0)
    return out
