"""rnnt_loss: the RNN transducer loss (Graves 2012) by the forward (alpha) recursion in log space.

The lattice alpha[t, u] (t < T frames, u <= U labels emitted) is swept by anti-diagonals
n = t + u, so the Python loop runs T + U times and each step is vectorized over the batch and
the frames: on a diagonal, alpha[t, u] = logaddexp(alpha[t-1, u] + blank[t-1, u],
alpha[t, u-1] + emit[t, u-1]). Autograd gives the gradient with respect to the log-probs.

As Paddle's documentation says, `input` holds log-probabilities and is used as given (no
log_softmax inside: the loss of unnormalized scores can be negative, as Paddle's example shows).
Paddle's warp-transducer kernel returns, as the gradient, the one with respect to pre-softmax
logits; Oar returns the gradient of the loss it computes, with respect to `input` (the two agree
up to the softmax Jacobian when `input` is a log_softmax output).
FastEmit (Yu et al. 2020) leaves the value unchanged and scales the gradient of every label
emission by (1 + fastemit_lambda), as warp-transducer does."""
from .._C import Tensor, ops as _ops

__all__ = ["rnnt_loss"]

_NEG = -1e30  # log(0) that keeps the logaddexp gradient finite in unreachable cells


def _lae(a, b):
    import oar
    m = oar.maximum(a, b).detach()
    return m + oar.log(oar.exp(a - m) + oar.exp(b - m))


def _lengths(v, op, name, b):
    if not isinstance(v, Tensor):
        raise TypeError(f"{op}: {name} must be a Tensor, got {type(v).__name__}")
    if v.dtype.name not in ("int32", "int64") or v.size != b:
        raise ValueError(f"{op}: {name} must be an int tensor of {b} values (one per sequence), "
                         f"got {v.dtype.name} {list(v.shape)}")
    return [int(x) for x in v.numpy().reshape(-1)]


