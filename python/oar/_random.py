"""Random permutations (the other random creation functions live in _creation.py)."""
from . import _C
from ._dtype import convert_dtype

_ops = _C.ops


def randperm(n, dtype="int64", name=None):
    """A random permutation of 0 .. n-1 (Paddle's paddle.randperm)."""
    return _ops.randperm(int(n), convert_dtype(dtype), None)
