"""Shared driver, timing and table code for the Oar-vs-PyTorch benchmark suites.

A suite is bench/bench_<suite>.py that defines
    METRICS = [(name, unit, better), ...]   # better: "low" or "high"
    def cases(fw, mod) -> {case: fn}         # in a worker; mod is the imported oar or torch,
                                            # fn() runs one workload and returns {metric: value}
and ends with `common.main(__file__, METRICS, cases)`. A failing case only loses its metrics.

The driver (project python3, which has oar) starts one worker subprocess per framework
and thread count: oar under the driver's own python, torch under bench/.venv/bin/python.
Each worker prints one JSON line; the driver prints oar, torch and oar/torch per metric
and writes bench/results/<suite>.json.
"""
import argparse
import ctypes
import json
import os
import statistics
import subprocess
import sys
import time
import traceback

import peak

BENCH = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH)
FRAMEWORKS = ("oar", "torch")
# The clock of bench/bench_pair: wall time, or with BENCH_CLOCK=cpu this process's CPU time
# (all its threads). CPU time is less moved by other jobs on a shared machine (a descheduled
# process does not count), but it also counts a thread pool's spinning idle workers: use it
# at 1 thread only (bench_builds.py does).
CLOCK = time.process_time if os.environ.get("BENCH_CLOCK") == "cpu" else time.perf_counter


# ---------------------------------------------------------------- forced ISA
# `--isa avx2` (or BENCH_ISA=avx2, which bench/run.sh sets from its own --isa) runs both
# frameworks on one vector ISA, to measure an AVX2 machine's code paths on an AVX-512 one
# (Note [CPU dispatch], docs/notes/cpu_dispatch.md). Each variable caps one library of one
# framework or both: Oar's ISA copies, torch's ATen copies, oneDNN (2.6 in Oar, 3.x in
# torch; DNNL_ is 2.x's name, ONEDNN_ 3.x's), OpenBLAS's run-time kernel choice (Oar's
# scipy-openblas32) and MKL (torch's sgemm). The driver sets them in its own environment
# before any worker starts, so every worker and bench/peak.py (its fp32_peak follows the
# cap) sees them; the workers report what each library then runs (`isa` of the results).
ISA_ENV = {
    "avx2": {"OAR_CPU_CAPABILITY": "avx2", "ATEN_CPU_CAPABILITY": "avx2", "DNNL_MAX_CPU_ISA": "AVX2",
             "ONEDNN_MAX_CPU_ISA": "AVX2", "OPENBLAS_CORETYPE": "Haswell", "MKL_ENABLE_INSTRUCTIONS": "AVX2"},
    "avx512": {"OAR_CPU_CAPABILITY": "avx512", "ATEN_CPU_CAPABILITY": "avx512", "DNNL_MAX_CPU_ISA": "AVX512_CORE",
               "ONEDNN_MAX_CPU_ISA": "AVX512_CORE", "OPENBLAS_CORETYPE": "SkylakeX",
               "MKL_ENABLE_INSTRUCTIONS": "AVX512"},
}


def forced_isa():
    """The ISA the run is forced to ("avx2", "avx512"), or None for the CPU's own."""
    return os.environ.get("BENCH_ISA") or None


def force_isa(isa):
    """Caps both frameworks (and bench/peak.py) to `isa` for this process and its workers;
    None or "" keeps the CPU's own. Raises ValueError naming an unknown ISA."""
    if not isa:
        return
    if isa not in ISA_ENV:
        raise ValueError(f"bench --isa: unknown ISA {isa!r}; known: {', '.join(ISA_ENV)}")
    if isa not in peak.cpu_isa():
        raise ValueError(f"bench --isa: this CPU ({peak.cpu_model()}) has no {isa} (it has {peak.cpu_isa()})")
    os.environ.update(ISA_ENV[isa], BENCH_ISA=isa)


force_isa(forced_isa())  # BENCH_ISA from bench/run.sh or the caller


def forced_note():
    """", forced to avx2" for the machine line of a forced run, else ""."""
    return f", forced to {forced_isa()}" if forced_isa() else ""


