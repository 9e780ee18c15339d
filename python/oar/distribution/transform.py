"""Transforms: invertible (or piecewise invertible) maps y = f(x) with the log absolute
determinant of their Jacobian, the building blocks of TransformedDistribution.

Each transform states the event rank of its domain and codomain (_domain_rank,
_codomain_rank): 0 for elementwise maps, 1 for maps that mix the last axis (softmax,
stick-breaking), more for reshapes. forward_log_det_jacobian(x) has the shape of x
without its domain_rank rightmost dims (or one that broadcasts to it)."""
import enum
import math
import numbers

import oar
import oar.nn.functional as F
from oar._creation import _full_on

__all__ = [
    "Transform", "AbsTransform", "AffineTransform", "ChainTransform", "ExpTransform",
    "IndependentTransform", "PowerTransform", "ReshapeTransform", "SigmoidTransform",
    "SoftmaxTransform", "StackTransform", "StickBreakingTransform", "TanhTransform",
]


class Type(enum.Enum):
    """How a transform maps its domain: one to one (BIJECTION), into (INJECTION), onto
    (SURJECTION) or neither (OTHER)."""
    BIJECTION = "bijection"
    INJECTION = "injection"
    SURJECTION = "surjection"
    OTHER = "other"

    @classmethod
    def is_injective(cls, t):
        return t in (cls.BIJECTION, cls.INJECTION)


def _tensor(owner, name, x):
    if not isinstance(x, oar.Tensor):
        raise TypeError(f"{owner}: argument '{name}' must be a Tensor, got {type(x).__name__}")
    return x


class Transform:
    """The base class of transforms. Calling a transform on a Tensor applies forward; on a
    Distribution gives the TransformedDistribution; on a Transform chains the two."""
    _type = Type.INJECTION
    _domain_rank = 0
    _codomain_rank = 0

    def __init__(self):
        pass

    @classmethod
    def _is_injective(cls):
        return Type.is_injective(cls._type)

    def __call__(self, input):
        from .distribution import Distribution
        from .transformed_distribution import TransformedDistribution
        if isinstance(input, Distribution):
            return TransformedDistribution(input, [self])
        if isinstance(input, Transform):
            return ChainTransform([self, input])
        return self.forward(input)

    def forward(self, x):
        """y = f(x)."""
        return self._forward(_tensor(type(self).__name__ + ".forward", "x", x))

    def inverse(self, y):
        """x = f^-1(y)."""
        return self._inverse(_tensor(type(self).__name__ + ".inverse", "y", y))

    def forward_log_det_jacobian(self, x):
        """log |det df/dx| at x."""
        name = type(self).__name__
        _tensor(name + ".forward_log_det_jacobian", "x", x)
        if not self._is_injective():
            raise NotImplementedError(f"{name}.forward_log_det_jacobian: the transform is "
                                      "not injective")
        if type(self)._forward_log_det_jacobian is not Transform._forward_log_det_jacobian:
            return self._forward_log_det_jacobian(x)
        return -self._inverse_log_det_jacobian(self.forward(x))

    def inverse_log_det_jacobian(self, y):
        """log |det df^-1/dy| at y."""
        name = type(self).__name__
        _tensor(name + ".inverse_log_det_jacobian", "y", y)
        if type(self)._inverse_log_det_jacobian is not Transform._inverse_log_det_jacobian:
            return self._inverse_log_det_jacobian(y)
        return -self._forward_log_det_jacobian(self.inverse(y))

    def forward_shape(self, shape):
        """The shape of forward(x) for x of this shape."""
        if not isinstance(shape, (list, tuple)):
            raise TypeError(f"{type(self).__name__}.forward_shape: shape must be a list or "
                            f"tuple, got {type(shape).__name__}")
        return self._forward_shape(tuple(shape))

    def inverse_shape(self, shape):
        """The shape of inverse(y) for y of this shape."""
        if not isinstance(shape, (list, tuple)):
            raise TypeError(f"{type(self).__name__}.inverse_shape: shape must be a list or "
                            f"tuple, got {type(shape).__name__}")
        return self._inverse_shape(tuple(shape))

    def _forward(self, x):
        raise NotImplementedError(f"{type(self).__name__}.forward")

    def _inverse(self, y):
        raise NotImplementedError(f"{type(self).__name__}.inverse")

    def _forward_log_det_jacobian(self, x):
        raise NotImplementedError(f"{type(self).__name__}.forward_log_det_jacobian")

    def _inverse_log_det_jacobian(self, y):
        raise NotImplementedError(f"{type(self).__name__}.inverse_log_det_jacobian")

    def _forward_shape(self, shape):
        return shape

    def _inverse_shape(self, shape):
        return shape


