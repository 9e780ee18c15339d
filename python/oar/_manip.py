"""Manipulation functions with Paddle's signatures that are thin compositions of
ops: views (moveaxis, broadcast_to, meshgrid, unfold, diagonal planes) or one op
call after argument checks (tril/triu, take/put_along_axis, repeat_interleave...).
The ops themselves are declared in paddle_core/ops/manipulation.yaml."""
import math

import numpy as np

from . import _C
from ._C import Tensor

_ops = _C.ops

__all__ = [
    "moveaxis", "chunk", "unbind", "expand_as", "broadcast_to", "broadcast_tensors", "flip",
    "rot90", "scatter_nd", "take_along_axis", "put_along_axis", "masked_fill", "tril", "triu",
    "diag", "repeat_interleave", "strided_slice", "slice", "meshgrid", "unfold", "crop", "numel",
]


def _axes(axis, rank, op, arg="axis"):
    """Normalized list of axes (ints or a sequence), range-checked."""
    items = list(axis) if isinstance(axis, (list, tuple)) else [axis]
    out = []
    r = max(rank, 1)
    for a in items:
        a = int(a)
        if not -r <= a < r:
            raise IndexError(f"{op}: {arg} {a} is out of range for a tensor of rank {rank} "
                             f"(expected [{-r}, {r - 1}])")
        out.append(a % r)
    return out


def moveaxis(x, source, destination, name=None):
    """Moves dims `source` to positions `destination` (a view)."""
    src = _axes(source, x.ndim, "moveaxis", "source")
    dst = _axes(destination, x.ndim, "moveaxis", "destination")
    if len(src) != len(dst):
        raise ValueError(f"moveaxis: source {source} and destination {destination} must have the "
                         "same number of axes")
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise ValueError(f"moveaxis: repeated axis in source {source} or destination {destination}")
    perm = [None] * x.ndim
    for s, d in zip(src, dst):
        perm[d] = s
    rest = iter(a for a in range(x.ndim) if a not in src)
    perm = [p if p is not None else next(rest) for p in perm]
    return _ops.transpose(x, perm)


def chunk(x, chunks, axis=0, name=None):
    """Splits x into `chunks` equal parts along axis (Paddle requires divisibility)."""
    if not isinstance(chunks, int) or chunks <= 0:
        raise ValueError(f"chunk: chunks must be a positive int, got {chunks}")
    a = _axes(axis, x.ndim, "chunk")[0]
    if x.shape[a] % chunks != 0:
        raise ValueError(f"chunk: the size of axis {a} ({x.shape[a]}) is not divisible by "
                         f"chunks ({chunks})")
    return _ops._split_with_num(x, chunks, a)


def unbind(input, axis=0):  # noqa: A002  (Paddle's name)
    """The slices of `input` along axis, as a list of views (axis removed)."""
    _axes(axis, input.ndim, "unbind")
    return _ops._unbind(input, axis)


def numel(x, name=None):
    """The number of elements of x as a 0-D int64 tensor (Paddle's paddle.numel); under
    to_static, computed when the program runs (from oar.shape, so dynamic dims count)."""
    if not isinstance(x, Tensor):
        raise TypeError(f"numel: argument 'x' must be a Tensor, got {type(x).__name__}")
    return _ops.prod(_ops.shape(x))


# Tensor.numel() is paddle.numel, a 0-D int64 tensor as in Paddle (x.size is the int)
Tensor.numel = numel


def _expand(x, shape, op):
    try:
        return _ops.expand(x, shape)
    except ValueError as e:
        raise ValueError(f"{op}: {e}") from None


def broadcast_to(x, shape, name=None):
    """x expanded to `shape` (a view; -1 keeps a dim)."""
    return _expand(x, list(shape) if not isinstance(shape, Tensor) else shape, "broadcast_to")


def expand_as(x, y, name=None):
    return _expand(x, list(y.shape), "expand_as")


def broadcast_tensors(input, name=None):  # noqa: A002
    """Views of every tensor expanded to their common broadcast shape."""
    shapes = [list(t.shape) for t in input]
    try:
        shape = list(np.broadcast_shapes(*[tuple(s) for s in shapes]))
    except ValueError:
        raise ValueError(f"broadcast_tensors: shapes {shapes} cannot be broadcast together") from None
    return [t if list(t.shape) == shape else _ops.expand(t, shape) for t in input]


def flip(x, axis, name=None):
    return _ops.flip(x, [axis] if isinstance(axis, int) else list(axis))


