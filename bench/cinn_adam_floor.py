"""Adam in place at its memory floor? (docs/notes/cinn.md, "Adam in place: the floor").
One step over [4096, 4096] float32 reads p, g, m, v and writes p, m, v in place: 7 x 64 MiB.
Timed interleaved (R rounds of 3 calls each, medians, one process, 1 thread or --threads N):

- `cinn`: bench_cinn.adam_ops_inplace under to_static(backend='CINN') (the issue's form),
- `kernel`: Oar's multi-tensor `_adam_update` on one tensor,
- `hand`: the same update in C (bench/rmsnorm_hand.cc adam_f32, g++ -O3 -march=native),
- `stream7`: the same 4 reads and 3 in-place writes with the least arithmetic (stream7_f32),
- `copy`: x.clone() (2 x 64 MiB, glibc's memcpy).

All of them run on Oar's own buffers (the hand loops through data_ptr), each form on its
own copies so no form warms another's. GB/s = bytes moved / median time.

Usage: python bench/cinn_adam_floor.py [rounds] [--threads N]   (from the repository root)
"""
import os
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_cinn  # noqa: E402
import oar  # noqa: E402
from oar import _C  # noqa: E402

THREADS = int(sys.argv[sys.argv.index("--threads") + 1]) if "--threads" in sys.argv else 1
oar.set_num_threads(THREADS)
oar.set_flags({"FLAGS_cinn_cache_dir": tempfile.mkdtemp()})
N = 4096
x, g, m0, v0 = bench_cinn.adam_inputs(oar, N)
lib = bench_cinn.hand_library()
adam_ip = oar.jit.to_static(lambda p, g, m, v: bench_cinn.adam_ops_inplace(p, g, m, v, oar.sqrt), backend="CINN")
bufs = {k: (x.clone(), m0.clone(), v0.clone()) for k in ("cinn", "kernel", "hand", "stream7")}


def ptrs(k):
    p, m, v = bufs[k]
    return p.data_ptr(), g.data_ptr(), m.data_ptr(), v.data_ptr(), N * N


cases = {
    "cinn": lambda: adam_ip(bufs["cinn"][0], g, bufs["cinn"][1], bufs["cinn"][2]),
    "kernel": lambda: _C._adam_update([bufs["kernel"][0]], [g], [bufs["kernel"][1]], [bufs["kernel"][2]], [1e-3], [0.0],
                                      0.9, 0.999, 1e-8, False, 10),
    "hand": lambda: lib.adam_f32(*ptrs("hand")),
    "stream7": lambda: lib.stream7_f32(*ptrs("stream7")),
    "copy": lambda: x.clone(),
}
for f in cases.values():
    f()
R = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else 7
best = {k: [] for k in cases}
for _ in range(R):
    for k, f in cases.items():
        t = time.perf_counter()
        f(); f(); f()
        best[k].append((time.perf_counter() - t) / 3)
med = {k: sorted(v)[len(v) // 2] * 1e3 for k, v in best.items()}
model = next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")), "?")
print(f"cpu: {model}; load: {os.getloadavg()[0]:.1f}; rounds: {R}; threads: {THREADS}; "
      f"OAR_CINN_VECTOR_BITS={os.environ.get('OAR_CINN_VECTOR_BITS', 'unset')}")
mib = N * N * 4 / 1e6
for k, v in med.items():
    moved = (2 if k == "copy" else 7) * mib
    print(f"{k:8s} {v:7.2f} ms  {moved / v:6.1f} GB/s")
for k in ("kernel", "hand", "stream7"):
    print(f"cinn vs {k}: {med[k] / med['cinn']:.3f}x")
# the same values: every form ran the same number of steps from the same start
ref = bufs["kernel"]
for k in ("cinn", "hand"):
    d = max(float(np.abs(a.numpy() - b.numpy()).max()) for a, b in zip(bufs[k], ref))
    print(f"max |{k} - kernel| over p, m, v: {d:.2e}")
