"""The oar.* op namespace: the generated C++ functions, plus the few Paddle
signatures that need a Python shim (pow taking a float or a Tensor, argmax with
axis=None, ...)."""
from . import _C
from ._tensor import argmax, argmin, _pow

_ops = _C.ops
_names = [n for n in dir(_ops) if not n.startswith("_")]
globals().update({n: getattr(_ops, n) for n in _names})


def pow(x, y, name=None):  # noqa: A001  (Paddle's name)
    """x ** y for a float/int y or a Tensor y."""
    return _pow(x, y)


mod = _ops.remainder
floor_mod = _ops.remainder
sigmoid = _ops.sigmoid

__all__ = _names + ["pow", "argmax", "argmin", "mod", "floor_mod"]
