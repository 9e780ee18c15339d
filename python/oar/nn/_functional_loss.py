"""Loss functionals and bilinear/gumbel_softmax (Paddle 3.x semantics), composed of
differentiable ops so their gradients (and gradients of gradients) come from autograd."""
import numpy as _np

from .. import _C, _trace_state

_ops = _C.ops

__all__ = ["nll_loss", "smooth_l1_loss", "binary_cross_entropy",
           "binary_cross_entropy_with_logits", "kl_div", "margin_ranking_loss", "bilinear",
           "gumbel_softmax"]


def _check_reduction(op, reduction, allowed=("mean", "sum", "none")):
    if reduction not in allowed:
        raise ValueError(f"{op}: reduction must be one of {list(allowed)}, got '{reduction}'")


def _same_shape(op, a, b, an="input", bn="label"):
    if list(a.shape) != list(b.shape):
        raise ValueError(f"{op}: {an} shape {list(a.shape)} and {bn} shape {list(b.shape)} "
                         f"must be equal")


def _reduce(loss, reduction):
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def nll_loss(input, label, weight=None, ignore_index=-100, reduction="mean", name=None):  # noqa: A002
    """input: log-probabilities [N, C, d1...]; label: class ids [N, d1...]. 'mean' divides by
    the summed weights of the non-ignored targets, as Paddle."""
    op = "nll_loss"
    _check_reduction(op, reduction)
    if input.ndim < 2:
        raise ValueError(f"nll_loss: input must have at least 2 dims [N, C, ...], got shape "
                         f"{list(input.shape)}")
    if label.dtype not in (_C.DataType.int64, _C.DataType.int32):
        raise TypeError(f"nll_loss: label must be int32 or int64, got {label.dtype}")
    want = [input.shape[0]] + list(input.shape[2:])
    if list(label.shape) == want + [1]:  # labels with a trailing 1 ([N, 1]), as Paddle accepts
        label = label.squeeze(-1)
    if list(label.shape) != want:
        raise ValueError(f"nll_loss: label shape {list(label.shape)} does not match input shape "
                         f"{list(input.shape)} (expected {want})")
    c = input.shape[1]
    lab = label.numpy()
    valid = lab != ignore_index
    bad = lab[valid & ((lab < 0) | (lab >= c))]
    if bad.size:
        raise IndexError(f"nll_loss: label value {int(bad.flat[0])} is out of range [0, {c}) "
                         f"(ignore_index={ignore_index})")
    safe = _np.where(valid, lab, 0).astype(_np.int64)
    from .. import to_tensor, take_along_axis
    rows = to_tensor(_np.expand_dims(safe, 1), place=input.place)
    picked = take_along_axis(input, rows, 1).squeeze(1)
    mask = to_tensor(valid.astype(_np.float64), place=input.place).astype(input.dtype)
    if weight is not None:
        if list(weight.shape) != [c]:
            raise ValueError(f"nll_loss: weight shape {list(weight.shape)} must be [{c}]")
        ids = to_tensor(safe.reshape(-1), place=weight.place)
        w = weight.index_select(ids, 0).reshape(list(safe.shape)) * mask
    else:
        w = mask
    loss = -picked * w
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    return loss.sum() / w.sum()


def smooth_l1_loss(input, label, reduction="mean", delta=1.0, name=None):  # noqa: A002
    """0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta), d = input - label."""
    _check_reduction("smooth_l1_loss", reduction)
    _same_shape("smooth_l1_loss", input, label)
    if delta <= 0:
        raise ValueError(f"smooth_l1_loss: delta must be positive, got {delta}")
    return _reduce(_C.ops._huber(input - label, float(delta)), reduction)


def _clamped_log(p):
    """max(log p, -100) with a finite gradient at p == 0 (where log's derivative is inf and
    the clamp's is 0): the log only ever sees positive values (double-where), so p == 0 gives
    -100 and a zero gradient instead of 0 * inf = nan."""
    pos = p > 0
    safe = _ops.where(pos, p, _C.ops.full_like(p, 1.0, p.dtype))
    return _ops.where(pos, _ops.clip(safe.log(), -100.0, float("inf")),
                      _C.ops.full_like(p, -100.0, p.dtype))


