"""The Transformer block's static step broken down by op kind, with and without CINN
(docs/notes/cinn.md, "The block, measured"): bench/cinn_block.py's block (d=256, 4 heads,
ff 1024, L=128, b=8, GELU, fwd+bwd), R rounds, each profiling one step of each form in
turn; per step the profiler's operator times summed by kind, then medians over rounds:

- gemm: `matmul` (the library GEMM), with its GFLOP/s against the FP32 FMA peak that
  bench/peak.py measures (the products' FLOPs counted from the shapes below),
- attention: the `scaled_dot_product_attention` kernels (forward; and backward without CINN),
- fused: the CINN kernels (`kernel.cinn_*`), and each one's median,
- views: reshape/transpose/unsqueeze/expand/squeeze (no copy unless the input is strided),
- unfused: every other operator,
- rest: the step's wall time minus the operators (executor, autograd, Python),
and the step's minor page faults (getrusage). On a loaded machine the profiler's wall
times include preemption; the `isolated` row is the same products timed one by one in
process CPU time (medians), the GEMM floor the step cannot go below.

Usage: python bench/cinn_block_breakdown.py [rounds] [--threads N]   (from the repository root)
"""
import os
import resource
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peak  # noqa: E402
import oar  # noqa: E402

THREADS = int(sys.argv[sys.argv.index("--threads") + 1]) if "--threads" in sys.argv else 1
oar.set_num_threads(THREADS)
oar.set_flags({"FLAGS_cinn_cache_dir": tempfile.mkdtemp()})
R = next((int(a) for a in sys.argv[1:] if a.isdigit()), 15)
B, L, D, H, FF = 8, 128, 256, 4, 1024
T = B * L
# The products: forward q, k, v, out (T x D x D) and the FFN (T x D x FF, T x FF x D);
# backward every weight's gradient and the input gradients of out, ff1, ff2 (x needs no
# gradient, so q/k/v's input gradients are not computed); with CINN also the attention
# backward's five batched products (b*h of L x L x D/H).
LINEAR = 2 * T * (4 * D * D + 2 * D * FF) * 2 + 2 * T * (D * D + 2 * D * FF)
ATTN_BWD = 5 * 2 * B * H * L * L * (D // H)
VIEWS = {"reshape", "transpose", "unsqueeze", "squeeze", "expand", "flatten"}
rng = np.random.default_rng(0)
xb = oar.to_tensor(rng.standard_normal((B, L, D)).astype("float32"))
steps = {}
for mode in ("static", "cinn"):
    oar.seed(0)
    net = oar.nn.TransformerEncoderLayer(D, H, FF, dropout=0.0, activation="gelu")
    fn = oar.jit.to_static(net, backend="CINN" if mode == "cinn" else None)

    def step(fn=fn, net=net):
        fn(xb).mean().backward()
        net.clear_gradients()

    step(), step()
    steps[mode] = step
rows = {m: [] for m in steps}
kernels = {m: {} for m in steps}
for _ in range(R):
    for m, f in steps.items():
        p = oar.profiler.Profiler(on_trace_ready=lambda prof: None)
        p.start()
        flt = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        w, c = time.perf_counter(), time.process_time()
        f()
        w, c = time.perf_counter() - w, time.process_time() - c
        flt = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - flt
        p.stop()
        kind = {"gemm": 0.0, "attention": 0.0, "fused": 0.0, "views": 0.0, "unfused": 0.0}
        for name, _calls, sec in p.op_stats():
            k = ("gemm" if name == "matmul" else "attention" if name.startswith("scaled_dot_product_attention")
                 else "fused" if name.startswith("kernel.") else "views" if name in VIEWS else "unfused")
            kind[k] += sec
            if k == "fused":
                kernels[m].setdefault(name, []).append(sec)
        kind["rest"] = w - sum(kind.values())
        kind["step (wall)"], kind["step (cpu)"], kind["page faults"] = w, c, flt
        rows[m].append(kind)


def med(v):
    return sorted(v)[len(v) // 2]


def isolated_gemm(with_attn):
    """The step's products timed alone, process CPU time, median of 7 runs of 5 each."""
    t = lambda *s: oar.to_tensor(rng.standard_normal(s).astype("float32"))  # noqa: E731
    fwd = [(T, D, D)] * 4 + [(T, D, FF), (T, FF, D)]
    dx = [(T, D, D), (T, FF, D), (T, D, FF)]
    dw = [(D, T, D)] * 4 + [(D, T, FF), (FF, T, D)]  # x^T dy: a transposed operand
    calls = [(lambda a=t(m, k), b=t(k, n): oar.matmul(a, b)) for m, k, n in fwd + dx]
    calls += [(lambda a=t(k, m), b=t(k, n): oar.matmul(a, b, transpose_x=True)) for m, k, n in dw]
    if with_attn:  # dV = P^T dO, dP = dO V^T, dQ = dS K, dK = dS^T Q, S = Q K^T
        q, s_ = t(B, H, L, D // H), t(B, H, L, L)
        calls += [lambda: oar.matmul(s_, q, transpose_x=True), lambda: oar.matmul(q, q, transpose_y=True),
                  lambda: oar.matmul(s_, q), lambda: oar.matmul(s_, q, transpose_x=True),
                  lambda: oar.matmul(q, q, transpose_y=True)]
    total = 0.0
    for f in calls:
        f()
        v = []
        for _ in range(7):
            c = time.process_time()
            for _ in range(5):
                f()
            v.append((time.process_time() - c) / 5)
        total += med(v)
    return total


fp32 = peak.fp32_peak(THREADS) if hasattr(peak, "fp32_peak") else float("nan")
model = next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")), "?")
print(f"cpu: {model}; load: {os.getloadavg()[0]:.1f}; rounds: {R}; threads: {THREADS}; FP32 peak {fp32:.1f} GFLOP/s")
# Medians of the profiler's wall times per kind. On a loaded machine a long op (the GEMMs)
# is preempted more often than a short one, so the GEMM row is also given isolated, in
# process CPU time, and the step's CPU time minus it is what all else costs.
print(f"{'per step (median)':18s} {'static':>10s} {'cinn':>10s}")
for k in rows["static"][0]:
    s, c = med([r[k] for r in rows["static"]]), med([r[k] for r in rows["cinn"]])
    unit, scale = ("", 1) if k == "page faults" else (" ms", 1e3)
    print(f"{k:18s} {s * scale:10.2f} {c * scale:10.2f}{unit}")
for m, flops in (("static", LINEAR), ("cinn", LINEAR + ATTN_BWD)):
    g, iso = med([r["gemm"] for r in rows[m]]), isolated_gemm(m == "cinn")
    for what, v in (("in the step (wall)", g), ("isolated (cpu)", iso)):
        print(f"gemm {m} {what}: {flops / 1e9:.2f} GFLOP in {v * 1e3:.2f} ms = {flops / v / 1e9:.1f} GFLOP/s "
              f"({flops / v / 1e9 / fp32:.0%} of peak)")
    cpu = med([r["step (cpu)"] for r in rows[m]])
    print(f"  step cpu {cpu * 1e3:.2f} ms - isolated gemm = {(cpu - iso) * 1e3:.2f} ms for all else")
print("fused kernels (median per step):")
for name, v in sorted(kernels["cinn"].items(), key=lambda kv: -med(kv[1])):
    print(f"  {name:34s} {med(v) * 1e3:7.3f} ms")
