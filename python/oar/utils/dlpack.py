"""DLPack interop: zero-copy exchange with NumPy, PyTorch, JAX..."""
from .. import _C

__all__ = ["to_dlpack", "from_dlpack"]


def to_dlpack(x):
    """A 'dltensor' capsule sharing x's memory."""
    return _C.to_dlpack(x)


def from_dlpack(dlpack):
    """A Tensor sharing the memory of a capsule or of any object with __dlpack__."""
    return _C.from_dlpack(dlpack)