def binary_cross_entropy(input, label, weight=None, reduction="mean", name=None):  # noqa: A002
    """-w (y log p + (1 - y) log(1 - p)), logs clamped at -100 as Paddle."""
    _check_reduction("binary_cross_entropy", reduction)
    _same_shape("binary_cross_entropy", input, label)
    if input.size:
        lo, hi = float(input.min()), float(input.max())
        if lo < 0 or hi > 1:
            raise ValueError(f"binary_cross_entropy: input must be probabilities in [0, 1], "
                             f"got values in [{lo}, {hi}]")
    logp = _clamped_log(input)
    log1mp = _clamped_log(1.0 - input)
    loss = -(label * logp + (1.0 - label) * log1mp)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def binary_cross_entropy_with_logits(logit, label, weight=None, reduction="mean",
                                     pos_weight=None, name=None):
    """Numerically stable sigmoid + binary cross-entropy, Paddle's
    (1 - y) x + (1 + (pw - 1) y) log(1 + exp(-x)), weighted by weight."""
    _check_reduction("binary_cross_entropy_with_logits", reduction)
    _same_shape("binary_cross_entropy_with_logits", logit, label, "logit")
    if pos_weight is None:
        # one fused op (nn.yaml): max(x, 0) - x y + log1p(exp(-|x|))
        loss = _ops._sigmoid_cross_entropy_with_logits(logit, label)
        if weight is not None:
            loss = loss * weight
        return _reduce(loss, reduction)
    # Paddle's (1 - y) x + (1 + (pw - 1) y) log(1 + exp(-x)) rewritten as
    # -(1 - y) log_sigmoid(-x) - pw y log_sigmoid(x): same value, no cancellation of x
    # against log(1 + exp(-x)) for large |x|, and smooth at x == 0 (no abs/max kinks, so the
    # gradient there is sigmoid(x) - ... exactly, not a subgradient).
    pos = -_ops.log_sigmoid(logit)
    neg = -_ops.log_sigmoid(-logit)
    if pos_weight is not None:
        pos = pos * pos_weight
    loss = (1.0 - label) * neg + label * pos
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def kl_div(input, label, reduction="mean", log_target=False, name=None):  # noqa: A002
    """input: log-probabilities; label: probabilities (log-probabilities if log_target).
    Pointwise label (log label - input); 0 where label == 0."""
    _check_reduction("kl_div", reduction, ("mean", "batchmean", "sum", "none"))
    _same_shape("kl_div", input, label)
    if log_target:
        loss = label.exp() * (label - input)
    else:
        pos = label > 0
        safe = _ops.where(pos, label, _C.ops.full_like(label, 1.0, label.dtype))
        loss = _ops.where(pos, label * (safe.log() - input), _C.ops.full_like(input, 0.0, input.dtype))
    if reduction == "batchmean":
        return loss.sum() / (input.shape[0] if input.ndim else 1)
    return _reduce(loss, reduction)


def margin_ranking_loss(input, other, label, margin=0.0, reduction="mean", name=None):  # noqa: A002
    """max(0, -label (input - other) + margin)."""
    _check_reduction("margin_ranking_loss", reduction)
    _same_shape("margin_ranking_loss", input, other, "input", "other")
    _same_shape("margin_ranking_loss", input, label)
    return _reduce(_ops.relu(-label * (input - other) + margin), reduction)


def bilinear(x1, x2, weight, bias=None, name=None):
    """out[n, o] = sum_ij x1[n, i] weight[o, i, j] x2[n, j] + bias[0, o]."""
    if x1.ndim != 2 or x2.ndim != 2 or weight.ndim != 3:
        raise ValueError(f"bilinear: x1 and x2 must be 2-D and weight 3-D, got shapes "
                         f"{list(x1.shape)}, {list(x2.shape)}, {list(weight.shape)}")
    o, i, j = weight.shape
    if x1.shape[1] != i or x2.shape[1] != j or x1.shape[0] != x2.shape[0]:
        raise ValueError(f"bilinear: x1 {list(x1.shape)} and x2 {list(x2.shape)} do not match "
                         f"weight {list(weight.shape)}")
    if bias is not None and list(bias.shape) not in ([1, o], [o]):
        raise ValueError(f"bilinear: bias shape {list(bias.shape)} must be [1, {o}]")
    # (N, i) @ (i, o*j) -> (N, o, j), then contract j with x2
    t = _ops.matmul(x1, weight.transpose([1, 0, 2]).reshape([i, o * j])).reshape([-1, o, j])
    out = _ops.matmul(t, x2.unsqueeze(2)).squeeze(2)
    return out if bias is None else out + bias


def gumbel_softmax(x, temperature=1.0, hard=False, axis=-1, name=None):
    """softmax((x + g) / temperature) with g ~ Gumbel(0, 1); hard=True returns the one-hot of
    the argmax in the forward pass and the soft sample's gradient (straight-through)."""
    if temperature <= 0:
        raise ValueError(f"gumbel_softmax: temperature must be positive, got {temperature}")
    if not -max(x.ndim, 1) <= axis < max(x.ndim, 1):
        raise _C.OutOfRangeError(f"gumbel_softmax: axis {axis} is out of range for x of shape "
                         f"{list(x.shape)}")
    from .._creation import _rand_on
    u = _rand_on(x.place, _trace_state.sizes_of(x), x.dtype)
    g = -(-(u.clip(1e-20, 1.0)).log()).log()
    y = _ops.softmax((x + g) / temperature, axis)
    if not hard:
        return y
    idx = y.argmax(axis=axis, keepdim=True)
    from .. import zeros_like, put_along_axis, ones_like
    onehot = put_along_axis(zeros_like(y), idx, ones_like(idx).astype(y.dtype), axis)
    return onehot - y.detach() + y
