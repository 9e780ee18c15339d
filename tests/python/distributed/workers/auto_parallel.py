"""Auto-parallel in dynamic mode, run as each rank of a 2-process job (test_auto_parallel.py):
`reshard` every transfer against NumPy (`reshard2d` on a 2x2 mesh, 4 processes), `ops` ops run
sharded against one process (outputs and gradients), `mlp` / `gpt` a 2-way tensor-parallel MLP
and small GPT (2 layers, d=64) trained 20 steps against one process in float64, `errors` bad
inputs. A first argument `sample` runs them on the sample device (OAR_SAMPLE_DEVICE_LIB, the
xccl backend), where every local value must stay."""
import itertools
import os
import sys

import numpy as np

import oar
import oar.distributed as dist
from oar.distributed import Partial, ProcessMesh, ReduceType, Replicate, Shard

RED = {ReduceType.kRedSum: np.sum, ReduceType.kRedMax: np.max, ReduceType.kRedMin: np.min,
       ReduceType.kRedProd: np.prod, ReduceType.kRedAvg: np.mean}


def gather(a):
    out = []
    dist.all_gather_object(out, np.asarray(a))
    return out


def check_layout(t, mesh, placements, want, what):
    """t's pieces on every rank (1-d mesh) put back together give `want` (NumPy)."""
    assert list(t.shape) == list(want.shape), f"{what}: global shape {t.shape} != {want.shape}"
    assert t.placements == placements, f"{what}: placements {t.placements} != {placements}"
    local = t._local_value()
    assert f"({oar.get_device()})" in str(local.place), f"{what}: local value on {local.place}"
    pieces = gather(local.numpy())
    p = placements[0]
    if p.is_shard():
        got = np.concatenate(pieces, axis=p.get_dim())
    elif p.is_partial():
        got = RED[p.reduce_type()](np.stack(pieces), axis=0)
    else:
        for q in pieces[1:]:
            np.testing.assert_array_equal(q, pieces[0], err_msg=f"{what}: replicas differ")
        got = pieces[0]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, err_msg=what)


def source(x, mesh, p, rank, rng):
    """A dist tensor of global value x laid out as [p]: Partial pieces are random (not one
    value and identities), so the reduction is really exercised."""
    if not p.is_partial():
        return dist.shard_tensor(x, mesh, [p], stop_gradient=False), x
    r = p.reduce_type()
    pieces = [rng.standard_normal(x.shape) for _ in range(2)]
    if r == ReduceType.kRedProd:
        pieces = [np.abs(q) + 0.5 for q in pieces]
    want = RED[r](np.stack(pieces), axis=0)
    local = oar.to_tensor(pieces[rank])
    local.stop_gradient = False
    return dist.dtensor_from_local(local, mesh, [p]), want


def test_reshard(rank):
    mesh = ProcessMesh([0, 1], dim_names=["x"])
    kinds = [Replicate(), Shard(0), Shard(1), Partial(), Partial(ReduceType.kRedMax),
             Partial(ReduceType.kRedAvg), Partial(ReduceType.kRedProd)]
    count = 0
    for shape in [(4, 6), (5, 3), (3, 1), (1, 4), (0, 4)]:
        for src, dst in itertools.product(kinds, kinds):
            rng = np.random.default_rng(count)
            count += 1
            x = rng.standard_normal(shape)
            t, value = source(x, mesh, src, rank, rng)
            what = f"reshard {shape} {src} -> {dst}"
            out = dist.reshard(t, mesh, [dst])
            check_layout(out, mesh, [dst], value, what)
            if dst.is_partial() or src.is_partial() and src.reduce_type() != ReduceType.kRedSum:
                continue
            # gradient: d sum(out * w) / d x = w, laid out as x (Partial as Replicate)
            w = rng.standard_normal(shape)
            loss = (out * dist.shard_tensor(w, mesh, [dst])).sum()
            loss.backward()
            want_grad = [Replicate()] if src.is_partial() else [src]
            check_layout(t.grad, mesh, want_grad, w, what + " (grad)")
    # unshard_dtensor, and 1-d tensors split unevenly
    x = np.arange(3.0)
    u = dist.unshard_dtensor(dist.shard_tensor(x, mesh, [Shard(0)]))
    assert not u.is_dist()
    np.testing.assert_array_equal(u.numpy(), x)
    print(f"reshard ok {rank} ({count} cases)")


