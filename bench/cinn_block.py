"""The Transformer block (d=256, 4 heads, ff 1024, L=128, b=8, GELU; bench_cinn.py's
`block`) fwd+bwd under to_static with and without backend='CINN', interleaved: each
round times a step of each form in turn, and the medians of wall and of process CPU time
are reported (1 thread: CPU time is what the step cost, wall time adds the machine's
load; at 2 threads CPU time adds both threads' and wall time is the figure). With
--profile, the executors' per-op times of 10 more steps of each form;
bench/cinn_block_breakdown.py sums them by kind.

--threads 1,2 interleaves the thread counts too: each round sets each count in turn
(oar.set_num_threads) and times both forms at it.

--ab-layout adds a third form, `cinn-nolayout`: CINN with FLAGS_deny_cinn_ops=matmul while
it is traced, so the products stay matmul + transpose (Note [Matmul output layout] off),
interleaved with the other two.

Usage: python bench/cinn_block.py [rounds] [--profile] [--threads N[,M...]] [--ab-layout]   (from the repository root)
"""
import os
import sys
import tempfile
import time

import numpy as np

import oar

THREADS = [int(t) for t in sys.argv[sys.argv.index("--threads") + 1].split(",")] if "--threads" in sys.argv else [1]
oar.set_num_threads(THREADS[0])
oar.set_flags({"FLAGS_cinn_cache_dir": tempfile.mkdtemp()})
rounds = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else 15
rng = np.random.default_rng(0)
xb = oar.to_tensor(rng.standard_normal((8, 128, 256)).astype("float32"))
steps, first = {}, {}
MODES = ("static", "cinn", "cinn-nolayout") if "--ab-layout" in sys.argv else ("static", "cinn")
for mode in MODES:
    oar.seed(0)
    net = oar.nn.TransformerEncoderLayer(256, 4, 1024, dropout=0.0, activation="gelu")
    fn = oar.jit.to_static(net, backend=None if mode == "static" else "CINN")
    oar.set_flags({"FLAGS_deny_cinn_ops": "matmul" if mode == "cinn-nolayout" else ""})

    def step(fn=fn, net=net):
        fn(xb).mean().backward()
        net.clear_gradients()

    t = time.perf_counter()
    step()
    first[mode] = time.perf_counter() - t
    step()
    steps[mode] = step
    oar.set_flags({"FLAGS_deny_cinn_ops": ""})
wall = {(t, m): [] for t in THREADS for m in steps}
cpu = {(t, m): [] for t in THREADS for m in steps}
load0 = os.getloadavg()[0]
for _ in range(rounds):
    for t in THREADS:
        oar.set_num_threads(t)
        for m, f in steps.items():
            w, c = time.perf_counter(), time.process_time()
            f()
            cpu[t, m].append(time.process_time() - c)
            wall[t, m].append(time.perf_counter() - w)
med = {k: {tm: sorted(v)[len(v) // 2] * 1e3 for tm, v in d.items()} for k, d in (("wall", wall), ("cpu", cpu))}
model = next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")), "?")
print(f"cpu: {model}; load before/after: {load0:.1f}/{os.getloadavg()[0]:.1f}; rounds: {rounds}; threads: {THREADS}")
for t in THREADS:
    for k, d in med.items():
        print(f"{t}t {k:4s} static {d[t, 'static']:8.1f} ms  cinn {d[t, 'cinn']:8.1f} ms  "
              f"static/cinn {d[t, 'static'] / d[t, 'cinn']:.3f}x")
        if "cinn-nolayout" in steps:
            print(f"{t}t {k:4s} cinn-nolayout {d[t, 'cinn-nolayout']:8.1f} ms  "
                  f"static/cinn-nolayout {d[t, 'static'] / d[t, 'cinn-nolayout']:.3f}x  "
                  f"cinn-nolayout/cinn {d[t, 'cinn-nolayout'] / d[t, 'cinn']:.3f}x")
for t in THREADS[1:]:
    print(f"wall {THREADS[0]}t/{t}t: static {med['wall'][THREADS[0], 'static'] / med['wall'][t, 'static']:.3f}x  "
          f"cinn {med['wall'][THREADS[0], 'cinn'] / med['wall'][t, 'cinn']:.3f}x")
if max(THREADS) > 1:  # on a busy machine the pool's wake grain sits at its cap: nothing splits
    pi = oar._C._parallel_info()
    print(f"pool: wake grain {pi['wake_grain']} (cap 2^26 = {1 << 26}), wake {pi['wake_ns'] / 1e3:.1f} us, "
          f"futex {pi['futex_ns'] / 1e3:.1f} us (Note [Thread pool])")
st = oar._C.cinn.cache_stats()
print(f"first call: static {first['static']:.2f} s  cinn {first['cinn']:.2f} s; cold compile "
      f"{st['compile_seconds'] * 1e3 / max(1, st['compiles']):.1f} ms per group ({st['compiles']} groups)")
if "--profile" in sys.argv:
    for m, f in steps.items():
        with oar.profiler.Profiler() as p:
            for _ in range(10):
                f()
        print("=====", m)
        p.summary()  # prints the table