def rnnt_loss(input, label, input_lengths, label_lengths, blank=0,  # noqa: A002
              fastemit_lambda=0.001, reduction="mean", name=None):
    """-log p(label | input) per sequence; input: log-probs [B, Tmax, Umax+1, D], label
    [B, Umax]; reduction 'mean' divides the sum by the batch size (Paddle's rule)."""
    import numpy as np
    import oar
    op = "rnnt_loss"
    for n, v in (("input", input), ("label", label)):
        if not isinstance(v, Tensor):
            raise TypeError(f"{op}: {n} must be a Tensor, got {type(v).__name__}")
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{op}: reduction must be 'mean', 'sum' or 'none', got '{reduction}'")
    if input.ndim != 4 or input.dtype.name not in ("float32", "float64"):
        raise ValueError(f"{op}: input must be a float32/float64 [B, Tmax, Umax+1, D] tensor, got "
                         f"{input.dtype.name} {list(input.shape)}")
    b, t_max, u1, d = input.shape
    if label.ndim != 2 or label.shape[0] != b or label.dtype.name not in ("int32", "int64"):
        raise ValueError(f"{op}: label must be an int [B={b}, Umax] tensor, got "
                         f"{label.dtype.name} {list(label.shape)}")
    if label.shape[1] + 1 != u1:
        raise ValueError(f"{op}: input's third dim must be label's second + 1 (Umax + 1), got "
                         f"input {list(input.shape)} and label {list(label.shape)}")
    if isinstance(blank, bool) or not isinstance(blank, int) or not 0 <= blank < max(d, 1):
        raise ValueError(f"{op}: blank must be a class index in [0, {d}), got {blank!r}")
    lam = float(fastemit_lambda)
    if not np.isfinite(lam) or lam < 0:
        raise ValueError(f"{op}: fastemit_lambda must be a finite number >= 0, got {fastemit_lambda!r}")
    t_len = _lengths(input_lengths, op, "input_lengths", b)
    u_len = _lengths(label_lengths, op, "label_lengths", b)
    if any(not 1 <= v <= t_max for v in t_len) or any(not 0 <= v < u1 for v in u_len):
        raise ValueError(f"{op}: lengths out of range: input_lengths {t_len} (each in [1, {t_max}]), "
                         f"label_lengths {u_len} (each in [0, {u1 - 1}])")
    lab = label.astype("int64").numpy()
    valid = np.arange(u1 - 1)[None, :] < np.array(u_len, dtype=np.int64)[:, None]
    if valid.any() and (lab[valid].min() < 0 or lab[valid].max() >= d):
        raise ValueError(f"{op}: labels must be class indices in [0, {d}), got values in "
                         f"[{lab[valid].min()}, {lab[valid].max()}]")
    if b == 0:
        out = _ops.full([0], 0.0, input.dtype, input.place)
        return out if reduction == "none" else out.sum()
    dtype, place = input.dtype, input.place  # every constant lives beside input
    blank_lp = input[:, :, :, blank]  # [B, T, U+1]
    lab_c = np.clip(lab, 0, max(d - 1, 0))
    idx = np.concatenate([lab_c, np.zeros([b, 1], np.int64)], axis=1)  # emit at u: label u
    idx = np.broadcast_to(idx[:, None, :, None], [b, t_max, u1, 1]).copy()
    emit_lp = oar.take_along_axis(input, oar.to_tensor(idx, place=place), axis=3).squeeze(-1)
    if lam:  # FastEmit: same value, label-emission gradient scaled by (1 + lambda)
        emit_lp = emit_lp + lam * (emit_lp - emit_lp.detach())
    # skew to diagonals: S[:, n, t] = X[:, t, n - t] (NEG outside the lattice)
    n_diag = t_max + u1 - 1
    tt = np.arange(t_max)[None, :]
    uu = np.arange(n_diag)[:, None] - tt  # [N, T]
    inside = (uu >= 0) & (uu < u1)
    flat = (tt * u1 + np.clip(uu, 0, u1 - 1)).reshape(-1)
    pick = oar.to_tensor(np.broadcast_to(flat, [b, flat.size]).copy(), place=place)
    mask = oar.to_tensor(np.broadcast_to(inside, [b, n_diag, t_max]).copy(), place=place)
    neg = _ops.full([b, n_diag, t_max], _NEG, dtype, place)

    def skew(x):
        g = oar.take_along_axis(x.reshape([b, t_max * u1]), pick, axis=1)
        return oar.where(mask, g.reshape([b, n_diag, t_max]), neg)
    sb, se = skew(blank_lp), skew(emit_lp)
    col = _ops.full([b, 1], _NEG, dtype, place)
    alpha = oar.concat([_ops.full([b, 1], 0.0, dtype, place),
                        _ops.full([b, t_max - 1], _NEG, dtype, place)], axis=1)
    diags = [alpha]
    for n in range(1, n_diag):  # n_diag = Tmax + Umax, bounded by input's shape
        # from (t-1, u): previous diagonal shifted one frame; from (t, u-1): same frame
        from_blank = oar.concat([col, (diags[-1] + sb[:, n - 1])[:, :-1]], axis=1)
        from_emit = diags[-1] + se[:, n - 1]
        alpha = oar.where(mask[:, n], _lae(from_blank, from_emit), neg[:, n])
        diags.append(alpha)
    a_all = oar.stack(diags, axis=1)  # [B, N, T]
    tl = np.array(t_len) - 1
    ul = np.array(u_len)
    end = oar.to_tensor(((tl + ul) * t_max + tl).reshape(b, 1), place=place)
    ll = oar.take_along_axis(a_all.reshape([b, n_diag * t_max]), end, axis=1).reshape([b])
    last = oar.to_tensor((tl * u1 + ul).reshape(b, 1), place=place)
    last_blank = oar.take_along_axis(blank_lp.reshape([b, t_max * u1]), last, axis=1)
    loss = -(ll + last_blank.reshape([b]))
    if reduction == "mean":
        return loss.sum() / b
    return loss.sum() if reduction == "sum" else loss