def test_reshard_2d(rank):
    """A 2x2 mesh (4 processes): N-d transfers, one axis at a time."""
    mesh = ProcessMesh([[0, 1], [2, 3]], dim_names=["dp", "mp"])
    kinds = [Replicate(), Shard(0), Shard(1), Partial()]
    count = 0
    for shape in [(4, 6), (5, 3)]:
        for src in itertools.product(kinds, kinds):
            for dst in itertools.product(kinds, kinds):
                src, dst = list(src), list(dst)
                if any(a == b and a.is_shard() for a, b in [(src[0], src[1]), (dst[0], dst[1])]):
                    continue  # co-sharding one dim over both axes: not expressible
                rng = np.random.default_rng(count)
                count += 1
                x = rng.standard_normal(shape)
                t = dist.shard_tensor(x, mesh, src)  # Partial: value at coordinate 0
                out = dist.reshard(t, mesh, dst)
                got = dist.unshard_dtensor(out).numpy()
                np.testing.assert_allclose(got, x, rtol=1e-12, atol=1e-12, err_msg=f"{shape} {src} -> {dst}")
    print(f"reshard2d ok {rank} ({count} cases)")


def run_case(fn, arrays, placements, mesh, rng):
    """fn on dist tensors vs fn on ordinary ones: outputs and input gradients."""
    ref_in = [oar.to_tensor(a, stop_gradient=False) for a in arrays]
    ref = fn(*ref_in)
    w = rng.standard_normal(list(ref.shape))
    (ref * oar.to_tensor(w)).sum().backward()
    d_in = [dist.shard_tensor(a, mesh, p, stop_gradient=False) for a, p in zip(arrays, placements)]
    out = fn(*d_in)
    assert out.is_dist(), "output is not a dist tensor"
    assert list(out.shape) == list(ref.shape), f"shape {out.shape} != {ref.shape}"
    np.testing.assert_allclose(dist.unshard_dtensor(out).numpy(), ref.numpy(), rtol=1e-12, atol=1e-12)
    (out * oar.to_tensor(w)).sum().backward()
    for i, (a, b) in enumerate(zip(d_in, ref_in)):
        assert a.grad.placements == [Replicate() if q.is_partial() else q for q in a.placements], \
            f"grad {i} placements {a.grad.placements} vs {a.placements}"
        np.testing.assert_allclose(dist.unshard_dtensor(a.grad).numpy(), b.grad.numpy(), rtol=1e-12, atol=1e-12,
                                   err_msg=f"grad of input {i}")