class AbsTransform(Transform):
    """y = |x|. Not injective: inverse(y) is the pair (-y, y), and
    inverse_log_det_jacobian the pair (0, 0)."""
    _type = Type.SURJECTION

    def _forward(self, x):
        return x.abs()

    def _inverse(self, y):
        return -y, y

    def _inverse_log_det_jacobian(self, y):
        zero = oar.zeros_like(y)
        return zero, zero


class AffineTransform(Transform):
    """y = loc + scale * x."""
    _type = Type.BIJECTION

    def __init__(self, loc, scale):
        self.loc = _tensor("AffineTransform", "loc", loc)
        self.scale = _tensor("AffineTransform", "scale", scale)
        super().__init__()

    def _forward(self, x):
        return self.loc + self.scale * x

    def _inverse(self, y):
        return (y - self.loc) / self.scale

    def _forward_log_det_jacobian(self, x):
        return self.scale.abs().log()

    def _forward_shape(self, shape):
        return _bshape(shape, self.loc.shape, self.scale.shape)

    def _inverse_shape(self, shape):
        return self._forward_shape(shape)


def _bshape(*shapes):
    import numpy as np
    return tuple(np.broadcast_shapes(*[tuple(s) for s in shapes]))


class ChainTransform(Transform):
    """The composition of transforms, applied in the order given."""

    def __init__(self, transforms):
        if not isinstance(transforms, (list, tuple)) or not all(
                isinstance(t, Transform) for t in transforms):
            raise TypeError("ChainTransform: argument 'transforms' must be a sequence of "
                            "Transform objects")
        self.transforms = list(transforms)
        super().__init__()

    def _is_injective(self):
        return all(t._is_injective() for t in self.transforms)

    @property
    def _domain_rank(self):
        rank = self._codomain_rank
        for t in reversed(self.transforms):
            rank += t._domain_rank - t._codomain_rank
            rank = max(rank, t._domain_rank)
        return rank

    @property
    def _codomain_rank(self):
        rank = 0
        for t in self.transforms:
            rank = max(rank + t._codomain_rank - t._domain_rank, t._codomain_rank)
        return rank

    def _forward(self, x):
        for t in self.transforms:
            x = t.forward(x)
        return x

    def _inverse(self, y):
        for t in reversed(self.transforms):
            y = t.inverse(y)
        return y

    def _forward_log_det_jacobian(self, x):
        value = 0.0
        rank = self._domain_rank
        for t in self.transforms:
            value = value + _sum_rightmost(t.forward_log_det_jacobian(x), rank - t._domain_rank)
            x = t.forward(x)
            rank += t._codomain_rank - t._domain_rank
        return value

    def _forward_shape(self, shape):
        for t in self.transforms:
            shape = t.forward_shape(shape)
        return shape

    def _inverse_shape(self, shape):
        for t in reversed(self.transforms):
            shape = t.inverse_shape(shape)
        return shape


def _sum_rightmost(value, n):
    return value.sum(list(range(-n, 0))) if n > 0 else value


class ExpTransform(Transform):
    """y = exp(x)."""
    _type = Type.BIJECTION

    def _forward(self, x):
        return x.exp()

    def _inverse(self, y):
        return y.log()

    def _forward_log_det_jacobian(self, x):
        return x


class IndependentTransform(Transform):
    """Treats the reinterpreted_batch_rank rightmost batch dims of a base transform as event
    dims: forward is the base's, the log-det-Jacobian is summed over those dims."""

    def __init__(self, base, reinterpreted_batch_rank):
        if not isinstance(base, Transform):
            raise TypeError(f"IndependentTransform: argument 'base' must be a Transform, got "
                            f"{type(base).__name__}")
        if isinstance(reinterpreted_batch_rank, bool) or not isinstance(
                reinterpreted_batch_rank, numbers.Integral) or reinterpreted_batch_rank <= 0:
            raise ValueError(f"IndependentTransform: argument 'reinterpreted_batch_rank' must "
                             f"be a positive int, got {reinterpreted_batch_rank!r}")
        self._base = base
        self._reinterpreted_batch_rank = int(reinterpreted_batch_rank)
        super().__init__()

    def _is_injective(self):
        return self._base._is_injective()

    @property
    def _domain_rank(self):
        return self._base._domain_rank + self._reinterpreted_batch_rank

    @property
    def _codomain_rank(self):
        return self._base._codomain_rank + self._reinterpreted_batch_rank

    def _forward(self, x):
        if x.ndim < self._domain_rank:
            raise ValueError(f"IndependentTransform.forward: x needs at least "
                             f"{self._domain_rank} dims, got shape {list(x.shape)}")
        return self._base.forward(x)

    def _inverse(self, y):
        return self._base.inverse(y)

    def _forward_log_det_jacobian(self, x):
        return _sum_rightmost(self._base.forward_log_det_jacobian(x),
                              self._reinterpreted_batch_rank)

    def _forward_shape(self, shape):
        return self._base.forward_shape(shape)

    def _inverse_shape(self, shape):
        return self._base.inverse_shape(shape)


