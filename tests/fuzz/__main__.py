"""Oar's API fuzzer (issue 16). See docs/notes/robustness.md.

    python -m tests.fuzz --time 120                      # CI: ~2 minutes, today's seed
    python -m tests.fuzz --calls 100000 --seeds 5        # the long run
    python -m tests.fuzz --files --mutations 10000       # mutated checkpoints, models, IR

Exit status 1 when a call crashed or hung (reproducers under --findings)."""
import argparse
import datetime
import json
import os
import random
import sys
import time

# Before oar loads: workers are forked from this process, and a thread pool that exists at
# fork time (OpenMP, OpenBLAS) would be copied without its threads.
os.environ["OMP_NUM_THREADS"] = "1"
os.environ["OPENBLAS_NUM_THREADS"] = "1"
os.environ.setdefault("OAR_LOG_LEVEL", "error")


def _exec_with_heap_checks():
    """Re-runs the fuzzer under glibc's checking malloc (libc_malloc_debug, glibc >= 2.34:
    MALLOC_CHECK_=3 puts a guard byte after every block and checks the chunk header on
    free, aborting on damage), with Oar's allocator cache off, so a block goes back to
    malloc when its tensor dies, right after the call that overran it, and the finding
    names that call. Without both, a damaged block waited in the cache until an unrelated
    call emptied it (bincount writing before its buffer surfaced as an abort in
    oar.zeros(10**12) 168 calls later). OAR_FUZZ_HEAP_CHECKS=0 runs with the plain heap."""
    if os.environ.get("OAR_FUZZ_HEAP_CHECKS") == "0" or os.environ.get("MALLOC_CHECK_"):
        return
    if "libasan" in os.environ.get("LD_PRELOAD", ""):
        # Under AddressSanitizer (scripts/sanitize.sh) its allocator checks every block, and its
        # runtime must stay first in LD_PRELOAD; only the cache goes, for the same reason as above.
        os.environ["FLAGS_oar_allocator_cache_limit_mb"] = "0"
        return
    import sysconfig
    lib = os.path.join("/usr/lib", sysconfig.get_config_var("MULTIARCH") or "", "libc_malloc_debug.so.0")
    if not os.path.exists(lib):
        return
    preload = " ".join(filter(None, [lib, os.environ.get("LD_PRELOAD")]))
    env = dict(os.environ, LD_PRELOAD=preload, MALLOC_CHECK_="3", FLAGS_oar_allocator_cache_limit_mb="0")
    os.execve(sys.executable, sys.orig_argv, env)


if __name__ == "__main__":
    _exec_with_heap_checks()


def today_seed():
    return int(datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d"))


def api_jobs(targets, seed, calls):
    """(call number, target, recipe) for `calls` calls: the targets in a seeded order,
    round-robin, so every callable is reached once per len(targets) calls."""
    from .values import recipe
    order = list(targets)
    random.Random(seed).shuffle(order)
    for i in range(calls):
        t = order[i % len(order)]
        src = recipe(t, random.Random(f"{seed}:{i}"))
        yield (f"s{seed}c{i}", t.qualname, src)


def run_api(args):
    from . import targets as tg
    from .pool import Pool
    targets = tg.discover()
    pool = Pool(args.workers, args.timeout, args.findings)
    t0 = time.monotonic()
    stop_at = t0 + args.time if args.time else float("inf")
    seeds = [args.seed + k for k in range(args.seeds)]
    per_seed = -(-args.calls // len(seeds)) if args.calls else 10**12
    done = 0
    for s in seeds:
        if time.monotonic() >= stop_at:
            break
        done += pool.run(api_jobs(targets, s, per_seed), stop_at)
    elapsed = time.monotonic() - t0
    pool.close()
    pool.confirm(timeout=max(30.0, 2 * args.timeout))
    names = {t.qualname for t in targets}
    report = {
        "seeds": seeds, "calls": done, "seconds": round(elapsed, 1),
        "calls_per_s": round(done / elapsed, 1) if elapsed else 0.0,
        "callables": len(names), "reached": len(pool.reached & names),
        "reached_with_a_result": len(pool.ok_targets & names),
        "not_reached": sorted(names - pool.reached) if args.calls >= len(names) else "n/a",
        "skipped_on_purpose": sorted(tg.SKIP),
        "crashes": sum(not f["kind"].startswith("hang") for f in pool.findings),
        "hangs": sum(f["kind"].startswith("hang") for f in pool.findings),
        "outcomes": dict(pool.outcomes.most_common()),
        "findings": [{k: f.get(k) for k in ("kind", "target", "source", "file", "alone",
                                             "with_history")} for f in pool.findings],
    }
    return report


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int, default=0, help="calls in all (0: until --time)")
    ap.add_argument("--time", type=float, default=0, help="stop after this many seconds")
    ap.add_argument("--seed", type=int, default=today_seed(), help="first seed (default: today, YYYYMMDD)")
    ap.add_argument("--seeds", type=int, default=1, help="seeds seed..seed+N-1, calls split evenly")
    ap.add_argument("--workers", type=int, default=max(1, min(4, os.cpu_count() or 1)))
    ap.add_argument("--timeout", type=float, default=10.0, help="seconds before a call is a hang")
    ap.add_argument("--findings", default="fuzz-findings", help="folder for reproducers and report.json")
    ap.add_argument("--files", action="store_true", help="fuzz the file loaders with mutated files")
    ap.add_argument("--mutations", type=int, default=300, help="with --files: mutations per format")
    args = ap.parse_args(argv)
    if not args.calls and not args.time and not args.files:
        args.time = 120.0
    if args.files:
        from .files import run_files
        report = run_files(args)
    else:
        report = run_api(args)
    os.makedirs(args.findings, exist_ok=True)
    with open(os.path.join(args.findings, "report.json"), "w") as f:
        json.dump(report, f, indent=1)
    short = {k: v for k, v in report.items() if k not in ("skipped_on_purpose", "outcomes")}
    print(json.dumps(short, indent=1))
    return 1 if report["crashes"] or report["hangs"] else 0


if __name__ == "__main__":
    sys.exit(main())
