"""Static-mode training steps with and without the fusion compiler (docs/notes/static.md,
"Under the fusion compiler"): the same program run by one static.Executor as itself and
as a CompiledProgram with build_cinn_pass, interleaved (each round times one step of each
form), medians of the clock of bench/common.py (BENCH_CLOCK=cpu: process CPU time, use
it at 1 thread), 1 thread. The step holds the forward, the backward and the optimizer
update, which CINN fuses per parameter.

- `mlp`: 784-512-512-10 ReLU MLP, cross_entropy, batch 128 (bench_steps.py's MLP);
- `ln_gelu`: 256-1024-256 GELU feed-forward with LayerNorm and a residual, batch 1024;
each with SGD, Momentum and AdamW.

Usage: BENCH_CLOCK=cpu python bench/cinn_static_train.py [rounds]   (from the repository root)
"""
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import CLOCK  # noqa: E402
import oar  # noqa: E402
import oar.static as static  # noqa: E402

F = oar.nn.functional
oar.set_num_threads(1)
oar.set_flags({"FLAGS_cinn_cache_dir": tempfile.mkdtemp()})
rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 15
OPTS = {
    "sgd": lambda: oar.optimizer.SGD(learning_rate=0.01),
    "momentum": lambda: oar.optimizer.Momentum(learning_rate=0.01, momentum=0.9),
    "adamw": lambda: oar.optimizer.AdamW(learning_rate=1e-3, weight_decay=0.01),
}


def mlp(x):
    h = F.relu(static.nn.fc(x, 512))
    h = F.relu(static.nn.fc(h, 512))
    return static.nn.fc(h, 10)


def ln_gelu(x):
    h = F.gelu(static.nn.fc(F.layer_norm(x, [256]), 1024))
    return x + static.nn.fc(h, 256)


MODELS = {"mlp": (mlp, 128, 784, 10), "ln_gelu": (ln_gelu, 1024, 256, 256)}


def build(model, opt):
    net, batch, d_in, classes = MODELS[model]
    main, start = static.Program(), static.Program()
    with static.program_guard(main, start), oar.utils.unique_name.guard(f"{model}_{opt}_"):
        x = static.data("x", [batch, d_in], "float32")
        y = static.data("y", [batch, 1], "int64")
        loss = F.cross_entropy(net(x), y).mean()
        OPTS[opt]().minimize(loss)
    rng = np.random.default_rng(0)
    feed = {"x": rng.standard_normal((batch, d_in)).astype("float32"), "y": rng.integers(0, classes, (batch, 1))}
    return main, start, loss, feed


def main():
    oar.enable_static()
    print(f"1 thread, {rounds} rounds, median ms per step; ratio = static / static+CINN (> 1: CINN faster)")
    for model in MODELS:
        for opt in OPTS:
            prog, start, loss, feed = build(model, opt)
            strategy = static.BuildStrategy()
            strategy.build_cinn_pass = True
            forms = {"static": prog, "cinn": static.CompiledProgram(prog, strategy)}
            exe = static.Executor()
            times = {k: [] for k in forms}
            with static.scope_guard(static.Scope()):
                exe.run(start)
                for p in forms.values():  # compile and warm up
                    for _ in range(3):
                        exe.run(p, feed=feed, fetch_list=[loss])
                for _ in range(rounds):
                    for k, p in forms.items():
                        t0 = CLOCK()
                        exe.run(p, feed=feed, fetch_list=[loss])
                        times[k].append(CLOCK() - t0)
            s, c = (float(np.median(times[k])) * 1e3 for k in ("static", "cinn"))
            print(f"{model:8s} {opt:9s} static {s:8.3f}  cinn {c:8.3f}  ratio {s / c:5.2f}x", flush=True)


if __name__ == "__main__":
    main()