class PowerTransform(Transform):
    """y = x ** power (on x > 0)."""
    _type = Type.BIJECTION

    def __init__(self, power):
        self.power = _tensor("PowerTransform", "power", power)
        super().__init__()

    def _forward(self, x):
        return x.pow(self.power)

    def _inverse(self, y):
        return y.pow(1.0 / self.power)

    def _forward_log_det_jacobian(self, x):
        return (self.power * x.pow(self.power - 1.0)).abs().log()

    def _forward_shape(self, shape):
        return _bshape(shape, self.power.shape)

    def _inverse_shape(self, shape):
        return _bshape(shape, self.power.shape)


class ReshapeTransform(Transform):
    """Reshapes the rightmost in_event_shape dims to out_event_shape (same element count);
    the log-det-Jacobian is 0."""
    _type = Type.BIJECTION

    def __init__(self, in_event_shape, out_event_shape):
        for name, s in (("in_event_shape", in_event_shape), ("out_event_shape", out_event_shape)):
            if not isinstance(s, (list, tuple)) or not all(
                    isinstance(d, numbers.Integral) and d >= 0 for d in s):
                raise TypeError(f"ReshapeTransform: argument '{name}' must be a sequence of "
                                f"non-negative ints, got {s!r}")
        self.in_event_shape = tuple(int(d) for d in in_event_shape)
        self.out_event_shape = tuple(int(d) for d in out_event_shape)
        if math.prod(self.in_event_shape) != math.prod(self.out_event_shape):
            raise ValueError(f"ReshapeTransform: in_event_shape {list(self.in_event_shape)} and "
                             f"out_event_shape {list(self.out_event_shape)} hold different "
                             "numbers of elements")
        super().__init__()

    @property
    def _domain_rank(self):
        return len(self.in_event_shape)

    @property
    def _codomain_rank(self):
        return len(self.out_event_shape)

    def _split(self, shape, event, what):
        n = len(event)
        if len(shape) < n or tuple(shape[len(shape) - n:]) != event:
            raise ValueError(f"ReshapeTransform: {what} shape {list(shape)} does not end in "
                             f"{list(event)}")
        return tuple(shape[:len(shape) - n])

    def _forward(self, x):
        batch = self._split(tuple(x.shape), self.in_event_shape, "input")
        return x.reshape(list(batch + self.out_event_shape))

    def _inverse(self, y):
        batch = self._split(tuple(y.shape), self.out_event_shape, "input")
        return y.reshape(list(batch + self.in_event_shape))

    def _forward_log_det_jacobian(self, x):
        batch = self._split(tuple(x.shape), self.in_event_shape, "input")
        return _full_on(x.place, list(batch), 0.0, x.dtype)

    def _forward_shape(self, shape):
        return self._split(shape, self.in_event_shape, "input") + self.out_event_shape

    def _inverse_shape(self, shape):
        return self._split(shape, self.out_event_shape, "input") + self.in_event_shape


class SigmoidTransform(Transform):
    """y = sigmoid(x)."""
    _type = Type.BIJECTION

    def _forward(self, x):
        return F.sigmoid(x)

    def _inverse(self, y):
        return y.log() - (-y).log1p()

    def _forward_log_det_jacobian(self, x):
        return -F.softplus(-x) - F.softplus(x)


class SoftmaxTransform(Transform):
    """y = softmax(x) over the last axis. Not injective (adding a constant to x leaves y
    unchanged): inverse(y) = log(y) is one preimage, and there is no log-det-Jacobian."""
    _type = Type.OTHER
    _domain_rank = 1
    _codomain_rank = 1

    def _forward(self, x):
        if x.ndim < 1:
            raise ValueError("SoftmaxTransform.forward: x needs at least 1 dim, got a 0-D tensor")
        return F.softmax(x, axis=-1)

    def _inverse(self, y):
        return y.log()

    def _forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("SoftmaxTransform.forward_shape: shape needs at least 1 dim")
        return shape

    _inverse_shape = _forward_shape


