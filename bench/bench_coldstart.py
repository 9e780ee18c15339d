"""Cold-start suite: the first call of a model in a fresh process (Note [Tuning records]).

    python3 bench/bench_coldstart.py [--frameworks oar,torch] [--threads 1,2] [--rounds 3]

Each metric is the median over `--rounds` of a fresh child process's first training step
(forward + cross-entropy + backward + Adam step) or first eager inference call, on
bench_models.py's models: ResNet-18 (10 classes) on [16, 3, 64, 64], the 4-layer
Transformer encoder on [8, 128, 256], ResNet-18 inference on one [1, 3, 224, 224] image.
Oar's convolutions time their candidates on a geometry's first call and record the picks
(Note [Tuning records]): `*_first_*` runs with an empty records directory (a machine's
first run of the model), `*_recorded_*` in a second process on the records the first one
left. torch has no records: its two are two fresh processes alike. `*_steady_*` is the
third call of the same process, for scale.
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

import common

METRICS = [
    ("resnet18_first_step_ms", "ms", "low"),
    ("resnet18_recorded_step_ms", "ms", "low"),
    ("resnet18_steady_step_ms", "ms", "low"),
    ("resnet18_b1_first_infer_ms", "ms", "low"),
    ("resnet18_b1_recorded_infer_ms", "ms", "low"),
    ("resnet18_b1_steady_infer_ms", "ms", "low"),
    ("transformer4_first_step_ms", "ms", "low"),
    ("transformer4_recorded_step_ms", "ms", "low"),
    ("transformer4_steady_step_ms", "ms", "low"),
]

ROUNDS = int(os.environ.get("BENCH_COLDSTART_ROUNDS", "3"))


def child(fw, case, threads):
    """In a fresh process: the first three calls of `case`, in ms (JSON on stdout)."""
    import bench_models
    mod = common.import_framework(fw, threads)
    name = "resnet18" if case.startswith("resnet18") else "transformer"
    if fw == "torch":
        model = bench_models.torch_models(mod)[name]()
        t = mod.from_numpy
    else:
        model = bench_models.oar_models(mod)[name]()
        t = mod.to_tensor
    if case == "resnet18_b1_infer":
        model.eval()
        x = t(np.random.default_rng(1).standard_normal((1, 3, 224, 224), dtype=np.float32))
        no_grad = mod.no_grad

        def call():
            with no_grad():
                model(x)
    else:
        xs, ys = (bench_models.X_RES, bench_models.Y_RES) if name == "resnet18" else (bench_models.X_TF,
                                                                                        bench_models.Y_TF)
        xb, yb = t(xs), t(ys)
        if fw == "torch":
            opt = mod.optim.Adam(model.parameters(), lr=1e-3)
            loss_fn, clear = mod.nn.CrossEntropyLoss(), opt.zero_grad
        else:
            opt = mod.optimizer.Adam(learning_rate=1e-3, parameters=model.parameters())
            loss_fn, clear = mod.nn.CrossEntropyLoss(), opt.clear_grad

        def call():
            loss_fn(model(xb), yb).backward()
            opt.step()
            clear()
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        call()
        times.append((time.perf_counter() - t0) * 1e3)
    print(json.dumps(times), flush=True)


def fresh(fw, case, threads, records):
    env = dict(os.environ, FLAGS_oar_tuning_cache=records)
    cmd = [sys.executable, os.path.abspath(__file__), "--child", fw, case, str(threads)]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        raise RuntimeError(f"{case} child exited {p.returncode}: {p.stderr[-1500:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def cases(fw, mod):
    threads = mod.get_num_threads()

    def case(name, metric):
        def run():
            first, recorded, steady = [], [], []
            for _ in range(ROUNDS):
                d = tempfile.mkdtemp(prefix="oar_coldstart_")
                try:
                    a, b = fresh(fw, name, threads, d), fresh(fw, name, threads, d)
                finally:
                    shutil.rmtree(d, ignore_errors=True)
                first.append(a[0])
                recorded.append(b[0])
                steady += [a[2], b[2]]
            kind = "infer" if "infer" in name else "step"
            return {f"{metric}_first_{kind}_ms": statistics.median(first),
                    f"{metric}_recorded_{kind}_ms": statistics.median(recorded),
                    f"{metric}_steady_{kind}_ms": statistics.median(steady)}
        return run

    return {"resnet18": case("resnet18_step", "resnet18"),
            "resnet18_b1": case("resnet18_b1_infer", "resnet18_b1"),
            "transformer": case("transformer_step", "transformer4")}


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    else:
        if "--rounds" in sys.argv:  # the driver's argument parser does not know it
            i = sys.argv.index("--rounds")
            os.environ["BENCH_COLDSTART_ROUNDS"] = sys.argv[i + 1]
            del sys.argv[i:i + 2]
        common.main(__file__, METRICS, cases)
