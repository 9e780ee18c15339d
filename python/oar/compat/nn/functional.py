"""oar.compat.nn.functional: torch-signature pad, softmax, linear, unfold and
scaled_dot_product_attention (Paddle 3.3's paddle.compat.nn.functional)."""
from ..._C import Tensor
from ..._C import ops as _ops
from .._utils import check_out, torch_keywords, write_out

__all__ = ["pad", "softmax", "linear", "scaled_dot_product_attention", "unfold"]

_MODES = ("constant", "reflect", "replicate", "circular")


@torch_keywords("paddle.compat.nn.functional.pad", "paddle.nn.functional.pad",
                {"x", "name", "data_format", "pad_from_left_axis"})
def pad(input, pad, mode="constant", value=0.0):
    """Pads the last len(pad) // 2 dims of input: pad = (last_before, last_after,
    second_last_before, ...), as torch.nn.functional.pad. Non-constant modes pad at most the
    last 3 dims and never the first (batch) dim."""
    op = "compat.nn.functional.pad"
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}: input must be a Tensor, got {type(input).__name__}")
    if mode not in _MODES:
        raise ValueError(f"{op}: mode must be one of {', '.join(_MODES)}, got {mode!r}")
    if isinstance(pad, Tensor):
        pad = pad.tolist()
    try:
        p = [int(v) for v in pad]
    except (TypeError, ValueError):
        raise TypeError(f"{op}: pad must be a sequence of ints, got {pad!r}") from None
    r = input.ndim
    limit = 2 * r if mode == "constant" else min(6, 2 * r - 2)
    if len(p) % 2 or len(p) > limit:
        raise ValueError(f"{op}: pad {p} must have an even length of at most {limit} for a "
                         f"{r}-D input in mode '{mode}'")
    if any(v < 0 for v in p):
        raise ValueError(f"{op}: paddings must be >= 0, got {p}")
    pads = [0] * (2 * r)
    for k in range(len(p) // 2):  # the k-th pair pads the k-th dim from the end
        d = r - 1 - k
        pads[2 * d], pads[2 * d + 1] = p[2 * k], p[2 * k + 1]
    return _ops._pad_nd(input, pads, mode, float(value))


def _implicit_dim(ndim):
    return 0 if ndim in (0, 1, 3) else 1  # torch's rule for softmax(dim=None)


@torch_keywords("paddle.compat.nn.functional.softmax", "paddle.nn.functional.softmax",
                {"x", "axis", "name"})
def softmax(input, dim=None, dtype=None, *, out=None):
    """softmax along dim (torch's implicit dim when None: 0 for 0-, 1- and 3-D inputs, else
    1), computed in `dtype` when given."""
    from ... import nn
    check_out("compat.nn.functional.softmax", out)
    if dim is None:
        dim = _implicit_dim(input.ndim)
    x = input if dtype is None else input.astype(dtype)
    return write_out(nn.functional.softmax(x, axis=dim), out)


@torch_keywords("paddle.compat.nn.functional.linear", "paddle.nn.functional.linear",
                {"x", "name"})
def linear(input, weight, bias=None):
    """input @ weight.T + bias, weight [out_features, in_features] as in torch."""
    from ... import matmul
    op = "compat.nn.functional.linear"
    for name, t in (("input", input), ("weight", weight)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}: {name} must be a Tensor, got {type(t).__name__}")
    if weight.ndim not in (1, 2) or input.ndim == 0 or input.shape[-1] != weight.shape[-1]:
        raise ValueError(f"{op}: weight {list(weight.shape)} must be [out_features, "
                         f"in_features] with in_features = input's last dim "
                         f"({list(input.shape)})")
    out = matmul(input, weight, transpose_y=True)
    return out if bias is None else out + bias


@torch_keywords("paddle.compat.nn.functional.unfold", "paddle.nn.functional.unfold",
                {"x", "kernel_sizes", "dilations", "paddings", "strides", "name"})
def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """Sliding blocks of input [N, C, H, W] as columns [N, C*kh*kw, L] (torch's argument
    names and order)."""
    from ... import nn

    def as_list(v):
        return v.tolist() if isinstance(v, Tensor) else v
    return nn.functional.unfold(input, as_list(kernel_size), as_list(stride), as_list(padding),
                                as_list(dilation))


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False):
    """softmax(q k^T * scale + mask) v on [batch, heads, seq, head_dim] inputs (torch's
    layout); a bool mask keeps the True positions; enable_gqa repeats key/value heads."""
    import math
    from ... import matmul, nn, repeat_interleave, where, full_like, ones, tril
    op = "compat.nn.functional.scaled_dot_product_attention"
    for name, t in (("query", query), ("key", key), ("value", value)):
        if not isinstance(t, Tensor) or t.ndim < 2:
            raise ValueError(f"{op}: {name} must be a Tensor of at least 2 dims, got "
                             f"{getattr(t, 'shape', type(t).__name__)}")
    if query.shape[-1] != key.shape[-1] or key.shape[-2] != value.shape[-2]:
        raise ValueError(f"{op}: query {list(query.shape)}, key {list(key.shape)} and value "
                         f"{list(value.shape)} do not match (head dims and key/value lengths)")
    if enable_gqa and query.ndim >= 3 and key.shape[-3] != query.shape[-3]:
        if query.shape[-3] % key.shape[-3]:
            raise ValueError(f"{op}: query heads {query.shape[-3]} are not a multiple of key "
                             f"heads {key.shape[-3]}")
        rep = query.shape[-3] // key.shape[-3]
        key = repeat_interleave(key, rep, axis=-3)
        value = repeat_interleave(value, rep, axis=-3)
    if is_causal and attn_mask is not None:
        raise ValueError(f"{op}: give attn_mask or is_causal=True, not both")
    s = 1.0 / math.sqrt(query.shape[-1]) if scale is None else float(scale)
    scores = matmul(query, key, transpose_y=True) * s
    if is_causal:
        lq, lk = query.shape[-2], key.shape[-2]
        keep = tril(ones([lq, lk], dtype="bool"))
        scores = where(keep, scores, full_like(scores, float("-inf")))
    if attn_mask is not None:
        if attn_mask.dtype.name == "bool":
            scores = where(attn_mask, scores, full_like(scores, float("-inf")))
        else:
            scores = scores + attn_mask
    weights = nn.functional.softmax(scores, axis=-1)
    if dropout_p:
        weights = nn.functional.dropout(weights, dropout_p)
    return matmul(weights, value)
