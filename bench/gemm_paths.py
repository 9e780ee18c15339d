"""GEMM paths at 1 thread, pinned to one CPU: float32 through Oar's default route and each path
it routes to (OAR_SGEMM=oar|onednn|openblas: Oar's AVX-512 kernel, oneDNN, OpenBLAS) and torch, bf16 through each of Oar's paths (OAR_BF16_GEMM=amx|onednn,
and the default route) and torch; each a fresh child process, the paths interleaved inside a
round, best and median of 9 calls as GFLOP/s and % of bench/peak.py's measured peak. A float32
path's child also runs bench/peak.py's FMA loop right after each of its calls, and reports the
median over the 9 pairs of call / loop ("paired %"): the share of the peak at the same moment.

    python3 bench/gemm_paths.py [--sizes 1024,2048,4096] [--rounds 3] [--cpu 3] [--torch-python PY]

Written for machines whose speed drifts between processes (a VM whose vCPUs share cores with
other tenants: the device host, docs/notes/cpu_speed_steps.md "Stop 45"): the rounds show the
drift, so compare paths inside a round. The clock drifts inside a process too (the FMA loop read
160-196 GFLOP/s within an hour on the Xeon of "Stop 73"), hence the paired percentage.
"""
import argparse
import json
import os
import subprocess
import sys
import time

BENCH = os.path.dirname(os.path.abspath(__file__))


def child(fw, dtype, n):
    import numpy as np
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((n, n), dtype=np.float32) for _ in range(2))
    if fw == "torch":
        import torch
        torch.set_num_threads(1)
        x, y, mm = torch.from_numpy(a).to(getattr(torch, dtype)), torch.from_numpy(b).to(getattr(torch, dtype)), torch.matmul
    else:
        import oar
        oar.set_num_threads(1)
        x, y, mm = oar.to_tensor(a).astype(dtype), oar.to_tensor(b).astype(dtype), oar.matmul
    sys.path.insert(0, BENCH)
    import peak
    mm(x, y)
    ts, paired = [], []
    for _ in range(9):
        s = time.perf_counter()
        mm(x, y)
        ts.append(time.perf_counter() - s)
        if dtype == "float32":  # the FMA loop this CPU's dispatch picks, timed after each call
            paired.append(2 * n**3 / ts[-1] / peak.fp32_rate_now(1))
    ts.sort()
    paired.sort()
    print(json.dumps([2 * n**3 / ts[0] / 1e9, 2 * n**3 / ts[len(ts) // 2] / 1e9,
                      100 * paired[len(paired) // 2] if paired else None]))


PATHS = [  # name, framework, dtype, environment
    ("f32 default", "oar", "float32", {}),
    ("f32 oar-avx512", "oar", "float32", {"OAR_SGEMM": "oar"}),
    ("f32 onednn", "oar", "float32", {"OAR_SGEMM": "onednn"}),
    ("f32 openblas", "oar", "float32", {"OAR_SGEMM": "openblas"}),
    ("f32 torch", "torch", "float32", {}),
    ("bf16 default", "oar", "bfloat16", {}),
    ("bf16 amx", "oar", "bfloat16", {"OAR_BF16_GEMM": "amx"}),
    ("bf16 onednn", "oar", "bfloat16", {"OAR_BF16_GEMM": "onednn"}),
    ("bf16 torch", "torch", "bfloat16", {}),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="2048")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cpu", type=int, default=0, help="the CPU every child is pinned to")
    ap.add_argument("--paths", default="", help="comma-separated name prefixes of the paths to run (default: all)")
    ap.add_argument("--torch-python", default=os.environ.get("BENCH_TORCH_PYTHON", sys.executable))
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args.child[0], args.child[1], int(args.child[2]))
    sys.path.insert(0, BENCH)
    import peak
    fp32, bf16 = peak.fp32_peak(1), peak.bf16_peak(1)
    amx = "amx_bf16" in peak.cpu_flags()
    print(f"{peak.cpu_model()}; fp32 peak {fp32:.1f}, bf16 peak {bf16 or 0:.1f} GFLOP/s (1 core)")
    env = dict(os.environ, OMP_NUM_THREADS="1")
    for n in [int(s) for s in args.sizes.split(",")]:
        for r in range(args.rounds):
            cells = []
            for name, fw, dtype, extra in PATHS:
                if args.paths and not any(name.startswith(p) for p in args.paths.split(",")):
                    continue
                if (dtype == "bfloat16" and not bf16) or (name == "bf16 amx" and not amx):
                    continue  # no bf16 instructions; OAR_BF16_GEMM=amx without AMX is the default route
                if name == "f32 oar-avx512" and "avx512f" not in peak.cpu_flags():
                    continue  # Oar's AVX-512 kernel; OAR_SGEMM=oar without AVX-512 is oneDNN
                py = args.torch_python if fw == "torch" else sys.executable
                p = subprocess.run(["taskset", "-c", str(args.cpu), py, __file__, "--child", fw, dtype, str(n)],
                                   env=dict(env, **extra), capture_output=True, text=True)
                try:
                    best, med, paired = json.loads(p.stdout.strip().splitlines()[-1])
                    pk = fp32 if dtype == "float32" else bf16
                    pair = f", paired {paired:.0f}%" if paired is not None else ""
                    cells.append(f"{name} {best:.0f}/{med:.0f} ({100 * best / pk:.0f}%{pair})")
                except (ValueError, IndexError):
                    cells.append(f"{name} failed: {p.stderr.strip()[-200:]}")
            print(f"{n}^3 round {r + 1}, best/median GFLOP/s (best % of the peak; paired: median % of the loop run after each call): " + "; ".join(cells), flush=True)


if __name__ == "__main__":
    main()
