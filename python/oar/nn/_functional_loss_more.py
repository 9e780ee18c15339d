"""More of Paddle's loss functionals (hinge/cosine embedding, soft margins, triplet, Poisson
and Gaussian NLL, focal, dice, npair, label smoothing) and small activations that are
compositions of ops (maxout, swiglu, channel_shuffle, sequence_mask). Written over
differentiable ops, so gradients come from autograd; each follows Paddle 3.3's formula.
(Note [Compositions of Paddle functions] in docs/notes/training_api.md.)"""
import math
import numbers

import numpy as np

import oar
from .. import _C

_ops = _C.ops

__all__ = ["square_error_cost", "log_loss", "soft_margin_loss", "hinge_embedding_loss",
           "cosine_embedding_loss", "multi_label_soft_margin_loss", "multi_margin_loss",
           "triplet_margin_loss", "triplet_margin_with_distance_loss", "poisson_nll_loss",
           "gaussian_nll_loss", "sigmoid_focal_loss", "dice_loss", "npair_loss", "label_smooth",
           "softmax_with_cross_entropy", "maxout", "swiglu", "channel_shuffle", "sequence_mask",
           "dropout1d"]


def _reduction(op, reduction):
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{op}: reduction must be 'mean', 'sum' or 'none', got '{reduction}'")


def _reduce(loss, reduction):
    if reduction == "mean":
        return oar.mean(loss)
    if reduction == "sum":
        return oar.sum(loss)
    return loss


def _same_shape(op, a, b, an="input", bn="label"):
    if list(a.shape) != list(b.shape):
        raise ValueError(f"{op}: {an} shape {list(a.shape)} and {bn} shape {list(b.shape)} must "
                         f"be equal")


def square_error_cost(input, label):  # noqa: A002 (Paddle's names)
    """(input - label)**2, elementwise."""
    d = input - label
    return d * d


def log_loss(input, label, epsilon=0.0001, name=None):  # noqa: A002
    """-label log(input + eps) - (1 - label) log(1 - input + eps), elementwise."""
    _same_shape("log_loss", input, label)
    return -label * oar.log(input + epsilon) - (1.0 - label) * oar.log(1.0 - input + epsilon)


def soft_margin_loss(input, label, reduction="mean", name=None):  # noqa: A002
    """log(1 + exp(-label * input)) with labels in {-1, 1}."""
    _reduction("soft_margin_loss", reduction)
    _same_shape("soft_margin_loss", input, label)
    return _reduce(oar.log(1.0 + oar.exp(-label.astype(input.dtype) * input)), reduction)


def hinge_embedding_loss(input, label, margin=1.0, reduction="mean", name=None):  # noqa: A002
    """input where label == 1, max(0, margin - input) where label == -1."""
    _reduction("hinge_embedding_loss", reduction)
    zero = _ops.full([1], 0.0, input.dtype, input.place)
    loss = (oar.where(label == 1.0, input, zero)
            + oar.where(label == -1.0, _ops.relu(margin - input), zero))
    return _reduce(loss, reduction)


def cosine_embedding_loss(input1, input2, label, margin=0, reduction="mean", name=None):
    """1 - cos(input1, input2) where label == 1, max(0, cos - margin) where label == -1."""
    _reduction("cosine_embedding_loss", reduction)
    if label.ndim != 1:
        raise ValueError(f"cosine_embedding_loss: label must be 1-D, got shape {list(label.shape)}")
    _same_shape("cosine_embedding_loss", input1, input2, "input1", "input2")
    if input1.ndim > 2:
        raise ValueError(f"cosine_embedding_loss: inputs must be 1-D or 2-D, got shape "
                         f"{list(input1.shape)}")
    prod = (input1 * input2).sum(axis=-1)
    m1 = (input1 * input1).sum(axis=-1) + 1e-11
    m2 = (input2 * input2).sum(axis=-1) + 1e-11
    cos = prod / oar.sqrt(m1 * m2)
    zeros = oar.zeros_like(cos)
    out = (oar.where(label == 1, 1 - cos, zeros)
           + oar.where(label == -1, oar.clip(cos - margin, min=0), zeros))
    return _reduce(out, reduction)


