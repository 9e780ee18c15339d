"""DistModel's step: compiled program vs eager dist layer, same run, interleaved rounds.

    python -m oar.distributed.launch --nproc_per_node 2 --log_dir /tmp/dmlog bench/dist_model_step.py [dp|mp]
    python -m oar.distributed.launch --nproc_per_node 2 --log_dir /tmp/dmlog bench/dist_model_step.py pp [FThenB|1F1B] [micro]

pp: the GPT cut after blocks.0 (parallelize's pp_config, pp=2), Strategy.pipeline with `micro`
micro-batches (default 4) in the schedule's order (default 1F1B).

Each rank trains two copies of the small GPT (2 layers, d=64, float64 as in the tests, batch 8 x 8)
through dist.to_static: one compiled through the global program and the static passes (Note
[DistModel]), one with OAR_DIST_MODEL_EAGER semantics (every step eager through the dist layer).
(Until stop 33 a third copy ran the trace-time partitioning, since deleted.)
Rounds alternate (20 steps each, after 3 warm-up steps that include the compiled models' trace);
rank 0 prints the first call's time (trace and compile) and the median step times."""
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "python", "distributed", "workers"))
from auto_parallel import GPT  # noqa: E402

import oar  # noqa: E402
import oar.distributed as dist  # noqa: E402
from oar.distributed import ProcessMesh, Shard  # noqa: E402

PLAN = {"blocks.*.q": dist.ColWiseParallel(), "blocks.*.k": dist.ColWiseParallel(),
        "blocks.*.v": dist.ColWiseParallel(), "blocks.*.proj": dist.RowWiseParallel(),
        "blocks.*.fc1": dist.ColWiseParallel(), "blocks.*.fc2": dist.RowWiseParallel()}


def loss_fn(logits, y):
    return oar.nn.functional.cross_entropy(oar.reshape(logits, [-1, 32]), oar.reshape(y, [-1]))


def model(mode, mesh, compiled, schedule="1F1B", micro=4):
    oar.seed(9)
    m = GPT()
    opt = oar.optimizer.AdamW(learning_rate=1e-3, parameters=m.parameters())
    config = {"mp_config": {"parallelize_plan": PLAN}} if mode == "mp" else {"dp_config": {"sharding_level": 0}}
    strategy = None
    if mode == "pp":
        config = {"pp_config": {"split_spec": "blocks"}}
        strategy = dist.Strategy({"pipeline": {"enable": True, "schedule_mode": schedule, "accumulate_steps": micro}})
    m, opt = dist.parallelize(m, opt, mesh, config)
    dm = dist.to_static(m, None, loss_fn, opt, strategy=strategy)
    dm._compile = compiled
    return dm


def main(mode, schedule="1F1B", micro=4):
    dist.init_parallel_env()
    oar.set_default_dtype("float64")
    mesh = ProcessMesh([0, 1], dim_names=[mode])
    rng = np.random.default_rng(0)
    ids = rng.integers(0, 32, size=(8, 9))
    x, y = oar.to_tensor(ids[:, :-1]), oar.to_tensor(ids[:, 1:])
    if mode == "dp":
        x, y = dist.shard_tensor(x, mesh, [Shard(0)]), dist.shard_tensor(y, mesh, [Shard(0)])
    kw = dict(schedule=schedule, micro=micro)
    models = {"passes": model(mode, mesh, True, **kw), "eager": model(mode, mesh, False, **kw)}
    times = {k: [] for k in models}
    first = {}
    for name, dm in models.items():
        dist.barrier()
        t0 = time.perf_counter()
        dm(x, y)
        first[name] = time.perf_counter() - t0
        for _ in range(2):
            dm(x, y)
    for _ in range(3):
        for name, dm in models.items():
            for _ in range(20):
                dist.barrier()
                t0 = time.perf_counter()
                dm(x, y)
                times[name].append(time.perf_counter() - t0)
    if dist.get_rank() == 0:
        med = {k: statistics.median(v) * 1e3 for k, v in times.items()}
        label = f"{mode} {schedule} x{micro}" if mode == "pp" else mode
        print(f"{label}: " + ", ".join(f"{k} {med[k]:.2f} ms/step (first call {first[k] * 1e3:.0f} ms)" for k in med)
              + f"; eager/passes {med['eager'] / med['passes']:.2f}x", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "dp", *(sys.argv[2:3]), *(int(a) for a in sys.argv[3:4]))
