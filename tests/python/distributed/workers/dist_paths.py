"""DistModel's compiled step against its eager step, as each rank of a job (test_dist_global.py):
the global program made this rank's by the static passes against every step run eagerly
through the dist layer (`dm._compile = False`, OAR_DIST_MODEL_EAGER's way). The small GPT (2
layers, d=64) trained 20 AdamW steps each way gives the same losses: float64 within 1e-10,
float32 within 1e-4 relative. Layouts: `dp`, `mp` (parallelize's column/row plan), `sharding`
(ShardingStage2 over dp) on 2 processes, `hybrid` (2x2 dp x mp with ShardingStage1 over dp) on
4. (Until stop 33 this compared the passes with the trace-time partitioning, since deleted.)"""
import sys
import warnings

import numpy as np
from auto_parallel import GPT

import oar
import oar.distributed as dist
from oar.distributed import ProcessMesh, Replicate, Shard
from oar.distributed.auto_parallel.static_global import CompiledGlobal
from static_mode import PLAN, loss_fn


def laid_out(mode, state):
    model = GPT()
    model.set_state_dict({k: oar.to_tensor(v.astype(oar.get_default_dtype())) for k, v in state.items()})
    opt = oar.optimizer.AdamW(learning_rate=1e-3, parameters=model.parameters())
    if mode == "hybrid":
        mesh = ProcessMesh([[0, 1], [2, 3]], dim_names=["dp", "mp"])
        model, opt = dist.parallelize(model, opt, mesh, {"mp_config": {"parallelize_plan": PLAN},
                                                         "dp_config": {"sharding_level": 1}})
        return model, opt, mesh, [Shard(0), Replicate()]
    mesh = ProcessMesh([0, 1], dim_names=["mp" if mode == "mp" else "dp"])
    if mode == "mp":
        model, opt = dist.parallelize(model, opt, mesh, {"mp_config": {"parallelize_plan": PLAN}})
        return model, opt, mesh, None
    level = 2 if mode == "sharding" else 0
    model, opt = dist.parallelize(model, opt, mesh, {"dp_config": {"sharding_level": level}})
    return model, opt, mesh, [Shard(0)]


def train(mode, state, data, compiled):
    model, opt, mesh, split = laid_out(mode, state)
    dm = dist.to_static(model, None, loss_fn, opt)
    dm._compile = compiled
    losses = []
    for ids in data:
        x, y = oar.to_tensor(ids[:, :-1]), oar.to_tensor(ids[:, 1:])
        if split is not None:
            x, y = dist.shard_tensor(x, mesh, split), dist.shard_tensor(y, mesh, split)
        losses.append(float(dist.unshard_dtensor(dm(x, y)).numpy()))
    entry = dm._last.get("train")
    assert isinstance(entry, CompiledGlobal) if compiled else entry is None, type(entry)
    return np.array(losses)


def main(mode):
    warnings.filterwarnings("error", message="DistModel")  # an eager fallback fails the test
    dist.init_parallel_env()
    rank = dist.get_rank()
    oar.set_default_dtype("float64")
    oar.seed(9)
    state = {k: v.numpy().copy() for k, v in GPT().state_dict().items()}
    rng = np.random.default_rng(5)
    data = [rng.integers(0, 32, size=(4, 9)) for _ in range(20)]
    report = []
    for dtype, tol in (("float64", 1e-10), ("float32", 1e-4)):
        oar.set_default_dtype(dtype)
        new, old = train(mode, state, data, True), train(mode, state, data, False)
        diff = np.abs(new - old) if dtype == "float64" else np.abs(new - old) / np.abs(old)
        assert diff.max() <= tol, f"{mode} {dtype}: the compiled losses differ from the eager ones by " \
                                  f"{diff.max()}: {new} vs {old}"
        assert new[-1] < new[0], new
        report.append(f"{dtype} {diff.max():.2e}")
    print(f"paths {mode} ok {rank} " + ", ".join(report), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1])
