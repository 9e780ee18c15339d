"""cross_entropy (forward + backward) and two `where` models under to_static with and
without backend='CINN' (Notes [cross_entropy decomposition] and [Select and masks] in
docs/notes/cinn.md), interleaved: each round times one call of each form in turn, medians
of the clock of bench/common.py (BENCH_CLOCK=cpu: process CPU time, use it at 1 thread),
1 thread.

- `ce`: F.cross_entropy(logits [N, C], int64 labels, ignore_index=5) and its gradient
  (a training step's loss): the op's kernels against the decomposition's kernels;
- `leaky_elu`: leaky_relu(x) + elu(x) forward (ops against their decompositions, fused);
- `mask`: where(row mask [N, 1], exp(x) * w, -x) forward (the unfused ops against one kernel).

Usage: BENCH_CLOCK=cpu python bench/cinn_select.py [rounds] [N C]   (from the repository root)
"""
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import CLOCK  # noqa: E402
import oar  # noqa: E402

F = oar.nn.functional
oar.set_num_threads(1)
oar.set_flags({"FLAGS_cinn_cache_dir": tempfile.mkdtemp()})
args = [a for a in sys.argv[1:] if a.isdigit()]
rounds = int(args[0]) if args else 15
N, C = (int(args[1]), int(args[2])) if len(args) >= 3 else (4096, 1000)
rng = np.random.default_rng(0)
logits = rng.standard_normal((N, C)).astype("float32")
labels = oar.to_tensor(rng.integers(0, C, N).astype("int64"))
x = oar.to_tensor(rng.standard_normal((N, C)).astype("float32"))
w = oar.to_tensor(rng.standard_normal(C).astype("float32"))
mask = oar.to_tensor(rng.random((N, 1)) > 0.5)


def ce_step(fn):
    def step():
        t = oar.to_tensor(logits, stop_gradient=False)
        fn(t, labels).backward()
    return step


def forward(fn, *a):
    return lambda: fn(*a)


cases = {
    "ce": lambda backend: ce_step(oar.jit.to_static(lambda t, lb: F.cross_entropy(t, lb, ignore_index=5),
                                                    backend=backend)),
    "leaky_elu": lambda backend: forward(oar.jit.to_static(lambda t: F.leaky_relu(t, 0.02) + F.elu(t, 0.7),
                                                           backend=backend), x),
    "mask": lambda backend: forward(oar.jit.to_static(lambda t, u, m: oar.where(m, oar.exp(t) * u, -t),
                                                      backend=backend), x, w, mask),
}
steps = {}
for name, make in cases.items():
    for mode in ("static", "cinn"):
        f = make(None if mode == "static" else "CINN")
        f()
        f()
        steps[name, mode] = f
times = {k: [] for k in steps}
for _ in range(rounds):
    for k, f in steps.items():
        t = CLOCK()
        f()
        times[k].append(CLOCK() - t)
clock = "cpu" if os.environ.get("BENCH_CLOCK") == "cpu" else "wall"
print(f"[{N}, {C}] float32, 1 thread, {rounds} interleaved rounds, medians ({clock} clock), "
      f"load {os.getloadavg()[0]:.1f}")
for name in cases:
    s, c = np.median(times[name, "static"]) * 1e3, np.median(times[name, "cinn"]) * 1e3
    print(f"{name:10s} static {s:8.3f} ms   cinn {c:8.3f} ms   static/cinn {s / c:5.2f}x")
