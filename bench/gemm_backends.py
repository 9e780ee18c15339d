"""GEMM backends compared on the benchmark models' shapes (docs/notes/gemm_backends.md).

    bash bench/gemm_backends_venv.sh          # once: the PyPI libraries into bench/.gemmvenv
    python3 bench/gemm_backends.py [--threads 1,2] [--rounds 2] [--budget 0.25] [--out FILE]

Builds bench/gemm_backends.cc once per library (Debian oneDNN 2.6 and OpenBLAS 0.3.21;
onednn-devel, mkl-devel, scipy-openblas32/64 from bench/.gemmvenv) and runs every backend
on every case, interleaved, `--rounds` times, pinned with taskset to the first `threads`
CPUs (TBB, OpenMP and OpenBLAS pools all honour the mask; their thread-count variables are
set too). torch (bench/.venv) runs the same float32/bf16 cases in the same rounds.
Reported: GFLOP/s of the best round and % of the FP32 FMA peak bench/peak.py measures.
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, BENCH)
import peak  # noqa: E402

VENV = os.environ.get("GEMM_VENV", os.path.join(BENCH, ".gemmvenv"))
SITE = glob.glob(os.path.join(VENV, "lib", "python3*", "site-packages"))
SITE = SITE[0] if SITE else ""
TORCH_PY = os.environ.get("BENCH_TORCH_PYTHON", os.path.join(BENCH, ".venv", "bin", "python"))

# (label, batch, M, N, K, trans): the models' GEMMs (bench_models.py / bench_seq.py).
CASES = [
    ("square 256", 1, 256, 256, 256, "NN"),
    ("square 512", 1, 512, 512, 512, "NN"),
    ("square 1024", 1, 1024, 1024, 1024, "NN"),
    ("square 2048", 1, 2048, 2048, 2048, "NN"),
    ("MLP fc1 128x784x512", 1, 128, 512, 784, "NN"),
    ("MLP fc2 128x512x512", 1, 128, 512, 512, "NN"),
    ("MLP fc1 dW (A^T)", 1, 784, 512, 128, "TN"),
    ("MLP fc1 dX (B^T)", 1, 128, 784, 512, "NT"),
    ("GPT qkv 1024x256x768", 1, 1024, 768, 256, "NN"),
    ("GPT qkv dW (A^T)", 1, 256, 768, 1024, "TN"),
    ("attn QK^T 32x128x128x64", 32, 128, 128, 64, "NT"),
    ("attn PV 32x128x64x128", 32, 128, 64, 128, "NN"),
    ("LSTM step 16x1024x256", 1, 16, 1024, 256, "NN"),
    ("LSTM step (B^T)", 1, 16, 1024, 256, "NT"),
]


def _inc(pkg):
    return os.path.join(SITE, pkg, "include")


def backends():
    """name -> (compile flags, link flags, extra env); only those whose files exist."""
    b = {}
    deb_ob = "/usr/include/x86_64-linux-gnu/openblas-pthread"
    b["oneDNN 2.6 (Debian)"] = (["-DBK_DNNL"], ["-ldnnl"], {})
    b["OpenBLAS 0.3.21 (Debian)"] = (
        ["-DBK_CBLAS", f'-DBK_CBLAS_HEADER=<{deb_ob}/cblas.h>'], ["-lopenblas"], {})
    vlib = os.path.join(VENV, "lib")
    if os.path.exists(os.path.join(vlib, "libdnnl.so")):
        # onednn-devel: TBB threading, Intel compiler runtime in the same lib folder.
        b["oneDNN 3.x (onednn-devel)"] = (
            ["-DBK_DNNL", "-I" + os.path.join(VENV, "include")],
            ["-L" + vlib, "-Wl,-rpath," + vlib, "-ldnnl"],
            # its CPU engine is a SYCL device: Intel's OpenCL CPU runtime from the same venv
            {"LD_LIBRARY_PATH": vlib, "OCL_ICD_FILENAMES": os.path.join(vlib, "libintelocl.so"),
             "ONEAPI_DEVICE_SELECTOR": "opencl:cpu"})
    if os.path.exists(os.path.join(vlib, "libmkl_rt.so.3")):
        b["MKL (mkl-devel)"] = (
            ["-DBK_CBLAS", "-DBK_MKL", "-DBK_CBLAS_HEADER=<mkl_cblas.h>", "-I" + os.path.join(VENV, "include")],
            ["-L" + vlib, "-Wl,-rpath," + vlib, "-l:libmkl_rt.so.3"],
            {"MKL_THREADING_LAYER": "GNU", "MKL_INTERFACE_LAYER": "LP64", "LD_LIBRARY_PATH": vlib})
    for pkg, lib, suffix in (("scipy_openblas32", "libscipy_openblas.so", ""),
                             ("scipy_openblas64", "libscipy_openblas64_.so", "64_")):
        d = os.path.join(SITE, pkg, "lib")
        if not os.path.exists(os.path.join(d, lib)):
            continue
        ver = pkg.replace("scipy_openblas", "scipy-openblas")
        flags = ["-DBK_CBLAS", f'-DBK_CBLAS_HEADER=<{_inc(pkg)}/cblas.h>',
                 f"-Dcblas_sgemm=scipy_cblas_sgemm{suffix}"]
        b[f"OpenBLAS 0.3.34 ({ver})"] = (flags, ["-L" + d, "-Wl,-rpath," + d, "-l:" + lib], {})
    return b


def build(name, cflags, lflags, outdir):
    exe = os.path.join(outdir, "gemm_" + "".join(c if c.isalnum() else "_" for c in name))
    cmd = ["g++", "-O2", "-std=c++17", "-march=x86-64-v3", os.path.join(BENCH, "gemm_backends.cc"), "-o", exe,
           *cflags, *lflags, "-fopenmp"]
    subprocess.run(cmd, check=True)
    return exe


TORCH_SRC = r"""
import sys, time, torch
torch.set_num_threads(int(sys.argv[1])); budget = float(sys.argv[2]); bf16_fast = sys.argv[3] == "1"
for spec in sys.argv[4:]:
    b, m, n, k, t = spec.split(","); b, m, n, k = int(b), int(m), int(n), int(k)
    for dt, name in ((torch.float32, "f32"), (torch.bfloat16, "bf16")):
        if name == "bf16" and b * m * n * k > 2**27 and not bf16_fast:
            continue  # torch's bf16 matmul without AVX512-BF16/AMX: ~1 GFLOP/s, minutes per case
        a = torch.rand(b, k, m, dtype=dt).transpose(1, 2) if t[0] == "T" else torch.rand(b, m, k, dtype=dt)
        w = torch.rand(b, n, k, dtype=dt).transpose(1, 2) if t[1] == "T" else torch.rand(b, k, n, dtype=dt)
        if b == 1: a, w = a[0], w[0]
        f = lambda: torch.matmul(a, w)
        f(); t0 = time.perf_counter(); f(); one = time.perf_counter() - t0
        reps = max(1, int(budget / 3 / max(one, 1e-7))); best = cbest = 1e30
        for _ in range(3):
            c0 = time.process_time(); t0 = time.perf_counter()
            for _ in range(reps): f()
            best = min(best, (time.perf_counter() - t0) / reps)
            cbest = min(cbest, (time.process_time() - c0) / reps)
        print(name, t, m, n, k, b, best, cbest, flush=True)
