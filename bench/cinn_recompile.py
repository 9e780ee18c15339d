"""A recompiled shape class (Note [Recompilation], docs/notes/cinn.md) against the
program's own kernel and eager, interleaved in one process, 1 thread:
    python bench/cinn_recompile.py [rounds]
softmax(x * y) with InputSpec [?, ?] x [?, ?], compiled on equal shapes; the class calls
give y one column ([R, 1]: a broadcast the kernel did not assume)."""
import sys
import time

import numpy as np

import oar


def softmax_mul(x, y):
    e = oar.exp(x * y - oar.max(x, axis=-1, keepdim=True))
    return e / oar.sum(e, axis=-1, keepdim=True)


def best(fn, n):
    fn()
    t = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        t.append(time.perf_counter() - t0)
    return min(t)


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    oar.set_num_threads(1)
    spec = [oar.static.InputSpec([None, None], "float32")] * 2
    static = oar.jit.to_static(softmax_mul, input_spec=spec, backend="CINN")
    for rows, cols in [(64, 256), (1024, 1024), (4096, 1024)]:
        rng = np.random.default_rng(0)
        x = oar.to_tensor(rng.standard_normal((rows, cols)).astype("float32"))
        y = oar.to_tensor(rng.standard_normal((rows, cols)).astype("float32"))
        y1 = oar.to_tensor(rng.standard_normal((rows, 1)).astype("float32"))
        n = max(3, int(2e7 / (rows * cols)))
        cases = {"kernel [R,C]x[R,C]": lambda: static(x, y), "class [R,C]x[R,1]": lambda: static(x, y1),
                 "eager [R,C]x[R,1]": lambda: softmax_mul(x, y1)}
        res = {k: [] for k in cases}
        for _ in range(rounds):
            for k, f in cases.items():
                res[k].append(best(f, n))
        med = {k: float(np.median(v)) for k, v in res.items()}
        print(f"[{rows}, {cols}] " + "  ".join(f"{k}: {v * 1e6:.1f} us" for k, v in med.items()) +
              f"  eager/class: {med['eager [R,C]x[R,1]'] / med['class [R,C]x[R,1]']:.2f}x")


if __name__ == "__main__":
    main()
