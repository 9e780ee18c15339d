"""The oar.* op namespace: the generated C++ functions, plus the few Paddle
signatures that need a Python shim (pow taking a float or a Tensor, argmax with
axis=None, ...)."""
from . import _C, _creation
from ._random import randperm, bernoulli, multinomial, Generator, default_generator
from ._tensor import _pow, argmax, argmin

_ops = _C.ops
# Creation ops whose Paddle signature differs from the op's (arange(5), uniform(shape))
# keep their Python wrappers: `from ._ops import *` must not shadow them.
_wrapped = {n for n in dir(_creation) if not n.startswith("_")} | {"randperm"}
_names = [n for n in dir(_ops) if not n.startswith("_") and n not in _wrapped]
globals().update({n: getattr(_ops, n) for n in _names})


def pow(x, y, name=None):  # noqa: A001  (Paddle's name)
    """x ** y for a float/int y or a Tensor y."""
    if not isinstance(x, _C.Tensor):
        raise TypeError(f"pow: argument 'x' must be a Tensor, got {type(x).__name__}")
    return _pow(x, y)


mod = _ops.remainder
floor_mod = _ops.remainder
sigmoid = _ops.sigmoid

__all__ = _names + ["pow", "argmax", "argmin", "mod", "floor_mod", "randperm", "bernoulli",
                    "multinomial", "Generator", "default_generator"]
from . import _indexing  # noqa: E402,F401  (Tensor indexing; op shims: split, nonzero, where)
