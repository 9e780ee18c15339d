"""edit_distance (paddle.nn.functional.loss.edit_distance) and class_center_sample: integer
bookkeeping on the host, no gradient (their outputs are counts and indices)."""
import numpy as np

from .._C import Tensor

__all__ = ["class_center_sample"]  # edit_distance: only as F.loss.edit_distance (oar.nn.loss)


def _int_rows(v, op, name):
    if not isinstance(v, Tensor):
        raise TypeError(f"{op}: {name} must be a Tensor, got {type(v).__name__}")
    if v.ndim != 2 or v.dtype.name not in ("int32", "int64"):
        raise ValueError(f"{op}: {name} must be a 2-D int64 tensor [batch, length], got "
                         f"{v.dtype.name} {list(v.shape)}")
    return v.numpy().astype(np.int64)


def _lengths(v, op, name, b, cap):
    if v is None:
        return np.full([b], cap, np.int64)
    if not isinstance(v, Tensor):
        raise TypeError(f"{op}: {name} must be a Tensor or None, got {type(v).__name__}")
    out = v.numpy().reshape(-1).astype(np.int64)
    if out.size != b or (b and (out.min() < 0 or out.max() > cap)):
        raise ValueError(f"{op}: {name} must hold {b} lengths in [0, {cap}], got "
                         f"{out.tolist()[:16]}")
    return out


def _compact(rows, lens, ignored):
    """Rows cut to their lengths with the ignored tokens removed, left-aligned: (rows, lens)."""
    b, w = rows.shape
    keep = np.arange(w)[None, :] < lens[:, None]
    if ignored:
        keep &= ~np.isin(rows, np.asarray(list(ignored), np.int64))
    new_lens = keep.sum(axis=1)
    out = np.zeros_like(rows)
    order = np.argsort(~keep, axis=1, kind="stable")  # kept positions first, in order
    out[:] = np.take_along_axis(rows, order, axis=1)
    return out, new_lens


def _levenshtein(hyp, h_len, ref, r_len):
    """Edit distances of the batch's pairs: the DP row by row over hyp, vectorized over the
    batch; within a row d[j] = j + cummin(t[k] - k) takes the insertions in one scan."""
    b, m = hyp.shape
    n = ref.shape[1]
    cols = np.arange(n + 1)
    d = np.broadcast_to(cols, (b, n + 1)).copy()  # row 0: j insertions
    dist = np.where(h_len == 0, r_len, 0).astype(np.int64)
    for i in range(1, m + 1):  # m: hyp's second dim
        sub = d[:, :-1] + (hyp[:, i - 1:i] != ref)  # diagonal
        t = np.empty_like(d)
        t[:, 0] = i
        t[:, 1:] = np.minimum(d[:, 1:] + 1, sub)
        d = cols + np.minimum.accumulate(t - cols, axis=1)
        done = h_len == i
        dist[done] = d[done, r_len[done]]
    return dist


def edit_distance(input, label, normalized=True, ignored_tokens=None,  # noqa: A002
                  input_length=None, label_length=None):
    """Levenshtein distances between the rows of `input` (hypotheses) and `label`
    (references), each cut to its length and with `ignored_tokens` removed first; divided by
    the reference length when `normalized`.

    Returns (sequence_num, distance) as Paddle's dynamic mode does: sequence_num an int64
    [1] tensor holding the batch size, distance a float32 [batch, 1] tensor. (Paddle's
    docstring names them in the other order; its example and its eager op return this one.)"""
    import oar
    op = "edit_distance"
    hyp = _int_rows(input, op, "input")
    ref = _int_rows(label, op, "label")
    if hyp.shape[0] != ref.shape[0]:
        raise ValueError(f"{op}: input and label must have the same batch size, got "
                         f"{hyp.shape[0]} and {ref.shape[0]}")
    if ignored_tokens is not None and not all(
            isinstance(t, (int, np.integer)) and not isinstance(t, bool) for t in ignored_tokens):
        raise TypeError(f"{op}: ignored_tokens must be a list of int token ids, got "
                        f"{ignored_tokens!r}")
    b = hyp.shape[0]
    h_len = _lengths(input_length, op, "input_length", b, hyp.shape[1])
    r_len = _lengths(label_length, op, "label_length", b, ref.shape[1])
    hyp, h_len = _compact(hyp, h_len, ignored_tokens)
    ref, r_len = _compact(ref, r_len, ignored_tokens)
    dist = _levenshtein(hyp, h_len, ref, r_len).astype(np.float64)
    if normalized:
        if (r_len == 0).any():
            raise ValueError(f"{op}: a reference (label) of length 0 cannot normalize the "
                             f"distance (rows {np.nonzero(r_len == 0)[0].tolist()[:16]}); pass "
                             f"normalized=False")
        dist = dist / r_len
    return (oar.to_tensor([b], "int64", input.place),
            oar.to_tensor(dist.astype(np.float32).reshape(b, 1), "float32", input.place))


def class_center_sample(label, num_classes, num_samples, group=None):
    """PartialFC's class-center sampling on one process: every class present in `label`
    (ascending), then distinct negative classes drawn at random (oar's generator) until
    `num_samples` centers; returns (label remapped to positions in that list, the list)."""
    import oar
    op = "class_center_sample"
    if not isinstance(label, Tensor):
        raise TypeError(f"{op}: label must be a Tensor, got {type(label).__name__}")
    if label.ndim != 1 or label.dtype.name not in ("int32", "int64"):
        raise ValueError(f"{op}: label must be a 1-D int tensor, got {label.dtype.name} "
                         f"{list(label.shape)}")
    for n, v in (("num_classes", num_classes), ("num_samples", num_samples)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v <= 0:
            raise ValueError(f"{op}: {n} must be a positive int, got {v!r}")
    if num_samples > num_classes:
        raise ValueError(f"{op}: num_samples must be <= num_classes ({num_classes}), got "
                         f"{num_samples}")
    if not (group is None or group is False or hasattr(group, "nranks")):
        raise ValueError(f"{op}: group must be None, False or a communication group, got {group!r}")
    if group not in (None, False) and getattr(group, "nranks", 1) > 1:
        raise NotImplementedError(f"{op}: sampling across {group.nranks} ranks (model "
                                  f"parallel) is not supported; pass group=False")
    lab = label.numpy().astype(np.int64)
    if lab.size == 0:
        raise ValueError(f"{op}: label must not be empty")
    if lab.min() < 0 or lab.max() >= num_classes:
        raise ValueError(f"{op}: labels must be in [0, {num_classes}), got values in "
                         f"[{lab.min()}, {lab.max()}]")
    pos = np.unique(lab)
    need = int(num_samples) - pos.size
    centers = pos
    if need > 0:
        from ._errors import check_fits
        check_fits(op, f"num_classes={num_classes} candidate classes", 9 * int(num_classes))
        is_pos = np.zeros(int(num_classes), bool)
        is_pos[pos] = True
        neg = np.nonzero(~is_pos)[0]
        perm = oar.randperm(neg.size).numpy()[:need]
        centers = np.concatenate([pos, neg[perm]])
    remapped = np.searchsorted(pos, lab)
    dtype = label.dtype
    return (oar.to_tensor(remapped, "int64", label.place).astype(dtype),
            oar.to_tensor(centers, "int64", label.place).astype(dtype))
