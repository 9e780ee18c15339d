"""Paddle's shape, stacking, splitting and scatter functions that are compositions of
manipulation ops (cat, permute, swapaxes, narrow, unflatten, atleast_*d, h/v/dstack,
tensor_split, block_diag, cartesian_prod, combinations, diagflat, tril/triu_indices,
index_fill, masked_scatter, select/diagonal_scatter, scatter_add/scatter_reduce...).
Gradients come from the ops they are written with.
(Note [Compositions of Paddle functions] in docs/notes/training_api.md.)"""
import itertools

import oar
from . import _C
from ._C import Tensor
from ._creation import _arange_on, _full_on
from ._dtype import convert_dtype

_ops = _C.ops


def _check(x, op, arg="x"):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: argument '{arg}' must be a Tensor, got {type(x).__name__}")


def _axis(axis, rank, op, arg="axis"):
    if isinstance(axis, Tensor):
        axis = int(axis.item())
    r = max(rank, 1)
    if not -r <= int(axis) < r:
        raise ValueError(f"{op}: {arg} {axis} is out of range for a tensor of rank {rank} "
                         f"(expected [{-r}, {r - 1}])")
    return int(axis) % r


def _tensors(x, op):
    if isinstance(x, Tensor):
        raise TypeError(f"{op}: argument 'x' must be a list or tuple of Tensors, got a Tensor")
    x = list(x)
    for i, t in enumerate(x):
        _check(t, op, f"x[{i}]")
    return x


def broadcast_shape(x_shape, y_shape):
    """The shape x_shape and y_shape broadcast to (a list)."""
    a, b = list(x_shape), list(y_shape)
    n = max(len(a), len(b))
    a, b = [1] * (n - len(a)) + a, [1] * (n - len(b)) + b
    out = []
    for u, v in zip(a, b):
        if u != v and 1 not in (u, v):
            raise ValueError(f"broadcast_shape: shapes {list(x_shape)} and {list(y_shape)} "
                             f"cannot broadcast (sizes {u} and {v})")
        out.append(v if u == 1 else u)
    return out


def cat(x, axis=0, name=None):
    """Concatenates tensors along axis (alias of concat)."""
    return oar.concat(x, axis=axis)


def permute(input, dims, *more):  # noqa: A002 (Paddle's name)
    """Reorders the dims (dims a list, or the dims as separate ints)."""
    _check(input, "permute", "input")
    perm = [dims, *more] if isinstance(dims, int) else list(dims)
    return oar.transpose(input, perm)


def swapaxes(x, axis0, axis1, name=None):
    """Swaps two dims (a view, as transpose)."""
    _check(x, "swapaxes")
    a, b = _axis(axis0, x.ndim, "swapaxes", "axis0"), _axis(axis1, x.ndim, "swapaxes", "axis1")
    perm = list(range(x.ndim))
    perm[a], perm[b] = perm[b], perm[a]
    return oar.transpose(x, perm)


def matrix_transpose(x, name=None):
    """Swaps the last two dims."""
    _check(x, "matrix_transpose")
    if x.ndim < 2:
        raise ValueError(f"matrix_transpose: x must have at least 2 dims, got shape {list(x.shape)}")
    return swapaxes(x, -1, -2)


def ravel(input):  # noqa: A002
    """x flattened to 1-D."""
    _check(input, "ravel", "input")
    return oar.flatten(input)


def narrow(input, dim, start, length):  # noqa: A002
    """The slice [start, start + length) of dim (start may be negative)."""
    _check(input, "narrow", "input")
    d = _axis(dim, input.ndim, "narrow", "dim")
    n = input.shape[d]
    start = int(start.item()) if isinstance(start, Tensor) else int(start)
    if start < 0:
        start += n
    length = int(length)
    if not 0 <= start <= n or length < 0 or start + length > n:
        raise ValueError(f"narrow: start {start} and length {length} are out of range for dim {d} "
                         f"of size {n}")
    return oar.slice(input, [d], [start], [start + length])


