"""Small ops at 1 and 2 threads in one process (Note [Thread pool], issue 17 item 6).

    python3 bench/thread_sweep.py [--ops add,mul,add_bcast,concat,index_select,sum]
                                  [--sizes 32768,...] [--repeat 9] [--hog] [--gap-us 0]

For each op and output size (elements, float32) the 1-thread and 2-thread repeats are
interleaved (set_num_threads between them) and the medians printed with 2t/1t. --hog runs
`yes > /dev/null` beside the benchmark (a busy second vCPU); --gap-us sleeps that long
between calls, so that the pool's workers fall asleep between regions (a model whose
parallel ops come far apart).
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
import peak  # noqa: E402

OPS = ("add", "mul", "add_bcast", "concat", "index_select", "sum")
SIZES = (32768, 65536, 131072, 262144, 524288, 1048576)


def make(oar, op, n):
    rng = np.random.default_rng(0)
    t = lambda *shape: oar.to_tensor(rng.standard_normal(shape, dtype=np.float32))  # noqa: E731
    if op in ("add", "mul", "sum"):
        a, b = t(n), t(n)
        return {"add": lambda: a + b, "mul": lambda: a * b, "sum": lambda: a.sum()}[op]
    rows = n // 256
    if op == "add_bcast":
        a, b = t(rows, 256), t(256)
        return lambda: a + b
    if op == "concat":
        parts = [t(rows // 4, 256) for _ in range(4)]
        return lambda: oar.concat(parts, axis=0)
    if op == "index_select":
        x = t(2 * rows, 256)
        idx = oar.to_tensor(rng.integers(0, 2 * rows, rows).astype(np.int64))
        return lambda: oar.index_select(x, idx, axis=0)
    raise ValueError(f"thread_sweep: unknown op {op!r}")


def timed(fn, calls, gap):
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
        if gap:
            end = time.perf_counter() + gap  # a busy wait: a sleep would idle the vCPU
            while time.perf_counter() < end:
                pass
    return (time.perf_counter() - t0) / calls - gap


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ops", default=",".join(OPS))
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)))
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--target", type=float, default=0.05, help="seconds per repeat")
    ap.add_argument("--hog", action="store_true", help="run `yes > /dev/null` beside")
    ap.add_argument("--gap-us", type=float, default=0.0)
    args = ap.parse_args()
    oar = common.import_framework("oar", 1)
    hog = subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) if args.hog else None
    gap = args.gap_us * 1e-6
    try:
        print(f"{peak.cpu_model()}, {os.cpu_count()} cpus; load {os.getloadavg()[0]:.1f}; "
              f"hog {'on' if hog else 'off'}; gap {args.gap_us:g} us")
        worst = 0.0
        for op in args.ops.split(","):
            for n in map(int, args.sizes.split(",")):
                fn = make(oar, op, n)
                for _ in range(3):
                    fn()
                calls = common._calls_per_repeat(fn, args.target, 3)
                if gap:
                    calls = max(1, min(calls, int(args.target / gap)))
                times = {1: [], 2: []}
                for _ in range(args.repeat):
                    for th in (1, 2):
                        oar.set_num_threads(th)
                        times[th].append(timed(fn, calls, gap))
                oar.set_num_threads(1)
                t1, t2 = (statistics.median(times[th]) * 1e6 for th in (1, 2))
                worst = max(worst, t2 / t1)
                print(f"{op:13s} n={n:8d}: 1t {t1:8.1f} us  2t {t2:8.1f} us  2t/1t {t2 / t1:5.2f}", flush=True)
        print(f"worst 2t/1t {worst:.2f}; pool {oar._C._parallel_info() if hasattr(oar._C, '_parallel_info') else '-'}")
    finally:
        if hog:
            hog.kill()
            hog.wait()


if __name__ == "__main__":
    main()
