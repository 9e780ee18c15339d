"""The Adam update in place under CINN against Oar's multi-tensor `_adam_update`, in three
forms of the same step (docs/notes/cinn.md, "Adam in place: the cause"): `as_ops` is
bench_cinn.adam_ops_inplace (bias corrections and lr as separate multiplies, what the
decomposition sees), `folded` folds lr into m's bias correction (two multiplies fewer per
element), `paddle` is the kernel's own form lr_t * m / (sqrt(v) + eps_t) (three fewer).
Interleaved, R rounds of 3 calls, medians, one process, 1 thread; [4096, 4096] float32.
Run it with and without OAR_CINN_VECTOR_BITS=256 to compare the vector widths.

Usage: python bench/cinn_adam_forms.py [rounds]   (from the repository root)
"""
import math
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_cinn  # noqa: E402
import oar  # noqa: E402
from oar import _C  # noqa: E402

oar.set_num_threads(1)
oar.set_flags({"FLAGS_cinn_cache_dir": tempfile.mkdtemp()})
N = 4096
x, g, m0, v0 = bench_cinn.adam_inputs(oar, N)
C1, C2 = 1.0 / (1.0 - 0.9**10), 1.0 / (1.0 - 0.999**10)
LR_T, EPS_T = 1e-3 * math.sqrt(1 - 0.999**10) / (1 - 0.9**10), 1e-8 * math.sqrt(1 - 0.999**10)


def folded(p, g, m, v):
    m.copy_(m * 0.9 + g * 0.1)
    v.copy_(v * 0.999 + g * g * 0.001)
    p.copy_(p - m * (C1 * 1e-3) / (oar.sqrt(v * C2) + 1e-8))


def paddle(p, g, m, v):
    m.copy_(m * 0.9 + g * 0.1)
    v.copy_(v * 0.999 + g * g * 0.001)
    p.copy_(p - m * LR_T / (oar.sqrt(v) + EPS_T))


forms = {"as_ops": lambda p, g, m, v: bench_cinn.adam_ops_inplace(p, g, m, v, oar.sqrt), "folded": folded, "paddle": paddle}
bufs = {k: (x.clone(), m0.clone(), v0.clone()) for k in ["kernel", *forms]}
kp, km, kv = bufs["kernel"]
cases = {"kernel": lambda: _C._adam_update([kp], [g], [km], [kv], [1e-3], [0.0], 0.9, 0.999, 1e-8, False, 10)}
for k, f in forms.items():
    fz, (p, m, v) = oar.jit.to_static(f, backend="CINN"), bufs[k]
    cases[k] = lambda fz=fz, p=p, m=m, v=v: fz(p, g, m, v)
for f in cases.values():
    f()
R = int(sys.argv[1]) if len(sys.argv) > 1 else 9
times = {k: [] for k in cases}
for _ in range(R):
    for k, f in cases.items():
        t = time.perf_counter(); f(); f(); f(); times[k].append((time.perf_counter() - t) / 3 * 1e3)  # noqa: E702
med = {k: sorted(v)[R // 2] for k, v in times.items()}
model = next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")), "?")
print(f"cpu: {model}; load: {os.getloadavg()[0]:.1f}; rounds: {R}; vector bits: {os.environ.get('OAR_CINN_VECTOR_BITS', 'host')}")
print("  ".join(f"{k} {v:.2f} ms ({med['kernel'] / v:.2f}x)" for k, v in med.items()))