"""


# Oar itself (the build the current environment imports: scripts/dev_env.sh), f32 and bf16.
OAR_SRC = TORCH_SRC.replace("import sys, time, torch", "import sys, time, numpy as np, oar as torch").replace(
    "torch.set_num_threads(int(sys.argv[1]))", "torch.set_num_threads(int(sys.argv[1])) if hasattr(torch, 'set_num_threads') else None").replace(
    "(torch.float32, \"f32\"), (torch.bfloat16, \"bf16\")", "(\"float32\", \"f32\"), (\"bfloat16\", \"bf16\")").replace(
    "torch.rand(b, k, m, dtype=dt).transpose(1, 2)", "torch.rand([b, k, m]).astype(dt).transpose([0, 2, 1])").replace(
    "torch.rand(b, m, k, dtype=dt)", "torch.rand([b, m, k]).astype(dt)").replace(
    "torch.rand(b, n, k, dtype=dt).transpose(1, 2)", "torch.rand([b, n, k]).astype(dt).transpose([0, 2, 1])").replace(
    "torch.rand(b, k, n, dtype=dt)", "torch.rand([b, k, n]).astype(dt)")


def run_one(exe_or_torch, env_extra, threads, budget, specs):
    cpus = ",".join(str(i) for i in range(threads))
    env = dict(os.environ)
    for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[v] = str(threads)
    env.update(env_extra)
    fast = int(bool({"avx512_bf16", "amx_bf16"} & peak.cpu_flags()))
    if exe_or_torch == "torch":
        cmd = [TORCH_PY, "-c", TORCH_SRC, str(threads), str(budget), str(fast), *specs]
    elif exe_or_torch == "oar":
        cmd = [sys.executable, "-c", OAR_SRC, str(threads), str(budget), "1", *specs]
    else:
        cmd = [exe_or_torch, str(budget), *specs]
    out = subprocess.run(["taskset", "-c", cpus, *cmd], env=env, capture_output=True, text=True)
    res = {}
    if out.returncode != 0:
        print(f"[gemm_backends] {exe_or_torch} failed: {out.stderr[-500:]}", file=sys.stderr)
    for line in out.stdout.splitlines():
        if len(line.split()) != 8:
            continue
        what, tr, m, n, k, b, s, c = line.split()
        # seconds per call by the wall clock, and CPU seconds per call (all threads)
        res[(what, int(b), int(m), int(n), int(k), tr)] = (float(s), float(c))
    return res


def report(res, names=None, threads=None):
    """Markdown tables: one per dtype and thread count, cases down, backends across."""
    rows, peaks = res["rows"], {int(k): v for k, v in res["peaks"].items()}
    names = names or list(dict.fromkeys(r["backend"] for r in rows))
    threads = threads or sorted(peaks)
    for what in ("f32", "f32mm", "bf16", "s8s8", "u8s8", "s8u8"):
        for t in threads:
            have = [n for n in names if any(r["backend"] == n and r["dtype"] == what and r["threads"] == t
                                            for r in rows)]
            if not have:
                continue
            print(f"\n## {what}, {t} thread(s): wall-clock GFLOP/s as % of the {t}-thread FP32 peak "
                  f"({peaks[t]:.1f} GFLOP/s) / GFLOP per CPU-second as % of the 1-core peak ({peaks[1]:.1f})")
            print("| case | " + " | ".join(have) + " |")
            print("|---" * (len(have) + 1) + "|")
            for label, b, m, n, k, tr in CASES:
                cells = []
                for nm in have:
                    r = [r for r in rows if r["backend"] == nm and r["dtype"] == what and r["threads"] == t
                         and (r["batch"], r["M"], r["N"], r["K"], r["trans"]) == (b, m, n, k, tr)]
                    if not r:
                        cells.append("-")
                    elif "pct_core_peak_cpu" in r[0]:
                        cells.append(f"{r[0]['pct_peak']:.0f}% / {r[0]['pct_core_peak_cpu']:.0f}%")
                    else:
                        cells.append(f"{r[0]['pct_peak']:.0f}% ({r[0]['gflops']:.0f})")
                print(f"| {label} | " + " | ".join(cells) + " |")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--budget", type=float, default=0.25, help="seconds per case and library per round")
    ap.add_argument("--out", default=None, help="JSON results file")
    ap.add_argument("--cases", default="", help="only the cases whose label contains one of these (comma list)")
    ap.add_argument("--libs", default="", help="only the backends whose name contains one of these (comma list); "
                    "'oar' adds Oar itself (the build scripts/dev_env.sh points at)")
    ap.add_argument("--report", default=None, help="only print the tables of this JSON results file")
    args = ap.parse_args()
    if args.report:
        with open(args.report) as f:
            report(json.load(f))
        return
    threads = [int(t) for t in args.threads.split(",")]
    info = peak.cpu_info()
    print(f"# CPU: {info}", flush=True)
    peaks = {t: peak.fp32_peak(t) for t in threads}
    print(f"# FP32 FMA peak (bench/peak.py), GFLOP/s: {peaks}", flush=True)
    tmp = tempfile.mkdtemp(prefix="gemm_backends_")
    exes = {}
    want = [w for w in args.libs.split(",") if w]
    cases = [c for c in CASES if not args.cases or any(w in c[0] for w in args.cases.split(","))]
    for name, (cf, lf, env) in backends().items():
        if want and "all" not in want and not any(w in name for w in want):
            continue
        try:
            exes[name] = (build(name, cf, lf, tmp), env)
        except subprocess.CalledProcessError:
            print(f"[gemm_backends] could not build {name}", file=sys.stderr)
    if "oar" in want:
        exes["Oar (this build)"] = ("oar", {})
    if os.path.exists(TORCH_PY) and (not want or "torch" in want or "all" in want):
        exes["torch 2.15 (PyPI)"] = ("torch", {})
    best = {}  # (backend, threads, key) -> seconds

    def save():
        rows = []
        for (name, t, (what, b, m, n, k, tr)), (s, c) in sorted(best.items()):
            gf = 2.0 * b * m * n * k / s / 1e9
            # per CPU-second: what the library does with the core time it gets (on a
            # shared machine the wall clock also counts time the process was descheduled)
            gfc = 2.0 * b * m * n * k / c / 1e9
            rows.append(dict(backend=name, threads=t, dtype=what, batch=b, M=m, N=n, K=k, trans=tr, seconds=s,
                             cpu_seconds=c, gflops=gf, pct_peak=100 * gf / peaks[t], gflops_per_cpu_s=gfc,
                             pct_core_peak_cpu=100 * gfc / peaks[1]))
        if args.out:
            with open(args.out, "w") as f:
                json.dump(dict(cpu=info, peaks=peaks, rows=rows), f, indent=1)
        return rows

    # Interleaved finely: every backend runs one case before any runs the next, so load
    # changes on the shared machine hit all backends alike; the best of the rounds is kept.
    for r in range(args.rounds):
        for t in threads:
            for _, b, m, n, k, tr in cases:
                for name, (exe, env) in exes.items():
                    for key, (s, c) in run_one(exe, env, t, args.budget, [f"{b},{m},{n},{k},{tr}"]).items():
                        k2 = (name, t, key)
                        old = best.get(k2, (1e30, 1e30))
                        best[k2] = (min(old[0], s), min(old[1], c))
                save()
            print(f"# round {r + 1}, {t} thread(s) done {time.strftime('%H:%M:%S')}", flush=True)
    rows = save()
    report(dict(cpu=info, peaks=peaks, rows=rows), list(exes), threads)

if __name__ == "__main__":
    main()
