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
        return _static_shuffle(x, seed)
    from ..._creation import _ops
    from ..._dtype import convert_dtype

    shape = list(x.shape)
    rows = int(np.prod(shape[:-1])) if len(shape) > 1 else shape[0]
    if seed is None:
        perm = _ops.randperm(rows, convert_dtype("int64"), x.place)
    else:
        perm = oar.to_tensor(np.random.default_rng(int(seed)).permutation(rows).astype("int64"), place=x.place)
    flat = x.reshape([rows, shape[-1]]) if len(shape) > 1 else x
    return oar.index_select(flat, perm, axis=0).reshape(shape)


def _static_shuffle(x, seed):
    """shuffle_batch in a static program, whose batch size is known only at run time: one
    uniform key per row, drawn at the fed batch's size (Note [Run-time random shapes] in
    docs/notes/static.md); sorting the keys gives a uniformly random permutation."""
    import oar

    from ... import _trace_state
    from ...static import _program

    rank = len(x.shape)
    if rank > 2:
        # its rows would be a flattened [batch * ...] whose size the IR's shape inference
        # cannot split back into the batch and the static dims
        raise NotImplementedError(f"shuffle_batch: in a static program x must have rank 1 or 2 (rows, "
                                  f"features), got dims {_program._dims(x)}; reshape it to [-1, features] first")
    stream = 0 if seed is None else int(seed) or 1  # the op's seed 0 means the global stream
    key = oar.uniform(_trace_state.sizes_of(x)[:1], "float64", 0.0, 1.0, stream)
    return oar.index_select(x, oar.argsort(key), axis=0)


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


