"""Translation rules for sorting and indexing ops (Note [ONNX export] in docs/notes/jit.md):
argsort/topk/kthvalue -> TopK, scatter/scatter_nd_add/index_put/index_add -> ScatterND,
put_along_axis -> ScatterElements, gather_nd/index_get -> GatherND, gather_axis ->
GatherElements, roll -> Slice + Concat.

ONNX leaves the result of a ScatterND/ScatterElements without reduction open when an
index repeats; Oar writes in order (the last write wins). Rules that assign therefore
keep only the last occurrence of each index, clear the target positions, and add: the
same result for every index list. From opset 18 the last occurrence is found in linear
memory (scatter each update's ordinal with reduction max, gather it back, compare);
before, by an [M, M] comparison of the M indices."""
import numpy as np

from ._graph import dtype_name
from ._ops import _FLOATS, _norm_axis, rule

_INTS = ("int8", "int16", "int32", "int64", "uint8")


def _k_of(v, x, axis, k=None):
    """K for TopK as a 1-D int64: `k`, or the size of `axis` (static or read from x)."""
    g = v.g
    if k is not None:
        return g.ints([k])
    n = v.shape(0)[axis]
    if n != -1:
        return g.ints([n])
    return g.node("Slice", [g.node("Shape", [x]), g.ints([axis]), g.ints([axis + 1])])


def _check_sortable(v):
    if v.dtype(0) == "bool":
        raise v.unsupported("sorting bools")


@rule("pd_op.argsort")
def _argsort(v):
    # Oar's sort is stable (ties by index, in both directions), as is TopK's tie-break.
    _check_sortable(v)
    rank = len(v.shape(0))
    if rank == 0:
        v.out(v.g.node("Identity", [v.x(0)]))
        v.out(v.g.const(np.asarray(0, np.int64)), 1)
        return
    axis = _norm_axis(int(v.attrs.get("axis", -1)), rank)
    x = v.x(0)
    vals, idx = v.g.node("TopK", [x, _k_of(v, x, axis)], outputs=2, axis=axis,
                         largest=int(bool(v.attrs.get("descending", False))), sorted=1)
    v.out(vals)
    v.out(v.g.cast(idx, "int64", v.rdtype(1)), 1)


@rule("pd_op.topk")
def _topk(v):
    _check_sortable(v)
    rank = len(v.shape(0))
    if rank == 0:
        raise v.unsupported("a 0-D input")
    axis = _norm_axis(int(v.attrs.get("axis", -1)), rank)
    # sorted=False leaves the order open in both; Oar returns them sorted, so ask for that
    vals, idx = v.g.node("TopK", [v.x(0), _k_of(v, v.x(0), axis, int(v.attrs["k"]))], outputs=2, axis=axis,
                         largest=int(bool(v.attrs.get("largest", True))), sorted=1)
    v.out(vals)
    v.out(v.g.cast(idx, "int64", v.rdtype(1)), 1)


@rule("pd_op.kthvalue")
def _kthvalue(v):
    # the k smallest, sorted and stable; the last of them is the k-th (the index a stable sort gives)
    _check_sortable(v)
    g = v.g
    rank = len(v.shape(0))
    if rank == 0:
        raise v.unsupported("a 0-D input")
    axis = _norm_axis(int(v.attrs.get("axis", -1)), rank)
    k = int(v.attrs["k"])
    vals, idx = g.node("TopK", [v.x(0), g.ints([k])], outputs=2, axis=axis, largest=0, sorted=1)
    keep = bool(v.attrs.get("keepdim", False))
    for i, t in enumerate((vals, idx)):
        t = g.node("Slice", [t, g.ints([k - 1]), g.ints([k]), g.ints([axis])])
        if not keep:
            t = g.squeeze(t, [axis])
        v.out(g.cast(t, "int64", v.rdtype(1)) if i == 1 else t, i)


# ------------------------------------------------------------------ helpers
def _dim(g, x, shape, axis):
    """The size of x's `axis` as an int64 scalar (a constant when static)."""
    if shape[axis] != -1:
        return g.const(np.asarray(shape[axis], np.int64))
    return g.squeeze(g.node("Slice", [g.node("Shape", [x]), g.ints([axis]), g.ints([axis + 1])]), [0])


