"""GELU's backward group (Note [erf shares exp] in docs/notes/cinn.md): d = dy * (Phi(x) +
x * pdf(x)) and its column sum over [8, 128, 1024] (the Transformer block's FFN), fused twice:
`shared` with the density's exp(-x^2/2), whose erf then takes that exp (erfe), and `own_exp`
with the coefficient -0.5001, so the erf keeps its own exp; against the eager gelu_grad
kernel (no column sum). Interleaved, medians of process CPU time, 1 thread.

Usage: python bench/cinn_gelu_grad.py [rounds]   (from the repository root)
"""
import os
import sys
import tempfile
import time

import numpy as np

import oar

oar.set_num_threads(1)
oar.set_flags({"FLAGS_cinn_cache_dir": tempfile.mkdtemp()})
rng = np.random.default_rng(0)
x = oar.to_tensor(rng.standard_normal((8,128,1024)).astype("float32"))
dy = oar.to_tensor(rng.standard_normal((8,128,1024)).astype("float32"))
def make(k):
    def gg(x, dy):
        cdf = oar.scale(oar.erf(oar.scale(x, 0.7071067811865476)), 0.5, 0.5)
        pdf = oar.scale(oar.exp(oar.scale(x * x, k)), 0.3989422804014327)
        d = dy * (cdf + x * pdf)
        return d, d.sum(axis=[0, 1])
    return gg
shared = oar.jit.to_static(make(-0.5), backend="CINN")
own = oar.jit.to_static(make(-0.5001), backend="CINN")  # not -c^2: erf keeps its own exp
xs = x.clone(); xs.stop_gradient = False
y = oar.nn.functional.gelu(xs)
cases = {"shared": lambda: shared(x, dy), "own_exp": lambda: own(x, dy),
         "eager_gelu_grad": lambda: oar.autograd.grad([y], [xs], [dy], retain_graph=True)[0]}
for f in cases.values(): f()
best = {k: [] for k in cases}
R = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else 21
for r in range(R):
    for k, f in cases.items():
        c = time.process_time()
        for _ in range(5): f()
        best[k].append((time.process_time() - c) / 5)
med = {k: sorted(v)[len(v)//2]*1e3 for k, v in best.items()}
model = next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")), "?")
print(f"cpu: {model}; load: {os.getloadavg()[0]:.1f}; rounds: {R}; 1 thread")
for k, v in med.items(): print(f"{k:16s} {v:7.3f} ms")
print(f"own/shared {med['own_exp']/med['shared']:.3f}x; eager gelu_grad/shared {med['eager_gelu_grad']/med['shared']:.3f}x")
