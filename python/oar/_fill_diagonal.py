"""Tensor.fill_diagonal_, fill_diagonal_tensor and fill_diagonal_tensor_ (Paddle's
paddle.tensor.manipulation versions): writes through a flat view of x (in place) or
diagonal_scatter (out of place, differentiable in x and y)."""
import numpy as np

__all__ = ["fill_diagonal_", "fill_diagonal_tensor", "fill_diagonal_tensor_"]
_TENSOR_METHODS = __all__  # served as Tensor methods by oar._lazy


def _oar():
    import oar

    return oar


def fill_diagonal_(x, value, offset=0, wrap=False, name=None):
    """Fills x's main diagonal (shifted right by offset) with value in place and returns x.
    x has >= 2 dims, all equal beyond 2-D; wrap=True restarts the diagonal below the square
    part of a tall matrix (as NumPy's fill_diagonal)."""
    oar = _oar()
    op = "fill_diagonal_"
    if not isinstance(x, oar.Tensor):
        raise TypeError(f"{op}: x must be a Tensor, got {type(x).__name__}")
    shape = list(x.shape)
    if len(shape) < 2:
        raise ValueError(f"{op}: x must have at least 2 dims, got shape {shape}")
    if len(shape) > 2 and len(set(shape)) != 1:
        raise ValueError(f"{op}: all dims of x must be equal beyond 2-D, got shape {shape}")
    if isinstance(offset, bool) or not isinstance(offset, (int, np.integer)):
        raise TypeError(f"{op}: offset must be an int, got {offset!r}")
    if isinstance(value, bool) or not isinstance(value, (int, float, np.number)):
        raise TypeError(f"{op}: value must be a number, got {value!r}")
    numel = int(np.prod(shape))
    if numel == 0:
        return x
    w = shape[-1]
    stride = int(sum(np.prod(shape[k + 1:]) for k in range(len(shape))))
    limit = numel if (wrap or len(shape) > 2) else min(numel, w * w)
    pos = np.arange(0, limit, stride, dtype=np.int64)
    col = pos % w + offset
    pos = pos[(col >= 0) & (col < w)] + offset
    pos = pos[(pos >= 0) & (pos < numel)]
    if pos.size:
        flat = x.reshape([-1])
        flat[oar.to_tensor(pos, place=x.place)] = value
    return x


def _diag_args(op, x, y, offset, dim1, dim2):
    oar = _oar()
    for nm, t in (("x", x), ("y", y)):
        if not isinstance(t, oar.Tensor):
            raise TypeError(f"{op}: {nm} must be a Tensor, got {type(t).__name__}")
    nd = len(x.shape)
    if nd < 2:
        raise ValueError(f"{op}: x must have at least 2 dims, got shape {list(x.shape)}")
    for nm, d in (("dim1", dim1), ("dim2", dim2)):
        if isinstance(d, bool) or not isinstance(d, int) or not -nd <= d < nd:
            raise ValueError(f"{op}: {nm} must be an int in [{-nd}, {nd}), got {d!r}")
    if dim1 % nd == dim2 % nd:
        raise ValueError(f"{op}: dim1 and dim2 must differ, got {dim1} and {dim2}")
    want = list(x.diagonal(offset, dim1, dim2).shape)
    if list(y.shape) != want:
        raise ValueError(f"{op}: y must have the diagonal's shape {want}, got {list(y.shape)}")


def fill_diagonal_tensor(x, y, offset=0, dim1=0, dim2=1, name=None):
    """A copy of x whose diagonal (offset, over dims dim1 and dim2) holds y; y has the
    diagonal's shape (x's other dims, then the diagonal's length)."""
    _diag_args("fill_diagonal_tensor", x, y, offset, dim1, dim2)
    return _oar().diagonal_scatter(x, y.astype(x.dtype), offset, dim1, dim2)


def fill_diagonal_tensor_(x, y, offset=0, dim1=0, dim2=1, name=None):
    """fill_diagonal_tensor in place: writes y into x's diagonal and returns x."""
    _diag_args("fill_diagonal_tensor_", x, y, offset, dim1, dim2)
    x.copy_(_oar().diagonal_scatter(x, y.astype(x.dtype), offset, dim1, dim2))
    return x