def rot90(x, k=1, axes=(0, 1), name=None):
    """Rotates by 90 degrees k times in the plane `axes` (from the first towards the second)."""
    axes = list(axes)
    if len(axes) != 2:
        raise ValueError(f"rot90: axes must hold 2 axes, got {axes}")
    if x.ndim < 2:
        raise ValueError(f"rot90: x must have rank >= 2, got shape {list(x.shape)}")
    a, b = _axes(axes, x.ndim, "rot90", "axes")
    if a == b:
        raise ValueError(f"rot90: axes must be different, got {axes}")
    k %= 4
    if k == 0:
        return _ops.assign(x)
    if k == 2:
        return _ops.flip(x, [a, b])
    perm = list(range(x.ndim))
    perm[a], perm[b] = perm[b], perm[a]
    if k == 1:
        return _ops.transpose(_ops.flip(x, [b]), perm)
    return _ops.flip(_ops.transpose(x, perm), [b])


def scatter_nd(index, updates, shape, name=None):
    """zeros(shape) with updates added at the coordinate tuples of index."""
    zeros = _ops.full(list(shape), 0.0, updates.dtype, updates.place)
    return _ops.scatter_nd_add(zeros, index, updates)


def _along_shapes(arr, indices, axis, op):
    if indices.ndim != arr.ndim:
        raise ValueError(f"{op}: indices must have the rank of arr ({arr.ndim}), got shape "
                         f"{list(indices.shape)}")
    a = _axes(axis, arr.ndim, op)[0]
    return a


def take_along_axis(arr, indices, axis, broadcast=True):
    """arr's values at `indices` along axis (indices broadcast against arr off the axis)."""
    a = _along_shapes(arr, indices, axis, "take_along_axis")
    if broadcast:
        shape = [max(s, t) if i != a else t for i, (s, t) in enumerate(zip(arr.shape, indices.shape))]
        for i, (s, t) in enumerate(zip(arr.shape, indices.shape)):
            if i != a and s != t and 1 not in (s, t):
                raise ValueError(f"take_along_axis: arr of shape {list(arr.shape)} and indices of shape "
                                 f"{list(indices.shape)} cannot be broadcast off axis {a}")
        if list(indices.shape) != shape:
            indices = _ops.expand(indices, shape)
        ashape = list(shape)
        ashape[a] = arr.shape[a]
        if list(arr.shape) != ashape:
            arr = _ops.expand(arr, ashape)
    return _ops._take_along_axis(arr, indices, a)


def put_along_axis(arr, indices, values, axis, reduce="assign", include_self=True, broadcast=True):
    """arr with `values` put (or reduced: add, mul/multiply, mean, amin, amax) at `indices`."""
    a = _along_shapes(arr, indices, axis, "put_along_axis")
    if not isinstance(values, Tensor):
        values = _C.to_tensor(np.asarray(values), arr.dtype, arr.place)
    elif values.dtype != arr.dtype:
        values = _ops.cast(values, arr.dtype)
    if broadcast:
        shape = list(indices.shape)
        for i, (s, t) in enumerate(zip(arr.shape, indices.shape)):
            if i != a and t == 1 and s != 1:
                shape[i] = s
        if list(indices.shape) != shape:
            indices = _ops.expand(indices, shape)
    if list(values.shape) != list(indices.shape):
        try:
            values = _ops.expand(values, list(indices.shape))
        except ValueError:
            raise ValueError(f"put_along_axis: values of shape {list(values.shape)} cannot be broadcast "
                             f"to the indices' shape {list(indices.shape)}") from None
    return _ops._put_along_axis(arr, indices, values, a, reduce, include_self)


def masked_fill(x, mask, value, name=None):
    """x with `value` where mask is True (mask broadcasts to x)."""
    if not isinstance(value, Tensor):
        value = _ops.full([], value, x.dtype, x.place)
    elif value.dtype != x.dtype:
        value = _ops.cast(value, x.dtype)
    if mask.dtype != _C.DataType.bool:
        raise TypeError(f"masked_fill: mask must be a bool tensor, got {mask.dtype.name}")
    try:
        out = _ops.where(mask, value, x)
    except ValueError:
        out = None
    if out is None or list(out.shape) != list(x.shape):
        raise ValueError(f"masked_fill: mask of shape {list(mask.shape)} does not broadcast to x's "
                         f"shape {list(x.shape)}")
    return out


def tril(x, diagonal=0, name=None):
    """The lower triangle (j <= i + diagonal) of the last two dims; the rest zero."""
    return _ops._tril_triu(x, diagonal, True)


def triu(x, diagonal=0, name=None):
    """The upper triangle (j >= i + diagonal) of the last two dims; the rest zero."""
    return _ops._tril_triu(x, diagonal, False)


