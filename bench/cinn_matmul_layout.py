"""Note [Matmul output layout]: the attention backward's dV-shaped product, [8, 4, 128, 128]^T
@ [8, 4, 128, 64] -> transpose to [8, 128, 4, 64] -> reshape to [1024, 256] (the linear
layer's gradient reads it), under to_static(backend='CINN') with the cinn_matmul_layout
rewrite (one step writing the transposed layout; the reshape a view) and without it
(FLAGS_deny_cinn_ops=matmul while tracing: the product, then the reshape copies the
strided view). Interleaved, medians of process CPU time, 1 thread by default.

Usage: python bench/cinn_matmul_layout.py [rounds] [--threads N]   (from the repository root)
"""
import sys
import tempfile
import time

import numpy as np

import oar

threads = int(sys.argv[sys.argv.index("--threads") + 1]) if "--threads" in sys.argv else 1
oar.set_num_threads(threads)
oar.set_flags({"FLAGS_cinn_cache_dir": tempfile.mkdtemp()})
rounds = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else 51
rng = np.random.default_rng(0)
p = oar.to_tensor(rng.standard_normal((8, 4, 128, 128)).astype("float32"))
v = oar.to_tensor(rng.standard_normal((8, 4, 128, 64)).astype("float32"))


def f(a, b):
    return oar.matmul(a, b, transpose_x=True).transpose([0, 2, 1, 3]).reshape([-1, 256])


fns, outs = {}, {}
for mode in ("layout", "matmul+copy"):
    oar.set_flags({"FLAGS_deny_cinn_ops": "matmul" if mode == "matmul+copy" else ""})
    fns[mode] = oar.jit.to_static(f, backend="CINN")
    outs[mode] = fns[mode](p, v).numpy()
    oar.set_flags({"FLAGS_deny_cinn_ops": ""})
assert np.array_equal(outs["layout"], outs["matmul+copy"])
times = {m: [] for m in fns}
for _ in range(rounds):
    for m, fn in fns.items():
        c = time.process_time()
        for _ in range(10):
            fn(p, v)
        times[m].append((time.process_time() - c) / 10)
med = {m: sorted(t)[len(t) // 2] * 1e3 for m, t in times.items()}
model = next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")), "?")
print(f"cpu: {model}; threads {threads}; rounds {rounds} x 10 calls; equal outputs")
print(f"layout {med['layout']:.3f} ms  matmul+copy {med['matmul+copy']:.3f} ms  "
      f"(matmul+copy)/layout {med['matmul+copy'] / med['layout']:.3f}x")