def unflatten(x, axis, shape, name=None):
    """Splits dim `axis` into `shape` (one entry may be -1)."""
    _check(x, "unflatten")
    a = _axis(axis, x.ndim, "unflatten")
    if isinstance(shape, Tensor):
        shape = shape.tolist()
    shape = [int(s.item()) if isinstance(s, Tensor) else int(s) for s in shape]
    if not shape:
        raise ValueError("unflatten: shape must not be empty")
    return oar.reshape(x, list(x.shape[:a]) + shape + list(x.shape[a + 1:]))


def view_as(x, other, name=None):
    """x reshaped to other's shape."""
    _check(x, "view_as")
    _check(other, "view_as", "other")
    return oar.reshape(x, list(other.shape))


def _atleast(inputs, nd, op):
    outs = []
    for i, t in enumerate(inputs):
        if not isinstance(t, Tensor):
            t = oar.to_tensor(t)
        if t.ndim < nd:
            shape = list(t.shape)
            if nd == 3 and t.ndim == 2:
                shape = shape + [1]
            elif nd == 3 and t.ndim == 1:
                shape = [1] + shape + [1]
            else:
                shape = [1] * (nd - t.ndim) + shape
            t = oar.reshape(t, shape)
        outs.append(t)
    return outs[0] if len(outs) == 1 else outs


def atleast_1d(*inputs, name=None):
    """Each input with at least 1 dim (a list when several are given)."""
    return _atleast(inputs, 1, "atleast_1d")


def atleast_2d(*inputs, name=None):
    """Each input with at least 2 dims (new dims in front)."""
    return _atleast(inputs, 2, "atleast_2d")


def atleast_3d(*inputs, name=None):
    """Each input with at least 3 dims ([N] -> [1, N, 1], [M, N] -> [M, N, 1])."""
    return _atleast(inputs, 3, "atleast_3d")


def hstack(x, name=None):
    """Concatenates along dim 1 (dim 0 for 1-D tensors)."""
    x = _atleast(_tensors(x, "hstack"), 1, "hstack")
    x = x if isinstance(x, list) else [x]
    return oar.concat(x, axis=0 if x[0].ndim == 1 else 1)


def vstack(x, name=None):
    """Concatenates along dim 0 after making each tensor at least 2-D."""
    x = _atleast(_tensors(x, "vstack"), 2, "vstack")
    return oar.concat(x if isinstance(x, list) else [x], axis=0)


row_stack = vstack


def dstack(x, name=None):
    """Concatenates along dim 2 after making each tensor at least 3-D."""
    x = _atleast(_tensors(x, "dstack"), 3, "dstack")
    return oar.concat(x if isinstance(x, list) else [x], axis=2)


def column_stack(x, name=None):
    """Stacks 1-D tensors as columns (others concatenated along dim 1)."""
    x = [oar.reshape(t, [-1, 1]) if t.ndim < 2 else t for t in _tensors(x, "column_stack")]
    return oar.concat(x, axis=1)


def tensor_split(x, num_or_indices, axis=0, name=None):
    """Splits x along axis into num_or_indices parts (sizes differing by at most one, larger
    first) or at the given indices."""
    _check(x, "tensor_split")
    a = _axis(axis, x.ndim, "tensor_split")
    n = x.shape[a]
    if isinstance(num_or_indices, Tensor):
        num_or_indices = num_or_indices.tolist()
    if isinstance(num_or_indices, int):
        k = num_or_indices
        if k <= 0:
            raise ValueError(f"tensor_split: num_or_indices must be positive, got {k}")
        from .nn._errors import check_fits
        # k result tensors (empty past the axis's size), ~1 KiB of objects each: a count no
        # machine could hold is a MemoryError up front, not hours of slicing
        check_fits("tensor_split", f"num_or_indices={k} result tensors", k * 1024)
        q, r = divmod(n, k)
        bounds, pos = [], 0
        for i in range(k - 1):
            pos += q + (1 if i < r else 0)
            bounds.append(pos)
    else:
        bounds = [int(i) for i in num_or_indices]
    outs, lo = [], 0
    for b in bounds + [n]:
        b = b + n if b < 0 else b
        b = min(max(b, lo), n)
        outs.append(oar.slice(x, [a], [lo], [b]))
        lo = b
    return outs


