"""Interleaved fused/kernel/composed ratios of bench_cinn.py's groups (docs/notes/cinn.md,
"Measured"): every form timed in turn for R rounds (3 calls each), the median per form,
one process, 1 thread (or --threads N); on a loaded machine this keeps the ratios honest
where bench_cinn.py's one-case-after-another timing drifts with the load. The copy rows:
`copy` is x.clone() (glibc's memcpy: `rep movsb`, which writes without reading the
destination), `copy_st` / `copy_nt` bench/rmsnorm_hand.cc's copy with ordinary / non-temporal
stores; `rms_hand_nt` the hand kernel with non-temporal stores (Note [Streaming stores]).
`lsm_*`: log_softmax under CINN vs F.log_softmax; `smb_*`: softmax's backward written as
y * (dy - sum(dy * y)) under CINN vs the softmax_grad kernel (autograd.grad on a kept
graph) vs the same ops eager.

Usage: python bench/cinn_interleaved.py [rounds] [--threads N]   (from the repository root)
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
F = oar.nn.functional
N = 4096
rng = np.random.default_rng(0)
xn = rng.standard_normal((N, N)).astype("float32"); wn = rng.standard_normal(N).astype("float32")
x, w = oar.to_tensor(xn), oar.to_tensor(wn)
ms = bench_cinn.models(oar)
fz = {k: oar.jit.to_static(f, backend="CINN") for k, f in ms.items()}
lib = bench_cinn.hand_library(); hand = lib.rmsnorm_f32; o = np.empty_like(xn)
g = oar.to_tensor(rng.standard_normal((N, N)).astype("float32")); m1 = oar.zeros([N, N]); m2 = oar.ones([N, N]) * 0.01
def step(p, g, m, v): return bench_cinn.adam_ops(p, g, m, v, oar.sqrt)
adam = oar.jit.to_static(step, backend="CINN")
kp, km1, km2 = x.clone(), m1.clone(), m2.clone()
ip, im1, im2 = x.clone(), m1.clone(), m2.clone()
# log_softmax and softmax's backward written out (y * (dy - sum(dy * y))) against the
# kernels (F.log_softmax; softmax_grad through autograd.grad on a kept graph).
lsm = oar.jit.to_static(lambda x: F.log_softmax(x, -1), backend="CINN")
def sm_bwd(y, dy): return y * (dy - oar.sum(dy * y, axis=-1, keepdim=True))
smb = oar.jit.to_static(sm_bwd, backend="CINN")
xg = x.clone(); xg.stop_gradient = False
yg = F.softmax(xg, -1); y_sm = yg.detach()
adam_ip = oar.jit.to_static(lambda p, g, m, v: bench_cinn.adam_ops_inplace(p, g, m, v, oar.sqrt), backend="CINN")
cases = {
 "rms_fused": lambda: fz["rmsnorm"](x, w), "rms_hand": lambda: hand(xn.ctypes.data, wn.ctypes.data, o.ctypes.data, N, N, 1e-6),
 "rms_composed": lambda: ms["rmsnorm"](x, w),
 "rms_hand_nt": lambda: lib.rmsnorm_f32_nt(xn.ctypes.data, wn.ctypes.data, o.ctypes.data, N, N, 1e-6),
 "ln_fused": lambda: fz["layernorm"](x, w), "ln_kernel": lambda: F.layer_norm(x, [N], w, w, 1e-5), "ln_composed": lambda: ms["layernorm"](x, w),
 "sm_fused": lambda: fz["softmax"](x, w), "sm_kernel": lambda: F.softmax(x, -1), "sm_composed": lambda: ms["softmax"](x, w),
 "gb_fused": lambda: fz["gelu_bias"](x, w), "gb_kernel": lambda: F.gelu(x + w), "gb_composed": lambda: ms["gelu_bias"](x, w),
 "adam_fused": lambda: adam(x, g, m1, m2), "adam_kernel": lambda: _C._adam_update([kp], [g], [km1], [km2], [1e-3], [0.0], 0.9, 0.999, 1e-8, False, 10),
 "adam_composed": lambda: step(x, g, m1, m2), "copy": lambda: x.clone(),
 "copy_st": lambda: lib.copy_f32(xn.ctypes.data, o.ctypes.data, N * N), "copy_nt": lambda: lib.copy_f32_nt(xn.ctypes.data, o.ctypes.data, N * N),
 "adam_inplace": lambda: adam_ip(ip, g, im1, im2),
 "lsm_fused": lambda: lsm(x), "lsm_kernel": lambda: F.log_softmax(x, -1),
 "smb_fused": lambda: smb(y_sm, g), "smb_kernel": lambda: oar.autograd.grad([yg], [xg], [g], retain_graph=True)[0],
 "smb_composed": lambda: sm_bwd(y_sm, g),
}
for f in cases.values(): f()
best = {k: [] for k in cases}
R = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else 5
for rnd in range(R):
    for k, f in cases.items():
        t = time.perf_counter(); f(); f(); f(); best[k].append((time.perf_counter() - t) / 3)
med = {k: sorted(v)[len(v) // 2] * 1e3 for k, v in best.items()}
model = next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")), "?")
print(f"cpu: {model}; load: {os.getloadavg()[0]:.1f}; rounds: {R}; threads: {THREADS}")
for k, v in med.items(): print(f"{k:14s} {v:8.2f} ms")
gbs = {k: 2 * N * N * 4 / med[k] / 1e6 for k in ("copy", "copy_st", "copy_nt", "rms_fused", "rms_hand", "rms_hand_nt")}
print("GB/s (2 x 64 MiB / time): " + ", ".join(f"{k} {v:.1f}" for k, v in gbs.items()))
for c in ("copy", "copy_st", "copy_nt"):  # Note [Streaming stores]: clone is glibc's rep movsb
    print(f"rms fused / {c} bandwidth: {gbs['rms_fused'] / gbs[c]:.0%}")
print(f"rms fused vs hand_nt: {med['rms_hand_nt'] / med['rms_fused']:.2f}x")
for a, b in [("rms", "hand"), ("rms", "composed"), ("ln", "kernel"), ("ln", "composed"), ("sm", "kernel"), ("sm", "composed"), ("gb", "kernel"), ("gb", "composed"), ("adam", "kernel"), ("adam", "composed"),
             ("lsm", "kernel"), ("smb", "kernel"), ("smb", "composed")]:
    print(f"{a} fused vs {b}: {med[a + '_' + b] / med[a + '_fused']:.2f}x")
for b in ("kernel", "composed", "fused"):  # Note [Input writes]: the update written in place
    print(f"adam inplace vs {b}: {med['adam_' + b] / med['adam_inplace']:.2f}x")