def _wrap(g, idx, size):
    """int64 indices with negative ones counted from the end (as Oar's kernels read them)."""
    zero = g.const(np.asarray(0, np.int64))
    return g.node("Where", [g.node("Less", [idx, zero]), g.node("Add", [idx, size]), idx])


def _int64_index(v, i):
    if v.dtype(i) not in ("int32", "int64"):
        raise v.unsupported(f"index dtype {v.dtype(i)}")
    return v.x_as(i, "int64")


def _need_opset(v, opset, what):
    if v.g.opset < opset:
        raise v.unsupported(f"{what} needs opset {opset} or later (exporting opset {v.g.opset})")


def _last_rows(g, rows):
    """[M] bool: row j of `rows` ([M, k] int64) does not appear again after j."""
    eq = g.reduce("ReduceMin", g.cast(g.node("Equal", [g.unsqueeze(rows, [1]), g.unsqueeze(rows, [0])]),
                                      "bool", "int32"), [2], False)          # [M, M]: rows i and j equal
    m = g.node("Slice", [g.node("Shape", [rows]), g.ints([0]), g.ints([1])])
    zero, one = g.const(np.asarray(0, np.int64)), g.const(np.asarray(1, np.int64))
    r = g.node("Range", [zero, g.squeeze(m, [0]), one])
    later = g.cast(g.node("Greater", [g.unsqueeze(r, [0]), g.unsqueeze(r, [1])]), "bool", "int32")  # j > i
    dup_later = g.reduce("ReduceMax", g.node("Mul", [eq, later]), [1], False)
    return g.node("Not", [g.cast(dup_later, "int32", "bool")])


def _zeros_like(g, x, np_dtype):
    from onnx import numpy_helper

    return g.node("ConstantOfShape", [g.node("Shape", [x])],
                  value=numpy_helper.from_array(np.zeros([1], np_dtype), "value"))


def _scatter_nd(v, x, index, updates, accumulate):
    """x with the rows index ([..., k] int64) set to (or added to) updates, Oar's order."""
    g = v.g
    if v.rdtype() == "bool":
        raise v.unsupported("bool data")
    _need_opset(v, 16, "a scatter that assigns or adds (ScatterND reduction)")
    if accumulate:
        return g.node("ScatterND", [x, index, updates], reduction="add")
    # clear every target row, then add the last update written to each
    cleared = g.node("ScatterND", [x, index, _zeros_like(g, updates, v.np_dtype())])
    shp = g.node("Shape", [index])
    lead = g.node("Slice", [shp, g.ints([0]), g.ints([-1])])                                 # index.shape[:-1]
    if g.opset >= 18:
        # winner[pos] = the largest ordinal j written to pos; j is last where it won
        k = g.node("Slice", [shp, g.ints([-1]), g.ints([2 ** 62])])
        targets = g.node("Slice", [g.node("Shape", [x]), g.ints([0]), k])
        minus1 = g.node("ConstantOfShape", [targets], value=_int64_value(-1))
        zero, one = g.const(np.asarray(0, np.int64)), g.const(np.asarray(1, np.int64))
        count = g.reduce("ReduceProd", lead, [0], False)
        ordinal = g.node("Reshape", [g.node("Range", [zero, count, one]), lead])
        winner = g.node("ScatterND", [minus1, index, ordinal], reduction="max")
        last = g.node("Equal", [g.node("GatherND", [winner, index]), ordinal])
    else:
        k = g.node("Slice", [shp, g.ints([-1]), g.ints([2 ** 62])])
        rows = g.node("Reshape", [index, g.node("Concat", [g.ints([-1]), k], axis=0)])      # [M, k]
        last = g.node("Reshape", [_last_rows(g, rows), lead])
    last = _unsqueeze_to(g, last, updates)
    upd = g.node("Where", [last, updates, _zeros_like(g, updates, v.np_dtype())])
    return g.node("ScatterND", [cleared, index, upd], reduction="add")


def _unsqueeze_to(g, mask, like):
    """mask ([...] of the leading dims of `like`) reshaped to broadcast against `like`."""
    ms = g.node("Shape", [mask])
    ls = g.node("Shape", [like])
    ones = g.node("ConstantOfShape", [g.node("Sub", [g.node("Shape", [ls]), g.node("Shape", [ms])])],
                  value=_int64_value(1))
    return g.node("Reshape", [mask, g.node("Concat", [ms, ones], axis=0)])


