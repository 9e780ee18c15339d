"""Distributed benchmarks, Oar (oar.distributed) against torch.distributed (gloo), 2
processes with 1 thread each on loopback, in one run:

  - all-reduce (float32, SUM) bandwidth from 1 KiB to 64 MiB;
  - a DataParallel training step of an MLP (SGD) and of a small GPT (2 layers, d=64,
    4 heads, causal, L=32, batch 8 per rank, AdamW) against torch DDP;
  - Oar's DataParallel step with bucketing overlapping backward and without (one bucket,
    issued after backward).

    python3 bench/bench_dist.py            # oar and, when bench/.venv has it, torch
    python3 bench/bench_dist.py --only allreduce --rounds 5
    bash bench/run.sh dist                 # sets up bench/.venv (torch) first

The all-reduce sweep runs both frameworks in the same 2 processes (bench/.venv's python,
which imports oar from this checkout as well as torch): each rank holds an Oar group and a
torch group, and for every size the repeats alternate oar, torch, torch, oar, ..., so load
that drifts during a job lands on both alike. Each repeat is `inner` calls ending in a
barrier, so both ranks measure the same span; a job reports the median repeat. The table
gives the median over the --rounds jobs and, per size, the spread of the per-job ratios
(min-max). The training steps run one framework per job (alternating over rounds).
Rank 0 prints one JSON line per job; the driver prints the table and writes
bench/results/dist.json.
"""
import argparse
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
SIZES = [1 << k for k in range(10, 27, 2)]  # 1 KiB .. 64 MiB
if os.environ.get("BENCH_DIST_SIZES"):  # --sizes, inherited by the workers
    SIZES = [int(k) << 10 for k in os.environ["BENCH_DIST_SIZES"].split(",")]
MLP = (512, 1024, 1024, 10)
BATCH = 64
GPT = dict(vocab=256, d=64, heads=4, ff=256, layers=2, seq=32, batch=8)


def _span(fn, barrier, inner):
    """Seconds per call of `inner` calls of fn(), ending in a barrier (both ranks measure the
    same span)."""
    t0 = time.perf_counter()
    for _ in range(inner):
        fn()
    barrier()
    return (time.perf_counter() - t0) / inner


def _median_time(fn, barrier, repeat, inner):
    for _ in range(2):
        fn()
    barrier()
    return statistics.median(_span(fn, barrier, inner) for _ in range(repeat))