def tdm_sampler(x, neg_samples_num_list, layer_node_num_list, leaf_node_num, tree_travel_attr=None,
                tree_layer_attr=None, output_positive=True, output_list=True, seed=0, tree_dtype="int32",
                dtype="int32"):
    """Tree-based deep match sampling: for each leaf item id in x ([batch, 1]), layer by layer
    down its path in the tree, the path's node (label 1) and `neg_samples_num_list[l]`
    distinct other nodes of that layer drawn uniformly (label 0). The tree is two
    parameters: travel [leaf_node_num, layers] (each leaf's path, 0: no node at that layer)
    and layer [node_nums, 1] (the nodes, layer after layer). Returns (samples, labels,
    mask), [batch, sum(neg + output_positive)] each or, with output_list, one per layer;
    mask is 0 where a path has no node (the padding of an unbalanced tree). `seed` 0 draws
    from the global generator; another value draws the same samples every call."""
    import numpy as np

    import oar

    op = "tdm_sampler"
    for name, v in (("tree_dtype", tree_dtype), ("dtype", dtype)):
        if str(v).replace("oar.", "").replace("paddle.", "") not in ("int32", "int64"):
            raise ValueError(f"{op}: {name} must be 'int32' or 'int64', got {v!r}")
    for name, v in (("neg_samples_num_list", neg_samples_num_list), ("layer_node_num_list", layer_node_num_list)):
        if not isinstance(v, (list, tuple)) or not v or not all(
                isinstance(n, numbers.Integral) and not isinstance(n, bool) for n in v):
            raise TypeError(f"{op}: {name} must be a non-empty list of ints, got {v!r}")
    if len(neg_samples_num_list) != len(layer_node_num_list):
        raise ValueError(f"{op}: neg_samples_num_list ({len(neg_samples_num_list)} layers) and layer_node_num_list "
                         f"({len(layer_node_num_list)} layers) must have one entry per layer")
    for i, (neg, n) in enumerate(zip(neg_samples_num_list, layer_node_num_list)):
        if n < 1 or not 0 <= neg < n:
            raise ValueError(f"{op}: layer {i} has {n} nodes and asks for {neg} negative samples; need "
                             f"0 <= neg_samples_num_list[{i}] < layer_node_num_list[{i}] and at least one node")
    node_nums = int(sum(layer_node_num_list))
    if isinstance(leaf_node_num, bool) or not isinstance(leaf_node_num, numbers.Integral) or \
            not 0 < leaf_node_num < node_nums:
        raise ValueError(f"{op}: leaf_node_num must be an int in [1, {node_nums}) (the tree has {node_nums} "
                         f"nodes), got {leaf_node_num!r}")
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise TypeError(f"{op}: seed must be an int (0: the global generator), got {seed!r}")
    if not isinstance(x, oar.Tensor) or x.dtype not in (oar.int32, oar.int64):
        raise TypeError(f"{op}: x must be an int32/int64 tensor of leaf item ids, got "
                        f"{getattr(x, 'dtype', type(x).__name__)}")
    from ...base import framework

    static = framework.in_static_mode()
    if static and any(neg_samples_num_list):
        from ...static import default_main_program

        declared = [dims for t, dims, _ in default_main_program()._inputs.values() if t is x]
        if not declared or declared[0][0] < 0:
            raise NotImplementedError(
                f"{op}: negative sampling in a static program needs x's batch size when the program is built "
                f"(Oar's random ops take their sizes then); declare x with a fixed batch, or sample eagerly")
    layers = len(layer_node_num_list)
    # Oar's parameters are floating point: the ids are kept as float64 (exact below 2**53)
    travel = oar.create_parameter([int(leaf_node_num), layers], "float64", attr=tree_travel_attr,
                                  default_initializer=oar.nn.initializer.Constant(0))
    layer = oar.create_parameter([node_nums, 1], "float64", attr=tree_layer_attr,
                                 default_initializer=oar.nn.initializer.Constant(0))
    travel.stop_gradient = layer.stop_gradient = True
    if not static and x.size:
        lo, hi = int(x.min()), int(x.max())
        if lo < 0 or hi >= leaf_node_num:
            raise ValueError(f"{op}: x's item ids must be in [0, {leaf_node_num}), got values in [{lo}, {hi}]")
    ids = oar.reshape(x, [-1]).astype("int64")
    paths = oar.index_select(travel.astype("int64"), ids, axis=0)  # [batch, layers]
    nodes = oar.reshape(layer.astype("int64"), [-1])
    batch = int(x.shape[0]) if len(x.shape) else 1
    rng = np.random.default_rng(int(seed)) if seed else None
    samples, labels, masks = [], [], []
    start = 0
    for i, (neg, n) in enumerate(zip(neg_samples_num_list, layer_node_num_list)):
        pos = paths[:, i:i + 1]  # [batch, 1]; 0: the path has no node here
        real = (pos != 0).astype("int64")
        parts, lab, msk = [], [], []
        if output_positive:
            parts.append(pos)
            lab.append(real)
            msk.append(real)
        if neg:
            in_layer = nodes[start:start + n]  # [n]
            # n uniforms per row with the positive node pushed last: the first `neg` of
            # their order are `neg` distinct other nodes, uniformly drawn
            if rng is not None:
                u = oar.to_tensor(rng.random((batch, n)))
            else:
                u = oar.rand([batch, n], dtype="float64")
            u = oar.where(oar.reshape(in_layer, [1, n]) == pos, oar.full_like(u, 2.0), u)
            picked = oar.argsort(u, axis=1)[:, :neg]
            drawn = oar.index_select(in_layer, oar.reshape(picked, [-1]), axis=0).reshape([-1, neg])
            parts.append(drawn * real)  # a padded layer's samples are 0, as Paddle's
            lab.append(oar.zeros_like(picked))
            msk.append(oar.ones_like(picked) * real)  # a padded layer's negatives are padding too
        start += n
        if not parts:  # no positive, no negatives: an empty [batch, 0] column block
            parts, lab, msk = [pos[:, :0]], [pos[:, :0]], [pos[:, :0]]
        samples.append(oar.concat(parts, axis=1).astype(dtype))
        labels.append(oar.concat(lab, axis=1).astype(dtype))
        masks.append(oar.concat(msk, axis=1).astype(dtype))
    if output_list:
        return samples, labels, masks
    return oar.concat(samples, axis=1), oar.concat(labels, axis=1), oar.concat(masks, axis=1)
