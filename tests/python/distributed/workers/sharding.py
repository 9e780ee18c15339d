"""ShardingStage1/2/3 (shard_optimizer) as each rank of a 2-process data-parallel job
(test_sharding.py): the small GPT of auto_parallel.py (2 layers, d=64) trained 20 steps with
AdamW on a batch split over the `dp` axis reproduces one process training on the whole batch
(float64 losses and parameters to 1e-10), with the states (and for stage 2 the gradients,
for stage 3 the parameters) split over the axis."""
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


def main(stage_name):
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
    print(f"stage{stage_name} ok {rank} max loss diff {diff:.3e}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1])
