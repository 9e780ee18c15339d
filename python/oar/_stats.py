"""Python shims of stats.yaml ops whose Paddle signature one generated binding cannot
express (axis=None meaning flattened, a dtype argument, q lists, return_* flags,
several results), and the statistics that are compositions of ops (median, quantile,
nan-reductions, norm, and the small linear-algebra helpers of the math list). Every
composition is differentiable through the ops it calls."""
import collections
import math
import numbers


from . import _C
from ._C import Tensor
from ._dtype import convert_dtype

_ops = _C.ops
_INT64 = convert_dtype("int64")
_FLOAT32 = convert_dtype("float32")
_FLOAT64 = convert_dtype("float64")
_BOOL = convert_dtype("bool")
# Paddle accumulates these in int64 when no dtype is given (cumsum's documented rule; sum's too)
_NARROW_INTS = {convert_dtype(n) for n in ("bool", "uint8", "int8", "int16", "int32")}


def _check_tensor(x, op, arg="x"):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: argument '{arg}' must be a Tensor, got {type(x).__name__}")


def _axis_list(axis):
    if axis is None:
        return []
    if isinstance(axis, (list, tuple)):
        return [int(a) for a in axis]
    return [int(axis)]


def _wrap(axis, ndim, op):
    r = max(ndim, 1)
    if not -r <= axis < r:
        raise _C.OutOfRangeError(f"{op}: axis {axis} is out of range for a tensor of rank {ndim} "
                         f"(expected [{-r}, {r - 1}])")
    return axis % r


def _cast(x, dtype):
    return x if dtype is None else _ops.cast(x, convert_dtype(dtype))


def _float(x):
    return x if x.dtype.is_floating_point else _ops.cast(x, convert_dtype(_C.get_default_dtype()))


# ---------------------------------------------------------------- scans
def cumsum(x, axis=None, dtype=None, name=None):
    """Cumulative sum along axis (over the flattened tensor when axis is None)."""
    _check_tensor(x, "cumsum")
    x = _cast(x, dtype)
    if dtype is None and x.dtype in _NARROW_INTS:
        x = _ops.cast(x, _INT64)
    return _ops._cumsum(x, -1 if axis is None else int(axis), axis is None, False, False)


def cumprod(x, dim=None, dtype=None, name=None):
    """Cumulative product along dim (over the flattened tensor when dim is None)."""
    _check_tensor(x, "cumprod")
    if dim is not None:
        _wrap(int(dim), x.ndim, "cumprod")
    x = _cast(x, dtype)
    return _ops._cumprod(x, -1 if dim is None else int(dim), dim is None)


def logcumsumexp(x, axis=None, dtype=None, name=None):
    """log(cumsum(exp(x))) computed stably (over the flattened tensor when axis is None)."""
    _check_tensor(x, "logcumsumexp")
    if axis is not None:
        _wrap(int(axis), x.ndim, "logcumsumexp")
    x = _cast(x, dtype)
    return _ops._logcumsumexp(x, -1 if axis is None else int(axis), axis is None, False, False)


# ---------------------------------------------------------------- sorting
TopKRetType = collections.namedtuple("TopKRetType", ["values", "indices"])
_topk_op = _ops.topk


def topk(x, k, axis=None, largest=True, sorted=True, name=None):
    """The k largest (smallest) entries along axis and their indices, as a named tuple
    (values, indices) like Paddle's."""
    return TopKRetType(*_topk_op(x, k, axis, largest, sorted))


def sort(x, axis=-1, descending=False, stable=False, name=None):
    """Sorted values along axis (NaN last when ascending)."""
    _check_tensor(x, "sort")
    _wrap(int(axis), x.ndim, "sort")
    return _ops._argsort(x, axis, descending, stable)[0]


def argsort(x, axis=-1, descending=False, stable=False, name=None):
    """Indices that sort x along axis."""
    _check_tensor(x, "argsort")
    return _ops._argsort(x, axis, descending, stable)[1]


def take_along_axis_(x, indices, axis):  # internal helper (no broadcasting)
    return _ops._gather_axis(x, indices, axis)


# ---------------------------------------------------------------- reductions
def _reduce_args(x, axis, op):
    axes = _axis_list(axis)
    for a in axes:
        _wrap(a, x.ndim, op)
    return axes


def _zero(x):
    """A 0-D zero of x's dtype and place, broadcast where x's shape is needed (a full_like
    wrote x's size of zeros first: count_nonzero of 1M floats 0.82 -> 0.48 ms)."""
    return _ops.full([], 0, x.dtype, x.place)


