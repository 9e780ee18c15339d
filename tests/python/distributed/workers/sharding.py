"""ShardingStage1/2/3 (shard_optimizer) as each rank of a 2-process data-parallel job
(test_sharding.py): the small GPT of auto_parallel.py (2 layers, d=64) trained 20 steps with
AdamW on a batch split over the `dp` axis reproduces one process training on the whole batch
(float64 losses and parameters to 1e-10), with the states (and for stage 2 the gradients,
for stage 3 the parameters) split over the axis."""
import re
import sys

import numpy as np
from auto_parallel import GPT

import oar
import oar.distributed as dist
from oar.distributed import ProcessMesh, Replicate, Shard


def run(model, opt, mesh=None, check=None):
    rng = np.random.default_rng(5)
    losses = []
    for step in range(20):
        ids = rng.integers(0, 32, size=(4, 9))
        x, y = oar.to_tensor(ids[:, :-1]), oar.to_tensor(ids[:, 1:])
        if mesh is not None:  # data parallel: each rank holds half of the batch
            x, y = dist.shard_tensor(x, mesh, [Shard(0)]), dist.shard_tensor(y, mesh, [Shard(0)])
        logits = model(x)
        loss = oar.nn.functional.cross_entropy(oar.reshape(logits, [-1, 32]), oar.reshape(y, [-1]),
                                               reduction="none").mean()
        loss.backward()
        if check is not None and step == 0:
            check("after backward")
        opt.step()
        if check is not None and step == 0:
            check("after step")
        opt.clear_grad()
        losses.append(float(dist.unshard_dtensor(loss).numpy()) if loss.is_dist() else float(loss.numpy()))
    return losses


def loss_fn(logits, y):
    return oar.nn.functional.cross_entropy(oar.reshape(logits, [-1, 32]), oar.reshape(y, [-1]), reduction="none").mean()


def run_static(model, opt, mesh, batches=None):
    """run()'s 20 steps through dist.to_static: compiled (an eager fallback's warning fails)."""
    import warnings
    dm = dist.to_static(model, None, loss_fn, opt)
    if batches is None:
        rng = np.random.default_rng(5)
        batches = []
        for _ in range(20):
            ids = rng.integers(0, 32, size=(4, 9))
            x, y = oar.to_tensor(ids[:, :-1]), oar.to_tensor(ids[:, 1:])
            batches.append((dist.shard_tensor(x, mesh, [Shard(0)]), dist.shard_tensor(y, mesh, [Shard(0)])))
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="DistModel")
        losses = [float(dist.unshard_dtensor(dm(x, y)).numpy()) for x, y in batches]
    text = str(dm.dist_main_program())
    ops = re.findall(r'"([a-z_]+\.[a-z_0-9]+)"\(', text)
    assert "dist.all_reduce" in ops
    # the update in the program; stages 1 and 2 update each parameter's slice, then all-gather it
    # and write it back
    assert ops.count("dist.adamw_update") == 1, sorted(set(ops))
    if getattr(opt, "_plan", None):
        assert "dist.all_gather" in ops[ops.index("dist.adamw_update"):], "the updated slices are gathered"
    return losses


class Tokens(oar.io.Dataset):
    def __init__(self, n=80):  # 20 global batches of 4
        self.ids = np.random.default_rng(5).integers(0, 32, size=(n, 9))

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return self.ids[i, :-1], self.ids[i, 1:]


