"""CPU time of a process that holds Oar's thread pool while idle (issue 17 part 6).

    python3 bench/idle_pool.py [--threads 2]

Runs 20 rounds of a 512^2 matmul, a softmax and an add with `--threads` intra-op threads, then
sleeps 0.5 s and 3.0 s and prints the process CPU time of each idle interval: a pool that
spin-waits for work shows up as CPU time while the process sleeps. Oar's own pool
(Note [Thread pool]) spins 50-400 us after a region (adaptive; OAR_PARALLEL_SPIN_US fixes
it); the GEMMs run on that pool (Note [GEMM splits on the pool]); oneDNN's OpenMP team
(convolution, pooling) does not spin under oar's default OMP_WAIT_POLICY=PASSIVE.
"""
import argparse
import os
import sys
import time

try:
    import oar
except ImportError:  # not installed: the in-tree package
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
    import oar

ap = argparse.ArgumentParser()
ap.add_argument("--threads", type=int, default=2)
args = ap.parse_args()
oar.set_num_threads(args.threads)
x, y = oar.randn([512, 512]), oar.randn([256, 256, 16])
for _ in range(20):
    (x @ x).sum()
    oar.nn.functional.softmax(y, -1)
    (y + y).sum()
marks = []
for dur in (0.5, 3.0):
    t0 = time.process_time()
    time.sleep(dur)
    marks.append((dur, time.process_time() - t0))
info = oar._C._parallel_info() if hasattr(oar._C, "_parallel_info") else {}
print(f"{args.threads} threads, {len(os.listdir('/proc/self/task'))} OS threads; "
      + "; ".join(f"next {d:.1f} s idle: {c * 1e3:.1f} ms CPU" for d, c in marks)
      + (f"; pool: {info['workers']} worker(s), spin {info['spin_us']} us" if info else ""))