def _inner(nbytes):
    return max(1, min(200, (8 << 20) // max(nbytes, 1)))


def run_pair(repeat):
    """The all-reduce sweep with both frameworks in this process, repeats interleaved."""
    import oar
    import oar.distributed as dist
    import torch
    import torch.distributed as tdist
    oar.set_num_threads(1)
    torch.set_num_threads(1)
    dist.init_parallel_env()
    tdist.init_process_group("gloo")
    out = {"oar": {}, "torch": {}}
    for nbytes in SIZES:
        o, t = oar.ones([nbytes // 4], dtype="float32"), torch.ones(nbytes // 4)
        calls = {"oar": (lambda: dist.all_reduce(o), dist.barrier),
                 "torch": (lambda: tdist.all_reduce(t), tdist.barrier)}
        inner = _inner(nbytes)
        times = {fw: [] for fw in calls}
        for fw, (fn, barrier) in calls.items():  # warm-up: connections, buffers, caches
            _span(fn, barrier, 3)
        for r in range(repeat):
            for fw in (("oar", "torch") if r % 2 == 0 else ("torch", "oar")):
                fn, barrier = calls[fw]
                barrier()
                times[fw].append(_span(fn, barrier, inner))
        for fw in calls:
            out[fw][f"allreduce_{nbytes}"] = statistics.median(times[fw])
            out[fw][f"allreduce_{nbytes}_repeats"] = times[fw]
    return out


def run_oar(repeat):
    import numpy as np
    import oar
    import oar.distributed as dist
    oar.set_num_threads(1)
    dist.init_parallel_env()
    out = {}
    if os.environ.get("BENCH_DIST_ONLY") != "steps" and os.environ.get("BENCH_DIST_NO_TORCH"):
        for nbytes in SIZES:  # no torch to pair with: Oar's sweep alone
            t = oar.ones([nbytes // 4], dtype="float32")
            out[f"allreduce_{nbytes}"] = _median_time(lambda: dist.all_reduce(t), dist.barrier, repeat,
                                                     _inner(nbytes))
    if os.environ.get("BENCH_DIST_ONLY") == "allreduce":
        return out
    rng = np.random.default_rng(dist.get_rank())
    x = oar.to_tensor(rng.standard_normal((BATCH, MLP[0])).astype("float32"))
    y = oar.to_tensor(rng.integers(0, MLP[-1], (BATCH,)).astype("int64"))

    def make(overlap):
        layers = []
        for i in range(len(MLP) - 1):
            layers.append(oar.nn.Linear(MLP[i], MLP[i + 1]))
            if i < len(MLP) - 2:
                layers.append(oar.nn.ReLU())
        net = oar.nn.Sequential(*layers)
        size = 25 if overlap else 1 << 20  # one bucket: issued only after the whole backward
        dp = oar.DataParallel(net, comm_buffer_size=size, last_comm_buffer_size=1 if overlap else size)
        opt = oar.optimizer.SGD(learning_rate=0.01, parameters=dp.parameters())

        def step():
            loss = oar.nn.functional.cross_entropy(dp(x), y)
            loss.backward()
            opt.step()
            opt.clear_grad()
        return step
    out["dp_step"] = _median_time(make(True), dist.barrier, repeat, 5)
    out["dp_step_no_overlap"] = _median_time(make(False), dist.barrier, repeat, 5)
    out["gpt_dp_step"] = _median_time(_oar_gpt_step(oar, rng), dist.barrier, repeat, 5)
    return out


def _oar_gpt_step(oar, rng):
    import numpy as np
    nn, g = oar.nn, GPT

    class TinyGPT(nn.Layer):
        def __init__(self):
            super().__init__()
            self.tok = nn.Embedding(g["vocab"], g["d"])
            self.pos = nn.Embedding(g["seq"], g["d"])
            layer = nn.TransformerEncoderLayer(g["d"], g["heads"], g["ff"], dropout=0.0)
            self.blocks = nn.TransformerEncoder(layer, g["layers"])
            self.head = nn.Linear(g["d"], g["vocab"])
            causal = np.triu(np.full((g["seq"], g["seq"]), -np.inf, "float32"), 1)
            self.register_buffer("mask", oar.to_tensor(causal))
            self.register_buffer("positions", oar.arange(g["seq"]))

        def forward(self, ids):
            h = self.tok(ids) + self.pos(self.positions)
            return self.head(self.blocks(h, self.mask))

    ids = oar.to_tensor(rng.integers(0, g["vocab"], (g["batch"], g["seq"] + 1)).astype("int64"))
    x, y = ids[:, :-1], ids[:, 1:]
    dp = oar.DataParallel(TinyGPT())
    opt = oar.optimizer.AdamW(learning_rate=1e-3, parameters=dp.parameters())

    def step():
        logits = dp(x)
        loss = oar.nn.functional.cross_entropy(logits.reshape([-1, g["vocab"]]), y.reshape([-1]))
        loss.backward()
        opt.step()
        opt.clear_grad()
    return step


def run_torch(repeat):
    import torch
    import torch.distributed as tdist
    torch.set_num_threads(1)
    tdist.init_process_group("gloo")
    out = {}
    g = torch.Generator().manual_seed(tdist.get_rank())
    x = torch.randn(BATCH, MLP[0], generator=g)
    y = torch.randint(0, MLP[-1], (BATCH,), generator=g)
    layers = []
    for i in range(len(MLP) - 1):
        layers.append(torch.nn.Linear(MLP[i], MLP[i + 1]))
        if i < len(MLP) - 2:
            layers.append(torch.nn.ReLU())
    ddp = torch.nn.parallel.DistributedDataParallel(torch.nn.Sequential(*layers))
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)

    def step():
        loss = torch.nn.functional.cross_entropy(ddp(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
    out["dp_step"] = _median_time(step, tdist.barrier, repeat, 5)
    out["gpt_dp_step"] = _median_time(_torch_gpt_step(torch, g), tdist.barrier, repeat, 5)
    return out


def _torch_gpt_step(torch, gen):
    nn, g = torch.nn, GPT

    class TinyGPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok = nn.Embedding(g["vocab"], g["d"])
            self.pos = nn.Embedding(g["seq"], g["d"])
            layer = nn.TransformerEncoderLayer(g["d"], g["heads"], g["ff"], dropout=0.0, batch_first=True)
            self.blocks = nn.TransformerEncoder(layer, g["layers"], enable_nested_tensor=False)
            self.head = nn.Linear(g["d"], g["vocab"])
            self.register_buffer("mask", torch.triu(torch.full((g["seq"], g["seq"]), float("-inf")), 1))
            self.register_buffer("positions", torch.arange(g["seq"]))

        def forward(self, ids):
            h = self.tok(ids) + self.pos(self.positions)
            return self.head(self.blocks(h, self.mask))

    ids = torch.randint(0, g["vocab"], (g["batch"], g["seq"] + 1), generator=gen)
    x, y = ids[:, :-1], ids[:, 1:]
    ddp = torch.nn.parallel.DistributedDataParallel(TinyGPT())
    opt = torch.optim.AdamW(ddp.parameters(), lr=1e-3)

    def step():
        logits = ddp(x)
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, g["vocab"]), y.reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad()
    return step


def worker(fw, repeat):
    out = {"oar": run_oar, "torch": run_torch, "pair": run_pair}[fw](repeat)
    rank = int(os.environ.get("PADDLE_TRAINER_ID", os.environ.get("RANK", "0")))
    if rank == 0:
        print("RESULT " + json.dumps(out), flush=True)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _oar_env():
    """PYTHONPATH and OAR_EXT_DIR for a worker under another python (bench/.venv) to import
    this oar: the package's folder, and the folder of its compiled _C, which an editable
    install (scripts/setup.sh) keeps in this python's site-packages, not beside the package."""
    import oar
    path = os.path.dirname(os.path.dirname(os.path.abspath(oar.__file__)))
    return {"PYTHONPATH": os.pathsep.join(p for p in (path, os.environ.get("PYTHONPATH")) if p),
            "OAR_EXT_DIR": os.path.dirname(os.path.abspath(oar._C.__file__))}


def run_job(fw, python, repeat):
    port, torch_port = _free_port(), _free_port()
    procs = []
    for rank in range(2):
        env = dict(os.environ, OMP_NUM_THREADS="1", PADDLE_TRAINER_ID=str(rank), PADDLE_TRAINERS_NUM="2",
                   PADDLE_MASTER=f"127.0.0.1:{port}", PADDLE_CURRENT_ENDPOINT="127.0.0.1:0",
                   RANK=str(rank), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(torch_port))
        if fw == "pair":
            env.update(_oar_env())
        procs.append(subprocess.Popen([python, __file__, "--worker", fw, "--repeat", str(repeat)], env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    outs = [p.communicate()[0] for p in procs]
    for line in outs[0].splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    print(f"[bench_dist] {fw} failed:\n{outs[0][-2000:]}\n{outs[1][-2000:]}", file=sys.stderr)
    return None


def _medians(results):
    if not results:
        return None
    return {k: statistics.median(r[k] for r in results if k in r) for k in results[0]}


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def _print_allreduce(pairs, oar_alone):
    """The sweep's table: per size, the medians over jobs and the per-job ratio's median and
    spread (bandwidth oar/torch, higher is better for oar)."""
    print(f"{'metric':<28}{'oar':>11}{'torch':>11}{'oar/torch':>11}{'spread':>13}")
    for nbytes in SIZES:
        k = f"allreduce_{nbytes}"
        label = f"allreduce {nbytes >> 10} KiB MB/s"
        if pairs:
            ratios = [p["torch"][k] / p["oar"][k] for p in pairs]
            o = nbytes / statistics.median(p["oar"][k] for p in pairs) / 1e6
            t = nbytes / statistics.median(p["torch"][k] for p in pairs) / 1e6
            print(f"{label:<28}{o:>11.1f}{t:>11.1f}{statistics.median(ratios):>11.2f}"
                  f"{min(ratios):>7.2f}-{max(ratios):.2f}")
        elif oar_alone and k in oar_alone:
            print(f"{label:<28}{nbytes / oar_alone[k] / 1e6:>11.1f}{'-':>11}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--worker", choices=["oar", "torch", "pair"])
    ap.add_argument("--repeat", type=int, default=0,
                    help="repeats per measurement in a job (default 9 for the all-reduce sweep, 5 for steps)")
    ap.add_argument("--rounds", type=int, default=3,
                    help="jobs per framework (steps: alternating oar and torch); the table shows medians")
    ap.add_argument("--torch-python", default=os.path.join(BENCH, ".venv", "bin", "python"),
                    help="a python with torch (default bench/.venv, made by bench/run.sh)")
    ap.add_argument("--only", choices=["allreduce", "steps"],
                    help="run only the all-reduce sweep or only the training steps")
    ap.add_argument("--sizes", help="all-reduce sizes in KiB, comma-separated (default 1,4,...,65536)")
    args = ap.parse_args()
    if args.sizes:
        os.environ["BENCH_DIST_SIZES"] = args.sizes
        SIZES[:] = [int(k) << 10 for k in args.sizes.split(",")]
    if args.only:
        os.environ["BENCH_DIST_ONLY"] = args.only  # the workers inherit it
    if args.worker:
        return worker(args.worker, args.repeat or 5)
    torch_py = args.torch_python
    has_torch = os.path.exists(torch_py)
    sweep, steps = args.only != "steps", args.only != "allreduce"
    if sweep and not has_torch:
        os.environ["BENCH_DIST_NO_TORCH"] = "1"  # the oar jobs run the sweep alone
    pairs = []
    runs = {"oar": [], "torch": []}
    for _ in range(args.rounds):
        if sweep and has_torch:
            pair = run_job("pair", torch_py, args.repeat or 9)
            if pair:
                pairs.append(pair)
        # Alternate the frameworks and take per-metric medians: on a shared machine the load
        # drifts between jobs, and this spreads the drift over both.
        if steps or not has_torch:
            runs["oar"].append(run_job("oar", sys.executable, args.repeat or 5))
        if steps and has_torch:
            runs["torch"].append(run_job("torch", torch_py, args.repeat or 5))
    res = {fw: _medians([r for r in rs if r]) for fw, rs in runs.items()}
    o, t = res["oar"] or {}, res["torch"] or {}
    print(f"CPU: {_cpu_model()} ({os.cpu_count()} cores), load average "
          f"{os.getloadavg()[0]:.1f}; 2 ranks x 1 thread, loopback; medians of {args.rounds} jobs")
    if sweep:
        _print_allreduce(pairs, o)
    for k, tk in (("dp_step", "dp_step"), ("dp_step_no_overlap", "dp_step"), ("gpt_dp_step", "gpt_dp_step")):
        if k not in o and tk not in t:
            continue
        ov, tv = o.get(k, float("nan")) * 1e3, t.get(tk, float("nan")) * 1e3
        print(f"{k + ' ms':<28}{ov:>11.3f}{tv:>11.3f}{ov / tv:>11.2f}")
    os.makedirs(os.path.join(BENCH, "results"), exist_ok=True)
    with open(os.path.join(BENCH, "results", "dist.json"), "w") as f:
        json.dump({"cpu": _cpu_model(), "allreduce_pairs": pairs, "medians": res, "runs": runs}, f, indent=1)


if __name__ == "__main__":
    main()
