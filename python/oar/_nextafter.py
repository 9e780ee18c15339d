"""paddle.nextafter: the next representable float after x towards y, elementwise (C's
nextafter), on the nextafter kernel (binary_kernels.cc, on the floats' bits). No gradient, as
in Paddle."""
import numpy as np

from ._C import Tensor, ops as _ops

__all__ = ["nextafter"]
_TENSOR_METHODS = ["nextafter"]


def nextafter(x, y, name=None):
    """nextafter(x, y) for float32/float64 tensors of one dtype, broadcast."""
    for arg, t in (("x", x), ("y", y)):
        if not isinstance(t, Tensor):
            raise TypeError(f"nextafter: {arg} must be a Tensor, got {type(t).__name__}")
        if t.dtype.name not in ("float32", "float64"):
            raise TypeError(f"nextafter: {arg} must be float32 or float64, got {t.dtype.name}")
    if x.dtype != y.dtype:
        raise TypeError(f"nextafter: x and y must have one dtype, got {x.dtype.name} and "
                        f"{y.dtype.name}")
    try:
        np.broadcast_shapes(tuple(x.shape), tuple(y.shape))
    except ValueError:
        raise ValueError(f"nextafter: x of shape {list(x.shape)} and y of shape "
                         f"{list(y.shape)} cannot be broadcast together") from None
    return _ops._nextafter(x, y)