def _split_dim(x, num_or_indices, dim, need, op):
    _check(x, op)
    if x.ndim < need:
        raise ValueError(f"{op}: x must have at least {need} dims, got shape {list(x.shape)}")
    if isinstance(num_or_indices, int) and x.shape[dim] % num_or_indices:
        raise ValueError(f"{op}: dim {dim} (size {x.shape[dim]}) is not divisible by "
                         f"{num_or_indices}")
    return tensor_split(x, num_or_indices, axis=dim)


def hsplit(x, num_or_indices, name=None):
    """tensor_split along dim 1 (dim 0 for 1-D x); an int must divide the size."""
    return _split_dim(x, num_or_indices, 0 if x.ndim == 1 else 1, 1, "hsplit")


def vsplit(x, num_or_indices, name=None):
    """tensor_split along dim 0 of an at least 2-D x."""
    return _split_dim(x, num_or_indices, 0, 2, "vsplit")


def dsplit(x, num_or_indices, name=None):
    """tensor_split along dim 2 of an at least 3-D x."""
    return _split_dim(x, num_or_indices, 2, 3, "dsplit")


def block_diag(inputs, name=None):
    """The block-diagonal matrix of 0-, 1- or 2-D tensors."""
    mats = []
    for i, t in enumerate(_tensors(inputs, "block_diag")):
        if t.ndim > 2:
            raise ValueError(f"block_diag: inputs[{i}] must have at most 2 dims, got shape "
                             f"{list(t.shape)}")
        mats.append(oar.reshape(t, [1, -1]) if t.ndim < 2 else t)
    dtype = mats[0].dtype
    cols = sum(m.shape[1] for m in mats)
    rows, left = [], 0
    for m in mats:
        m = m.astype(dtype)
        right = cols - left - m.shape[1]
        parts = [_full_on(m.place, [m.shape[0], left], 0, dtype), m,
                 _full_on(m.place, [m.shape[0], right], 0, dtype)]
        rows.append(oar.concat(parts, axis=1))
        left += m.shape[1]
    return oar.concat(rows, axis=0)


def cartesian_prod(x, name=None):
    """The Cartesian product of 1-D tensors: [N1 * N2 * ..., len(x)] (1-D for one input)."""
    x = _tensors(x, "cartesian_prod")
    for i, t in enumerate(x):
        if t.ndim != 1:
            raise ValueError(f"cartesian_prod: x[{i}] must be 1-D, got shape {list(t.shape)}")
    if len(x) == 1:
        return x[0]
    grids = oar.meshgrid(*x)
    return oar.stack([oar.reshape(g, [-1]) for g in grids], axis=1)


def combinations(x, r=2, with_replacement=False, name=None):
    """The length-r combinations of the 1-D x's elements, as rows of an [M, r] tensor."""
    _check(x, "combinations")
    if x.ndim != 1:
        raise ValueError(f"combinations: x must be 1-D, got shape {list(x.shape)}")
    r = int(r)
    if r < 0:
        raise ValueError(f"combinations: r must be non-negative, got {r}")
    if r == 0:
        return _full_on(x.place, [0], 0, x.dtype)
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    idx = list(pick(range(x.shape[0]), r))
    if not idx:
        return _full_on(x.place, [0, r], 0, x.dtype)
    cols = [oar.index_select(x, oar.to_tensor([c[j] for c in idx], "int64", x.place))
            for j in range(r)]
    return oar.stack(cols, axis=1)


def diagflat(x, offset=0, name=None):
    """The 2-D matrix with the flattened x on diagonal `offset`."""
    _check(x, "diagflat")
    return oar.diag(oar.reshape(x, [-1]), offset=offset)