def count_nonzero(x, axis=None, keepdim=False, name=None):
    """Number of nonzero entries along axis, as int64."""
    _check_tensor(x, "count_nonzero")
    axes = _reduce_args(x, axis, "count_nonzero")
    nz = x if x.dtype == _BOOL else _ops.not_equal(x, _zero(x))
    return _ops.sum(nz, axes, _INT64, keepdim)


def nansum(x, axis=None, dtype=None, keepdim=False, name=None):
    """Sum treating NaN as zero."""
    _check_tensor(x, "nansum")
    axes = _reduce_args(x, axis, "nansum")
    dt = convert_dtype(dtype)
    if x.dtype.is_floating_point:
        if dt is None or dt.is_floating_point:  # one pass: NaNs add 0 in the sum's kernel
            return _ops._nansum(x, axes, dt, keepdim)
        x = _ops.where(_ops.isnan(x), _zero(x), x)
    return _ops.sum(x, axes, dt, keepdim)


def nanmean(x, axis=None, keepdim=False, name=None):
    """Mean over the non-NaN entries (NaN where a slice has none)."""
    _check_tensor(x, "nanmean")
    if not x.dtype.is_floating_point:
        raise TypeError(f"nanmean: expected a float tensor, got {x.dtype.name}")
    axes = _reduce_args(x, axis, "nanmean")
    ok = _ops.logical_not(_ops.isnan(x))
    return _ops._nansum(x, axes, x.dtype, keepdim) / _ops.sum(ok, axes, x.dtype, keepdim)


def _move_to_last(x, axis, op):
    """x with `axis` (int, list or None = all) flattened into one last axis, and the
    shape the result takes with keepdim (kept dims, reduced ones as 1)."""
    nd = x.ndim
    if axis is None:
        axes = list(range(nd))
    else:
        axes = sorted({_wrap(a, nd, op) for a in _axis_list(axis)})
    keep = [d for d in range(nd) if d not in axes]
    shape = list(x.shape)
    kshape = [1 if d in axes else shape[d] for d in range(nd)]
    y = _ops.transpose(x, keep + axes) if nd else x
    # the reduced length spelled out: -1 cannot be inferred when a kept dim is 0
    y = _ops.reshape(y, [shape[d] for d in keep] + [math.prod(shape[d] for d in axes)])
    return y, kshape, [shape[d] for d in keep]


def _finish(v, kshape, kept, keepdim):
    return _ops.reshape(v, kshape if keepdim else kept)


def _sorted_last(x, op):
    """Sorted along the last axis and the per-row count of non-NaN entries."""
    s = _ops._argsort(x, -1, False, True)[0]
    return s


def _row_values(s, pos):
    """s[..., pos] for an int64 index tensor pos of shape [..., 1]."""
    return _ops._gather_axis(s, pos, -1)


def _nan_rows_to_nan(v, y):
    """NaN where the row of y (last axis, kept as 1) holds a NaN (NumPy's median/quantile)."""
    if not y.dtype.is_floating_point:
        return v
    bad = _ops.any(_ops.isnan(y), [-1], True)
    return _ops.where(bad, _ops.full_like(v, float("nan"), v.dtype), v)


def _kth(y, k):
    """(values, indices) of the k-th smallest (1-based) along the last axis, kept as [..., 1]."""
    return _ops.kthvalue(y, k, -1, True)


def _next_value(y, v, k):
    """The (k+1)-th smallest along the last axis given v, the k-th (as [..., 1]): v again
    when more than k entries are <= v, else the smallest entry above v. Cheaper than a
    second selection."""
    le = _ops.sum(_ops.less_equal(y, v), [-1], _INT64, True)
    big = _ops.full_like(y, float("inf"), y.dtype)
    above = _ops.amin(_ops.where(_ops.greater_than(y, v), y, big), [-1], True)
    return _ops.where(_ops.greater_than(le, _ops.full([], k, _INT64, y.place)), v, above)


