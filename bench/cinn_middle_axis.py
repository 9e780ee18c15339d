"""Reductions over a middle axis in fused groups (Note [Column reductions]) against the
same program without CINN (eager kernels), interleaved in one process (common.bench_pair), 1 thread:
    python bench/cinn_middle_axis.py [rounds]
Models: `sum`: x.sum(axis=1) alone; `mul_add_sum`: (x * w + 1).sum(axis=1);
`max`: (x * w).max(axis=1); `mean`: (x * w).mean(axis=1)."""
import sys

import numpy as np

import common
import oar

MODELS = {
    "sum": lambda x, w: x.sum(axis=1),
    "mul_add_sum": lambda x, w: (x * w + 1.0).sum(axis=1),
    "max": lambda x, w: oar.max(x * w, axis=1),
    "mean": lambda x, w: oar.mean(x * w, axis=1),
}
SHAPES = [(32, 1024, 256), (1024, 32, 256), (8, 4096, 64), (256, 256, 16), (4, 64, 4096)]


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    oar.set_num_threads(1)
    rng = np.random.default_rng(0)
    for shape in SHAPES:
        x = oar.to_tensor(rng.standard_normal(shape).astype("float32"))
        w = oar.to_tensor(rng.standard_normal(shape[-1]).astype("float32"))
        row = []
        for name, f in MODELS.items():
            fused, plain = oar.jit.to_static(f, backend="CINN"), oar.jit.to_static(f)
            np.testing.assert_allclose(fused(x, w).numpy(), plain(x, w).numpy(), rtol=1e-4, atol=1e-3)
            mf, mp = common.bench_pair(lambda: fused(x, w), lambda: plain(x, w), repeat=rounds)
            row.append(f"{name} {mf * 1e3:.3f}/{mp * 1e3:.3f} ms ({mp / mf:.2f}x)")
        print(f"{list(shape)}: " + "; ".join(row), flush=True)


if __name__ == "__main__":
    main()