def _tri_indices(row, col, offset, dtype, upper, op):
    row, col, offset = int(row), int(col), int(offset)
    if row < 0 or col < 0:
        raise ValueError(f"{op}: row and col must be non-negative, got row={row}, col={col}")
    r = oar.unsqueeze(oar.arange(row, dtype="int64"), 1)
    c = oar.unsqueeze(oar.arange(col, dtype="int64"), 0)
    keep = (c - r >= offset) if upper else (c - r <= offset)
    idx = oar.nonzero(keep)  # row-major order, as Paddle lists them
    return oar.transpose(idx, [1, 0]).astype(convert_dtype(dtype))


def tril_indices(row, col, offset=0, dtype="int64"):
    """[2, N] coordinates of the lower triangle (diagonal `offset` included) of a row x col matrix."""
    return _tri_indices(row, col, offset, dtype, False, "tril_indices")


def triu_indices(row, col=None, offset=0, dtype="int64"):
    """[2, N] coordinates of the upper triangle of a row x col matrix (col defaults to row)."""
    return _tri_indices(row, row if col is None else col, offset, dtype, True, "triu_indices")


def _axis_mask(x, index, a, op):
    _check(index, op, "index")
    idx = oar.reshape(index, [-1]).astype("int64")
    n = x.shape[a]
    if idx.size and (int(idx.min()) < -n or int(idx.max()) >= n):
        raise IndexError(f"{op}: index values must be in [{-n}, {n - 1}] for axis {a} of size {n}, "
                         f"got {idx.tolist()}")
    hit = _full_on(x.place, [n], False, "bool")
    if idx.size:
        idx = oar.where(idx < 0, idx + n, idx)
        hit = oar.any(oar.unsqueeze(_arange_on(x.place, n), 1) == oar.unsqueeze(idx, 0),
                      axis=1)
    shape = [1] * x.ndim
    shape[a] = n
    return oar.reshape(hit, shape)


def index_fill(x, index, axis, value, name=None):
    """x with the slices at `index` along axis set to value (a number or 0-D tensor)."""
    _check(x, "index_fill")
    a = _axis(axis, x.ndim, "index_fill")
    mask = _axis_mask(x, index, a, "index_fill")
    v = value.astype(x.dtype) if isinstance(value, Tensor) else \
        _full_on(x.place, [], value, x.dtype)
    return oar.where(mask, v + x * 0, x)


def index_sample(x, index):
    """out[i, j] = x[i, index[i, j]] for 2-D x and index."""
    _check(x, "index_sample")
    _check(index, "index_sample", "index")
    if x.ndim != 2 or index.ndim != 2 or x.shape[0] != index.shape[0]:
        raise ValueError(f"index_sample: x and index must be 2-D with the same number of rows, "
                         f"got shapes {list(x.shape)} and {list(index.shape)}")
    return oar.take_along_axis(x, index.astype("int64"), axis=1)


def masked_scatter(x, mask, value, name=None):
    """x with the positions where mask (broadcast) is True filled, in row-major order, from the
    first elements of value."""
    _check(x, "masked_scatter")
    _check(mask, "masked_scatter", "mask")
    _check(value, "masked_scatter", "value")
    shape = broadcast_shape(x.shape, mask.shape)
    xb, mb = oar.broadcast_to(x, shape), oar.broadcast_to(mask.astype("bool"), shape)
    m = oar.reshape(mb, [-1])
    count = int(m.astype("int64").sum())
    if count > value.size:
        raise ValueError(f"masked_scatter: mask selects {count} elements but value has only "
                         f"{value.size}")
    pos = oar.cumsum(m.astype("int64")) - 1  # the value element each selected slot takes
    pos = oar.where(m, pos, oar.zeros_like(pos))
    flat_v = oar.reshape(value, [-1]).astype(x.dtype)
    src = oar.gather(flat_v, pos) if value.size else oar.zeros_like(oar.reshape(xb, [-1]))
    return oar.reshape(oar.where(m, src, oar.reshape(xb, [-1])), shape)