def test_ops(rank):
    mesh = ProcessMesh([0, 1], dim_names=["x"])
    R, S0, S1 = Replicate(), Shard(0), Shard(1)
    F = oar.nn.functional
    cases = [
        ("matmul", oar.matmul, [(4, 6), (6, 5)], [[R, S0, S1], [R, S0, S1]]),
        ("matmul uneven", oar.matmul, [(5, 3), (3, 3)], [[S0, S1], [S0, S1]]),
        ("add broadcast", oar.add, [(4, 6), (6,)], [[R, S0, S1], [R, S0]]),
        ("multiply", oar.multiply, [(5, 3), (5, 3)], [[S0, S1], [R, S0]]),
        ("subtract", oar.subtract, [(4, 6), (4, 6)], [[S1], [S0, R]]),
        ("exp", oar.exp, [(5, 3)], [[R, S0, S1]]),
        ("tanh", oar.tanh, [(4, 6)], [[S0, S1]]),
        ("relu", F.relu, [(4, 6)], [[S0, S1]]),
        ("softmax", lambda x: F.softmax(x, axis=-1), [(4, 6)], [[S0, S1]]),
        ("sum axis 1", lambda x: oar.sum(x, axis=1), [(4, 6)], [[S0, S1]]),
        ("sum all", lambda x: oar.sum(x), [(5, 3)], [[S0, S1]]),
        ("mean axis 0", lambda x: oar.mean(x, axis=0), [(4, 6)], [[R, S1]]),
        ("transpose", lambda x: oar.transpose(x, [1, 0]), [(4, 6)], [[S0, S1]]),
        ("scale", lambda x: x * 3.0 + 1.0, [(5, 3)], [[S0, S1]]),
        ("matmul then add", lambda x, y: oar.matmul(x, y) + 1.0, [(4, 6), (6, 4)], [[S1], [S0]]),
        ("empty", oar.exp, [(0, 4)], [[S0, S1]]),
        # backward formulas that build shapes from saved tensors (global through dist_dims)
        ("reshape split", lambda x: oar.reshape(x, [2, 2, 6]), [(4, 6)], [[R, S0, S1]]),
        ("reshape flat", lambda x: oar.reshape(x, [24]), [(4, 6)], [[S0, S1]]),
        ("unsqueeze", lambda x: oar.unsqueeze(x, 0), [(4, 6)], [[S0, S1]]),
        ("mean all", lambda x: oar.mean(x), [(4, 6)], [[S0, S1]]),
        ("max axis", lambda x: oar.max(x, axis=1), [(4, 6)], [[S0, S1]]),
        ("layer_norm", lambda x: F.layer_norm(x, [6]), [(4, 6)], [[S0, S1]]),
        ("log_softmax", lambda x: F.log_softmax(x, axis=1), [(4, 6)], [[S0, S1]]),
        ("concat", lambda x, y: oar.concat([x, y], axis=0), [(4, 6), (2, 6)], [[S0, S1], [R, S1]]),
        ("where", lambda x, y: oar.where(x > 0, x, y), [(4, 6), (4, 6)], [[S0], [S1]]),
        ("gelu", F.gelu, [(5, 3)], [[S0, S1]]),
    ]
    rng = np.random.default_rng(7)
    n = 0
    for name, fn, shapes, choices in cases:
        for placements in itertools.product(*choices):
            arrays = [rng.standard_normal(s) for s in shapes]
            try:
                run_case(fn, arrays, [[p] for p in placements], mesh, rng)
            except Exception as e:
                raise AssertionError(f"{name} with {placements}: {e}") from e
            n += 1
    print(f"ops ok {rank} ({n} cases)")


class MLP(oar.nn.Layer):
    def __init__(self, d, h):
        super().__init__()
        self.fc1 = oar.nn.Linear(d, h)
        self.fc2 = oar.nn.Linear(h, d)

    def forward(self, x):
        return self.fc2(oar.nn.functional.relu(self.fc1(x)))


def train(model, steps, rng_seed, d):
    opt = oar.optimizer.SGD(learning_rate=0.1, parameters=model.parameters())
    rng = np.random.default_rng(rng_seed)
    losses = []
    for _ in range(steps):
        x = oar.to_tensor(rng.standard_normal((6, d)))
        y = oar.to_tensor(rng.standard_normal((6, d)))
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        opt.clear_grad()
        losses.append(float(dist.unshard_dtensor(loss).numpy()) if loss.is_dist() else float(loss.numpy()))
    return losses, opt


