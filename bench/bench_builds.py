"""Two builds of Oar against each other, in one run (no other framework needed).

    python3 bench/bench_builds.py --base-python /path/to/venv/bin/python [--rounds 3] [--threads 1]

The base is another checkout built into its own virtual environment, e.g. the commit
before a change:
    git worktree add /tmp/oar-base <commit> && python3 -m venv /tmp/oar-base-venv
    /tmp/oar-base-venv/bin/pip install numpy pyyaml scikit-build-core "pybind11>=3" ninja
    (cd /tmp/oar-base && /tmp/oar-base-venv/bin/pip install --no-build-isolation --no-deps -e .)

Each round runs every case once in a fresh process of each build, the builds
alternating; a case's time is its best over the rounds. Reports new/base per case
(below 1: the current build is faster). The cases are the dispatch/executor-sensitive
figures: tiny-op overhead, tiny forward+backward, the eager MLP step, to_static training
steps and predictor latencies (the models of bench_models.py / bench_jit.py).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import peak

BENCH = os.path.dirname(os.path.abspath(__file__))

CASES = ["add_1elem_us", "fwd_bwd_tiny_us", "mlp_sgd_step_ms",
         "static_mlp_train_ms", "static_resnet18_train_ms", "static_transformer_train_ms",
         "predictor_lenet_b1_ms", "predictor_lenet_b32_ms", "predictor_resnet18_b1_ms",
         "predictor_transformer_b1_ms"]


def probe(threads):
    """Runs every case in this process's Oar; prints {case: value} as JSON."""
    sys.path.insert(0, BENCH)
    import numpy as np

    import bench_core
    import bench_jit
    import common
    import oar as paddle

    paddle.set_num_threads(threads)
    out = {}
    core = bench_core.oar_cases(paddle)
    for name in ("add", "fwd_bwd", "mlp_step"):
        out.update(core[name]())
    nn = paddle.nn
    models = bench_jit.oar_models(paddle)
    for name in ("mlp", "resnet18", "transformer"):
        paddle.seed(0)
        model = paddle.jit.to_static(models[name]())
        opt = paddle.optimizer.Adam(learning_rate=1e-3, parameters=model.parameters())
        loss_fn = nn.CrossEntropyLoss()
        x, y = (paddle.to_tensor(np.asarray(a)) for a in bench_jit.TRAIN_DATA[name])

        def step(model=model, opt=opt, loss_fn=loss_fn, x=x, y=y):
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            opt.clear_grad()
        out[f"static_{name}_train_ms"] = common.bench(step, repeat=bench_jit.repeats(name)) * 1e3
    tmp = tempfile.mkdtemp(prefix="oar_bench_builds_")
    for name, shape, batches in (("lenet", (1, 28, 28), (1, 32)), ("resnet18", (3, 64, 64), (1,)),
                                 ("transformer", (128, 256), (1,))):
        model = models[name]()
        model.eval()
        prefix = os.path.join(tmp, name)
        paddle.jit.save(model, prefix, input_spec=[paddle.static.InputSpec([None] + list(shape), "float32", "x")])
        config = paddle.inference.Config(prefix + ".pdmodel", prefix + ".pdiparams")
        config.set_cpu_math_library_num_threads(threads)
        predictor = paddle.inference.create_predictor(config)
        for b in batches:
            xt = paddle.to_tensor(bench_jit.infer_input(shape, b))
            out[f"predictor_{name}_b{b}_ms"] = common.bench(lambda: predictor.run([xt]),
                                                            repeat=bench_jit.repeats(name)) * 1e3
    print("BUILDS_JSON " + json.dumps(out), flush=True)


def run_build(python, threads):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    r = subprocess.run([python, os.path.abspath(__file__), "--probe", "--threads", str(threads)],
                       capture_output=True, text=True, env=env, timeout=1800)
    for line in r.stdout.splitlines():
        if line.startswith("BUILDS_JSON "):
            return json.loads(line[len("BUILDS_JSON "):])
    raise SystemExit(f"{python}: the probe failed:\n{r.stdout[-2000:]}\n{r.stderr[-4000:]}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base-python", help="the python of the base build's environment")
    ap.add_argument("--python", default=sys.executable, help="the python of the current build (default: this one)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--probe", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.probe:
        probe(args.threads)
        return
    if not args.base_python:
        ap.error("--base-python is required")
    best = {"base": {}, "new": {}}
    for r in range(args.rounds):
        for label, py in (("base", args.base_python), ("new", args.python)):
            res = run_build(py, args.threads)
            for k, v in res.items():
                best[label][k] = min(v, best[label].get(k, float("inf")))
            print(f"[bench_builds] round {r + 1}/{args.rounds} {label} done", flush=True)
    machine = peak.cpu_info()
    print(f"\n{machine['cpu_model']} ({', '.join(machine['cpu_isa'])})  threads={args.threads}  "
          f"rounds={args.rounds} (best of rounds)")
    print(f"{'case':32s} {'base':>10s} {'new':>10s} {'new/base':>9s}")
    for k in CASES:
        b, n = best["base"].get(k), best["new"].get(k)
        if b is None or n is None:
            continue
        print(f"{k:32s} {b:10.4g} {n:10.4g} {n / b:9.3f}")


if __name__ == "__main__":
    main()
