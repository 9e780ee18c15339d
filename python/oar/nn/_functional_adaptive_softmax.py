"""adaptive_log_softmax_with_loss (Grave et al., "Efficient softmax approximation for GPUs"):
labels below cutoffs[0] are scored by the head alone; a label in cluster i (cutoffs[i - 1] <=
label < cutoffs[i]) by the head's log-probability of the cluster (head column
cutoffs[0] + i - 1) plus the log-softmax of the cluster's two-matrix tail projection."""
import numbers

from .._C import Tensor

__all__ = ["adaptive_log_softmax_with_loss"]

_OP = "adaptive_log_softmax_with_loss"


def _check(input, label, head_weight, tail_weights, cutoffs, head_bias):  # noqa: A002
    for arg, t in (("input", input), ("label", label), ("head_weight", head_weight)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{_OP}: {arg} must be a Tensor, got {type(t).__name__}")
    if not input.dtype.is_floating_point:
        raise TypeError(f"{_OP}: input must be a float tensor, got {input.dtype.name}")
    if label.dtype.is_floating_point or label.dtype.name == "bool":
        raise TypeError(f"{_OP}: label must be an integer tensor, got {label.dtype.name}")
    if label.ndim == 1:
        if input.ndim != 2:
            raise ValueError(f"{_OP}: a 1-D label expects a 2-D input, got input of shape "
                             f"{list(input.shape)}")
        if input.shape[0] != label.shape[0]:
            raise ValueError(f"{_OP}: input and label must have the same batch size, got "
                             f"{input.shape[0]} and {label.shape[0]}")
    elif label.ndim == 0:
        if input.ndim != 1:
            raise ValueError(f"{_OP}: a 0-D label expects a 1-D input, got input of shape "
                             f"{list(input.shape)}")
    else:
        raise ValueError(f"{_OP}: label must be 0-D or 1-D (multi-label is not supported), "
                         f"got shape {list(label.shape)}")
    if not isinstance(cutoffs, (list, tuple)) or not cutoffs:
        raise ValueError(f"{_OP}: cutoffs must be a non-empty list of ints, got {cutoffs!r}")
    cut = []
    for c in cutoffs:
        c = int(c.item()) if isinstance(c, Tensor) else c
        if isinstance(c, bool) or not isinstance(c, numbers.Integral):
            raise ValueError(f"{_OP}: cutoffs must be ints, got {cutoffs!r}")
        cut.append(int(c))
    if cut != sorted(set(cut)) or cut[0] <= 0:
        raise ValueError(f"{_OP}: cutoffs must be increasing positive ints, got {cut}")
    feat = input.shape[-1]
    n_clusters = len(cut) - 1
    head = cut[0] + n_clusters
    if head_weight.ndim != 2 or head_weight.shape[0] != feat or head_weight.shape[1] < head:
        raise ValueError(f"{_OP}: head_weight must have shape [{feat}, >= {head}] (in_features, "
                         f"cutoffs[0] + {n_clusters} clusters), got {list(head_weight.shape)}")
    if head_bias is not None and list(head_bias.shape) != [head_weight.shape[1]]:
        raise ValueError(f"{_OP}: head_bias must have shape [{head_weight.shape[1]}] (head_weight's "
                         f"columns), got {list(head_bias.shape)}")
    if not isinstance(tail_weights, (list, tuple)) or len(tail_weights) < n_clusters:
        raise ValueError(f"{_OP}: tail_weights must hold {n_clusters} [projection, output] "
                         f"pairs (one per cluster), got {tail_weights!r}"[:300])
    for i in range(n_clusters):
        pair = tail_weights[i]
        if not isinstance(pair, (list, tuple)) or len(pair) != 2 or \
                not all(isinstance(w, Tensor) and w.ndim == 2 for w in pair):
            raise ValueError(f"{_OP}: tail_weights[{i}] must be two 2-D Tensors")
        w0, w1 = pair
        osz = cut[i + 1] - cut[i]
        if w0.shape[0] != feat or w1.shape[0] != w0.shape[1] or w1.shape[1] != osz:
            raise ValueError(f"{_OP}: tail_weights[{i}] must have shapes [{feat}, h] and "
                             f"[h, {osz}], got {list(w0.shape)} and {list(w1.shape)}")
    return cut


def _tail_logprob(x, pair):
    from . import functional as F
    return F.log_softmax(F.linear(F.linear(x, pair[0]), pair[1]), axis=1)


def adaptive_log_softmax_with_loss(input, label, head_weight, tail_weights, cutoffs,  # noqa: A002
                                   head_bias=None, name=None):
    """(output, loss): output[i] is the log-probability of label[i] ([N], or [] for a 1-D
    input and 0-D label); loss is the mean of -output. cutoffs as in
    AdaptiveLogSoftmaxWithLoss, whose last entry is n_classes; labels must be in
    [0, cutoffs[-1])."""
    import oar
    from . import functional as F
    cut = _check(input, label, head_weight, tail_weights, cutoffs, head_bias)
    batched = label.ndim == 1
    x = input if batched else input.unsqueeze(0)
    y = (label if batched else label.unsqueeze(0)).astype("int64")
    n = y.shape[0]
    if n:
        lo, hi = int(y.min()), int(y.max())
        if lo < 0 or hi >= cut[-1]:
            raise ValueError(f"{_OP}: label values must be in [0, {cut[-1] - 1}] (n_classes - 1 "
                             f"= cutoffs[-1] - 1), got values in [{lo}, {hi}]")
    head_logprob = F.log_softmax(F.linear(x, head_weight, head_bias), axis=1)
    # the head column of each row: its label if in the shortlist, else its cluster's column
    cluster = oar.zeros([n], "int64")
    for i in range(1, len(cut)):
        cluster = cluster + (y >= cut[i - 1]).astype("int64")
    head_col = oar.where(cluster == 0, y, cut[0] + cluster - 1)
    output = oar.take_along_axis(head_logprob, head_col.unsqueeze(1), axis=1).squeeze(1)
    for i in range(1, len(cut)):
        rows = oar.nonzero(cluster == i).reshape([-1])
        if rows.shape[0] == 0:
            continue  # only clusters some label falls in are evaluated
        tail = _tail_logprob(x.index_select(rows, axis=0), tail_weights[i - 1])
        rel = y.index_select(rows, axis=0) - cut[i - 1]
        local = oar.take_along_axis(tail, rel.unsqueeze(1), axis=1).squeeze(1)
        output = output.index_add(rows, 0, local)
    loss = (-output).mean()
    return (output if batched else output.squeeze(0)), loss
