"""A single-process simulator for SPMD rules: split the inputs as the rule asks, run the real
op on every process's shard, put the outputs back together as the rule says they come out
(concatenation for Shard, the reduction for Partial, equality across Replicate) and compare
with the unsharded op. A rule that claims a wrong layout fails here with numbers."""
import itertools
import random

import numpy as np

import oar
import oar.distributed as dist
from oar import _C

_COMBINE = {0: np.add.reduce, 1: np.maximum.reduce, 2: np.minimum.reduce, 3: np.multiply.reduce,
            4: lambda xs: np.add.reduce(xs) / len(xs), 5: np.logical_or.reduce, 6: np.logical_and.reduce}


def placement_options(rank, mesh_ndim):
    """Every Shard/Replicate list for a tensor of `rank` on a mesh of `mesh_ndim` axes."""
    per_axis = [dist.Replicate()] + [dist.Shard(d) for d in range(rank)]
    out = []
    for combo in itertools.product(per_axis, repeat=mesh_ndim):
        dims = [p.get_dim() for p in combo if p.is_shard()]
        if len(dims) == len(set(dims)):
            out.append(list(combo))
    return out


def local_shard(global_shape, mesh, placements, pid):
    enc = [p._encode() for p in placements]
    return _C.dist.local_shard(list(global_shape), mesh.shape, mesh.process_ids, enc, pid)


def _partial_weights(shape, n, seed):
    """n random arrays of `shape` summing to 1 elementwise: how a Partial(sum) input is
    spread over the n processes of its mesh axis (zeros everywhere but one would be too
    easy a test)."""
    rng = np.random.default_rng(seed)
    ws = [rng.uniform(-1.0, 2.0, shape) for _ in range(n - 1)]
    return ws + [1.0 - sum(ws, np.zeros(shape))]


def _cut(arr, mesh, placements, pid, seed=0):
    """Process pid's local piece of global `arr`: its shard, and along each Partial axis
    its share of the value (sum: a random split; avg: the value)."""
    shape, offset = local_shard(arr.shape, mesh, placements, pid)
    region = tuple(slice(o, o + n) for o, n in zip(offset, shape))
    coord = [int(c[0]) for c in np.nonzero(mesh.mesh == pid)]
    piece = arr[region] if arr.ndim else arr
    for axis, p in enumerate(placements):
        if p.is_partial():
            assert p.reduce_type() in (0, 4), f"the simulator splits sum/avg partials only, got {p}"
            if p.reduce_type() == 0:
                w = _partial_weights(arr.shape, mesh.shape[axis], seed * 10 + axis)[coord[axis]]
                piece = piece * (w[region] if arr.ndim else w)
    return piece, offset


def _as_list(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _np(t):
    return np.asarray(t.numpy())


def assemble(pieces, global_shape, mesh, placements, where):
    """The global tensor from each process's local output (pieces[pid]), checking each piece
    has the shape its placements give it and that replicas agree."""
    out = None
    partial_axes = [a for a, p in enumerate(placements) if p.is_partial()]
    groups = {}
    for pid in mesh.process_ids:
        coord = [int(c[0]) for c in np.nonzero(mesh.mesh == pid)]
        key = tuple(c for a, c in enumerate(coord) if a not in partial_axes)
        groups.setdefault(key, []).append(pid)
    for key, pids in groups.items():
        shape, offset = local_shard(global_shape, mesh, placements, pids[0])
        for pid in pids:
            assert list(pieces[pid].shape) == list(shape), (
                f"{where}: process {pid} computed a shard of shape {list(pieces[pid].shape)}, but its "
                f"placements {placements} give {list(shape)} of global {list(global_shape)}")
        block = pieces[pids[0]]
        if partial_axes:
            reds = {placements[a].reduce_type() for a in partial_axes}
            assert len(reds) == 1, f"{where}: mixed Partial reductions {reds}"
            block = _COMBINE[reds.pop()]([pieces[p] for p in pids])
        if out is None:
            out = np.full(global_shape, np.nan) if block.dtype.kind == "f" else np.zeros(global_shape, block.dtype)
            seen = np.zeros(global_shape, bool)
        region = tuple(slice(o, o + n) for o, n in zip(offset, shape))
        if seen[region].any():
            _assert_close(out[region], block, f"{where}: replicas disagree")
        out[region] = block
        seen[region] = True
    assert seen.all(), f"{where}: the shards do not cover the output"
    return out


def _op_function(op):
    """The generated binding of `op` (oar._C.ops; internal ops carry a leading underscore),
    or its Python API when bound elsewhere."""
    return getattr(_C.ops, op, None) or getattr(_C.ops, "_" + op, None) or getattr(oar, op)


def _assert_close(got, want, where):
    if np.asarray(want).dtype.kind in "biu":
        np.testing.assert_array_equal(got, want, err_msg=where)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-9, err_msg=where)


