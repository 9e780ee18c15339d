"""Paddle's incubate names of the graph operators, over oar.geometric."""
from ..geometric import (  # noqa: F401
    segment_max, segment_mean, segment_min, segment_sum,
)
from ..geometric import message_passing as _mp
from ..geometric import reindex as _reindex
from ..geometric import sampling as _sampling


def graph_send_recv(x, src_index, dst_index, pool_type="sum", out_size=None, name=None):
    """geometric.send_u_recv under its earlier name (pool_type is reduce_op)."""
    return _mp.send_u_recv(x, src_index, dst_index, pool_type, out_size)


def graph_reindex(x, neighbors, count, value_buffer=None, index_buffer=None,
                  flag_buffer_hashtable=False, name=None):
    """geometric.reindex_graph; count may hold k * len(x) entries for k edge types whose
    neighbours are concatenated (type by type), as geometric.reindex_heter_graph."""
    op = "graph_reindex"
    n = x.shape[0] if x.ndim == 1 else -1
    if n <= 0 or count.ndim != 1 or count.shape[0] % n:
        return _reindex._reindex(op, x, [neighbors], [count])
    k = count.shape[0] // n
    counts = [count[i * n:(i + 1) * n] for i in range(k)]
    sizes = [int(c.sum()) for c in counts]
    if sum(sizes) != neighbors.shape[0]:
        raise ValueError(f"{op}: count sums to {sum(sizes)} but neighbors has "
                         f"{neighbors.shape[0]} entries")
    starts = [sum(sizes[:i]) for i in range(k)]
    nbs = [neighbors[s:s + z] for s, z in zip(starts, sizes)]
    return _reindex._reindex(op, x, nbs, counts)


def graph_sample_neighbors(row, colptr, input_nodes, eids=None, perm_buffer=None,
                           sample_size=-1, return_eids=False, flag_perm_buffer=False, name=None):
    """geometric.sample_neighbors under its earlier name and argument order."""
    return _sampling._sample("graph_sample_neighbors", row, colptr, input_nodes, sample_size,
                             eids, return_eids)
