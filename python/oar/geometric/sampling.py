"""Neighbour sampling on a CSC graph (row: source ids sorted by destination, colptr: offsets)."""
import numpy as np

import oar

from ._common import check_tensor

_INT = ("int32", "int64")


def _numpy_rng():
    """A NumPy generator seeded from Oar's generator, so paddle.seed fixes the samples."""
    seed = int(oar.randint(0, 2**31 - 1, [1]).numpy()[0])
    return np.random.default_rng(seed)


def _check_csc(op, row, colptr, input_nodes, sample_size, eids, return_eids):
    check_tensor(op, "row", row, _INT, 1)
    check_tensor(op, "colptr", colptr, _INT, 1)
    check_tensor(op, "input_nodes", input_nodes, _INT, 1)
    if isinstance(sample_size, bool) or not isinstance(sample_size, (int, np.integer)) \
            or (sample_size < 1 and sample_size != -1):
        raise ValueError(f"{op}: sample_size must be -1 (all) or a positive int, got "
                         f"{sample_size!r}")
    if return_eids and eids is None:
        raise ValueError(f"{op}: eids must be given when return_eids is True")
    if eids is not None:
        check_tensor(op, "eids", eids, _INT, 1)
        if eids.shape[0] != row.shape[0]:
            raise ValueError(f"{op}: eids must have one id per edge ({row.shape[0]}), got "
                             f"{eids.shape[0]}")
    ptr = colptr.numpy().astype(np.int64)
    if ptr.size == 0 or ptr[0] != 0 or np.any(np.diff(ptr) < 0) or ptr[-1] != row.shape[0]:
        raise ValueError(f"{op}: colptr must rise from 0 to the number of edges "
                         f"({row.shape[0]})")
    nodes = input_nodes.numpy().astype(np.int64)
    if nodes.size and (nodes.min() < 0 or nodes.max() >= ptr.size - 1):
        raise ValueError(f"{op}: input_nodes must be in [0, {ptr.size - 1}), got values in "
                         f"[{nodes.min()}, {nodes.max()}]")
    return ptr, nodes


def _sample(op, row, colptr, input_nodes, sample_size, eids, return_eids, weight=None):
    ptr, nodes = _check_csc(op, row, colptr, input_nodes, sample_size, eids, return_eids)
    rows = row.numpy()
    w = None if weight is None else weight.numpy().astype(np.float64)
    rng = _numpy_rng()
    picked, counts = [], []
    for n in nodes.tolist():
        lo, hi = int(ptr[n]), int(ptr[n + 1])
        edges = np.arange(lo, hi)
        if sample_size != -1 and hi - lo > sample_size:
            if w is None:
                edges = np.sort(rng.choice(edges, sample_size, replace=False))
            else:  # A-Res: the k largest u^(1/w); zero-weight edges come last
                ew = w[lo:hi]
                keys = np.where(ew > 0, rng.random(hi - lo) ** (1.0 / np.maximum(ew, 1e-300)),
                                -1.0)
                edges = edges[np.sort(np.argsort(-keys, kind="stable")[:sample_size])]
        picked.append(edges)
        counts.append(len(edges))
    sel = np.concatenate(picked) if picked else np.zeros([0], np.int64)
    out = [oar.to_tensor(rows[sel], dtype=row.dtype, place=row.place),
           oar.to_tensor(np.asarray(counts, dtype=np.int32), dtype="int32", place=row.place)]
    if return_eids:
        out.append(oar.to_tensor(eids.numpy()[sel], dtype=eids.dtype, place=eids.place))
    return tuple(out)


def sample_neighbors(row, colptr, input_nodes, sample_size=-1, eids=None, return_eids=False,
                     perm_buffer=None, name=None):
    """Up to sample_size neighbours of each input node drawn uniformly without replacement
    (all of them for sample_size=-1). Returns (out_neighbors, out_count[, out_eids])."""
    return _sample("sample_neighbors", row, colptr, input_nodes, sample_size, eids, return_eids)


def weighted_sample_neighbors(row, colptr, edge_weight, input_nodes, sample_size=-1, eids=None,
                              return_eids=False, name=None):
    """Like sample_neighbors, drawing without replacement with probability proportional to
    edge_weight (one non-negative weight per edge)."""
    op = "weighted_sample_neighbors"
    check_tensor(op, "edge_weight", edge_weight, ("float32", "float64"), 1)
    if edge_weight.shape[0] != row.shape[0]:
        raise ValueError(f"{op}: edge_weight must have one weight per edge ({row.shape[0]}), "
                         f"got {edge_weight.shape[0]}")
    if edge_weight.shape[0] and float(edge_weight.numpy().min()) < 0:
        raise ValueError(f"{op}: edge_weight must be non-negative")
    return _sample(op, row, colptr, input_nodes, sample_size, eids, return_eids, edge_weight)


__all__ = ["sample_neighbors", "weighted_sample_neighbors"]