def _diagonal_view(x, offset=0, axis1=0, axis2=1):
    """The diagonal of the (axis1, axis2) planes as a new last dim (a view of a contiguous x)."""
    r = x.ndim
    a1, a2 = _axes([axis1, axis2], r, "diagonal")
    if a1 == a2:
        raise ValueError(f"diagonal: axis1 ({axis1}) and axis2 ({axis2}) must differ")
    shape = list(x.shape)
    strides = [1] * r
    for i in range(r - 2, -1, -1):
        strides[i] = strides[i + 1] * max(shape[i + 1], 1)
    n1, n2 = shape[a1], shape[a2]
    length = max(0, min(n1, n2 - offset) if offset >= 0 else min(n1 + offset, n2))
    out_shape = [s for i, s in enumerate(shape) if i not in (a1, a2)] + [length]
    out_strides = [s for i, s in enumerate(strides) if i not in (a1, a2)] + [strides[a1] + strides[a2]]
    start = 0 if length == 0 else (offset * strides[a2] if offset >= 0 else -offset * strides[a1])
    return _ops.as_strided(x, out_shape, out_strides, start)


def diag(x, offset=0, padding_value=0, name=None):
    """1-D x: a square matrix with x on diagonal `offset` (padding_value elsewhere);
    2-D x: its diagonal `offset` as a 1-D tensor."""
    if x.ndim == 1:
        out = _ops.diag_embed(x, offset, 0, 1)
        if padding_value != 0:
            n = out.shape[0]
            ones = _ops.full([x.shape[0]], True, _C.DataType.bool, x.place)
            mask = _ops.diag_embed(ones, offset, 0, 1)
            out = _ops.where(mask, out, _ops.full([n, n], padding_value, x.dtype, x.place))
        return out
    if x.ndim == 2:
        return _ops.assign(_diagonal_view(x, offset, 0, 1))
    raise ValueError(f"diag: x must be 1-D or 2-D, got shape {list(x.shape)}")


def repeat_interleave(x, repeats, axis=None, name=None):
    """Repeats each element (or slice along axis) `repeats` times (an int or a 1-D tensor)."""
    if axis is None:
        x = _ops.flatten(x, 0, -1)
        axis = 0
    a = _axes(axis, x.ndim, "repeat_interleave")[0]
    n = x.shape[a]
    shape = list(x.shape)
    if not isinstance(repeats, Tensor) and int(repeats) >= 0 and math.prod(shape[a + 1:]) >= 64:
        # one count and long slices: a broadcast copy of rows, no index (axis 0 of [256, 1024]
        # four times: 0.28 -> 0.21 ms); short slices copy faster through index_select
        r = int(repeats)
        if math.prod(shape) * r * 8 > 2**63 - 1:
            raise MemoryError(f"repeat_interleave: {r} repeats of each slice along axis {a} of "
                              f"shape {shape} cannot be counted")
        try:
            wide = _ops.expand(_ops.unsqueeze(x, [a + 1]), shape[:a + 1] + [r] + shape[a + 1:])
            return _ops.reshape(wide, shape[:a] + [n * r] + shape[a + 1:])
        except MemoryError as e:
            raise MemoryError(f"repeat_interleave: {e}") from None
    if isinstance(repeats, Tensor):
        reps = repeats.numpy().reshape(-1).astype(np.int64)
        if reps.size == 1:
            reps = np.full(n, int(reps[0]))
    else:
        reps = np.full(n, int(repeats))
    if reps.size != n:
        raise ValueError(f"repeat_interleave: repeats has {reps.size} entries but axis {a} has "
                         f"size {n}")
    if (reps < 0).any():
        raise ValueError(f"repeat_interleave: repeats must be >= 0, got {reps.tolist()}")
    # The total in Python ints: np.repeat sums the counts in int64, and a sum that wraps
    # allocates a small buffer it then writes far past (SIGSEGV).
    total = sum(reps.tolist())
    if total * 8 > 2**63 - 1:
        raise MemoryError(f"repeat_interleave: {total} repeated slices along axis {a} cannot be "
                          f"indexed (their int64 index alone needs {total * 8} bytes)")
    index = _C.to_tensor(np.repeat(np.arange(n, dtype=np.int64), reps), _C.DataType.int64, x.place)
    return _ops.index_select(x, index, a)


def strided_slice(x, axes, starts, ends, strides, name=None):
    """x[starts:ends:strides] along axes (a view)."""
    axes, starts, ends, strides = (list(v) for v in (axes, starts, ends, strides))
    if not len(axes) == len(starts) == len(ends) == len(strides):
        raise ValueError(f"strided_slice: axes {axes}, starts {starts}, ends {ends} and strides "
                         f"{strides} must have the same length")
    _axes(axes, x.ndim, "strided_slice", "axes")
    return _ops.strided_slice_view(x, axes, starts, ends, strides)


