"""paddle.nextafter: the next representable float after x towards y, elementwise (C's
nextafter), through NumPy's np.nextafter: it needs the floats' bits, and Oar has no bit-cast
op; the nextafter kernel and its op definition wait on branch compat_kern_ops_wip for a
full rebuild. No gradient, as in Paddle."""
import numpy as np

from ._C import Tensor

__all__ = ["nextafter"]
_TENSOR_METHODS = ["nextafter"]


def nextafter(x, y, name=None):
    """nextafter(x, y) for float32/float64 tensors of one dtype, broadcast."""
    import oar
    for arg, t in (("x", x), ("y", y)):
        if not isinstance(t, Tensor):
            raise TypeError(f"nextafter: {arg} must be a Tensor, got {type(t).__name__}")
        if t.dtype.name not in ("float32", "float64"):
            raise TypeError(f"nextafter: {arg} must be float32 or float64, got {t.dtype.name}")
    if x.dtype != y.dtype:
        raise TypeError(f"nextafter: x and y must have one dtype, got {x.dtype.name} and "
                        f"{y.dtype.name}")
    try:
        shape = np.broadcast_shapes(tuple(x.shape), tuple(y.shape))
    except ValueError:
        raise ValueError(f"nextafter: x of shape {list(x.shape)} and y of shape "
                         f"{list(y.shape)} cannot be broadcast together") from None
    out = np.nextafter(x.numpy(), y.numpy()).reshape(shape)
    return oar.to_tensor(np.ascontiguousarray(out, dtype=x.dtype.name), place=x.place)
