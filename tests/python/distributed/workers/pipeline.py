"""Cross-mesh reshard and pipeline stages on sub-meshes, as each rank of a job
(test_pipeline.py): `cross` moves tensors between disjoint, overlapping and differently
shaped meshes (forward and gradient) against NumPy; `pp` trains the small GPT as 2 pipeline
stages (parallelize's pp_config) against one process."""
import sys

import numpy as np

import oar
import oar.distributed as dist
from oar.distributed import Partial, ProcessMesh, Replicate, Shard


def whole(t):
    """The global value of dist tensor t on every rank (gathered over its mesh, then shared)."""
    mine = dist.unshard_dtensor(t).numpy() if dist.get_rank() in t.process_mesh.process_ids else None
    out = []
    dist.all_gather_object(out, mine)
    return next(v for v in out if v is not None)


def cross(rank):
    world = dist.get_world_size()
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 6))
    w = rng.standard_normal((4, 6))
    if world == 2:
        cases = [(ProcessMesh([0]), [Replicate()], ProcessMesh([1]), [Replicate()]),
                 (ProcessMesh([0, 1]), [Shard(0)], ProcessMesh([1, 0]), [Shard(1)]),
                 (ProcessMesh([1]), [Replicate()], ProcessMesh([0, 1]), [Partial()]),
                 (ProcessMesh([0, 1]), [Partial()], ProcessMesh([1]), [Replicate()])]
    else:
        cases = [(ProcessMesh([[0, 1]], dim_names=["a", "b"]), [Replicate(), Shard(1)],
                  ProcessMesh([2, 3]), [Shard(0)]),
                 (ProcessMesh([0, 1]), [Shard(1)], ProcessMesh([[0, 1], [2, 3]], dim_names=["a", "b"]),
                  [Shard(0), Shard(1)]),
                 (ProcessMesh([[0, 1], [2, 3]], dim_names=["a", "b"]), [Partial(), Shard(0)],
                  ProcessMesh([3]), [Replicate()])]
    for i, (ma, pa, mb, pb) in enumerate(cases):
        a = dist.shard_tensor(x, ma, pa, stop_gradient=False)
        b = dist.reshard(a, mb, pb)
        assert b.process_mesh == mb and b.placements == pb, (i, b.process_mesh, b.placements)
        assert list(b.shape) == [4, 6]
        np.testing.assert_allclose(whole(b), x, rtol=1e-12, err_msg=f"case {i}")
        # the gradient of sum(b * w) goes back to a's mesh and layout: the ranks of b's mesh
        # compute it; the others only take part in the transfer back (as a pipeline stage
        # that sent b would: b.backward(the gradient the next stage sends))
        if rank in mb.process_ids:
            (b * dist.shard_tensor(w, mb, [Replicate()] * mb.ndim)).sum().backward()
        else:
            b.backward(oar.zeros([0, 0], dtype="float64"))
        assert a.grad.process_mesh == ma, (i, a.grad.process_mesh)
        np.testing.assert_allclose(whole(a.grad), w, rtol=1e-12, err_msg=f"case {i} gradient")
    print(f"cross ok {rank}", flush=True)


class Stage0(oar.nn.Layer):
    def __init__(self, gpt):
        super().__init__()
        self.tok, self.pos, self.block = gpt.tok, gpt.pos, gpt.blocks[0]

    def forward(self, ids):
        return self.block(self.tok(ids) + self.pos, causal_mask(ids.shape[1]))


class Stage1(oar.nn.Layer):
    def __init__(self, gpt):
        super().__init__()
        self.block, self.ln, self.head = gpt.blocks[1], gpt.ln, gpt.head

    def forward(self, x):
        return self.head(self.ln(self.block(x, causal_mask(x.shape[1]))))


def causal_mask(s):
    return oar.to_tensor(np.triu(np.full((s, s), -1e9), 1))


def pp(rank, schedule_name):
    """The small GPT as 2 pipeline stages (embedding + block 0 | block 1 + head), 4
    micro-batches of 2, 20 AdamW steps: equal to one process on the whole batch."""
    from auto_parallel import GPT
    from oar.distributed.auto_parallel.pipelining import PipelineStage, Schedule1F1B, ScheduleFThenB
    oar.seed(9)
    ref = GPT()
    state = {k: v.numpy().copy() for k, v in ref.state_dict().items()}
    ref_opt = oar.optimizer.AdamW(learning_rate=1e-3, parameters=ref.parameters())
    n_micro = 4

    def loss_fn(logits, y):  # the whole batch's mean over micro-batches of equal size
        return oar.nn.functional.cross_entropy(oar.reshape(logits, [-1, 32]), oar.reshape(y, [-1])) / n_micro

    gpt = GPT()
    gpt.set_state_dict({k: oar.to_tensor(v) for k, v in state.items()})
    part = [Stage0, Stage1][rank](gpt)
    opt = oar.optimizer.AdamW(learning_rate=1e-3, parameters=part.parameters())
    stage = PipelineStage(part, rank, 2)
    sched = {"FThenB": ScheduleFThenB, "1F1B": Schedule1F1B}[schedule_name](stage, n_micro, loss_fn)
    rng = np.random.default_rng(5)
    diffs = []
    for _ in range(20):
        ids = rng.integers(0, 32, size=(8, 9))
        x, y = oar.to_tensor(ids[:, :-1]), oar.to_tensor(ids[:, 1:])
        ref_loss = oar.nn.functional.cross_entropy(oar.reshape(ref(x), [-1, 32]), oar.reshape(y, [-1]))
        ref_loss.backward()
        ref_opt.step()
        ref_opt.clear_grad()
        losses = []
        sched.step(*([x] if rank == 0 else []), target=y if rank == 1 else None, losses=losses)
        opt.step()
        opt.clear_grad()
        if rank == 1:
            assert len(losses) == n_micro
            diffs.append(abs(float(oar.add_n(losses).numpy()) - float(ref_loss.numpy())))
    if rank == 1:
        assert max(diffs) <= 1e-10, f"{schedule_name}: pipeline losses differ by {max(diffs)}"
    mine = dict(part.named_parameters())
    names = {id(p): n for n, p in gpt.named_parameters()}
    ref_params = dict(ref.named_parameters())
    for p in mine.values():
        np.testing.assert_allclose(p.numpy(), ref_params[names[id(p)]].numpy(), rtol=1e-10, atol=1e-10,
                                   err_msg=names[id(p)])
    print(f"pp {schedule_name} ok {rank}", flush=True)


def main():
    dist.init_parallel_env()
    oar.set_default_dtype("float64")
    rank = dist.get_rank()
    if sys.argv[1] == "pp":
        pp(rank, sys.argv[2])
    else:
        {"cross": cross}[sys.argv[1]](rank)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
