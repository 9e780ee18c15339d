"""A recompiled shape class (Note [Recompilation], docs/notes/cinn.md) against the
program's own kernel and eager, in one process (the class and eager interleaved: common.bench_pair), 1 thread:
    python bench/cinn_recompile.py [rounds]
softmax(x * y) with InputSpec [?, ?] x [?, ?], compiled on equal shapes; the class calls
give y one column ([R, 1]: a broadcast the kernel did not assume)."""
import sys

import numpy as np

import common
import oar


def softmax_mul(x, y):
    e = oar.exp(x * y - oar.max(x, axis=-1, keepdim=True))
    return e / oar.sum(e, axis=-1, keepdim=True)


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
        med = {"kernel [R,C]x[R,C]": common.bench(lambda: static(x, y), repeat=rounds)}
        med["class [R,C]x[R,1]"], med["eager [R,C]x[R,1]"] = common.bench_pair(
            lambda: static(x, y1), lambda: softmax_mul(x, y1), repeat=rounds)
        print(f"[{rows}, {cols}] " + "  ".join(f"{k}: {v * 1e6:.1f} us" for k, v in med.items()) +
              f"  eager/class: {med['eager [R,C]x[R,1]'] / med['class [R,C]x[R,1]']:.2f}x")


if __name__ == "__main__":
    main()
