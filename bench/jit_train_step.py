"""A whole training step converted by to_static (Note [Training steps] in
docs/notes/jit.md) against the same step eager and against the usual form (the forward
converted, backward and step outside), interleaved: each round times one step of each
form in turn, medians of the clock of bench/common.py (BENCH_CLOCK=cpu: process CPU
time, use it at 1 thread), 1 thread, AdamW.

- `mlp`: 784-512-512-10 ReLU MLP, cross_entropy, batch 128 (bench_steps.py's MLP);
- `ffn`: LayerNorm + 256-1024-256 GELU feed-forward + residual, batch 1024, squared error;
- `mlp_o2`: the MLP under AMP O2 bfloat16 (decorate with float32 master weights) and a
  GradScaler (`scaler.scale(loss).backward(); scaler.step(opt); scaler.update()`);
- `tiny`: a 16-32-32-4 MLP, batch 8: the per-call cost of each form (microseconds of
  work per op).

Usage: BENCH_CLOCK=cpu python bench/jit_train_step.py [rounds]   (from the repository root)
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
rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 15


class FFN(oar.nn.Layer):
    def __init__(self):
        super().__init__()
        self.norm, self.up, self.down = oar.nn.LayerNorm(256), oar.nn.Linear(256, 1024), oar.nn.Linear(1024, 256)

    def forward(self, x):
        return x + self.down(F.gelu(self.up(self.norm(x))))


def models():
    rng = np.random.default_rng(0)
    mlp = oar.nn.Sequential(oar.nn.Linear(784, 512), oar.nn.ReLU(), oar.nn.Linear(512, 512), oar.nn.ReLU(),
                            oar.nn.Linear(512, 10))
    x = oar.to_tensor(rng.standard_normal((128, 784)).astype("float32"))
    y = oar.to_tensor(rng.integers(0, 10, (128, 1)))
    ce = lambda out, t: F.cross_entropy(out, t).mean()  # noqa: E731
    yield "mlp", mlp, x, y, ce, False
    xf = oar.to_tensor(rng.standard_normal((1024, 256)).astype("float32"))
    yield "ffn", FFN(), xf, xf * 0.5, lambda out, t: ((out - t) ** 2).mean(), False
    mlp = oar.nn.Sequential(oar.nn.Linear(784, 512), oar.nn.ReLU(), oar.nn.Linear(512, 512), oar.nn.ReLU(),
                            oar.nn.Linear(512, 10))
    yield "mlp_o2", mlp, x, y, ce, True
    tiny = oar.nn.Sequential(oar.nn.Linear(16, 32), oar.nn.ReLU(), oar.nn.Linear(32, 32), oar.nn.ReLU(),
                             oar.nn.Linear(32, 4))
    yield "tiny", tiny, oar.to_tensor(rng.standard_normal((8, 16)).astype("float32")), \
        oar.to_tensor(rng.integers(0, 4, (8, 1))), ce, False


def main():
    print(f"1 thread, {rounds} rounds, median ms per step (AdamW); ratios = eager / form (> 1: faster than eager)")
    for name, net, x, y, loss_fn, o2 in models():
        opt = oar.optimizer.AdamW(learning_rate=1e-4, parameters=net.parameters(), weight_decay=0.01)
        if o2:
            net, opt = oar.amp.decorate(net, opt, level="O2", dtype="bfloat16")
            scaler = oar.amp.GradScaler(init_loss_scaling=1024.0)

        def train_step(model):
            def step(x, y):
                if o2:
                    with oar.amp.auto_cast(level="O2", dtype="bfloat16"):
                        out = model(x)
                    loss = loss_fn(out.astype("float32"), y)
                    scaler.scale(loss).backward()
                    scaler.step(opt)
                    scaler.update()
                else:
                    loss = loss_fn(model(x), y)
                    loss.backward()
                    opt.step()
                opt.clear_grad()
                return loss

            return step

        # the forward converted apart: a to_static copy of the layer's forward (the layer
        # itself stays eager, so the converted step traces it from its own code)
        fwd = oar.jit.to_static(net.forward)
        step, fwd_step = train_step(net), train_step(fwd)

        forms = {"eager": step, "to_static(forward)": fwd_step, "to_static(step)": oar.jit.to_static(step),
                 "to_static(step, CINN)": oar.jit.to_static(step, backend="CINN")}
        times = {k: [] for k in forms}
        for f in forms.values():
            for _ in range(3):
                f(x, y)
        for _ in range(rounds):
            for k, f in forms.items():
                t0 = CLOCK()
                f(x, y)
                times[k].append(CLOCK() - t0)
        med = {k: float(np.median(v)) * 1e3 for k, v in times.items()}
        print(f"{name}: " + ", ".join(f"{k} {v:.3f} ms ({med['eager'] / v:.2f}x)" for k, v in med.items()), flush=True)


if __name__ == "__main__":
    main()
