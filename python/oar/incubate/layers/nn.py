"""Column-window concat/sum of 2-D inputs and batch shuffling (eager and static)."""
import numbers


def _inputs(xs, who):
    from ... import _C

    if isinstance(xs, _C.Tensor):
        xs = [xs]
    if not isinstance(xs, (list, tuple)) or not xs:
        raise TypeError(f"{who}: input must be a non-empty list of 2-D tensors")
    for i, x in enumerate(xs):
        if not isinstance(x, _C.Tensor) or len(x.shape) != 2:
            what = f"shape {list(x.shape)}" if isinstance(x, _C.Tensor) else type(x).__name__
            raise ValueError(f"{who}: input[{i}] must be a 2-D tensor, got {what}")
        if x.dtype != xs[0].dtype or x.shape[0] != xs[0].shape[0]:
            raise ValueError(f"{who}: every input must have the rows and dtype of input[0] "
                             f"({list(xs[0].shape)}, {xs[0].dtype}), input[{i}] has {list(x.shape)}, {x.dtype}")
    return list(xs)


def _window(xs, start_index, length, who):
    cols = xs[0].shape[1]
    for x in xs:
        if x.shape[1] != cols:
            raise ValueError(f"{who}: every input must have {cols} columns, got {list(x.shape)}")
    for name, v in (("start_index", start_index), ("length", length)):
        if isinstance(v, bool) or not isinstance(v, numbers.Integral):
            raise TypeError(f"{who}: {name} must be an int, got {v!r}")
    start = start_index + cols if start_index < 0 else start_index
    if not 0 <= start < max(cols, 1) and cols:
        raise ValueError(f"{who}: start_index {start_index} is out of range for {cols} columns")
    stop = cols if length < 0 else start + length
    if length < -1 or stop > cols:
        raise ValueError(f"{who}: start_index {start_index} + length {length} exceeds the {cols} columns "
                         f"(length -1: to the last column)")
    return start, stop


def partial_concat(input, start_index=0, length=-1):  # noqa: A002
    """Columns [start_index, start_index + length) of every input, concatenated along
    dim 1 (length -1: to the last column)."""
    import oar

    xs = _inputs(input, "partial_concat")
    start, stop = _window(xs, start_index, length, "partial_concat")
    return oar.concat([x[:, start:stop] for x in xs], axis=1)


def partial_sum(input, start_index=0, length=-1):  # noqa: A002
    """Columns [start_index, start_index + length) of the inputs, summed elementwise."""
    xs = _inputs(input, "partial_sum")
    start, stop = _window(xs, start_index, length, "partial_sum")
    out = xs[0][:, start:stop]
    for x in xs[1:]:
        out = out + x[:, start:stop]
    return out


def shuffle_batch(x, seed=None):
    """x with its rows (all dims but the last, flattened) in a random order; `seed` (an
    int) makes the order reproducible."""
    import numpy as np

    import oar

    if not isinstance(x, oar.Tensor) or len(x.shape) < 1:
        raise ValueError("shuffle_batch: x must be a tensor of rank >= 1")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, numbers.Integral)):
        raise TypeError(f"shuffle_batch: seed must be an int or None, got {seed!r}")
    from ...base import framework

    if framework.in_static_mode():
        # Oar's random ops take their sizes when the program is built, so a program could only
        # shuffle the placeholder's rows, not the fed batch's: refused rather than wrong.
        raise NotImplementedError("shuffle_batch: not available in a static program (the batch size is only "
                                  "known at run time); call it on eager tensors")
    shape = list(x.shape)
    rows = int(np.prod(shape[:-1])) if len(shape) > 1 else shape[0]
    if seed is None:
        perm = oar.randperm(rows)
    else:
        perm = oar.to_tensor(np.random.default_rng(int(seed)).permutation(rows).astype("int64"))
    flat = x.reshape([rows, shape[-1]]) if len(shape) > 1 else x
    return oar.index_select(flat, perm, axis=0).reshape(shape)


def tdm_child(x, node_nums, child_nums, param_attr=None, dtype="int32"):
    """The children of tree nodes (tree-based deep match). The tree is a [node_nums,
    3 + child_nums] parameter (initialized from param_attr): per node its item id, layer,
    parent and child node ids (0: none). Returns (child, leaf_mask), both shaped
    x.shape + [child_nums]: each node's child ids, and 1 where that child is a leaf (has an
    item id), else 0."""
    import oar

    for name, v in (("node_nums", node_nums), ("child_nums", child_nums)):
        if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 1:
            raise ValueError(f"tdm_child: {name} must be an int >= 1, got {v!r}")
    if dtype not in ("int32", "int64"):
        raise ValueError(f"tdm_child: dtype must be 'int32' or 'int64', got {dtype!r}")
    if not isinstance(x, oar.Tensor) or x.dtype not in (oar.int32, oar.int64):
        raise TypeError(f"tdm_child: x must be an int32/int64 tensor of node ids, got "
                        f"{getattr(x, 'dtype', type(x).__name__)}")
    from ...nn._errors import check_fits

    check_fits("tdm_child", f"a tree of {node_nums} x {3 + child_nums}", node_nums * (3 + child_nums) * 8)
    # Oar's parameters are floating point: the ids are kept as float64 (exact below 2**53)
    table = oar.create_parameter([node_nums, 3 + child_nums], "float64", attr=param_attr,
                                 default_initializer=oar.nn.initializer.Constant(0))
    table.stop_gradient = True
    tree = table.astype("int64")
    from ...base import framework

    if not framework.in_static_mode() and x.size:
        lo, hi = int(x.min()), int(x.max())
        if lo < 0 or hi >= node_nums:
            raise ValueError(f"tdm_child: node ids must be in [0, {node_nums}), got values in [{lo}, {hi}]")
    ids = oar.reshape(x, [-1]).astype("int64")
    child = oar.index_select(tree, ids, axis=0)[:, 3:]
    items = tree[:, 0]
    leaf = oar.stack([oar.index_select(items, child[:, j], axis=0) != 0 for j in range(child_nums)], axis=1)
    shape = [-1] + list(x.shape[1:]) + [child_nums]
    return oar.reshape(child.astype(dtype), shape), oar.reshape(leaf.astype(dtype), shape)