def select_scatter(x, values, axis, index, name=None):
    """x with the slice at `index` along axis replaced by values."""
    _check(x, "select_scatter")
    _check(values, "select_scatter", "values")
    a = _axis(axis, x.ndim, "select_scatter")
    n = x.shape[a]
    i = int(index)
    if not -n <= i < n:
        raise IndexError(f"select_scatter: index {i} is out of range for axis {a} of size {n}")
    i %= n
    want = list(x.shape[:a]) + list(x.shape[a + 1:])
    if list(values.shape) != want:
        raise ValueError(f"select_scatter: values must have shape {want}, got {list(values.shape)}")
    parts = [oar.slice(x, [a], [0], [i]), oar.unsqueeze(values.astype(x.dtype), a),
             oar.slice(x, [a], [i + 1], [n])]
    return oar.concat(parts, axis=a)


def diagonal_scatter(x, y, offset=0, axis1=0, axis2=1, name=None):
    """x with its diagonal (offset, axis1, axis2) replaced by y."""
    _check(x, "diagonal_scatter")
    _check(y, "diagonal_scatter", "y")
    a1 = _axis(axis1, x.ndim, "diagonal_scatter", "axis1")
    a2 = _axis(axis2, x.ndim, "diagonal_scatter", "axis2")
    if a1 == a2:
        raise ValueError(f"diagonal_scatter: axis1 ({axis1}) and axis2 ({axis2}) must differ")
    want = list(oar.diagonal(x, offset, a1, a2).shape)
    if list(y.shape) != want:
        raise ValueError(f"diagonal_scatter: y must have the diagonal's shape {want}, got "
                         f"{list(y.shape)}")
    rest = [d for d in range(x.ndim) if d not in (a1, a2)]
    perm = rest + [a1, a2]
    if want[-1] == 0:
        return oar.assign(x)
    n1, n2 = x.shape[a1], x.shape[a2]
    r = oar.reshape(_arange_on(x.place, n1), [-1, 1])
    c = oar.reshape(_arange_on(x.place, n2), [1, -1])
    on = (c - r) == int(offset)  # [n1, n2]
    # the diagonal's element k sits at row max(0, -offset) + k
    k = oar.clip(r - max(0, -int(offset)) + c * 0, 0, want[-1] - 1)
    src = oar.index_select(y.astype(x.dtype), oar.reshape(k, [-1]), axis=-1)
    xt = oar.transpose(x, perm)
    out = oar.where(on, oar.reshape(src, list(xt.shape)), xt)
    return oar.transpose(out, [perm.index(d) for d in range(x.ndim)])


def _scatter_args(input, dim, index, src, op):  # noqa: A002
    _check(input, op, "input")
    _check(index, op, "index")
    if not isinstance(src, Tensor):
        src = _full_on(input.place, index.shape, src, input.dtype)
    return _axis(dim, input.ndim, op, "dim"), src


def scatter_add(input, dim, index, src):  # noqa: A002
    """input with src added at index along dim (put_along_axis with reduce 'add')."""
    d, src = _scatter_args(input, dim, index, src, "scatter_add")
    return oar.put_along_axis(input, index, src, d, "add", broadcast=False)


def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):  # noqa: A002
    """input with src reduced in at index along dim: 'sum', 'prod', 'mean', 'amin', 'amax'."""
    d, src = _scatter_args(input, dim, index, src, "scatter_reduce")
    names = {"sum": "add", "prod": "mul", "mean": "mean", "amin": "amin", "amax": "amax"}
    if reduce not in names:
        raise ValueError(f"scatter_reduce: reduce must be one of {sorted(names)}, got '{reduce}'")
    return oar.put_along_axis(input, index, src, d, names[reduce], include_self=include_self,
                              broadcast=False)


def msort(input, *, out=None):  # noqa: A002
    """input sorted along dim 0 (written into `out` too when given)."""
    _check(input, "msort", "input")
    res = oar.sort(input, axis=0)
    if out is not None:
        _check(out, "msort", "out")
        out.copy_(res)
        return out
    return res