def test_mlp(rank):
    oar.set_default_dtype("float64")
    d, h = 8, 16
    oar.seed(3)
    ref = MLP(d, h)
    state = {k: v.numpy().copy() for k, v in ref.state_dict().items()}
    ref_losses, _ = train(ref, 20, 11, d)
    oar.seed(3)
    tp = MLP(d, h)
    tp.set_state_dict({k: oar.to_tensor(v) for k, v in state.items()})
    opt = oar.optimizer.SGD(learning_rate=0.1, parameters=tp.parameters())
    mesh = ProcessMesh([0, 1], dim_names=["mp"])
    plan = {"fc1": dist.ColWiseParallel(), "fc2": dist.RowWiseParallel()}
    tp, opt = dist.parallelize(tp, opt, mesh, {"mp_config": {"parallelize_plan": plan}})
    assert tp.fc1.weight.placements == [Shard(1)] and tp.fc2.weight.placements == [Shard(0)]
    assert tp.fc1.weight._local_value().shape == [d, h // 2] and list(tp.fc1.weight.shape) == [d, h]
    losses = []
    rng = np.random.default_rng(11)
    for _ in range(20):
        x = oar.to_tensor(rng.standard_normal((6, d)))
        y = oar.to_tensor(rng.standard_normal((6, d)))
        loss = ((tp(x) - y) ** 2).mean()
        loss.backward()
        assert tp.fc1.weight.grad.placements == [Shard(1)], tp.fc1.weight.grad.placements
        assert tp.fc2.weight.grad.placements == [Shard(0)], tp.fc2.weight.grad.placements
        opt.step()
        opt.clear_grad()
        losses.append(float(dist.unshard_dtensor(loss).numpy()))
    diff = max(abs(a - b) for a, b in zip(losses, ref_losses))
    assert diff <= 1e-10, f"tensor-parallel losses differ by {diff}: {losses} vs {ref_losses}"
    assert losses[-1] < losses[0]
    for k, v in tp.state_dict().items():
        np.testing.assert_allclose(dist.unshard_dtensor(v).numpy(), ref.state_dict()[k].numpy(), rtol=1e-10,
                                   atol=1e-12, err_msg=k)
    print(f"mlp ok {rank} max loss diff {diff:.3e}")


class Block(oar.nn.Layer):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = oar.nn.LayerNorm(d), oar.nn.LayerNorm(d)
        self.q, self.k, self.v = oar.nn.Linear(d, d), oar.nn.Linear(d, d), oar.nn.Linear(d, d)
        self.proj = oar.nn.Linear(d, d)
        self.fc1, self.fc2 = oar.nn.Linear(d, 4 * d), oar.nn.Linear(4 * d, d)

    def forward(self, x, mask):
        b, s, d = x.shape
        h = self.ln1(x)

        def heads(t):  # [b, s, d] -> [b, heads, s, d / heads]
            return oar.transpose(oar.reshape(t, [b, s, self.heads, d // self.heads]), [0, 2, 1, 3])
        q, k, v = heads(self.q(h)), heads(self.k(h)), heads(self.v(h))
        att = oar.matmul(q, k, transpose_y=True) * (1.0 / (d // self.heads) ** 0.5) + mask
        y = oar.matmul(oar.nn.functional.softmax(att, axis=-1), v)
        x = x + self.proj(oar.reshape(oar.transpose(y, [0, 2, 1, 3]), [b, s, d]))
        return x + self.fc2(oar.nn.functional.gelu(self.fc1(self.ln2(x))))


class GPT(oar.nn.Layer):
    """2 layers, d=64, 4 heads, vocabulary 32, sequences of 8."""

    def __init__(self, vocab=32, d=64, heads=4, layers=2, seq=8):
        super().__init__()
        self.tok = oar.nn.Embedding(vocab, d)
        self.pos = self.create_parameter([seq, d])
        self.blocks = oar.nn.LayerList([Block(d, heads) for _ in range(layers)])
        self.ln = oar.nn.LayerNorm(d)
        self.head = oar.nn.Linear(d, vocab)

    def forward(self, ids):
        s = ids.shape[1]
        mask = oar.to_tensor(np.triu(np.full((s, s), -1e9), 1).astype(oar.get_default_dtype()))
        x = self.tok(ids) + self.pos
        for blk in self.blocks:
            x = blk(x, mask)
        return self.head(self.ln(x))


def test_gpt(rank):
    oar.set_default_dtype("float64")

    def run(model, opt):
        rng = np.random.default_rng(5)
        losses = []
        for _ in range(20):
            ids = rng.integers(0, 32, size=(4, 9))
            x, y = oar.to_tensor(ids[:, :-1]), oar.to_tensor(ids[:, 1:])
            logits = model(x)
            loss = oar.nn.functional.cross_entropy(oar.reshape(logits, [-1, 32]), oar.reshape(y, [-1]))
            loss.backward()
            opt.step()
            opt.clear_grad()
            losses.append(float(dist.unshard_dtensor(loss).numpy()) if loss.is_dist() else float(loss.numpy()))
        return losses

    oar.seed(9)
    ref = GPT()
    state = {k: v.numpy().copy() for k, v in ref.state_dict().items()}
    ref_losses = run(ref, oar.optimizer.AdamW(learning_rate=1e-3, parameters=ref.parameters()))
    tp = GPT()
    tp.set_state_dict({k: oar.to_tensor(v) for k, v in state.items()})
    opt = oar.optimizer.AdamW(learning_rate=1e-3, parameters=tp.parameters())
    plan = {"blocks.*.q": dist.ColWiseParallel(), "blocks.*.k": dist.ColWiseParallel(),
            "blocks.*.v": dist.ColWiseParallel(), "blocks.*.proj": dist.RowWiseParallel(),
            "blocks.*.fc1": dist.ColWiseParallel(), "blocks.*.fc2": dist.RowWiseParallel()}
    mesh = ProcessMesh([0, 1], dim_names=["mp"])
    tp, opt = dist.parallelize(tp, opt, mesh, {"mp_config": {"parallelize_plan": plan}})
    assert tp.blocks[0].q.weight.placements == [Shard(1)] and tp.blocks[1].fc2.weight.placements == [Shard(0)]
    losses = run(tp, opt)
    diff = max(abs(a - b) for a, b in zip(losses, ref_losses))
    assert diff <= 1e-10, f"tensor-parallel GPT losses differ by {diff}: {losses} vs {ref_losses}"
    assert losses[-1] < losses[0]
    print(f"gpt ok {rank} max loss diff {diff:.3e}")


def expect_error(fn, *words):
    try:
        fn()
    except (ValueError, TypeError, RuntimeError, NotImplementedError) as e:
        msg = str(e)
        missing = [w for w in words if w not in msg]
        assert not missing, f"error {msg!r} lacks {missing}"
        return
    raise AssertionError(f"no error (expected one naming {words})")


def test_errors(rank):
    mesh = ProcessMesh([0, 1], dim_names=["x"])
    x = dist.shard_tensor(np.ones((4, 6)), mesh, [Shard(0)])
    expect_error(lambda: dist.reshard(x, mesh, [Shard(0), Replicate()]), "2", "1")
    expect_error(lambda: dist.reshard(x, mesh, [Shard(2)]), "Shard", "2")
    expect_error(lambda: dist.reshard(x, mesh, Shard(0)), "reshard", "placements")
    expect_error(lambda: dist.reshard(oar.ones([2]), mesh, [Replicate()]), "reshard", "dist tensor")
    other = ProcessMesh([1, 0], dim_names=["x"])
    # (a reshard to another mesh is a transfer, tested in workers/pipeline.py; an op mixing meshes is an error)
    y = dist.shard_tensor(np.ones((4, 6)), other, [Shard(0)])
    expect_error(lambda: x + y, "add", "mesh")
    expect_error(lambda: dist.shard_tensor(np.ones((4, 6)), mesh, [Shard(-3)]), "Shard")
    # a mesh without this rank: rank 1 skips the op (holds nothing), rank 0 computes it
    solo = ProcessMesh([0], dim_names=["x"])
    a = dist.shard_tensor(np.full((2, 3), 2.0), solo, [Replicate()])
    b = a * a + 1.0
    if rank == 0:
        np.testing.assert_array_equal(b.numpy(), np.full((2, 3), 5.0))
    else:
        assert b._local_value().numel() == 0
    dist.barrier()  # both ranks got here: nothing hung
    print(f"errors ok {rank}")


def main():
    modes = sys.argv[1:]
    if modes[:1] == ["sample"]:
        oar.device.load_plugin(os.environ["OAR_SAMPLE_DEVICE_LIB"])
        oar.set_device("sample:0")
        modes = modes[1:]
    dist.init_parallel_env()
    rank = dist.get_rank()
    for mode in modes:
        {"reshard": test_reshard, "reshard2d": test_reshard_2d, "ops": test_ops, "mlp": test_mlp, "gpt": test_gpt,
         "errors": test_errors}[mode](rank)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