def _int64_value(value):
    from onnx import numpy_helper

    return numpy_helper.from_array(np.full([1], value, np.int64), "value")


# ------------------------------------------------------------------ scatter family
@rule("pd_op.scatter", "pd_op.scatter_")
def _scatter(v):
    g = v.g
    if len(v.shape(1)) not in (1, 2) or (len(v.shape(1)) == 2 and v.shape(1)[1] != 1):
        raise v.unsupported(f"an index of shape {v.shape(1)}")
    x = v.x(0)
    idx = g.node("Reshape", [_int64_index(v, 1), g.ints([-1, 1])])
    idx = _wrap(g, idx, _dim(g, x, v.shape(0), 0))
    upd = v.x_as(2, v.rdtype())
    if not v.attrs.get("overwrite", True):
        _need_opset(v, 16, "scatter with overwrite=False (ScatterND reduction)")
        cleared = g.node("ScatterND", [x, idx, _zeros_like(g, upd, v.np_dtype())])
        v.out(g.node("ScatterND", [cleared, idx, upd], reduction="add"))
        return
    v.out(_scatter_nd(v, x, idx, upd, False))


@rule("pd_op.scatter_nd_add")
def _scatter_nd_add(v):
    _need_opset(v, 16, "scatter_nd_add (ScatterND reduction)")
    if v.rdtype() == "bool":
        raise v.unsupported("bool data")
    v.out(v.g.node("ScatterND", [v.x(0), _int64_index(v, 1), v.x_as(2, v.rdtype())], reduction="add"))


def _stacked_indices(v, i, x, xshape, op):
    """The Tensor[] operand i of index_put/index_get (int tensors indexing x's leading dims,
    broadcast together) as one [..., k] int64 index, negative entries wrapped."""
    g = v.g
    names = v.xs(i)
    src = v.operands[i].defining_op
    types = [dtype_name(o.dtype) for o in src.operands()] if src is not None and src.name == "builtin.combine" \
        else [None] * len(names)
    shapes = [list(o.shape) for o in src.operands()] if src is not None and src.name == "builtin.combine" \
        else None
    if any(t not in ("int32", "int64") for t in types):
        raise v.unsupported(f"indices of dtypes {types} (only int32/int64 index tensors)")
    if not names or len(names) > len(xshape):
        raise v.unsupported(f"{len(names)} index tensors for a {len(xshape)}-D input")
    cols = [_wrap(g, g.cast(n, t, "int64"), _dim(g, x, xshape, d)) for d, (n, t) in enumerate(zip(names, types))]
    if len(cols) > 1 and not (shapes and all(s == shapes[0] and -1 not in s for s in shapes)):
        # broadcast the index tensors against each other: x0 + 0*x1 + ... has the common shape
        zero = g.const(np.asarray(0, np.int64))
        acc = None
        for c in cols:
            z = g.node("Mul", [c, zero])
            acc = z if acc is None else g.node("Add", [acc, z])
        shp = g.node("Shape", [acc])
        cols = [g.node("Expand", [c, shp]) for c in cols]
    return g.node("Concat", [g.unsqueeze(c, [-1]) for c in cols], axis=-1), len(cols)


@rule("pd_op.index_put", "pd_op.index_put_")
def _index_put(v):
    g = v.g
    x = v.x(0)
    xs = v.shape(0)
    index, k = _stacked_indices(v, 1, x, xs, "index_put")
    # value broadcast to index.shape[:-1] + x.shape[k:]
    target = g.node("Concat", [g.node("Slice", [g.node("Shape", [index]), g.ints([0]), g.ints([-1])]),
                               g.node("Slice", [g.node("Shape", [x]), g.ints([k]), g.ints([len(xs)])])], axis=0)
    val = g.node("Expand", [v.x_as(2, v.rdtype()), target])
    v.out(_scatter_nd(v, x, index, val, bool(v.attrs.get("accumulate", False))))


@rule("pd_op.index_get")
def _index_get(v):
    index, _ = _stacked_indices(v, 1, v.x(0), v.shape(0), "index_get")
    v.out(v.g.node("GatherND", [v.x(0), index]))