def add_isa_argument(ap):
    ap.add_argument("--isa", choices=sorted(ISA_ENV), default=forced_isa(),
                    help="force both frameworks to this vector ISA (default: the CPU's own)")


def effective_isa(fw, mod):
    """What the worker's libraries run: the ATen or Oar kernel copy, and Oar's oneDNN ISA
    (torch links its oneDNN 3.x statically: ONEDNN_VERBOSE=1 shows its ISA)."""
    if fw == "torch":
        return {"kernels": mod.backends.cpu.get_cpu_capability()}
    out = {}
    core, onednn = ctypes_library("liboar_core"), ctypes_library("libdnnl")
    blas = ctypes_library("libscipy_openblas.")  # Oar's scipy-openblas32 (numpy's is ..64_)
    if core is not None:
        core.oar_cpu_capability.restype = ctypes.c_char_p
        out["kernels"] = core.oar_cpu_capability().decode()
    if onednn is not None:
        out["onednn"] = ONEDNN_ISA.get(onednn.dnnl_get_effective_cpu_isa(), "?")
    if blas is not None:
        blas.scipy_openblas_get_corename.restype = ctypes.c_char_p
        out["openblas"] = blas.scipy_openblas_get_corename().decode()
    return out


# dnnl_cpu_isa_t of oneDNN 2.6 (the one Oar links; dnnl_types.h; 3.x renumbered them)
ONEDNN_ISA = {0x0: "all", 0x1: "sse41", 0x3: "avx", 0x7: "avx2", 0x407: "avx2_vnni", 0x27: "avx512_core",
              0x67: "avx512_core_vnni", 0xE7: "avx512_core_bf16", 0x3E7: "avx512_core_amx"}


def ctypes_library(stem):
    """The mapped shared library whose file name starts with `stem` (from /proc/self/maps),
    opened with ctypes, or None."""
    with open("/proc/self/maps") as f:
        paths = {line.split()[-1] for line in f if f"/{stem}" in line}
    paths = [p for p in paths if os.path.basename(p).startswith(stem)]
    return ctypes.CDLL(sorted(paths)[0]) if paths else None


# ---------------------------------------------------------------- timing
def _calls_per_repeat(fn, target, warmup):
    """After `warmup` calls: how many calls of fn() last about `target` seconds."""
    for _ in range(warmup):
        fn()
    n = 1
    while True:
        t0 = CLOCK()
        for _ in range(n):
            fn()
        dt = CLOCK() - t0
        if dt >= target / 10 or n >= 1 << 20:
            break
        n *= 2
    return max(1, round(n * target / max(dt, 1e-9)))


def bench(fn, repeat=7, target=0.1, warmup=3):
    """Median seconds per call of fn(): warmup, pick n calls per repeat so that one
    repeat lasts about `target` seconds, then take the median over `repeat` repeats."""
    n = _calls_per_repeat(fn, target, warmup)
    times = []
    for _ in range(repeat):
        t0 = CLOCK()
        for _ in range(n):
            fn()
        times.append((CLOCK() - t0) / n)
    return statistics.median(times)


def bench_pair(fa, fb, repeat=7, target=0.1, warmup=3):
    """Median seconds per call of fa() and of fb(), their repeats interleaved (a, b, a,
    b, ...) so that a drift of the machine (the other vCPU getting busy, clocks) lands on
    both alike: their ratio is what a comparison of two ways to run one model reports."""
    calls = [_calls_per_repeat(fn, target, warmup) for fn in (fa, fb)]
    times = ([], [])
    for _ in range(repeat):
        for i, fn in enumerate((fa, fb)):
            t0 = CLOCK()
            for _ in range(calls[i]):
                fn()
            times[i].append((CLOCK() - t0) / calls[i])
    return statistics.median(times[0]), statistics.median(times[1])


# ---------------------------------------------------------------- frameworks
def import_framework(fw, threads):
    """Import torch or oar in a worker, with `threads` intra-op threads. Returns the module."""
    if fw == "torch":
        import torch
        torch.set_num_threads(threads)
        return torch
    try:
        import oar
    except ImportError:  # not installed: use the in-tree package under python/
        sys.path.insert(0, os.path.join(REPO, "python"))
        import oar
    if hasattr(oar, "set_num_threads"):  # else OMP_NUM_THREADS from the driver applies
        oar.set_num_threads(threads)
    return oar