def multi_label_soft_margin_loss(input, label, weight=None, reduction="mean", name=None):  # noqa: A002
    """-(label log sigmoid(input) + (1 - label) log sigmoid(-input)), averaged over classes."""
    _reduction("multi_label_soft_margin_loss", reduction)
    _same_shape("multi_label_soft_margin_loss", input, label)
    loss = -(label * _ops.log_sigmoid(input) + (1 - label) * _ops.log_sigmoid(-input))
    if weight is not None:
        loss = loss * weight
    return _reduce(loss.mean(axis=-1), reduction)


def multi_margin_loss(input, label, p=1, margin=1.0, weight=None, reduction="mean", name=None):  # noqa: A002
    """Multi-class hinge loss: mean over classes of max(0, margin - x[y] + x[i])**p (the i == y
    term removed)."""
    _reduction("multi_margin_loss", reduction)
    if input.ndim != 2 or input.shape[0] != label.shape[0]:
        raise ValueError(f"multi_margin_loss: input must be [N, C] and label [N], got shapes "
                         f"{list(input.shape)} and {list(label.shape)}")
    if isinstance(p, bool) or not isinstance(p, numbers.Real):
        raise TypeError(f"multi_margin_loss: p must be a number, got {type(p).__name__}")
    # in float64: a Python int margin ** p with a huge integer p would be an endless bigint power
    with np.errstate(over="ignore", invalid="ignore"):
        margin_p = float(np.power(np.float64(margin), np.float64(p)))
    lab = label.reshape([-1, 1]).astype("int64")
    picked = oar.take_along_axis(input, lab, axis=1)
    terms = oar.pow(oar.clip(margin - picked + input, min=0.0), p)
    c = input.shape[1]
    if weight is not None:
        w = oar.gather(weight, lab.reshape([-1]), axis=0).reshape([-1, 1])
        loss = oar.mean(w * terms, axis=1) - (w * (margin_p / c)).squeeze(-1)
    else:
        loss = oar.mean(terms, axis=1) - margin_p / c
    return _reduce(loss, reduction)


def triplet_margin_with_distance_loss(input, positive, negative, distance_function=None,  # noqa: A002
                                      margin=1.0, swap=False, reduction="mean", name=None):
    """max(d(input, positive) - d(input, negative) + margin, 0), d the given distance
    (default: pairwise Euclidean); swap takes min(d(a, n), d(p, n))."""
    op = "triplet_margin_with_distance_loss"
    _reduction(op, reduction)
    if margin < 0:
        raise ValueError(f"{op}: margin must be non-negative, got {margin}")
    _same_shape(op, input, positive, "input", "positive")
    _same_shape(op, input, negative, "input", "negative")
    dist = distance_function or oar.nn.functional.pairwise_distance
    pos, neg = dist(input, positive), dist(input, negative)
    if swap:
        neg = oar.minimum(neg, dist(positive, negative))
    return _reduce(oar.clip(pos - neg + margin, min=0.0), reduction)


def triplet_margin_loss(input, positive, negative, margin=1.0, p=2, epsilon=1e-6, swap=False,  # noqa: A002
                        reduction="mean", name=None):
    """The triplet loss with the p-norm pairwise distance."""
    def dist(a, b):
        return oar.nn.functional.pairwise_distance(a, b, p=p, epsilon=epsilon)
    if margin < 0:
        raise ValueError(f"triplet_margin_loss: margin must be non-negative, got {margin}")
    _reduction("triplet_margin_loss", reduction)
    return triplet_margin_with_distance_loss(input, positive, negative, dist, margin, swap,
                                             reduction)


def poisson_nll_loss(input, label, log_input=True, full=False, epsilon=1e-8, reduction="mean",  # noqa: A002
                     name=None):
    """exp(input) - label * input (log_input) or input - label log(input + eps); `full` adds
    Stirling's term where label > 1."""
    _reduction("poisson_nll_loss", reduction)
    if epsilon <= 0:
        raise ValueError(f"poisson_nll_loss: epsilon must be positive, got {epsilon}")
    _same_shape("poisson_nll_loss", input, label)
    if log_input:
        loss = oar.exp(input) - label * input
    else:
        loss = input - label * oar.log(input + epsilon)
    if full:
        safe = oar.where(label > 1, label, oar.ones_like(label))
        stirling = safe * oar.log(safe) - safe + 0.5 * oar.log(2 * math.pi * safe)
        loss = loss + oar.where(label > 1, stirling, oar.zeros_like(stirling))
    return _reduce(loss, reduction)


