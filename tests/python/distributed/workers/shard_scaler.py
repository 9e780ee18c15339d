"""shard_scaler on 2 ranks (test_shard_scaler.py): on steps 2 and 4 rank 1's gradient is
infinite, rank 0's finite. argv[1]: `dense` (plain parameters), `dist` (parameters replicated
on a 1-d mesh, the inf coming from rank 1's local value) or `control` (a plain GradScaler:
the ranks must disagree, showing the check can fail). Prints each step's skip flag and scale
and checks the parameters against one process where every rank skipped steps 2 and 4."""
import sys

import numpy as np

import oar
import oar.distributed as dist
from oar.distributed import ProcessMesh, Replicate

BAD = (2, 4)


def make():
    oar.seed(7)
    layer = oar.nn.Linear(6, 4)
    layer.to(dtype="float64")
    opt = oar.optimizer.SGD(learning_rate=0.1, parameters=layer.parameters())
    scaler = oar.amp.GradScaler(init_loss_scaling=1024.0, incr_every_n_steps=2,
                                decr_every_n_nan_or_inf=1)
    return layer, opt, scaler


def run(mode, rank, mesh):
    layer, opt, scaler = make()
    if mode == "dist":
        for p in layer.parameters():
            dist.shard_tensor(p, mesh, [Replicate()])
    if mode != "control" and rank >= 0:
        scaler = dist.shard_scaler(scaler)
    x = np.random.default_rng(0).standard_normal((5, 6))
    log = []
    for step in range(6):
        bad = step in BAD and rank in (1, -1)  # -1: the one-process reference, inf as rank 1
        factor = np.array([np.inf if bad else 1.0])
        xt = oar.to_tensor(x)
        c = oar.to_tensor(factor)
        if mode == "dist":
            xt = dist.shard_tensor(xt, mesh, [Replicate()])
            c = dist.dtensor_from_local(c, mesh, [Replicate()])  # rank 1's local value differs
        loss = (layer(xt) * c).mean()
        scaler.scale(loss).backward()
        scaler.step(opt)
        log.append((bool(scaler._found_inf or scaler._cache_found_inf), float(scaler.get_loss_scaling().numpy().ravel()[0])))
        scaler.update()
        opt.clear_grad()
    params = [(p._local_value() if p.is_dist() else p).numpy() for p in layer.parameters()]
    return log, params


def amp_o2(rank):
    # Paddle's documented use: O2-decorated model, AdamW under shard_optimizer, auto_cast;
    # rank 1's loss is infinite at step 2. Both ranks skip it and end with equal parameters.
    oar.seed(11)
    layer = oar.nn.Sequential(oar.nn.Linear(8, 8), oar.nn.Linear(8, 8))
    opt = oar.optimizer.AdamW(parameters=layer.parameters())
    layer, opt = oar.amp.decorate(layer, opt, level="O2")
    scaler = dist.shard_scaler(oar.amp.GradScaler(init_loss_scaling=1024))
    opt = dist.shard_optimizer(opt)
    batch = oar.to_tensor(np.random.default_rng(1).random((8, 8)).astype("float32"))
    flags = []
    for step in range(4):
        with oar.amp.auto_cast(True):
            out = layer(batch)
        loss = out.astype("float32").mean() * (np.inf if step == 2 and rank == 1 else 1.0)
        scaler.scale(loss).backward()
        scaler.step(opt)
        flags.append(bool(scaler._found_inf or scaler._cache_found_inf))
        scaler.update()
        opt.clear_grad()
    params = [(p._local_value() if p.is_dist() else p).astype("float32").numpy()
              for p in layer.parameters()]
    logs, all_params = [], []
    dist.all_gather_object(logs, flags)
    dist.all_gather_object(all_params, params)
    assert logs == [[False, False, True, False]] * 2, logs
    for a, b in zip(*all_params):
        np.testing.assert_array_equal(a, b)
    print("SCALER OK", flush=True)


def main():
    mode = sys.argv[1]
    dist.init_parallel_env()
    if mode == "amp_o2":
        return amp_o2(dist.get_rank())
    rank = dist.get_rank()
    mesh = ProcessMesh([0, 1], dim_names=["x"])
    log, params = run(mode, rank, mesh)
    print(f"LOG {log}", flush=True)
    logs, all_params = [], []
    dist.all_gather_object(logs, log)
    dist.all_gather_object(all_params, params)
    if mode == "control":
        assert logs[0] != logs[1], logs  # a plain scaler: rank 1 skips alone
        print("CONTROL DIVERGED", flush=True)
        return
    assert logs[0] == logs[1], logs
    assert [s for s, _ in log] == [i in BAD for i in range(6)], log
    ref_log, ref = run(mode if mode != "dist" else "dense", -1, None)
    assert [s for s, _ in ref_log] == [s for s, _ in log] and \
        [float(v) for _, v in ref_log] == [float(v) for _, v in log], (ref_log, log)
    for r in range(2):
        for got, want in zip(all_params[r], ref):
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    print("SCALER OK", flush=True)


if __name__ == "__main__":
    main()
