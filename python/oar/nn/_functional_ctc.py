"""ctc_loss: the CTC forward (alpha) recursion in log space over the blank-extended labels,
vectorized over batch and label positions and looped over time (the logits' first dim), with a
softmax over the classes first as Paddle's warp-ctc does. Autograd gives the gradient."""
from .._C import Tensor, ops as _ops
from .._dtype import convert_dtype

__all__ = ["ctc_loss"]

_NEG = -1e30  # log(0) that keeps logsumexp's gradient finite in unreachable states


def _lse(*xs):
    import oar
    return oar.logsumexp(oar.stack(xs, axis=0), axis=0)


def ctc_loss(log_probs, labels, input_lengths, label_lengths, blank=0, reduction="mean",
             norm_by_times=False, zero_infinity=False):
    """-log p(labels | logits) per sequence. log_probs: unnormalized [T, B, C] (softmax is
    applied inside); labels [B, L]; reduction 'mean' divides by label_lengths then averages."""
    import oar
    op = "ctc_loss"
    for name, v in (("log_probs", log_probs), ("labels", labels),
                    ("input_lengths", input_lengths), ("label_lengths", label_lengths)):
        if not isinstance(v, Tensor):
            raise TypeError(f"{op}: {name} must be a Tensor, got {type(v).__name__}")
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{op}: reduction must be 'mean', 'sum' or 'none', got '{reduction}'")
    if log_probs.ndim != 3 or not log_probs.dtype.is_floating_point:
        raise ValueError(f"{op}: log_probs must be a float [T, B, C] tensor, got "
                         f"{log_probs.dtype.name} {list(log_probs.shape)}")
    t_max, b, c = log_probs.shape
    if labels.ndim != 2 or labels.shape[0] != b or labels.dtype.name not in ("int32", "int64"):
        raise ValueError(f"{op}: labels must be an int [B={b}, L] tensor, got "
                         f"{labels.dtype.name} {list(labels.shape)}")
    if isinstance(blank, bool) or not isinstance(blank, int) or not 0 <= blank < c:
        raise ValueError(f"{op}: blank must be a class index in [0, {c}), got {blank!r}")
    in_len = [int(v) for v in input_lengths.numpy().reshape(-1)]
    lab_len = [int(v) for v in label_lengths.numpy().reshape(-1)]
    max_l = labels.shape[1]
    if len(in_len) != b or len(lab_len) != b:
        raise ValueError(f"{op}: input_lengths and label_lengths must hold {b} values")
    if any(not 0 <= v <= t_max for v in in_len) or any(not 0 <= v <= max_l for v in lab_len):
        raise ValueError(f"{op}: lengths out of range: input_lengths {in_len} (max {t_max}), "
                         f"label_lengths {lab_len} (max {max_l})")
    lab = labels.astype("int64")
    if lab.size and (int(lab.min()) < 0 or int(lab.max()) >= c):
        raise ValueError(f"{op}: labels must be class indices in [0, {c})")
    s = 2 * max_l + 1
    place = log_probs.place  # every constant lives beside log_probs

    def full(shape, value, dtype):
        return _ops.full(shape, value, convert_dtype(dtype), place)

    # extended labels: blank, l1, blank, l2, ..., blank
    ext = full([b, s], blank, "int64")
    if max_l:
        ext[:, 1::2] = lab
    # l'(s) != blank and l'(s) != l'(s-2): the skip transition is allowed
    skip = full([b, s], False, "bool")
    if s > 2:
        skip[:, 2:] = (ext[:, 2:] != blank) & (ext[:, 2:] != ext[:, :-2])
    lp = oar.nn.functional.log_softmax(log_probs, axis=-1)
    dtype = lp.dtype
    neg = full([b, 1], _NEG, dtype)
    neg2 = full([b, 2], _NEG, dtype)
    init = full([b, s], _NEG, dtype)
    init[:, :min(2, s)] = 0.0
    alpha = None
    in_len_t = oar.to_tensor(in_len, "int64", place).reshape([b, 1])
    for t in range(t_max):  # t_max is log_probs' first dim
        emit = oar.take_along_axis(lp[t], ext, axis=1)
        if alpha is None:
            new = init + emit
        else:
            a1 = oar.concat([neg, alpha[:, :-1]], axis=1)
            a2 = oar.concat([neg2, alpha[:, :-2]], axis=1)
            a2 = oar.where(skip, a2, oar.full_like(a2, _NEG))
            new = _lse(alpha, a1, a2) + emit
        alive = in_len_t > t  # sequences already ended keep their last alpha
        alpha = new if alpha is None else oar.where(alive, new, alpha)
    empty_label = oar.to_tensor([n == 0 for n in lab_len], place=place)
    if alpha is None:  # no time steps: only an empty label is possible (log p = 0)
        ll = oar.where(empty_label, full([b], 0.0, dtype), full([b], _NEG, dtype))
    else:
        end = oar.to_tensor([[2 * n, max(2 * n - 1, 0)] for n in lab_len], "int64", place)
        fin = oar.take_along_axis(alpha, end, axis=1)
        ll = oar.where(empty_label, fin[:, 0], _lse(fin[:, 0], fin[:, 1]))
        # a sequence of length 0 never left the initial state
        no_input = oar.to_tensor([n == 0 for n in in_len], place=place)
        ll = oar.where(no_input, oar.where(empty_label, oar.zeros_like(ll), oar.full_like(ll, _NEG)),
                       ll)
    loss = -ll
    loss = oar.where(loss >= -_NEG / 2, oar.full_like(loss, float("inf")), loss)  # impossible
    if zero_infinity:
        loss = oar.where(loss.isinf(), oar.zeros_like(loss), loss)
    if norm_by_times:  # the value stays; the gradient is divided by each sequence's length
        scale = oar.to_tensor([1.0 / max(n, 1) for n in in_len], dtype, place)
        loss = loss.detach() + (loss * scale - (loss * scale).detach())
    if reduction == "mean":
        return (loss / oar.to_tensor(lab_len, dtype, place).clip(min=1.0)).mean()
    return loss.sum() if reduction == "sum" else loss
