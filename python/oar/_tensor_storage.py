"""Tensor methods that replace a tensor's memory in place, as Paddle's: set_ (share another
tensor's storage, optionally through a shape/stride/offset), resize_ (a new shape keeping
the leading elements), cast_ (another dtype). set_ and resize_ run on the binding
Tensor._set_dense_from, which refuses views and outputs of differentiable ops; cast_ on
Tensor._commit_cast, which keeps the history of a non-leaf as an in-place op does."""
import math

from ._C import Tensor

__all__ = ["cast_"]  # oar.cast_, as paddle.cast_ (Paddle has no top-level set_ / resize_)
_TENSOR_METHODS = ["set_", "resize_", "cast_"]


def _int_list(v, op, arg):
    if isinstance(v, Tensor):
        v = v.tolist()
    if not isinstance(v, (list, tuple)) or not all(
            isinstance(d, int) and not isinstance(d, bool) for d in v):
        raise TypeError(f"{op}: {arg} must be a list or tuple of ints, got {v!r}")
    return list(v)


def set_(x, source=None, shape=None, stride=None, offset=0, name=None):
    """x shares source's storage from then on, seen through shape / stride (in elements) /
    offset (in bytes; default: source's own shape and strides); no source makes x empty
    (shape [0]). Returns x."""
    import oar
    if not isinstance(x, Tensor):
        raise TypeError(f"set_: x must be a Tensor, got {type(x).__name__}")
    if x.is_leaf and not x.stop_gradient:  # as Paddle's in-place rule
        raise ValueError("set_: x is a leaf tensor that requires grad (stop_gradient=False); "
                         "its memory cannot be replaced in place")
    if source is None:
        source = oar.zeros([0], x.dtype)
    if not isinstance(source, Tensor):
        raise TypeError(f"set_: source must be a Tensor, got {type(source).__name__}")
    if source.dtype != x.dtype:
        raise TypeError(f"set_: source's dtype {source.dtype.name} differs from x's "
                        f"{x.dtype.name}")
    if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
        raise ValueError(f"set_: offset must be a non-negative int (bytes), got {offset!r}")
    itemsize = source.element_size()
    if offset % itemsize:
        raise ValueError(f"set_: offset {offset} is not a multiple of the element size "
                         f"{itemsize} of {source.dtype.name}")
    view = source
    if shape is not None or stride is not None or offset:
        shape = list(source.shape) if shape is None else _int_list(shape, "set_", "shape")
        if any(d < 0 for d in shape):
            raise ValueError(f"set_: shape {shape} has a negative size")
        if stride is None:
            stride, acc = [], 1
            for d in reversed(shape):
                stride.insert(0, acc)
                acc *= max(d, 1)
        stride = _int_list(stride, "set_", "stride")
        if len(stride) != len(shape) or any(s < 0 for s in stride):
            raise ValueError(f"set_: stride {stride} must be non-negative, one per dim of "
                             f"shape {shape}")
        start = offset // itemsize  # as_strided checks the elements reached
        view = oar.as_strided(source, shape, stride, start)
    x._set_dense_from(view)
    return x


def resize_(x, shape, fill_zero=False, name=None):
    """x takes `shape`, keeping its first elements in row-major order; elements past x's old
    size are zeros (Paddle leaves them undetermined unless fill_zero). Returns x."""
    import oar
    if not isinstance(x, Tensor):
        raise TypeError(f"resize_: x must be a Tensor, got {type(x).__name__}")
    shape = _int_list(shape, "resize_", "shape")
    if any(d < 0 for d in shape):
        raise ValueError(f"resize_: shape {shape} has a negative size")
    n = math.prod(shape)
    from .nn._errors import check_fits
    check_fits("resize_", f"shape {shape}", n * x.element_size())
    with oar.no_grad():
        flat = x.detach().reshape([-1])
        if n <= flat.size:
            new = flat[:n].clone()
        else:
            new = oar.concat([flat, oar.zeros([n - flat.size], x.dtype)])
        new = new.reshape(shape).contiguous()
    x._set_dense_from(new)
    return x


def cast_(x, dtype, name=None):
    """x holds its values converted to dtype, in place (Paddle's paddle.cast_): the memory
    and, for a non-leaf, the history of x.cast(dtype) replace x's. As other in-place ops it
    refuses a leaf that requires grad (outside no_grad), and a view, whose base could not
    share the new dtype's memory. Returns x."""
    if not isinstance(x, Tensor):
        raise TypeError(f"cast_: x must be a Tensor, got {type(x).__name__}")
    x._commit_cast(x.cast(dtype))
    return x
