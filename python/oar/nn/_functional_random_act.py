"""Randomized activations and dropouts of Paddle 3.3 composed of existing ops: rrelu (a
random leaky slope per negative element) and feature_alpha_dropout (alpha dropout of whole
channels). Their draws follow Paddle's order, so seeded runs reproduce Paddle's numbers."""
import numbers

from .. import _trace_state
from .._C import Tensor

__all__ = ["rrelu", "feature_alpha_dropout"]

_ALPHA_P = -1.6732632423543772848170429916717 * 1.0507009873554804934193349852946


def _float_input(x, op):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: x must be a Tensor, got {type(x).__name__}")
    if not x.dtype.is_floating_point:
        raise TypeError(f"{op}: x must have a floating-point dtype, got {x.dtype.name}")


def rrelu(x, lower=1.0 / 8.0, upper=1.0 / 3.0, training=True, name=None):
    """x where x >= 0; elsewhere x * a, with a ~ U(lower, upper) drawn for each negative
    element in order while training, and a = (lower + upper) / 2 otherwise."""
    import oar
    op = "rrelu"
    _float_input(x, op)
    for arg, v in (("lower", lower), ("upper", upper)):
        if isinstance(v, bool) or not isinstance(v, numbers.Real) or not 0.0 <= v <= 1.0:
            raise ValueError(f"{op}: {arg} must be a float in [0, 1], got {v!r}")
    if lower > upper:
        raise ValueError(f"{op}: lower ({lower}) must not exceed upper ({upper})")
    neg = x < 0
    if not training:
        return oar.where(neg, x * ((lower + upper) / 2.0), x)
    count = int(neg.astype("int64").sum()) if x.size else 0
    if count == 0:
        return x * oar.ones_like(x)
    from .._creation import _uniform
    draws = _uniform([count], x.dtype, lower, upper, 0, x.place)
    slopes = oar.masked_scatter(oar.ones_like(x), neg, draws)
    return x * slopes.detach()


def feature_alpha_dropout(x, p=0.5, training=True, name=None):
    """Alpha dropout (SELU's self-normalizing dropout) of whole channels: one keep draw per
    (sample, channel) of x [N, C, ...], shared by that channel's elements."""
    op = "feature_alpha_dropout"
    _float_input(x, op)
    if isinstance(p, bool) or not isinstance(p, numbers.Real) or not 0.0 <= p <= 1.0:
        raise ValueError(f"{op}: p must be a float in [0, 1], got {p!r}")
    if not training:
        return x
    if x.ndim < 2:
        raise ValueError(f"{op}: x must be at least 2-D ([N, C, ...]), got shape {list(x.shape)}")
    if p == 1.0:
        return x * 0.0
    from .._creation import _rand_on
    a = ((1.0 - p) * (1.0 + p * _ALPHA_P ** 2)) ** -0.5
    b = -a * _ALPHA_P * p
    shape = _trace_state.sizes_of(x)[:2] + [1] * (x.ndim - 2)
    keep = (_rand_on(x.place, shape, "float32") >= p).astype(x.dtype)
    return (x * keep + (1.0 - keep) * _ALPHA_P) * a + b
