"""More of paddle.Tensor's methods over existing ops: repeat (tile), split_with_sizes,
apply/apply_, requires_grad, itemsize, exponential_/random_ and copy.deepcopy."""

from . import _C, _trace_state
from ._C import Tensor
from ._tensor import _copy_

_ops = _C.ops


def _repeat(self, *repeats):
    """Tiles self: x.repeat(2, 3) or x.repeat([2, 3]); fewer repeats than dims apply to the
    trailing dims, more add leading dims (Paddle's Tensor.repeat)."""
    if len(repeats) == 1 and isinstance(repeats[0], (list, tuple, Tensor)):
        repeats = repeats[0]
    reps = repeats.tolist() if isinstance(repeats, Tensor) else [int(r) for r in repeats]
    if any(r < 0 for r in reps):
        raise ValueError(f"repeat: repeats must be non-negative, got {reps}")
    from . import tile
    return tile(self, reps)


def _split_with_sizes(self, split_sizes, dim=0):
    """Splits self along dim into pieces of the given sizes (which must sum to its size)."""
    sizes = [int(s) for s in split_sizes]
    d = dim % max(self.ndim, 1)
    if any(s < 0 for s in sizes) or sum(sizes) != self.shape[d]:
        raise ValueError(f"split_with_sizes: split_sizes {sizes} must be non-negative and sum to "
                         f"the size of dim {dim} ({self.shape[d]})")
    from . import split
    return split(self, sizes, axis=d)


def _check_apply(self, op):
    if not self.stop_gradient:
        raise RuntimeError(f"{op}: cannot apply a function to a tensor that requires gradient "
                           "(stop_gradient=False)")


def _apply(self, func):
    """func(self) on a tensor that does not require gradient."""
    _check_apply(self, "apply")
    from .autograd import no_grad
    with no_grad():
        return func(self)


def _apply_(self, func):
    """Replaces self's values by func(self), in place; returns self."""
    _check_apply(self, "apply_")
    from .autograd import no_grad
    with no_grad():
        out = func(self)
    if list(out.shape) != list(self.shape):
        raise ValueError(f"apply_: func must keep the shape {list(self.shape)}, got "
                         f"{list(out.shape)}")
    return _copy_(self, out)


def _exponential_(self, lam=1.0, name=None):
    """Fills self in place with Exponential(lam) samples: -log(1 - U) / lam."""
    if not self.dtype.is_floating_point:
        raise TypeError(f"exponential_: the tensor must have a floating-point dtype, got {self.dtype}")
    if not float(lam) > 0:
        raise ValueError(f"exponential_: lam must be positive, got {lam}")
    from . import rand
    u = rand(_trace_state.sizes_of(self), "float64")
    return _copy_(self, (-_ops.log1p(-u) / float(lam)).astype(self.dtype))


def _random_(self, from_=0, to=None, *, generator=None):
    """Fills self in place with integers drawn uniformly from [from_, to) (to defaults to the
    dtype's largest integer + 1, capped at 2**24 for float32 as in Paddle)."""
    from . import randint
    if to is None:
        name = self.dtype.name
        to = {"float16": 2 ** 11 + 1, "bfloat16": 2 ** 8 + 1, "float32": 2 ** 24 + 1,
              "float64": 2 ** 53 + 1, "int32": 2 ** 31, "uint8": 256, "int8": 128,
              "int16": 2 ** 15, "bool": 2}.get(name, 2 ** 63 - 1)
    if int(from_) >= int(to):
        raise ValueError(f"random_: from ({from_}) must be less than to ({to})")
    return _copy_(self, randint(int(from_), int(to), list(self.shape), "int64").astype(self.dtype))


def _deepcopy(self, memo):
    """copy.deepcopy(tensor): a new tensor with the same values, stop_gradient and name."""
    if id(self) in memo:
        return memo[id(self)]
    out = _ops.assign(self.detach())
    out.stop_gradient = self.stop_gradient
    memo[id(self)] = out
    return out


def _get_requires_grad(self):
    return not self.stop_gradient


def _set_requires_grad(self, value):
    self.stop_gradient = not bool(value)


def _itemsize(self):
    return self.element_size()


def _is_floating_point(self):
    """Whether self has a floating-point dtype (Tensor.is_floating_point)."""
    return self.dtype.is_floating_point


Tensor.repeat = _repeat
Tensor.is_floating_point = _is_floating_point
Tensor.split_with_sizes = _split_with_sizes
Tensor.apply = _apply
Tensor.apply_ = _apply_
Tensor.exponential_ = _exponential_
Tensor.random_ = _random_
Tensor.__deepcopy__ = _deepcopy
Tensor.requires_grad = property(_get_requires_grad, _set_requires_grad,
                                doc="Whether gradients are computed for this tensor "
                                    "(not stop_gradient).")
Tensor.itemsize = property(_itemsize, doc="Bytes per element.")


def _is_shared_buffer_with(self, other):
    """Whether self and other share one memory allocation (Paddle's Tensor helper)."""
    return isinstance(other, Tensor) and self._share_storage_with(other)


Tensor._is_shared_buffer_with = _is_shared_buffer_with
