"""Reindexing a sampled subgraph: node ids become positions in the list of nodes it touches."""
import numpy as np

import oar

from ._common import check_tensor

_INT = ("int32", "int64")


def _check_counts(op, x, neighbors, count, suffix=""):
    check_tensor(op, "neighbors" + suffix, neighbors, _INT, 1)
    check_tensor(op, "count" + suffix, count, ("int32",), 1)
    if count.shape[0] != x.shape[0]:
        raise ValueError(f"{op}: count{suffix} must hold one count per node of x "
                         f"({x.shape[0]}), got {count.shape[0]}")
    c = count.numpy().astype(np.int64)
    if c.size and int(c.min()) < 0:
        raise ValueError(f"{op}: count{suffix} must be non-negative, got {int(c.min())}")
    if int(c.sum()) != neighbors.shape[0]:
        raise ValueError(f"{op}: count{suffix} sums to {int(c.sum())} but neighbors{suffix} "
                         f"has {neighbors.shape[0]} entries")
    return c


def _reindex(op, x, neighbor_list, count_list):
    check_tensor(op, "x", x, _INT, 1)
    xs = x.numpy().astype(np.int64)
    order = {}
    for v in xs.tolist():
        order.setdefault(v, len(order))
    if len(order) != len(xs):
        raise ValueError(f"{op}: the nodes in x must be unique")
    srcs, dsts = [], []
    for k, (nb, cnt) in enumerate(zip(neighbor_list, count_list)):
        suffix = f"[{k}]" if len(neighbor_list) > 1 else ""
        c = _check_counts(op, x, nb, cnt, suffix)
        ids = nb.numpy().astype(np.int64)
        for v in ids.tolist():
            order.setdefault(v, len(order))
        srcs.append(np.array([order[v] for v in ids.tolist()], dtype=np.int64))
        dsts.append(np.repeat(np.arange(len(xs), dtype=np.int64), c))
    out_nodes = np.fromiter(order.keys(), dtype=np.int64, count=len(order))
    dtype, place = x.dtype, x.place
    return (oar.to_tensor(np.concatenate(srcs), dtype=dtype, place=place),
            oar.to_tensor(np.concatenate(dsts), dtype=dtype, place=place),
            oar.to_tensor(out_nodes, dtype=dtype, place=place))


def reindex_graph(x, neighbors, count, value_buffer=None, index_buffer=None, name=None):
    """Returns (reindex_src, reindex_dst, out_nodes): out_nodes lists x, then the neighbours
    not in x in order of first appearance; reindex_src gives each neighbour's position there and
    reindex_dst the position in x of the node it was sampled for (count[i] entries each).
    value_buffer/index_buffer (Paddle's GPU hash buffers) are accepted and not needed."""
    return _reindex("reindex_graph", x, [neighbors], [count])


def reindex_heter_graph(x, neighbors, count, value_buffer=None, index_buffer=None, name=None):
    """reindex_graph over several edge types: neighbors and count are lists (one per type); the
    outputs concatenate the types in order and out_nodes is shared."""
    op = "reindex_heter_graph"
    if not isinstance(neighbors, (list, tuple)) or not isinstance(count, (list, tuple)):
        raise TypeError(f"{op}: neighbors and count must be lists of Tensors, got "
                        f"{type(neighbors).__name__} and {type(count).__name__}")
    if len(neighbors) != len(count) or not neighbors:
        raise ValueError(f"{op}: neighbors and count must be non-empty lists of one length, got "
                         f"{len(neighbors)} and {len(count)}")
    return _reindex(op, x, list(neighbors), list(count))


__all__ = ["reindex_graph", "reindex_heter_graph"]