def worker(fw, threads, cases):
    out = {"framework": fw, "threads": threads, "results": {}, "errors": {}}
    try:
        mod = import_framework(fw, threads)
        out["version"], out["module"] = getattr(mod, "__version__", "?"), mod.__file__
        out["isa"] = effective_isa(fw, mod)
        out["results"], out["errors"] = run_cases(cases(fw, mod))
    except Exception as e:  # import failure, or anything outside a single workload
        traceback.print_exc()
        out["error"] = f"{type(e).__name__}: {e}"
    print(json.dumps(out), flush=True)


def run_cases(cases):
    """Run {name: callable -> {metric: value}} one by one; a failing case is recorded, not fatal."""
    results, errors = {}, {}
    for name, case in cases.items():
        try:
            results.update(case())
        except Exception as e:
            traceback.print_exc()
            errors[name] = f"{type(e).__name__}: {e}"
    return results, errors


# ---------------------------------------------------------------- driver
def python_for(fw):
    if fw == "torch":
        return os.environ.get("BENCH_TORCH_PYTHON", os.path.join(BENCH, ".venv", "bin", "python"))
    return os.environ.get("BENCH_OAR_PYTHON", sys.executable)


def spawn(script, fw, threads, timeout):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads),
               OPENBLAS_NUM_THREADS=str(threads))
    cmd = [python_for(fw), script, "--worker", fw, "--threads", str(threads)]
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as e:
        return {"error": f"{type(e).__name__}: {e}"}
    for line in reversed(p.stdout.splitlines()):
        if line.startswith("{"):
            res = json.loads(line)
            if res.get("error") or res.get("errors"):
                res["stderr_tail"] = p.stderr[-2000:]
            return res
    return {"error": f"worker exited {p.returncode} without a result", "stderr_tail": p.stderr[-2000:]}



def run_rounds(script, tag, frameworks, threads_list, rounds, timeout, metrics):
    """Runs the script's workers `rounds` times, alternating the frameworks inside each round
    (the load drifts between jobs: alternating spreads it over both). Returns (per_round,
    runs, versions): per_round[fw][t] is each round's results; runs[fw][t]["results"] holds
    the per-metric medians over the rounds, in print_table's format."""
    per_round = {fw: {t: [] for t in threads_list} for fw in frameworks}
    versions, isas = {}, {}  # isa: what the worker's libraries ran (effective_isa)
    for r in range(rounds):
        for t in threads_list:
            for fw in frameworks:
                print(f"[bench {tag}] round {r + 1}/{rounds} {fw}, {t} thread(s) ...", file=sys.stderr, flush=True)
                res = spawn(script, fw, t, timeout)
                if res.get("error") or res.get("errors"):
                    print(f"[bench {tag}] {fw}: {res.get('error') or res.get('errors')}\n"
                          f"{res.get('stderr_tail', '')}", file=sys.stderr)
                versions[fw] = res.get("version", versions.get(fw, "missing"))
                isas[fw] = res.get("isa", isas.get(fw))
                per_round[fw][t].append(res.get("results", {}))
    runs = {fw: {t: {"results": {}, "rounds": per_round[fw][t], "version": versions[fw], "isa": isas[fw]}
                 for t in threads_list} for fw in frameworks}
    for fw in frameworks:
        for t in threads_list:
            for name, _, _ in metrics:
                vals = [rr[name] for rr in per_round[fw][t] if name in rr]
                if vals:
                    runs[fw][t]["results"][name] = statistics.median(vals)
    return per_round, runs, versions



