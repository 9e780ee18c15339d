"""The static auto-parallel passes (Note [Static auto-parallel passes]) as each rank of a
2-process job (test_static_passes.py): a global (serial) program is traced once with its
annotations, cut to this rank by the dist-train pipeline (dist-complete, dist-reshard,
dist-partition{rank=PADDLE_TRAINER_ID}, then jit-train's passes), its dist.* ops lowered to
collectives, and run on this rank's shards; the results must equal one process's (the
eager step the trace ran) within 1e-12 in float64.

Cases: `mp`, a column- then row-parallel MLP forward and backward (hidden 15: uneven, rank 0
holds 8 columns, rank 1 seven); `dp`, a linear layer on a batch of 5 split over the ranks with
the loss summed over the split batch (Partial, then one all_reduce), forward and backward;
`pp`, two stages on the 1-process meshes [0] and [1], the activation moved forward and its
gradient back by dist.send_recv (the annotations of a move and of its gradient come from a
PyLayer, as DistModel's tracer must give them), each rank holding only its stage."""
import sys

import numpy as np

import oar
import oar.distributed as dist
from oar import _C

MESH = ([2], [0, 1], ["x"])
REPLICATE = [(0, -1, 0)]


def shard(dim):
    return [(1, dim, 0)]


def local(a, dim, rank):
    """Rank `rank`'s shard of `a` along `dim`: chunks of ceil(n / 2), the last smaller."""
    n = a.shape[dim]
    c = -(-n // 2)
    return np.take(a, range(min(rank * c, n), min(rank * c + c, n)), axis=dim)


def trace(build, inputs, params):
    """The global program of `build` (annotations included) and its eager results."""
    t = _C.pir.Tracer()
    for name, v in inputs:
        t.add_input(v, name, list(v.shape))
    for name, v in params:
        t.add_parameter(v, name)
    t.start()
    outs = build()
    return t.finish(outs), [o.numpy() for o in outs]


def mp_case(rng):
    x = oar.to_tensor(rng.standard_normal((4, 8)))
    w1 = oar.to_tensor(rng.standard_normal((8, 15)), stop_gradient=False)
    w2 = oar.to_tensor(rng.standard_normal((15, 8)), stop_gradient=False)

    def build():
        _C.dist.shard_annotate(x, *MESH, REPLICATE)
        _C.dist.shard_annotate(w1, *MESH, shard(1))
        _C.dist.shard_annotate(w2, *MESH, shard(0))
        h = oar.nn.functional.gelu(oar.matmul(x, w1))
        y = oar.matmul(h, w2)
        loss = oar.sum(y * y)
        g1, g2 = oar.grad(loss, [w1, w2])
        _C.dist.shard_annotate(g1, *MESH, shard(1))
        _C.dist.shard_annotate(g2, *MESH, shard(0))
        _C.dist.shard_annotate(loss, *MESH, REPLICATE)
        return [loss, g1, g2]

    prog, ref = trace(build, [("x", x)], [("w1", w1), ("w2", w2)])
    me = dist.get_rank()
    feeds = [x]
    params = {"w1": oar.to_tensor(local(w1.numpy(), 1, me)), "w2": oar.to_tensor(local(w2.numpy(), 0, me))}
    want = [ref[0], local(ref[1], 1, me), local(ref[2], 0, me)]
    return prog, feeds, params, want


def dp_case(rng):
    x = oar.to_tensor(rng.standard_normal((5, 4)))
    w = oar.to_tensor(rng.standard_normal((4, 3)), stop_gradient=False)

    def build():
        _C.dist.shard_annotate(x, *MESH, shard(0))
        _C.dist.shard_annotate(w, *MESH, REPLICATE)
        y = oar.tanh(oar.matmul(x, w))
        loss = oar.sum(y)
        (g,) = oar.grad(loss, [w])
        _C.dist.shard_annotate(g, *MESH, REPLICATE)
        _C.dist.shard_annotate(loss, *MESH, REPLICATE)
        return [loss, g, y]

    prog, ref = trace(build, [("x", x)], [("w", w)])
    me = dist.get_rank()
    feeds = [oar.to_tensor(local(x.numpy(), 0, me))]
    return prog, feeds, {"w": w}, [ref[0], ref[1], local(ref[2], 0, me)]


class Move(oar.autograd.PyLayer):
    """A move onto another mesh in a global program: the value annotated on `to`, its
    gradient annotated back on `back` (what eager's ReshardGrad does)."""

    @staticmethod
    def forward(ctx, x, to, back):
        ctx.back = back
        y = x.clone()
        _C.dist.shard_annotate(y, *to, REPLICATE)
        return y

    @staticmethod
    def backward(ctx, g):
        g = g.clone()
        _C.dist.shard_annotate(g, *ctx.back, REPLICATE)
        return g


def pp_case(rng):
    a, b = ([1], [0], ["pp"]), ([1], [1], ["pp"])
    x = oar.to_tensor(rng.standard_normal((4, 8)))
    w1 = oar.to_tensor(rng.standard_normal((8, 6)), stop_gradient=False)
    w2 = oar.to_tensor(rng.standard_normal((6, 3)), stop_gradient=False)

    def build():
        _C.dist.shard_annotate(x, *a, REPLICATE)
        _C.dist.shard_annotate(w1, *a, REPLICATE)
        _C.dist.shard_annotate(w2, *b, REPLICATE)
        h = Move.apply(oar.tanh(oar.matmul(x, w1)), b, a)
        loss = oar.sum(oar.matmul(h, w2) ** 2)
        g1, g2 = oar.grad(loss, [w1, w2])
        _C.dist.shard_annotate(g1, *a, REPLICATE)
        _C.dist.shard_annotate(g2, *b, REPLICATE)
        return [loss, g1, g2]

    prog, ref = trace(build, [("x", x)], [("w1", w1), ("w2", w2)])
    me = dist.get_rank()
    empty = np.zeros((0, 0))
    feeds = [x if me == 0 else oar.to_tensor(empty)]
    params = {"w1": w1 if me == 0 else oar.to_tensor(empty), "w2": w2 if me == 1 else oar.to_tensor(empty)}
    # Each rank holds its stage's values; the other's are empty (a 0-d loss keeps one zero).
    want = [ref[0] if me == 1 else np.zeros(()), ref[1] if me == 0 else empty, ref[2] if me == 1 else empty]
    return prog, feeds, params, want


def main(case):
    dist.init_parallel_env()
    rng = np.random.default_rng(7)  # the same global data on every rank
    prog, feeds, params, want = {"mp": mp_case, "dp": dp_case, "pp": pp_case}[case](rng)
    lowered = prog.run_pipeline("dist-train", lower_copy=True)
    names = [op.name for op in prog.ops()]
    assert "dist.shard_annotate" not in names, names
    n = _C.distributed.lower_collectives(lowered)
    assert n == sum(1 for m in names if m.startswith("dist.")), (n, names)
    got = _C.pir.Executor(lowered, None).run(feeds, params)
    for i, (g, w) in enumerate(zip(got, want)):
        g = g.numpy()
        assert g.shape == w.shape, (case, i, g.shape, w.shape)
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12, err_msg=f"{case} output {i}")
    print(case, "collectives", n, "ops", names)
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1])
