"""cummax / cummin: running extrema with their indices, as a log-depth (Hillis-Steele) scan of
(value, index) pairs built from where/concat, and values gathered by take_along_axis so the
gradient reaches the indexed elements (Paddle's rule)."""
from ._C import DataType, Tensor, ops as _ops
from ._dtype import convert_dtype

__all__ = ["cummax", "cummin"]
_TENSOR_METHODS = ["cummax", "cummin"]


def _scan(x, axis, dtype, op, later_wins):
    import oar
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: x must be a Tensor, got {type(x).__name__}")
    if x.dtype.name not in ("float32", "float64", "int32", "int64", "float16", "bfloat16"):
        raise TypeError(f"{op}: x must be float32/float64/int32/int64, got {x.dtype.name}")
    idx_dtype = getattr(dtype, "name", dtype)
    if idx_dtype not in ("int32", "int64"):
        raise ValueError(f"{op}: dtype must be 'int32' or 'int64', got {dtype!r}")
    if axis is None:
        x, axis = x.flatten(), 0
    if x.ndim == 0:
        return x.clone(), _ops.full([], 0, convert_dtype(idx_dtype), x.place)
    if isinstance(axis, bool) or not isinstance(axis, int) or not -x.ndim <= axis < x.ndim:
        raise ValueError(f"{op}: axis must be an int in [{-x.ndim}, {x.ndim}), got {axis!r}")
    axis %= x.ndim
    n = x.shape[axis]
    shape = [1] * x.ndim
    shape[axis] = n
    idx = _ops.arange(0, n, 1, DataType.int64, x.place).reshape(shape).expand(x.shape)
    v = x.detach()
    floating = v.dtype.is_floating_point
    s = 1
    while s < n:  # ceil(log2(n)) rounds, n being a dim of x
        a_v, b_v = v.slice([axis], [0], [n - s]), v.slice([axis], [s], [n])
        a_i, b_i = idx.slice([axis], [0], [n - s]), idx.slice([axis], [s], [n])
        take_b = later_wins(b_v, a_v)  # the later segment's extremum wins ties
        if floating:
            take_b = take_b | b_v.isnan()
        head_v, head_i = v.slice([axis], [0], [s]), idx.slice([axis], [0], [s])
        v = oar.concat([head_v, oar.where(take_b, b_v, a_v)], axis=axis)
        idx = oar.concat([head_i, oar.where(take_b, b_i, a_i)], axis=axis)
        s *= 2
    values = oar.take_along_axis(x, idx, axis=axis) if n else x.clone()
    return values, idx.astype(idx_dtype)


def cummax(x, axis=None, dtype="int64", name=None):
    """(values, indices): the running maximum of x along axis (flattened when None) and the
    index where it was reached, the latest one on ties; a NaN propagates."""
    return _scan(x, axis, dtype, "cummax", lambda b, a: b >= a)


def cummin(x, axis=None, dtype="int64", name=None):
    """(values, indices): the running minimum of x along axis (flattened when None) and the
    index where it was reached, the latest one on ties; a NaN propagates."""
    return _scan(x, axis, dtype, "cummin", lambda b, a: b <= a)
