"""Activations of sparse tensors (on the stored values), sparse softmax and attention."""
import numpy as np

import oar
import oar.nn.functional as F

from ...._creation import _full_on
from ..._tensor import SparseCooTensor, SparseCsrTensor, _fail, _index_tensor, _linear, \
    csr_rows
from ...binary import masked_matmul, matmul
from ...unary import check_sparse, coalesce, map_values

__all__ = ["relu", "relu6", "leaky_relu", "softmax", "attention"]


def relu(x, name=None):
    """max(x, 0) of the stored values."""
    return map_values("relu", x, F.relu)


def relu6(x, name=None):
    """min(max(x, 0), 6) of the stored values."""
    return map_values("relu6", x, F.relu6)


def leaky_relu(x, negative_slope=0.01, name=None):
    """x if x >= 0 else negative_slope * x, on the stored values."""
    if isinstance(negative_slope, bool) or not isinstance(negative_slope, (int, float)):
        _fail("leaky_relu", f"negative_slope must be a number, got {negative_slope!r}", TypeError)
    return map_values("leaky_relu", x, lambda v: F.leaky_relu(v, negative_slope))


def _group_softmax(values, groups, count):
    """Softmax of 1-D values within each group id (0 <= id < count)."""
    if values.shape[0] == 0:
        return values
    v = values.numpy().astype(np.float64)
    peak = np.full(count, -np.inf)
    np.maximum.at(peak, groups, v)
    peak[~np.isfinite(peak)] = 0.0  # all -inf rows: exp gives 0 / 0 = NaN, as dense softmax
    g = _index_tensor(groups, values.place)
    e = oar.exp(values - oar.to_tensor(peak[groups], dtype=values.dtype, place=values.place))
    denom = oar.index_add(_full_on(values.place, [count], 0.0, values.dtype), g, 0, e)
    return e / oar.index_select(denom, g, axis=0)


def softmax(x, axis=-1, name=None):
    """Softmax along the last axis over the stored elements of each row only (an element not
    stored counts as absent, not as zero)."""
    check_sparse("softmax", x)
    if axis not in (-1, x.ndim - 1):
        _fail("softmax", f"axis must be -1 (the last axis), got {axis!r}")
    if not x.dtype.name.startswith(("float", "bfloat")):
        _fail("softmax", f"x must be a floating tensor, got {x.dtype.name}", TypeError)
    if isinstance(x, SparseCsrTensor):
        b, r = csr_rows(x)
        m = x._shape[-2]
        _, rows = np.unique(b * m + r, return_inverse=True)
        rows = rows.reshape(-1)
        return x._with_values(_group_softmax(x.values(), rows, int(rows.max()) + 1 if rows.size else 1))
    if x.dense_dim() > 0:  # the last axis is dense: every element of it is stored
        return x._with_values(F.softmax(x.values(), axis=-1))
    x = coalesce(x)
    idx = x.indices().numpy()
    _, rows = np.unique(_linear(idx[:-1], x._shape[:x.sparse_dim() - 1]), return_inverse=True)
    rows = rows.reshape(-1)
    count = max(1, int(rows.max()) + 1 if rows.size else 1)
    return SparseCooTensor(x.indices(), _group_softmax(x.values(), rows, count), x._shape, True)


def attention(query, key, value, sparse_mask, key_padding_mask=None, attn_mask=None, name=None):
    """softmax(Q K^T / sqrt(d)) V with the scores kept only where sparse_mask (CSR,
    [B * H, S, S]) stores them; a zero in key_padding_mask [B, S] or attn_mask [S, S] drops that
    score too. Q, K, V: [B, H, S, d]; the result is dense [B, H, S, d]."""
    op = "attention"
    for arg, t in (("query", query), ("key", key), ("value", value)):
        if not isinstance(t, oar.Tensor) or t.ndim != 4:
            _fail(op, f"{arg} must be a 4-D Tensor [B, H, S, d], got "
                  f"{getattr(t, 'shape', type(t).__name__)}", TypeError)
    if list(key.shape) != list(query.shape) or list(value.shape[:3]) != list(query.shape[:3]):
        _fail(op, f"query {list(query.shape)}, key {list(key.shape)} and value "
              f"{list(value.shape)} must agree on [B, H, S] (and d for query/key)")
    if not isinstance(sparse_mask, SparseCsrTensor):
        _fail(op, "sparse_mask must be a CSR tensor", TypeError)
    bsz, heads, seq, dim = query.shape
    if list(sparse_mask.shape) != [bsz * heads, seq, seq]:
        _fail(op, f"sparse_mask must have shape {[bsz * heads, seq, seq]}, got "
              f"{list(sparse_mask.shape)}")
    q = query.reshape([bsz * heads, seq, dim])
    k = key.reshape([bsz * heads, seq, dim])
    kt = oar.transpose(k, [0, 2, 1])
    scores = masked_matmul(q, kt, sparse_mask).values() * (1.0 / float(dim) ** 0.5)
    b, r = csr_rows(sparse_mask)
    c = sparse_mask.cols().numpy()
    drop = np.zeros(c.size, dtype=bool)
    if key_padding_mask is not None:
        kp = key_padding_mask.numpy().reshape(bsz, seq)
        drop |= kp[b // heads, c] == 0
    if attn_mask is not None:
        am = attn_mask.numpy().reshape(seq, seq)
        drop |= am[r, c] == 0
    if drop.any():
        scores = oar.where(oar.to_tensor(drop, place=scores.place), oar.full_like(scores, -np.inf), scores)
    probs = softmax(sparse_mask._with_values(scores))
    return matmul(probs, value.reshape([bsz * heads, seq, value.shape[-1]])).reshape(
        [bsz, heads, seq, value.shape[-1]])