def _median_impl(x, axis, keepdim, mode, op, ignore_nan):
    _check_tensor(x, op)
    if mode not in ("avg", "min"):
        raise ValueError(f"{op}: mode must be 'avg' or 'min', got {mode!r}")
    if isinstance(axis, (list, tuple)) and op == "median":
        raise TypeError(f"median: axis must be an int or None, got {axis!r}")
    y, kshape, kept = _move_to_last(x, axis, op)
    n = y.shape[-1]
    if n == 0 and mode == "min":
        raise ValueError(f"{op}: mode='min' has no element to take along an empty axis (input shape "
                         f"{list(x.shape)}, axis {axis})")
    if mode == "avg" and ignore_nan:
        y = _float(y)
    elif mode == "avg" and y.dtype != _FLOAT64:  # Paddle: every other dtype averages in float32
        y = _ops.cast(y, _FLOAT32)
    if n == 0:  # the mean of no values, as Paddle and NumPy: NaN
        return _ops.full(kshape if keepdim else kept, float("nan"), y.dtype, x.place)
    if not (ignore_nan and y.dtype.is_floating_point):
        # Fixed ranks: selection (O(n) per row), not a sort.
        vlo, ilo = _kth(y, (n - 1) // 2 + 1)
        v = vlo if mode == "min" or n % 2 else (vlo + _next_value(y, vlo, n // 2)) * 0.5
        v = _nan_rows_to_nan(v, y)
        idx = ilo
        if mode == "min" and y.dtype.is_floating_point:
            # a row holding NaN has the median NaN, at its first NaN's index (as Paddle)
            isnan = _ops.isnan(y)
            first = _ops._argmax(_ops.cast(isnan, _INT64), -1, True, False, _INT64)
            idx = _ops.where(_ops.any(isnan, [-1], True), first, idx)
    else:  # per-row counts of non-NaN entries: sort (NaN last) and gather
        s, order = _ops._argsort(y, -1, False, True)
        cnt = _ops.sum(_ops.logical_not(_ops.isnan(y)), [-1], _INT64, True)
        zero = _ops.full([], 0, _INT64, y.place)
        two = _ops.full([], 2, _INT64, y.place)
        last = _ops.maximum(cnt - _ops.full([], 1, _INT64, y.place), zero)
        lo = _ops.floor_divide(last, two)
        hi = _ops.minimum(_ops.floor_divide(cnt, two), last)
        vlo = _row_values(s, lo)
        v = vlo if mode == "min" else (vlo + _row_values(s, hi)) * 0.5
        v = _ops.where(_ops.equal(cnt, zero), _ops.full_like(v, float("nan"), v.dtype), v)
        idx = _ops._gather_axis(order, lo, -1)
    v = _finish(_ops.squeeze(v, [-1]), kshape, kept, keepdim)
    if mode == "min" and isinstance(axis, int):  # indices for one axis only, as Paddle
        return v, _finish(_ops.squeeze(idx, [-1]), kshape, kept, keepdim)
    return v


def median(x, axis=None, keepdim=False, mode="avg", name=None):
    """Median along axis; 'avg' averages the two middle values, 'min' takes the lower
    one (and also returns its index when axis is given)."""
    return _median_impl(x, axis, keepdim, mode, "median", False)


def nanmedian(x, axis=None, keepdim=False, mode="avg", name=None):
    """Median of the non-NaN entries along axis (int, list or None)."""
    return _median_impl(x, axis, keepdim, mode, "nanmedian", True)


_INTERPOLATIONS = ("linear", "lower", "higher", "nearest", "midpoint")


def _quantile_impl(x, q, axis, keepdim, interpolation, op, ignore_nan):
    _check_tensor(x, op)
    if interpolation not in _INTERPOLATIONS:
        raise ValueError(f"{op}: interpolation must be one of {_INTERPOLATIONS}, "
                         f"got {interpolation!r}")
    if isinstance(q, Tensor):
        qs, scalar_q = [float(v) for v in q.numpy().reshape(-1)], q.ndim == 0
    elif isinstance(q, numbers.Number):
        qs, scalar_q = [float(q)], True
    elif isinstance(q, (list, tuple)):
        qs, scalar_q = [float(v) for v in q], False
    else:
        raise TypeError(f"{op}: q must be a float, a list of floats or a Tensor, "
                        f"got {type(q).__name__}")
    if not qs:
        raise ValueError(f"{op}: q must not be empty")
    for v in qs:
        if not 0.0 <= v <= 1.0:
            raise ValueError(f"{op}: q must be in [0, 1], got {v}")
    y, kshape, kept = _move_to_last(_float(x), axis, op)
    n = y.shape[-1]
    if n == 0:
        raise ValueError(f"{op}: cannot take a quantile of an empty axis (input shape {list(x.shape)})")
    if not ignore_nan:  # fixed ranks: selection per needed rank, not a sort
        outs = []
        for v in qs:
            pos = v * (n - 1)
            lo_i, hi_i = math.floor(pos), math.ceil(pos)
            if interpolation == "nearest":
                lo_i = hi_i = round(pos)  # half to even, as NumPy
            elif interpolation == "lower":
                hi_i = lo_i
            elif interpolation == "higher":
                lo_i = hi_i
            lo = _kth(y, lo_i + 1)[0]
            hi = lo if hi_i == lo_i else _next_value(y, lo, lo_i + 1)
            if interpolation == "linear" and hi_i != lo_i:
                r = lo + (hi - lo) * (pos - lo_i)
            elif interpolation == "midpoint" and hi_i != lo_i:
                r = (lo + hi) * 0.5
            else:
                r = lo
            r = _nan_rows_to_nan(r, y)
            outs.append(_finish(_ops.squeeze(r, [-1]), kshape, kept, keepdim))
        return outs[0] if scalar_q else _ops.stack(outs, 0)
    s = _sorted_last(y, op)
    if ignore_nan:
        cnt = _ops.cast(_ops.sum(_ops.logical_not(_ops.isnan(y)), [-1], _INT64, True), y.dtype)
    else:
        cnt = _ops.full(list(y.shape[:-1]) + [1], float(n), y.dtype, y.place)
    last = _ops.maximum(cnt - 1.0, _ops.full([], 0.0, y.dtype, y.place))
    outs = []
    for v in qs:
        pos = last * v
        lo_f, hi_f = _ops.floor(pos), _ops.ceil(pos)
        lo = _row_values(s, _ops.cast(lo_f, _INT64))
        hi = _row_values(s, _ops.cast(hi_f, _INT64))
        if interpolation == "linear":
            r = lo + (hi - lo) * (pos - lo_f)
        elif interpolation == "lower":
            r = lo
        elif interpolation == "higher":
            r = hi
        elif interpolation == "midpoint":
            r = (lo + hi) * 0.5
        else:  # nearest, ties to even as NumPy
            near = _ops.cast(_ops.round(pos), _INT64)
            half = _ops.equal(pos - lo_f, _ops.full([], 0.5, y.dtype, y.place))
            even = _ops.cast(_ops.floor_divide(_ops.cast(lo_f, _INT64),
                                               _ops.full([], 2, _INT64, y.place)) * 2, y.dtype)
            pick = _ops.where(half, _ops.cast(_ops.where(_ops.equal(lo_f, even), lo_f, hi_f),
                                              _INT64), near)
            r = _row_values(s, pick)
        if ignore_nan:
            r = _ops.where(_ops.equal(cnt, _ops.full([], 0.0, y.dtype, y.place)),
                           _ops.full_like(r, float("nan"), r.dtype), r)
        outs.append(_finish(_ops.squeeze(r, [-1]), kshape, kept, keepdim))
    return outs[0] if scalar_q else _ops.stack(outs, 0)


def quantile(x, q, axis=None, keepdim=False, interpolation="linear", name=None):
    """q-th quantile(s) along axis (int, list or None), q in [0, 1]."""
    return _quantile_impl(x, q, axis, keepdim, interpolation, "quantile", False)


def nanquantile(x, q, axis=None, keepdim=False, interpolation="linear", name=None):
    """quantile ignoring NaN entries."""
    return _quantile_impl(x, q, axis, keepdim, interpolation, "nanquantile", True)


def var(x, axis=None, unbiased=True, keepdim=False, name=None):
    """Variance along axis (unbiased: divide by N - 1)."""
    _check_tensor(x, "var")
    return _ops.var(x, _reduce_args(x, axis, "var"), unbiased, keepdim)


def std(x, axis=None, unbiased=True, keepdim=False, name=None):
    """Standard deviation along axis (unbiased: divide by N - 1)."""
    _check_tensor(x, "std")
    return _ops.std(x, _reduce_args(x, axis, "std"), unbiased, keepdim)


def norm(x, p=None, axis=None, keepdim=False, name=None):
    """Vector p-norms (any real p, inf, -inf, 0) over axis (int, list or None = all) and
    the Frobenius norm ('fro', the default) over one or two axes."""
    _check_tensor(x, "norm")
    if p is None:
        p = "fro"
    if isinstance(p, str):
        if p == "nuc":
            raise NotImplementedError("norm: p='nuc' needs singular values (oar.linalg)")
        if p != "fro":
            raise ValueError(f"norm: p must be a number, 'fro' or 'nuc', got {p!r}")
        if axis is not None and len(_axis_list(axis)) > 2:
            raise ValueError(f"norm: 'fro' takes at most two axes, got axis={axis}")
        porder = 2.0
    elif isinstance(p, numbers.Number) and not isinstance(p, bool):
        porder = float(p)
    else:
        raise TypeError(f"norm: p must be a number or a string, got {type(p).__name__}")
    return _ops.p_norm(_float(x), porder, _reduce_args(x, axis, "norm"), keepdim)


# ---------------------------------------------------------------- counting
def unique(x, return_index=False, return_inverse=False, return_counts=False, axis=None,
           dtype="int64", name=None):
    """Sorted unique values (or slices along axis), with first indices, the inverse
    mapping and counts on request."""
    _check_tensor(x, "unique")
    out, index, inverse, counts = _ops._unique(x, _axis_list(axis), convert_dtype(dtype))
    extra = [t for t, on in ((index, return_index), (inverse, return_inverse),
                             (counts, return_counts)) if on]
    return (out, *extra) if extra else out


def unique_consecutive(x, return_inverse=False, return_counts=False, axis=None, dtype="int64",
                       name=None):
    """Collapses runs of equal consecutive values (or slices along axis)."""
    _check_tensor(x, "unique_consecutive")
    out, inverse, counts = _ops._unique_consecutive(x, _axis_list(axis), convert_dtype(dtype))
    extra = [t for t, on in ((inverse, return_inverse), (counts, return_counts)) if on]
    return (out, *extra) if extra else out


def histogram(input, bins=100, min=0.0, max=0.0, weight=None, density=False, name=None):  # noqa: A002
    """Counts (or weights / density) of input in `bins` equal bins over [min, max]
    (the data's range when both are 0)."""
    _check_tensor(input, "histogram", "input")
    return _ops._histogram(input, weight, int(bins), float(min), float(max), bool(density))


def bucketize(x, sorted_sequence, out_int32=False, right=False, name=None):
    """Index of the bucket of each x in the 1-D sorted_sequence (searchsorted)."""
    _check_tensor(x, "bucketize")
    _check_tensor(sorted_sequence, "bucketize", "sorted_sequence")
    if sorted_sequence.ndim != 1:
        raise ValueError(f"bucketize: sorted_sequence must be 1-D, got shape "
                         f"{list(sorted_sequence.shape)}")
    return _ops.searchsorted(sorted_sequence, x, out_int32, right)


# ---------------------------------------------------------------- small linear algebra
def diff(x, n=1, axis=-1, prepend=None, append=None, name=None):
    """n-th forward difference along axis, after optional prepend/append."""
    _check_tensor(x, "diff")
    if n < 0:
        raise ValueError(f"diff: n must be non-negative, got {n}")
    if x.ndim == 0:
        raise ValueError("diff: x must have rank >= 1, got a 0-D tensor")
    axis = _wrap(axis, x.ndim, "diff")
    parts = [t for t in (prepend, x, append) if t is not None]
    if len(parts) > 1:
        x = _ops.concat(parts, axis)
    for _ in range(n):
        m = x.shape[axis]
        if m == 0:
            break
        sub = _ops.logical_xor if x.dtype == _BOOL else _ops.subtract  # bool: "changed"
        x = sub(_ops.strided_slice_view(x, [axis], [1], [m], []),
                _ops.strided_slice_view(x, [axis], [0], [m - 1], []))
    return x


def trace(x, offset=0, axis1=0, axis2=1, name=None):
    """Sum of the diagonal of the (axis1, axis2) planes."""
    _check_tensor(x, "trace")
    a1, a2 = _wrap(int(axis1), x.ndim, "trace"), _wrap(int(axis2), x.ndim, "trace")
    if a1 == a2:
        raise ValueError(f"trace: axis1 ({axis1}) and axis2 ({axis2}) must be different axes")
    # the input's dtype, as Paddle documents (sum alone widens int32 to int64)
    keep = None if x.dtype == _BOOL else x.dtype
    return _ops.sum(_ops.diagonal(x, offset, axis1, axis2), [-1], keep, False)


def outer(x, y, name=None):
    """Outer product of the flattened x and y."""
    _check_tensor(x, "outer")
    _check_tensor(y, "outer", "y")
    return _ops.multiply(_ops.unsqueeze(_ops.flatten(x, 0, -1), [1]),
                         _ops.unsqueeze(_ops.flatten(y, 0, -1), [0]))


def inner(x, y, name=None):
    """Sum over the last axes of x and y (x[..., k] y[..., k])."""
    _check_tensor(x, "inner")
    _check_tensor(y, "inner", "y")
    if x.ndim == 0 or y.ndim == 0:
        return _ops.multiply(x, y)
    if x.shape[-1] != y.shape[-1]:
        raise ValueError(f"inner: the last dimensions of x {list(x.shape)} and y {list(y.shape)} differ")
    k = x.shape[-1]
    r = _ops.matmul(_ops.reshape(x, [-1, k]), _ops.reshape(y, [-1, k]), False, True)
    return _ops.reshape(r, list(x.shape[:-1]) + list(y.shape[:-1]))


def dot(x, y, name=None):
    """Dot product of 1-D tensors, or row-wise for 2-D tensors."""
    _check_tensor(x, "dot")
    _check_tensor(y, "dot", "y")
    if x.ndim not in (1, 2) or list(x.shape) != list(y.shape):
        raise ValueError(f"dot: x and y must be 1-D or 2-D with the same shape, got {list(x.shape)} "
                         f"and {list(y.shape)}")
    xy = _ops.multiply(x, y)
    return _ops.sum(xy, [-1], xy.dtype, False)


def kron(x, y, name=None):
    """Kronecker product."""
    _check_tensor(x, "kron")
    _check_tensor(y, "kron", "y")
    nd = max(x.ndim, y.ndim)
    xs = [1] * (nd - x.ndim) + list(x.shape)
    ys = [1] * (nd - y.ndim) + list(y.shape)
    xe = _ops.reshape(x, [v for d in xs for v in (d, 1)])
    ye = _ops.reshape(y, [v for d in ys for v in (1, d)])
    return _ops.reshape(_ops.multiply(xe, ye), [a * b for a, b in zip(xs, ys)])


def addmm(input, x, y, beta=1.0, alpha=1.0, name=None):  # noqa: A002
    """beta * input + alpha * (x @ y)."""
    _check_tensor(input, "addmm", "input")
    _check_tensor(x, "addmm")
    _check_tensor(y, "addmm", "y")
    if x.ndim != 2 or y.ndim != 2:
        raise ValueError(f"addmm: x and y must be 2-D, got shapes {list(x.shape)} and {list(y.shape)}")
    if x.shape[1] != y.shape[0]:
        raise ValueError(f"addmm: x's columns ({x.shape[1]}) must equal y's rows ({y.shape[0]}), "
                         f"got shapes {list(x.shape)} and {list(y.shape)}")
    out = [x.shape[0], y.shape[1]]
    ins = [1] * (2 - input.ndim) + list(input.shape)
    if input.ndim > 2 or any(d not in (1, o) for d, o in zip(ins, out)):
        raise ValueError(f"addmm: input of shape {list(input.shape)} cannot broadcast to x @ y's "
                         f"shape {out}")
    return _ops.add(_ops.scale(input, float(beta), 0.0, True),
                    _ops.scale(_ops.matmul(x, y, False, False), float(alpha), 0.0, True))


_mean_op = _ops.mean
_INT_MEAN = _NARROW_INTS | {_INT64}


def mean(x, axis=None, keepdim=False, name=None, *, dtype=None, out=None):
    """Mean over axis (int, list or None: every axis); dtype casts x first and out receives
    the result, as Paddle 3.3's paddle.mean."""
    if dtype is None and out is None and (not isinstance(x, Tensor) or x.dtype.is_floating_point):
        return _mean_op(x, axis, keepdim)
    _check_tensor(x, "mean")
    if dtype is None and x.dtype in _INT_MEAN:
        # Paddle takes the mean of bool/int tensors in their own dtype (truncated toward 0)
        r = _ops.cast(_mean_op(_ops.cast(x, _FLOAT64), axis, keepdim), x.dtype)
    else:
        if dtype is not None and x.dtype != convert_dtype(dtype):
            x = _ops.cast(x, convert_dtype(dtype))
        r = _mean_op(x, axis, keepdim)
    if out is not None:
        _check_tensor(out, "mean", "out")
        out.copy_(r)
        return out
    return r


_TENSOR_METHODS = ["mean", "cumsum", "cumprod", "logcumsumexp", "sort", "argsort", "count_nonzero",
                   "nansum", "nanmean", "median", "nanmedian", "quantile", "nanquantile", "var",
                   "std", "norm", "unique", "unique_consecutive", "histogram", "bucketize", "diff",
                   "trace", "outer", "inner", "dot", "kron", "addmm", "topk"]
for _name in _TENSOR_METHODS:
    setattr(Tensor, _name, globals()[_name])

__all__ = list(_TENSOR_METHODS)
