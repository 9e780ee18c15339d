"""Argument checks and the scatter-reduce shared by paddle.geometric's functions."""
import numpy as np

import oar
from oar._creation import _full_on

_INT = ("int32", "int64")
_REDUCE = {"sum": "add", "mean": "mean", "max": "amax", "min": "amin"}


def dtype_name(t):
    return str(t.dtype).replace("paddle.", "")


def check_tensor(op, arg, t, dtypes=None, ndim=None):
    if not isinstance(t, oar.Tensor):
        raise TypeError(f"{op}: '{arg}' must be a Tensor, got {type(t).__name__}")
    if dtypes is not None and dtype_name(t) not in dtypes:
        raise TypeError(f"{op}: '{arg}' must have dtype {' or '.join(dtypes)}, got "
                        f"{dtype_name(t)}")
    if ndim is not None and t.ndim != ndim:
        raise ValueError(f"{op}: '{arg}' must be {ndim}-D, got shape {list(t.shape)}")


def check_index(op, arg, index, limit, limit_name):
    """index: a 1-D int32/int64 Tensor with values in [0, limit)."""
    check_tensor(op, arg, index, _INT, 1)
    if index.shape[0] == 0:
        return
    values = index.numpy()
    lo, hi = int(values.min()), int(values.max())
    if lo < 0 or hi >= limit:
        raise ValueError(f"{op}: '{arg}' values must be in [0, {limit}) ({limit_name}), got "
                         f"values in [{lo}, {hi}]")


def reduce_op_name(op, reduce_op):
    if reduce_op not in _REDUCE:
        raise ValueError(f"{op}: reduce_op must be 'sum', 'mean', 'max' or 'min', got "
                         f"{reduce_op!r}")
    return _REDUCE[reduce_op]


def scatter_rows(op, values, index, rows, reduce_op):
    """out[r] = reduce(values[i] for index[i] == r), zero for rows no index names."""
    shape = [rows] + list(values.shape[1:])
    out = _full_on(values.place, shape, 0, values.dtype)
    if values.shape[0] == 0 or rows == 0:
        return out
    idx = oar.cast(index, "int64").reshape([-1] + [1] * (values.ndim - 1))
    idx = idx.expand(list(values.shape))
    return oar.put_along_axis(out, idx, values, 0, reduce_op_name(op, reduce_op),
                              include_self=False, broadcast=False)


def out_rows(op, out_size, default):
    """Paddle's out_size: None or <= 0 means `default` rows."""
    if out_size is None:
        return default
    if isinstance(out_size, oar.Tensor):
        if out_size.size != 1 or dtype_name(out_size) not in _INT:
            raise TypeError(f"{op}: a Tensor out_size must be one int32/int64 value, got "
                            f"dtype {dtype_name(out_size)} shape {list(out_size.shape)}")
        out_size = int(out_size.numpy().reshape(-1)[0])
    elif isinstance(out_size, (int, np.integer)) and not isinstance(out_size, bool):
        out_size = int(out_size)
    else:
        raise TypeError(f"{op}: out_size must be an int or a Tensor, got "
                        f"{type(out_size).__name__}")
    return default if out_size <= 0 else out_size