@rule("pd_op.gather_nd")
def _gather_nd(v):
    v.out(v.g.node("GatherND", [v.x(0), _int64_index(v, 1)]))


@rule("pd_op.gather_axis")
def _gather_axis(v):
    axis = _norm_axis(int(v.attrs["axis"]), len(v.shape(0)))
    v.out(v.g.node("GatherElements", [v.x(0), _int64_index(v, 1)], axis=axis))


@rule("pd_op.index_add", "pd_op.index_add_")
def _index_add(v):
    # x[..., index[j], ...] += value[..., j, ...]: with the axis moved first, rows of ScatterND
    g = v.g
    _need_opset(v, 16, "index_add (ScatterND reduction)")
    if v.rdtype() == "bool":
        raise v.unsupported("bool data")
    xs = v.shape(0)
    rank = len(xs)
    axis = _norm_axis(int(v.attrs["axis"]), rank)
    perm = [axis] + [d for d in range(rank) if d != axis]
    inv = [perm.index(d) for d in range(rank)]
    x = g.transpose(v.x(0), perm)
    val = g.transpose(v.x_as(2, v.rdtype()), perm)
    idx = g.node("Reshape", [_int64_index(v, 1), g.ints([-1, 1])])
    idx = _wrap(g, idx, _dim(g, v.x(0), xs, axis))
    v.out(g.transpose(g.node("ScatterND", [x, idx, val], reduction="add"), inv))


_PUT_REDUCE = {"add": ("add", 0), "mul": ("mul", 1), "multiply": ("mul", 1), "amax": ("max", None),
               "amin": ("min", None)}


@rule("pd_op.put_along_axis", "pd_op.put_along_axis_")
def _put_along_axis(v):
    g = v.g
    xs, ish = v.shape(0), v.shape(1)
    rank = len(xs)
    axis = _norm_axis(int(v.attrs["axis"]), rank)
    reduce = v.attrs.get("reduce", "assign")
    t = v.rdtype()
    if t == "bool":
        raise v.unsupported("bool data")
    if len(ish) != rank:
        raise v.unsupported(f"indices of rank {len(ish)} for a {rank}-D input")
    x = v.x(0)
    idx = _wrap(g, _int64_index(v, 1), _dim(g, x, xs, axis))
    val = v.x_as(2, t)
    if v.shape(2) != ish or -1 in ish:
        val = g.node("Expand", [val, g.node("Shape", [idx])])
    dt = v.np_dtype()
    if reduce == "assign":
        _need_opset(v, 16, "put_along_axis (ScatterElements reduction)")
        zeros = _zeros_like(g, val, dt)
        cleared = g.node("ScatterElements", [x, idx, zeros], axis=axis)
        m = g.node("Slice", [g.node("Shape", [idx]), g.ints([axis]), g.ints([axis + 1])])
        zero, one = g.const(np.asarray(0, np.int64)), g.const(np.asarray(1, np.int64))
        r = g.node("Range", [zero, g.squeeze(m, [0]), one])
        if g.opset >= 18:
            # winner[pos] = the largest position along the axis that writes pos
            ordinal = g.node("Expand", [g.unsqueeze(r, [d for d in range(rank) if d != axis]),
                                        g.node("Shape", [idx])])
            minus1 = g.node("ConstantOfShape", [g.node("Shape", [x])], value=_int64_value(-1))
            winner = g.node("ScatterElements", [minus1, idx, ordinal], axis=axis, reduction="max")
            last = g.node("Equal", [g.node("GatherElements", [winner, idx], axis=axis), ordinal])
            upd = g.node("Where", [last, val, zeros])
            v.out(g.node("ScatterElements", [cleared, idx, upd], axis=axis, reduction="add"))
            return
        # along the axis, j is overwritten by a later k with the same index in the same column
        eq = g.node("Equal", [g.unsqueeze(idx, [axis + 1]), g.unsqueeze(idx, [axis])])   # [.., Mj, Mk, ..]
        later = g.node("Greater", [g.unsqueeze(r, [0]), g.unsqueeze(r, [1])])          # [Mj, Mk]: k > j
        later = g.node("Reshape", [later, g.node("Concat", [g.node("Shape", [later]),
                                                            g.ints([1] * (rank - 1 - axis))], axis=0)])
        dup = g.node("And", [eq, later])
        dup = g.cast(g.reduce("ReduceMax", g.cast(dup, "bool", "int32"), [axis + 1], False), "int32", "bool")
        upd = g.node("Where", [dup, zeros, val])
        v.out(g.node("ScatterElements", [cleared, idx, upd], axis=axis, reduction="add"))
        return
    if reduce not in _PUT_REDUCE:
        raise v.unsupported(f"reduce='{reduce}'")
    red, ident = _PUT_REDUCE[reduce]
    _need_opset(v, 18 if red in ("max", "min") else 16, f"put_along_axis reduce='{reduce}'")
    if not v.attrs.get("include_self", True):
        # the first value replaces arr's: start the written positions from the identity
        if ident is None:
            if t in _FLOATS:
                ident = -np.inf if red == "max" else np.inf
            else:
                info = np.iinfo(dt)
                ident = info.min if red == "max" else info.max
        fill = g.node("Add", [_zeros_like(g, val, dt), g.scalar(ident, dt)])
        x = g.node("ScatterElements", [x, idx, fill], axis=axis)
    v.out(g.node("ScatterElements", [x, idx, val], axis=axis, reduction=red))