def argwhere(input):  # noqa: A002
    """[N, rank] int64 coordinates of the non-zero elements."""
    _check(input, "argwhere", "input")
    return oar.nonzero(input)


def shard_index(input, index_num, nshards, shard_id, ignore_value=-1):  # noqa: A002
    """Labels relative to shard `shard_id` of `nshards` equal shards of [0, index_num);
    labels in other shards become ignore_value."""
    _check(input, "shard_index", "input")
    if not 0 <= int(shard_id) < int(nshards):
        raise ValueError(f"shard_index: shard_id must be in [0, {nshards}), got {shard_id}")
    size = (int(index_num) + int(nshards) - 1) // int(nshards)
    mine = (input // size) == int(shard_id)
    return oar.where(mine, input % size, oar.full_like(input, ignore_value))


def broadcast_shapes(*shapes):
    """The shape all `shapes` broadcast to (a list)."""
    out = []
    for s in shapes:
        out = broadcast_shape(out, s)
    return out


def t(input, name=None):  # noqa: A002
    """The transpose of a 2-D input; 0-D and 1-D inputs are returned as they are."""
    _check(input, "t", "input")
    if input.ndim > 2:
        raise ValueError(f"t: input must have at most 2 dims, got shape {list(input.shape)}")
    return oar.transpose(input, [1, 0]) if input.ndim == 2 else input


def rank(input):  # noqa: A002
    """The number of dims of input, as a 0-D int32 tensor."""
    _check(input, "rank", "input")
    return oar.full([], input.ndim, "int32")


def is_tensor(x):
    """Whether x is a Tensor."""
    return isinstance(x, Tensor)


def tolist(x):
    """x's values as nested Python lists."""
    _check(x, "tolist")
    return x.tolist()


def take(x, index, mode="raise", name=None):
    """Elements of the flattened x at `index` (index's shape): mode 'raise' refuses indices
    outside [-n, n), 'wrap' takes them modulo n, 'clip' clamps them to [0, n - 1]."""
    _check(x, "take")
    _check(index, "take", "index")
    if mode not in ("raise", "wrap", "clip"):
        raise ValueError(f"take: mode must be 'raise', 'wrap' or 'clip', got '{mode}'")
    flat = oar.reshape(x, [-1])
    n = flat.shape[0]
    idx = index.astype("int64")
    if mode == "raise":
        if idx.size and (int(idx.min()) < -n or int(idx.max()) >= n):
            raise IndexError(f"take: index values must be in [{-n}, {n - 1}] for x of {n} "
                             f"elements, got values in [{int(idx.min())}, {int(idx.max())}]")
        idx = oar.where(idx < 0, idx + n, idx)
    elif mode == "wrap":
        idx = oar.remainder(idx, _full_on(idx.place, [], n, "int64"))
    else:
        idx = oar.clip(idx, 0, n - 1)
    return oar.reshape(oar.gather(flat, oar.reshape(idx, [-1])), list(index.shape))


_TENSOR_METHODS = ["permute", "swapaxes", "matrix_transpose", "ravel", "narrow", "unflatten",
                   "view_as", "tensor_split", "hsplit", "vsplit", "dsplit", "diagflat",
                   "index_fill", "index_sample", "masked_scatter", "select_scatter",
                   "diagonal_scatter", "scatter_add", "scatter_reduce", "msort", "argwhere", "take"]
for _name in _TENSOR_METHODS:
    if not hasattr(Tensor, _name):
        setattr(Tensor, _name, globals()[_name])

__all__ = _TENSOR_METHODS + [
    "broadcast_shape", "broadcast_shapes", "t", "rank", "is_tensor", "tolist", "cat", "atleast_1d", "atleast_2d", "atleast_3d", "hstack", "vstack",
    "row_stack", "dstack", "column_stack", "block_diag", "cartesian_prod", "combinations",
    "tril_indices", "triu_indices", "shard_index"]