class Case:
    """One op call: `fn(*tensors, **attrs)` (default oar._C.ops.<op>), float64 inputs of
    `shapes` (or from `make`), attrs. local_attrs(attrs, out_local_shapes, in_offsets) gives
    the attrs a process runs with when they name global sizes (reshape's shape)."""

    def __init__(self, op, shapes, attrs=None, fn=None, make=None, nout=1, local_attrs=None,
                 listed=False, name=None, grid=None, rule=""):
        self.op, self.shapes, self.attrs = op, shapes, attrs or {}
        self.fn = fn or (lambda *xs, **kw: _op_function(op)(*xs, **kw))
        self.make, self.nout, self.local_attrs, self.listed = make, nout, local_attrs, listed
        self.name = name or op
        self.grid = grid  # which inputs get every placement tried (others replicated)
        self.rule = rule  # the rule to use when the op has no definition (embedding)

    def inputs(self):
        rng = np.random.default_rng(7)
        return self.make(rng) if self.make else [rng.standard_normal(s) for s in self.shapes]

    def run(self, arrays, attrs):
        ts = [None if a is None else oar.to_tensor(a) for a in arrays]
        args = [ts] if self.listed else ts
        return [_np(o) for o in _as_list(self.fn(*args, **attrs))]


def simulate(case, mesh, in_placements, reverse_out=None):
    """Runs case on `mesh` from `in_placements` through the rule (forward), or, with
    reverse_out (output placements), through the reverse rule; returns the placements used."""
    arrays = case.inputs()
    ref = case.run(arrays, case.attrs)
    metas = [None if a is None else (list(a.shape), p) for a, p in zip(arrays, in_placements)]
    if reverse_out is None:
        want_in, outs = dist.infer_spmd(case.op, mesh, metas, case.attrs, num_outputs=case.nout,
                                       rule=case.rule)
    else:
        out_metas = [(list(r.shape), p) for r, p in zip(ref, reverse_out)]
        want_in, outs = dist.infer_spmd(case.op, mesh, metas, case.attrs, outputs=out_metas, rule=case.rule)
    assert len(outs) == len(ref), f"{case.name}: rule gives {len(outs)} outputs, op {len(ref)}"
    where = f"{case.name} on {mesh.shape} from {in_placements} -> in {want_in} out {outs}"
    for a, w, given in zip(arrays, want_in, in_placements):
        assert a is not None or all(p.is_replicated() for p in w), where
        for axis, p in enumerate(w):  # a rule may keep a Partial input, never invent one
            assert not p.is_partial() or given[axis] == p, f"{where}: asks for a Partial input"
    pieces = [dict() for _ in ref]
    for pid in mesh.process_ids:
        local, offsets = [], []
        for i, (a, w) in enumerate(zip(arrays, want_in)):
            piece, off = (None, None) if a is None else _cut(a, mesh, w, pid, seed=i)
            local.append(piece)
            offsets.append(off)
        attrs = dict(case.attrs)
        if case.local_attrs:
            out_shapes = [local_shard(r.shape, mesh, p, pid)[0] for r, p in zip(ref, outs)]
            attrs = case.local_attrs(attrs, out_shapes, offsets, local)
        for k, o in enumerate(case.run(local, attrs)):
            pieces[k][pid] = o
    for k, r in enumerate(ref):
        got = assemble(pieces[k], r.shape, mesh, outs[k], f"{where}, output {k}")
        _assert_close(got, r, where)
    return want_in, outs


def placement_sets(case, mesh, arrays, limit, seed=0):
    """Input placement combinations to try: all of them, or `limit` drawn at random."""
    opts = []
    for i, a in enumerate(arrays):
        if a is None or (case.grid is not None and i not in case.grid):
            opts.append([[dist.Replicate()] * mesh.ndim])
        else:
            opts.append(placement_options(a.ndim, mesh.ndim))
    combos = list(itertools.product(*opts))
    if len(combos) > limit:
        combos = random.Random(seed).sample(combos, limit)
    return [list(c) for c in combos]
