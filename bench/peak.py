"""The machine's FMA peak, measured: FP32 (AVX2, AVX-512) and bf16 (AVX512_BF16
vdpbf16ps, AMX tdpbf16ps) throughput per core, from the ISA loops in peak_kernels.c.

    python3 bench/peak.py [--threads 1,2] [--json]

peak_kernels.c is compiled with the system C compiler on first use (cached in the temp
directory); only the loops the CPU reports (cpuid flags, as Linux filters them for OS
support) are run. The bench suites divide GEMM/conv throughput by `fp32_peak(threads)`.
"""
import argparse
import ctypes
import hashlib
import json
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(BENCH, "peak_kernels.c")

# loop name -> (cpuid flags it needs, kind)
LOOPS = {
    "fma_avx2": (("avx2", "fma"), "fp32"),
    "fma_avx512": (("avx512f",), "fp32"),
    "dot_avx512bf16": (("avx512f", "avx512_bf16"), "bf16"),
    "tdp_amxbf16": (("amx_tile", "amx_bf16"), "bf16"),
}


def _cpuinfo(key):
    """The first /proc/cpuinfo line's value for `key` (every core reports the same), or None."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.split(":", 1)[0].strip() == key:
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def cpu_flags():
    """The CPU's feature flags: cpuid's, as the kernel filters them for OS support."""
    return set((_cpuinfo("flags") or "").split())


def cpu_model():
    return _cpuinfo("model name") or platform.processor() or platform.machine()


def cpu_isa(flags=None):
    """The vector ISA levels present, widest last, e.g. ['avx2', 'avx512', 'avx512_bf16', 'amx']."""
    flags = cpu_flags() if flags is None else flags
    isa = []
    if {"avx2", "fma"} <= flags:
        isa.append("avx2")
    if {"avx512f", "avx512bw", "avx512dq", "avx512vl"} <= flags:
        isa.append("avx512")
    for f in ("avx512_bf16", "avx512_vnni", "avx_vnni"):
        if f in flags:
            isa.append(f)
    if {"amx_tile", "amx_bf16"} <= flags:
        isa.append("amx")
    return isa


def cpu_info():
    """What every results file records about the machine."""
    return {"cpu_model": cpu_model(), "cpu_isa": cpu_isa(), "cpus": os.cpu_count()}


def _library():
    with open(SRC, "rb") as f:
        tag = hashlib.sha1(f.read()).hexdigest()[:12]
    path = os.path.join(tempfile.gettempdir(), f"oar_peak_{os.getuid()}_{tag}.so")
    if not os.path.exists(path):
        tmp = f"{path}.{os.getpid()}"
        cc = os.environ.get("CC", "cc")
        subprocess.run([cc, "-O2", "-shared", "-fPIC", "-o", tmp, SRC], check=True)
        os.replace(tmp, path)
    lib = ctypes.CDLL(path)
    for name in LOOPS:
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = ctypes.c_double, [ctypes.c_int64, ctypes.POINTER(ctypes.c_float)]
    lib.amx_request.restype = ctypes.c_int
    return lib


def _rate(fn, threads, seconds, runs=30):
    """FLOP/s of `threads` concurrent calls (ctypes drops the GIL), best of `runs` short runs:
    on a shared machine the best short window is the one least disturbed by other work."""
    sink = (ctypes.c_float * 16)()
    iters = 1 << 12
    while True:  # calibrate one call to ~seconds
        t0 = time.perf_counter()
        fn(iters, sink)
        dt = time.perf_counter() - t0
        if dt > seconds / 4:
            break
        iters *= 4
    iters = max(1, int(iters * seconds / dt))
    best = 0.0
    for _ in range(runs):
        flops = [0.0] * threads

        def run(k):
            flops[k] = fn(iters, (ctypes.c_float * 16)())

        ts = [threading.Thread(target=run, args=(k,)) for k in range(threads)]
        t0 = time.perf_counter()
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        best = max(best, sum(flops) / (time.perf_counter() - t0))
    return best


def measure(threads=1, seconds=0.02):
    """{loop: GFLOP/s} for the loops this CPU runs, plus fp32_peak/bf16_peak (the best of each)
    and fp32_loop/bf16_loop (the widest loop of each kind, the one the dispatch picks). A run
    forced to AVX2 (BENCH_ISA=avx2, bench/common.py's --isa) runs only the AVX2 loop: its
    peak is the one an AVX2 machine's GEMM is judged against."""
    flags, lib = cpu_flags(), _library()
    if os.environ.get("BENCH_ISA") == "avx2":
        flags = {f for f in flags if not f.startswith(("avx512", "amx"))}
    out = {}
    for name, (need, _) in LOOPS.items():
        if not set(need) <= flags:
            continue
        if name == "tdp_amxbf16" and lib.amx_request() != 0:
            continue  # the kernel refused the tile state
        out[name] = _rate(getattr(lib, name), threads, seconds) / 1e9
    for kind in ("fp32", "bf16"):
        # `<kind>_loop`: the run-time dispatch, the widest loop this CPU runs (LOOPS is
        # ordered narrow to wide). `<kind>_peak`: the fastest of the loops run, so that a CPU
        # whose wide loop is slower (a lower AVX-512 clock) is not given a lower ceiling.
        # Zen 4 runs a 512-bit FMA as two 256-bit halves: its AVX2 and AVX-512 loops tie.
        vals = {n: out[n] for n in LOOPS if n in out and LOOPS[n][1] == kind}
        out[f"{kind}_peak"] = max(vals.values()) if vals else None
        out[f"{kind}_loop"] = list(vals)[-1] if vals else None
    if out["bf16_peak"] is not None and out["fp32_peak"] is not None:
        # bf16 widens exactly to float32, so a bf16 product can also run as float32 FMAs (Oar
        # does where they are faster: Note [bf16 dot or widened float]); an Emerald Rapids
        # core without AMX runs vdpbf16ps at half its FMA flop rate. The ceiling is the faster.
        out["bf16_peak"] = max(out["bf16_peak"], out["fp32_peak"])
    return out


def fp32_rate_now(threads=1):
    """FLOP/s of the FP32 FMA loop this CPU dispatches to (fp32_loop), best of 3 runs of ~10 ms
    on `threads` cores: the peak at this moment, for a figure measured just before it (a GEMM's
    "paired" share of the peak; bench/gemm_paths.py, bench/bench_core.py)."""
    flags = cpu_flags()
    avx512 = "avx512f" in flags and os.environ.get("BENCH_ISA") != "avx2"
    return _rate(getattr(_library(), "fma_avx512" if avx512 else "fma_avx2"), threads, 0.01, runs=3)


_cache = {}


def _measured(threads):
    if threads not in _cache:
        _cache[threads] = measure(threads)
    return _cache[threads]


def fp32_peak(threads=1):
    """Measured FP32 FMA peak in GFLOP/s for `threads` cores (cached per process)."""
    return _measured(threads)["fp32_peak"]


def bf16_peak(threads=1):
    """Measured bf16 peak in GFLOP/s for `threads` cores: the fastest bf16 dot-product loop or,
    where faster, the FP32 FMA peak (bf16 widens exactly to float32); None without bf16
    instructions (cached per process)."""
    return _measured(threads)["bf16_peak"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", default="1", help="comma list of thread counts")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args()
    res = {"machine": cpu_info(), "gflops": {}}
    for t in [int(x) for x in args.threads.split(",")]:
        res["gflops"][t] = measure(t)
    if args.json:
        print(json.dumps(res))
        return
    m = res["machine"]
    print(f"{m['cpu_model']}: {', '.join(m['cpu_isa']) or 'no AVX2'}; {m['cpus']} cpus")
    for t, r in res["gflops"].items():
        print(f"{t} thread(s): " + ", ".join(f"{k} {v:.1f}" for k, v in r.items() if isinstance(v, float))
              + " GFLOP/s; dispatched loops: " + ", ".join(f"{k} {r[k + '_loop']}" for k in ("fp32", "bf16")))


if __name__ == "__main__":
    sys.exit(main())