def gaussian_nll_loss(input, label, variance, full=False, epsilon=1e-6, reduction="mean",  # noqa: A002
                      name=None):
    """0.5 (log(var) + (input - label)**2 / var) with var clipped at epsilon (its gradient
    passes the clip, as Paddle's no_grad clip); `full` adds 0.5 log(2 pi)."""
    _reduction("gaussian_nll_loss", reduction)
    if list(variance.shape) != list(input.shape):
        if list(input.shape[:-1]) == list(variance.shape):
            variance = oar.unsqueeze(variance, -1)
        elif not (list(input.shape[:-1]) == list(variance.shape[:-1]) and variance.shape[-1] == 1):
            raise ValueError(f"gaussian_nll_loss: variance of shape {list(variance.shape)} does not "
                             f"fit input of shape {list(input.shape)}")
    if variance.size and bool(oar.any(variance < 0)):
        raise ValueError("gaussian_nll_loss: variance has negative entries")
    var = variance + (oar.clip(variance, min=epsilon) - variance).detach()
    loss = 0.5 * (oar.log(var) + oar.square(input - label) / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def sigmoid_focal_loss(logit, label, normalizer=None, alpha=0.25, gamma=2.0, reduction="sum",
                       name=None):
    """alpha_t (1 - p_t)**gamma * BCE-with-logits, divided by normalizer when given."""
    _reduction("sigmoid_focal_loss", reduction)
    if normalizer is not None and normalizer.ndim > 1:
        raise ValueError(f"sigmoid_focal_loss: normalizer must be 0-D or 1-D, got shape "
                         f"{list(normalizer.shape)}")
    bce = oar.nn.functional.binary_cross_entropy_with_logits(logit, label, reduction="none")
    pred = oar.sigmoid(logit)
    p_t = pred * label + (1 - pred) * (1 - label)
    alpha_t = alpha * label + (1 - alpha) * (1 - label)
    loss = alpha_t * bce * oar.pow(1 - p_t, gamma)
    if normalizer is not None:
        loss = loss / normalizer
    return _reduce(loss, reduction)


def dice_loss(input, label, epsilon=1e-05, name=None):  # noqa: A002
    """1 - 2 |X n Y| / (|X| + |Y|) per sample, averaged; input holds probabilities [N, ..., C],
    label class ids [N, ..., 1]."""
    if input.ndim < 2 or input.ndim != label.ndim or label.shape[-1] != 1 or \
            list(input.shape[:-1]) != list(label.shape[:-1]):
        raise ValueError(f"dice_loss: input [N, ..., C] and label [N, ..., 1] must agree, got "
                         f"shapes {list(input.shape)} and {list(label.shape)}")
    onehot = oar.nn.functional.one_hot(oar.squeeze(label, [-1]), input.shape[-1]).astype(input.dtype)
    dims = list(range(1, input.ndim))
    inse = oar.sum(input * onehot, axis=dims)
    denom = oar.sum(input, axis=dims) + oar.sum(onehot, axis=dims)
    return oar.mean(1 - inse * 2 / (denom + epsilon))


def npair_loss(anchor, positive, labels, l2_reg=0.002):
    """The N-pair loss: soft-label cross-entropy of anchor @ positive.T against the label
    equality matrix, plus l2_reg/4 times the mean squared norms."""
    if anchor.size == 0 or positive.size == 0:
        raise ValueError("npair_loss: anchor and positive must not be empty")
    n = labels.shape[0]
    lab = oar.reshape(labels, [n, 1]).tile([1, n])
    lab = oar.equal(lab, oar.transpose(lab, [1, 0])).astype(anchor.dtype)
    lab = lab / oar.sum(lab, axis=1, keepdim=True)
    l2 = (oar.mean(oar.sum(oar.square(anchor), 1)) + oar.mean(oar.sum(oar.square(positive), 1)))
    l2 = l2 * 0.25 * l2_reg
    sim = oar.matmul(anchor, positive, transpose_y=True)
    ce = -oar.sum(lab * _ops.log_softmax(sim, -1), axis=-1, keepdim=True)
    return l2 + oar.mean(oar.sum(lab * ce, 0))


def label_smooth(label, prior_dist=None, epsilon=0.1, name=None):
    """(1 - epsilon) * label + epsilon * prior (uniform 1/C unless prior_dist is given)."""
    if not 0.0 <= epsilon <= 1.0:
        raise ValueError(f"label_smooth: epsilon must be in [0, 1], got {epsilon}")
    prior = prior_dist if prior_dist is not None else 1.0 / label.shape[-1]
    return (1.0 - epsilon) * label + epsilon * prior


def softmax_with_cross_entropy(logits, label, soft_label=False, ignore_index=-100,
                               numeric_stable_mode=True, return_softmax=False, axis=-1):
    """Cross-entropy of softmax(logits) per sample, keeping the class axis with size 1
    (Paddle's fluid-era API); with return_softmax, also the softmax."""
    ax = axis % logits.ndim
    if not soft_label and label.ndim == logits.ndim - 1:
        label = oar.unsqueeze(label, ax)
    loss = _ops.cross_entropy(logits, label, None, soft_label, True, ignore_index, ax, 0.0, "none")
    if loss.ndim == logits.ndim - 1:
        loss = oar.unsqueeze(loss, ax)
    if return_softmax:
        return loss, _ops.softmax(logits, ax)
    return loss


def maxout(x, groups, axis=1, name=None):
    """The maximum over each group of `groups` consecutive channels of axis (1, or -1/3 for NHWC)."""
    if x.ndim != 4:
        raise ValueError(f"maxout: x must be 4-D, got shape {list(x.shape)}")
    if axis not in (1, -1, 3):
        raise ValueError(f"maxout: axis must be 1 (NCHW) or -1/3 (NHWC), got {axis}")
    a = axis % 4
    c = x.shape[a]
    if groups <= 0 or c % groups:
        raise ValueError(f"maxout: the channels ({c}) must be divisible by groups ({groups})")
    shape = list(x.shape[:a]) + [c // groups, groups] + list(x.shape[a + 1:])
    return oar.amax(oar.reshape(x, shape), axis=a + 1)


def swiglu(x, y=None, name=None):
    """silu(x) * y; without y, x's last dim is split in half: silu(first) * second."""
    if y is None:
        if x.shape[-1] % 2:
            raise ValueError(f"swiglu: x's last dimension must be even when y is None, got "
                             f"{x.shape[-1]}")
        x, y = oar.chunk(x, 2, axis=-1)
    return _ops.silu(x) * y


def channel_shuffle(x, groups, data_format="NCHW", name=None):
    """Interleaves the channels of `groups` groups (ShuffleNet)."""
    if x.ndim != 4:
        raise ValueError(f"channel_shuffle: x must be 4-D, got shape {list(x.shape)}")
    if not isinstance(groups, int) or groups <= 0:
        raise ValueError(f"channel_shuffle: groups must be a positive int, got {groups}")
    if data_format not in ("NCHW", "NHWC"):
        raise ValueError(f"channel_shuffle: data_format must be 'NCHW' or 'NHWC', got "
                         f"'{data_format}'")
    a = 1 if data_format == "NCHW" else 3
    c = x.shape[a]
    if c % groups:
        raise ValueError(f"channel_shuffle: the channels ({c}) must be divisible by groups "
                         f"({groups})")
    shape = list(x.shape[:a]) + [groups, c // groups] + list(x.shape[a + 1:])
    perm = list(range(5))
    perm[a], perm[a + 1] = perm[a + 1], perm[a]
    return oar.reshape(oar.transpose(oar.reshape(x, shape), perm), list(x.shape))


def sequence_mask(x, maxlen=None, dtype="int64", name=None):
    """mask[..., j] = j < x[...]: [*x.shape, maxlen] (maxlen defaults to max(x))."""
    if maxlen is None:
        maxlen = int(x.max()) if x.size else 0
    elif isinstance(maxlen, oar.Tensor):
        maxlen = int(maxlen.item())
    out = _C.ops.arange(0, int(maxlen), 1, x.dtype, x.place) < oar.unsqueeze(x, -1)
    out = out.astype(dtype)
    out.stop_gradient = True
    return out


def dropout1d(input, p=0.5, training=True, inplace=False):  # noqa: A002
    """Zeroes whole channels of a [N, C, L] (or [C, L]) input with probability p."""
    if not 0 <= p <= 1:
        raise ValueError(f"dropout1d: p must be in [0, 1], got {p}")
    if input.ndim not in (2, 3):
        raise ValueError(f"dropout1d: input must be 2-D or 3-D, got shape {list(input.shape)}")
    x = input.unsqueeze(0) if input.ndim == 2 else input
    out = oar.nn.functional.dropout(x, p=p, axis=1, training=training)  # as Paddle: one mask over N
    return out.squeeze(0) if input.ndim == 2 else out