def report(suite, metrics, runs, threads_list, versions, rounds, out=None, extra=None):
    """Prints the machine line and the table of a rounds run (run_rounds) and writes its
    results JSON (default bench/results/<suite>.json, plus the `extra` fields)."""
    machine = peak.cpu_info()
    print(f"\nsuite {suite}: {machine['cpu_model']} ({', '.join(machine['cpu_isa'])}{forced_note()}), {machine['cpus']} cpus, "
          f"load {os.getloadavg()[0]:.1f}; {rounds} interleaved round(s); "
          + ", ".join(f"{fw} {v}" for fw, v in versions.items()))
    print_table(metrics, runs, threads_list)
    out = out or os.path.join(BENCH, "results", f"{suite}.json")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        json.dump({"suite": suite, "time": time.strftime("%Y-%m-%dT%H:%M:%S"), **machine,
                   "forced_isa": forced_isa(),
                   "metrics": [{"name": n, "unit": u, "better": b} for n, u, b in metrics],
                   "runs": {fw: {str(t): r for t, r in by_t.items()} for fw, by_t in runs.items()},
                   **(extra or {})}, f, indent=1)
    print(f"\nwrote {os.path.relpath(out)}")


def fmt(v):
    if v is None:
        return "-"
    return f"{v:.3g}" if abs(v) < 100 else f"{v:.0f}"


def print_table(metrics, runs, threads_list):
    head = f"{'metric':<28}{'unit':>8}{'better':>7}{'thr':>4}{'oar':>10}{'torch':>10}{'oar/torch':>11}"
    print(head + "\n" + "-" * len(head))
    for name, unit, better in metrics:
        for t in threads_list:
            o = runs["oar"][t]["results"].get(name) if "oar" in runs else None
            p = runs["torch"][t]["results"].get(name) if "torch" in runs else None
            ratio = fmt(o / p) if o is not None and p else "-"
            print(f"{name:<28}{unit:>8}{better:>7}{t:>4}{fmt(o):>10}{fmt(p):>10}{ratio:>11}")


def main(script, metrics, cases, derive=None):
    """Worker or driver entry point of a suite; derive(runs, threads_list) may add metrics
    computed across frameworks before the table is printed."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--frameworks", default="oar,torch", help="comma list of oar,torch")
    ap.add_argument("--threads", default="1,2", help="comma list of thread counts")
    ap.add_argument("--timeout", type=float, default=900, help="seconds per worker")
    ap.add_argument("--out", help="result JSON (default bench/results/<suite>.json)")
    ap.add_argument("--worker", choices=FRAMEWORKS, help=argparse.SUPPRESS)
    add_isa_argument(ap)
    args = ap.parse_args()
    if args.worker:
        return worker(args.worker, int(args.threads), cases)
    force_isa(args.isa)

    suite = os.path.basename(script)[len("bench_"):-len(".py")]
    frameworks = [f for f in args.frameworks.split(",") if f]
    threads_list = [int(t) for t in args.threads.split(",")]
    runs = {}
    for fw in frameworks:
        runs[fw] = {}
        for t in threads_list:
            print(f"[bench {suite}] {fw}, {t} thread(s) ...", file=sys.stderr, flush=True)
            res = spawn(os.path.abspath(script), fw, t, args.timeout)
            res.setdefault("results", {})
            if res.get("error"):
                print(f"[bench {suite}] {fw} MISSING ({res['error']})\n{res.get('stderr_tail', '')}",
                      file=sys.stderr)
            for case, err in res.get("errors", {}).items():
                print(f"[bench {suite}] {fw}: {case} failed: {err}", file=sys.stderr)
            runs[fw][t] = res
    if derive:
        derive(runs, threads_list)
    machine = peak.cpu_info()
    print(f"\nsuite {suite}: {machine['cpu_model']} ({', '.join(machine['cpu_isa'])}{forced_note()}), "
          f"{machine['cpus']} cpus; "
          + ", ".join(f"{fw} {runs[fw][threads_list[0]].get('version', 'missing')}" for fw in runs))
    print_table(metrics, runs, threads_list)
    out = args.out or os.path.join(BENCH, "results", f"{suite}.json")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        json.dump({"suite": suite, "time": time.strftime("%Y-%m-%dT%H:%M:%S"), **machine,
                   "forced_isa": forced_isa(),
                   "metrics": [{"name": n, "unit": u, "better": b} for n, u, b in metrics],
                   "runs": {fw: {str(t): r for t, r in by_t.items()} for fw, by_t in runs.items()}},
                  f, indent=1)
    print(f"\nwrote {os.path.relpath(out)}")