class StackTransform(Transform):
    """Applies transforms[i] to slice i of the input along axis, and stacks the results."""

    def __init__(self, transforms, axis=0):
        if not isinstance(transforms, (list, tuple)) or not transforms or not all(
                isinstance(t, Transform) for t in transforms):
            raise TypeError("StackTransform: argument 'transforms' must be a non-empty sequence "
                            "of Transform objects")
        if isinstance(axis, bool) or not isinstance(axis, numbers.Integral):
            raise TypeError(f"StackTransform: argument 'axis' must be an int, got {axis!r}")
        self._transforms = list(transforms)
        self._axis = int(axis)
        super().__init__()

    @property
    def transforms(self):
        return self._transforms

    @property
    def axis(self):
        return self._axis

    def _is_injective(self):
        return all(t._is_injective() for t in self._transforms)

    def _map(self, fn, v, what):
        if not -v.ndim <= self._axis < v.ndim:
            raise ValueError(f"StackTransform.{what}: axis {self._axis} is out of range for "
                             f"shape {list(v.shape)}")
        if v.shape[self._axis] != len(self._transforms):
            raise ValueError(f"StackTransform.{what}: the size of axis {self._axis} "
                             f"({v.shape[self._axis]}) must equal the number of transforms "
                             f"({len(self._transforms)})")
        parts = oar.unstack(v, axis=self._axis)
        return oar.stack([fn(t, p) for t, p in zip(self._transforms, parts)], axis=self._axis)

    def _forward(self, x):
        return self._map(lambda t, p: t.forward(p), x, "forward")

    def _inverse(self, y):
        return self._map(lambda t, p: t.inverse(p), y, "inverse")

    def _forward_log_det_jacobian(self, x):
        return self._map(lambda t, p: t.forward_log_det_jacobian(p) + oar.zeros_like(p),
                         x, "forward_log_det_jacobian")


class StickBreakingTransform(Transform):
    """Maps R^K onto the interior of the K-simplex in R^(K+1): piece i takes the fraction
    sigmoid(x_i - log(K - i)) of the stick left, and the last piece is the remainder."""
    _type = Type.BIJECTION
    _domain_rank = 1
    _codomain_rank = 1

    @staticmethod
    def _offset_log(n, like):
        return oar._C.ops.arange(n, 0, -1, like.dtype, like.place).log()

    def _forward(self, x):
        if x.ndim < 1:
            raise ValueError("StickBreakingTransform.forward: x needs at least 1 dim")
        t = x - self._offset_log(x.shape[-1], x)
        z = F.sigmoid(t)
        left = oar.cumprod(1.0 - z, dim=-1)
        ones = _full_on(x.place, list(x.shape[:-1]) + [1], 1.0, x.dtype)
        return oar.concat([z, ones], axis=-1) * oar.concat([ones, left], axis=-1)

    def _inverse(self, y):
        if y.ndim < 1 or y.shape[-1] < 1:
            raise ValueError(f"StickBreakingTransform.inverse: y needs a last axis of size >= "
                             f"1, got shape {list(y.shape)}")
        k = y.shape[-1] - 1
        head = y[..., :k]
        used = oar.cumsum(head, axis=-1) - head  # stick used before piece i
        z = head / (1.0 - used)
        return z.log() - (-z).log1p() + self._offset_log(k, y)

    def _forward_log_det_jacobian(self, x):
        t = x - self._offset_log(x.shape[-1], x)
        log_z, log_1mz = F.log_sigmoid(t), F.log_sigmoid(-t)
        log_y = log_z + oar.cumsum(log_1mz, axis=-1) - log_1mz
        return (log_y + log_1mz).sum(-1)

    def _forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("StickBreakingTransform.forward_shape: shape needs at least 1 dim")
        return tuple(shape[:-1]) + (shape[-1] + 1,)

    def _inverse_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("StickBreakingTransform.inverse_shape: shape needs at least 1 dim")
        return tuple(shape[:-1]) + (shape[-1] - 1,)


class TanhTransform(Transform):
    """y = tanh(x)."""
    _type = Type.BIJECTION

    def _forward(self, x):
        return x.tanh()

    def _inverse(self, y):
        return oar.atanh(y)

    def _forward_log_det_jacobian(self, x):
        # log(1 - tanh(x)^2) = 2 (log 2 - x - softplus(-2x)), stable for large |x|
        return 2.0 * (math.log(2.0) - x - F.softplus(-2.0 * x))