def hybrid():
    """2x2 dp x mp on 4 processes: tensor-parallel blocks (parallelize's mp_config), ZeRO
    stage 1 over dp (dp_config), batches from shard_dataloader split over dp; equal to one
    process training on the same global batches."""
    dist.init_parallel_env()
    rank = dist.get_rank()
    oar.set_default_dtype("float64")
    data = Tokens()

    def step(model, opt, x, y):
        logits = model(x)
        loss = oar.nn.functional.cross_entropy(oar.reshape(logits, [-1, 32]), oar.reshape(y, [-1]),
                                               reduction="none").mean()
        loss.backward()
        opt.step()
        opt.clear_grad()
        return float(dist.unshard_dtensor(loss).numpy()) if loss.is_dist() else float(loss.numpy())

    oar.seed(9)
    ref = GPT()
    state = {k: v.numpy().copy() for k, v in ref.state_dict().items()}
    ref_opt = oar.optimizer.AdamW(learning_rate=1e-3, parameters=ref.parameters())
    # the global batches shard_dataloader makes: dp rank 0's part, then dp rank 1's
    halves = [oar.io.DistributedBatchSampler(data, 2, num_replicas=2, rank=r) for r in range(2)]
    ref_losses = []
    for b0, b1 in zip(*halves):
        ids = data.ids[b0 + b1]
        ref_losses.append(step(ref, ref_opt, oar.to_tensor(ids[:, :-1]), oar.to_tensor(ids[:, 1:])))

    model = GPT()
    model.set_state_dict({k: oar.to_tensor(v) for k, v in state.items()})
    mesh = ProcessMesh([[0, 1], [2, 3]], dim_names=["dp", "mp"])
    plan = {"blocks.*.q": dist.ColWiseParallel(), "blocks.*.k": dist.ColWiseParallel(),
            "blocks.*.v": dist.ColWiseParallel(), "blocks.*.proj": dist.RowWiseParallel(),
            "blocks.*.fc1": dist.ColWiseParallel(), "blocks.*.fc2": dist.RowWiseParallel()}
    opt = oar.optimizer.AdamW(learning_rate=1e-3, parameters=model.parameters())
    model, opt = dist.parallelize(model, opt, mesh, {"mp_config": {"parallelize_plan": plan},
                                                     "dp_config": {"sharding_level": 1}})
    loader = dist.shard_dataloader(oar.io.DataLoader(data, batch_size=4), mesh, shard_dims="dp")
    assert len(loader) == len(ref_losses)
    losses = []
    for x, y in loader:
        assert x.placements == [Shard(0), Replicate()] and list(x.shape) == [4, 8], (x.placements, x.shape)
        assert x._local_value().shape == [2, 8]
        losses.append(step(model, opt, x, y))
    w = model.blocks[0].fc1.weight  # [64, 256]: mp splits dim 1, stage 1 splits dim 0 over dp for the states
    assert w.placements == [Replicate(), Shard(1)], w.placements
    assert list(opt._accumulators["moment1"][id(w)].shape) == [32, 128]
    diff = max(abs(a - b) for a, b in zip(losses, ref_losses))
    assert diff <= 1e-10, f"dp x mp losses differ by {diff}: {losses} vs {ref_losses}"
    # static mode: the same layout through dist.to_static, compiled
    model = GPT()
    model.set_state_dict({k: oar.to_tensor(v) for k, v in state.items()})
    opt = oar.optimizer.AdamW(learning_rate=1e-3, parameters=model.parameters())
    model, opt = dist.parallelize(model, opt, mesh, {"mp_config": {"parallelize_plan": plan},
                                                     "dp_config": {"sharding_level": 1}})
    static = run_static(model, opt, mesh, list(loader))
    d_static = max(abs(a - b) for a, b in zip(static, losses))
    assert d_static <= 1e-10, f"dp x mp: static losses differ from dynamic by {d_static}"
    print(f"hybrid ok {rank} max loss diff {diff:.3e}", flush=True)
    dist.destroy_process_group()


def main(stage_name):
    if stage_name == "hybrid":
        return hybrid()
    dist.init_parallel_env()
    rank = dist.get_rank()
    oar.set_default_dtype("float64")
    oar.seed(9)
    ref = GPT()
    state = {k: v.numpy().copy() for k, v in ref.state_dict().items()}
    ref_losses = run(ref, oar.optimizer.AdamW(learning_rate=1e-3, parameters=ref.parameters()))

    model = GPT()
    model.set_state_dict({k: oar.to_tensor(v) for k, v in state.items()})
    mesh = ProcessMesh([0, 1], dim_names=["dp"])
    stage = {"1": dist.ShardingStage1, "2": dist.ShardingStage2, "3": dist.ShardingStage3}[stage_name]("dp", mesh)
    opt = dist.shard_optimizer(oar.optimizer.AdamW(learning_rate=1e-3, parameters=model.parameters()), stage)
    w = model.blocks[0].fc1.weight  # [64, 256]

    def check(when):
        if stage_name == "3":
            assert w.placements == [Shard(0)] and w._local_value().shape == [32, 256], (when, w.placements)
        else:
            assert w.placements == [Replicate()] and w._local_value().shape == [64, 256], (when, w.placements)
        if when == "after backward":
            want = [Replicate()] if stage_name == "1" else [Shard(0)]
            assert w.grad.placements == want, (stage_name, w.grad.placements)
        else:
            m = opt._accumulators["moment1"][id(w)]
            assert list(m.shape) == [32, 256], f"stage {stage_name}: moment1 of fc1.weight is {m.shape}"

    losses = run(model, opt, mesh, check)
    diff = max(abs(a - b) for a, b in zip(losses, ref_losses))
    assert diff <= 1e-10, f"stage {stage_name} losses differ by {diff}: {losses} vs {ref_losses}"
    assert losses[-1] < losses[0]
    for k, v in model.state_dict().items():  # (k's bias has a zero gradient: only rounding noise moves it)
        np.testing.assert_allclose(dist.unshard_dtensor(v).numpy(), ref.state_dict()[k].numpy(), rtol=1e-10,
                                   atol=1e-10, err_msg=k)
    # static mode: the same through dist.to_static (each step one compiled program), equal to
    # dynamic mode and one process
    model = GPT()
    model.set_state_dict({k: oar.to_tensor(v) for k, v in state.items()})
    stage = {"1": dist.ShardingStage1, "2": dist.ShardingStage2, "3": dist.ShardingStage3}[stage_name]("dp", mesh)
    opt = dist.shard_optimizer(oar.optimizer.AdamW(learning_rate=1e-3, parameters=model.parameters()), stage)
    static = run_static(model, opt, mesh)
    d_static = max(abs(a - b) for a, b in zip(static, losses))
    assert d_static <= 1e-10, f"stage {stage_name}: static losses differ from dynamic by {d_static}"
    for k, v in model.state_dict().items():
        np.testing.assert_allclose(dist.unshard_dtensor(v).numpy(), ref.state_dict()[k].numpy(), rtol=1e-10,
                                   atol=1e-10, err_msg=k)
    print(f"stage{stage_name} ok {rank} max loss diff {diff:.3e}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1])