def slice(input, axes, starts, ends, name=None):  # noqa: A001,A002  (Paddle's names)
    """input[starts:ends] along axes (a view)."""
    axes, starts, ends = (list(v.numpy().reshape(-1)) if isinstance(v, Tensor) else list(v)
                          for v in (axes, starts, ends))
    return strided_slice(input, axes, starts, ends, [1] * len(axes))


def meshgrid(*args, **kwargs):
    """Coordinate grids ('ij' indexing) of 1-D tensors, as broadcast views."""
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        args = tuple(args[0])
    for i, t in enumerate(args):
        if t.ndim > 1:
            raise ValueError(f"meshgrid: input {i} must be 0-D or 1-D, got shape {list(t.shape)}")
    shape = [t.shape[0] if t.ndim else 1 for t in args]
    outs = []
    for i, t in enumerate(args):
        view = [1] * len(args)
        view[i] = shape[i]
        outs.append(_ops.expand(_ops.reshape(t, view), shape))
    return outs


def unfold(x, axis, size, step, name=None):
    """Sliding windows of `size` with `step` along axis, appended as a new last dim (a view)."""
    a = _axes(axis, x.ndim, "unfold")[0]
    n = x.shape[a] if x.ndim else 1
    if size < 0 or size > n:
        raise ValueError(f"unfold: size ({size}) must be in [0, {n}] (the size of axis {a})")
    if step <= 0:
        raise ValueError(f"unfold: step must be > 0, got {step}")
    shape = list(x.shape)
    strides = [1] * x.ndim
    for i in range(x.ndim - 2, -1, -1):
        strides[i] = strides[i + 1] * max(shape[i + 1], 1)
    shape[a] = (n - size) // step + 1
    out_shape = shape + [size]
    out_strides = strides[:a] + [strides[a] * step] + strides[a + 1:] + [strides[a] if x.ndim else 1]
    return _ops.as_strided(x, out_shape, out_strides, 0)


def crop(x, shape=None, offsets=None, name=None):
    """The block of `shape` (-1: to the end) starting at `offsets` (a view)."""
    shape = list(x.shape) if shape is None else [int(s) for s in (shape.numpy() if isinstance(shape, Tensor) else shape)]
    offsets = [0] * x.ndim if offsets is None else [int(o) for o in (offsets.numpy() if isinstance(offsets, Tensor) else offsets)]
    if len(shape) != x.ndim or len(offsets) != x.ndim:
        raise ValueError(f"crop: shape {shape} and offsets {offsets} must have one entry per dim "
                         f"of x (shape {list(x.shape)})")
    ends = []
    for i, (s, o, n) in enumerate(zip(shape, offsets, x.shape)):
        e = n if s == -1 else o + s
        if o < 0 or e > n or s < -1:
            raise ValueError(f"crop: offsets {offsets} and shape {shape} exceed x's shape {list(x.shape)} "
                             f"at dim {i}")
        ends.append(e)
    return _ops.strided_slice_view(x, list(range(x.ndim)), offsets, ends, [1] * x.ndim)


# ---- Tensor methods (Paddle's names)
for _name in ["moveaxis", "chunk", "unbind", "expand_as", "broadcast_to", "flip", "rot90",
              "take_along_axis", "put_along_axis", "masked_fill", "tril", "triu", "diag",
              "repeat_interleave", "strided_slice", "unfold"]:  # crop: paddle.crop only
    setattr(Tensor, _name, globals()[_name])



# ---- Paddle's other Tensor methods of this group (tensor_method_func): the list-taking
# ones work as Tensor.concat([a, b]) like Paddle's; called on one Tensor they raise.
def _tensor_list_method(fn, op):
    def method(x, *args, **kwargs):
        if isinstance(x, Tensor):
            raise TypeError(f"{op}: argument '{'input' if op == 'broadcast_tensors' else 'x'}' "
                            f"must be a list or tuple of Tensors, got Tensor")
        return fn(x, *args, **kwargs)
    method.__name__ = op
    method.__doc__ = fn.__doc__
    return method


def _install_methods():
    from ._indexing import where
    Tensor.concat = _tensor_list_method(_ops.concat, "concat")
    Tensor.stack = _tensor_list_method(_ops.stack, "stack")
    Tensor.broadcast_tensors = _tensor_list_method(broadcast_tensors, "broadcast_tensors")
    Tensor.slice = slice
    Tensor.where = where


_install_methods()
