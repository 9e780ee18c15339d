"""scaled_dot_product_attention (b=8, L=128, 4 heads, head dim 64: the block's sizes of
bench/cinn_block.py) fwd+bwd under to_static with and without backend='CINN',
interleaved: with CINN its backward decomposes (docs/notes/cinn.md, multi-result rules)
into five batched matmuls and fused softmax-backward groups. Median process CPU time of
each form, 1 thread.

With --mask causal|bool|additive the attention is causal, or takes a [b, 1, L, L] bool
mask (70% kept) or an additive float mask (normal * 0.5); the decomposition covers them.

Usage: python bench/cinn_attention.py [rounds] [--mask none|causal|bool|additive]
(from the repository root)
"""
import os
import sys
import tempfile
import time

import numpy as np

import oar

oar.set_num_threads(1)
oar.set_flags({"FLAGS_cinn_cache_dir": tempfile.mkdtemp()})
rounds = next((int(a) for a in sys.argv[1:] if a.isdigit()), 21)
rng = np.random.default_rng(0)
q, k, v = (oar.to_tensor(rng.standard_normal((8, 128, 4, 64)).astype("float32"), stop_gradient=False)
           for _ in range(3))


kind = sys.argv[sys.argv.index("--mask") + 1] if "--mask" in sys.argv else "none"
mask = {"none": None, "causal": None,
        "bool": oar.to_tensor(rng.random((8, 1, 128, 128)) > 0.3),
        "additive": oar.to_tensor((rng.standard_normal((8, 1, 128, 128)) * 0.5).astype("float32"))}[kind]


def loss(q, k, v):
    return oar.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=kind == "causal").sum()


forms = {"static": oar.jit.to_static(loss), "cinn": oar.jit.to_static(loss, backend="CINN")}


def step(fn):
    fn(q, k, v).backward()
    for t in (q, k, v):
        t.clear_gradient()


for fn in forms.values():
    step(fn)
    step(fn)
cpu = {m: [] for m in forms}
for _ in range(rounds):
    for m, fn in forms.items():
        c = time.process_time()
        step(fn)
        cpu[m].append(time.process_time() - c)
med = {m: sorted(t)[len(t) // 2] * 1e3 for m, t in cpu.items()}
model = next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")), "?")
print(f"cpu: {model}; load: {os.getloadavg()[0]:.1f}; rounds: {rounds}; 1 thread; mask: {kind}")
print(f"cpu  static {med['static']:7.2f} ms  cinn {med['cinn']:7.2f} ms  static/cinn {med['static'] / med['cinn']:.3f}x")