@rule("pd_op.roll")
def _roll(v):
    g = v.g
    xs = v.shape(0)
    shifts = [int(s) for s in v.attrs["shifts"]]
    axes = [int(a) for a in v.attrs.get("axis", [])]
    x = v.x(0)
    flat = not axes
    if flat:
        if len(shifts) != 1:
            raise v.unsupported(f"shifts {shifts} without axes")
        shape = g.node("Shape", [x])
        x = g.node("Reshape", [x, g.ints([-1])])
        axes, xs = [0], [-1 if -1 in xs else int(np.prod(xs, dtype=np.int64))]
    big = g.ints([2 ** 62])
    for s, a in zip(shifts, axes):
        a = _norm_axis(a, len(xs))
        n = _dim(g, x, xs, a)
        # out = x[n - s mod n:] ++ x[:n - s mod n]
        start = g.unsqueeze(g.node("Sub", [n, g.node("Mod", [g.const(np.asarray(s, np.int64)), n])]), [0])
        ax = g.ints([a])
        x = g.node("Concat", [g.node("Slice", [x, start, big, ax]), g.node("Slice", [x, g.ints([0]), start, ax])],
                   axis=a)
    if flat:
        x = g.node("Reshape", [x, shape])
    v.out(x)


@rule("pd_op.slice_scatter", "pd_op.slice_scatter_")
def _slice_scatter(v):
    """x with x[slice] = value: the slice's coordinates come from slicing Range(0, dim) per
    axis with ONNX Slice (the same start/end/step rules as the slice rule), and ScatterND
    writes the broadcast value there (each position once)."""
    g = v.g
    xs = v.shape(0)
    rank = len(xs)
    if rank == 0:
        raise v.unsupported("a 0-D input")
    x = v.x(0)
    axes = [_norm_axis(int(a), rank) for a in v.attrs["axes"]]
    starts, ends = [int(s) for s in v.attrs["starts"]], [int(e) for e in v.attrs["ends"]]
    strides = [int(s) for s in v.attrs.get("strides", [])] or [1] * len(axes)
    zero, one = g.const(np.asarray(0, np.int64)), g.const(np.asarray(1, np.int64))
    coords = []
    for d in range(rank):
        r = g.node("Range", [zero, _dim(g, x, xs, d), one])
        if d in axes:
            k = axes.index(d)
            r = g.node("Slice", [r, g.ints([starts[k]]), g.ints([ends[k]]), g.ints([0]), g.ints([strides[k]])])
        coords.append(r)
    region = g.node("Concat", [g.node("Shape", [c]) for c in coords], axis=0)
    grids = []
    for d, c in enumerate(coords):
        c = g.unsqueeze(c, [a for a in range(rank) if a != d]) if rank > 1 else c
        grids.append(g.unsqueeze(g.node("Expand", [c, region]), [-1]))
    index = g.node("Concat", grids, axis=-1)
    val = g.node("Expand", [v.x_as(1, v.rdtype()), region])
    v.out(g.node("ScatterND", [x, index, val]))
