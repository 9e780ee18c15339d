"""cummax / cummin: running extrema with their indices from one scan kernel (stats.yaml's
cum_extremum, stats_kernels.cc), whose gradient reaches the indexed elements (Paddle's rule)."""
from ._C import Tensor, ops as _ops
from ._dtype import convert_dtype

__all__ = ["cummax", "cummin"]
_TENSOR_METHODS = ["cummax", "cummin"]


def _scan(x, axis, dtype, op, largest):
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
    values, idx = _ops._cum_extremum(x, axis, largest)
    return values, (idx if idx_dtype == "int64" else idx.astype(idx_dtype))


def cummax(x, axis=None, dtype="int64", name=None):
    """(values, indices): the running maximum of x along axis (flattened when None) and the
    index where it was reached, the latest one on ties; a NaN propagates."""
    return _scan(x, axis, dtype, "cummax", True)


def cummin(x, axis=None, dtype="int64", name=None):
    """(values, indices): the running minimum of x along axis (flattened when None) and the
    index where it was reached, the latest one on ties; a NaN propagates."""
    return _scan(x, axis, dtype, "cummin", False)
