"""Two builds of Oar against each other on every Oar figure of `bench/run.sh core|ops|models|jit`.

    python3 bench/bench_builds.py --base-python /path/to/venv/bin/python
        [--python NEW_PYTHON] [--suites core,ops,models,jit] [--cases ops:tanh,jit:train_lenet]
        [--rounds 3] [--threads 1] [--clock cpu|wall] [--out bench/results/builds.json]

The base is another checkout built into its own virtual environment, e.g. the commit
before a change (never the shared python's site-packages):
    git worktree add --detach /tmp/oar-base <commit> && python3 -m venv /tmp/oar-base-venv
    /tmp/oar-base-venv/bin/pip install numpy pyyaml scikit-build-core "pybind11>=3" ninja
    (cd /tmp/oar-base && /tmp/oar-base-venv/bin/pip install --no-build-isolation --no-deps -e .)
The new build is this python's oar (with `source scripts/dev_env.sh BUILD` in the shell:
that build). The base process gets the environment without dev_env.sh's PYTHONPATH and
OAR_* variables, so that it imports its own install; each probe reports the extension
(oar._C) it loaded and the run stops if both builds loaded the same one. (Without
dev_env.sh's SKBUILD_EDITABLE_SKIP, the shared python's editable install maps oar._C to
its own build even when PYTHONPATH points at a checkout.)

Both builds run THIS directory's bench code: each suite's `oar_cases(oar)` (bench_jit's
with ort=False: the predictor timed alone, no ONNX export or onnxruntime), one fresh
process per build, suite and round, the two builds alternating (base first in odd
rounds, new first in even ones). A case whose code the base cannot run (today's bench
calls an API it lacks) loses its figures there: they are reported "not comparable" with
the error, never estimated. Figures that are not Oar's (the FMA peak loop, onnxruntime,
ratios and percentages derived from other figures) are left out.

Timing: `--clock cpu` (the default at 1 thread) times with the process's CPU time
(common.CLOCK, BENCH_CLOCK=cpu), which other jobs on a shared machine move less than
wall time; at more threads a pool's idle spinning would count, so wall time is the default.

Per figure: base and new (medians over the rounds), and the factor new/base as a time
(for a rate such as GFLOP/s, base/new): > 1 is slower. The factor is the median of the
rounds' factors (each round's two processes ran back to back), with their range; figures
over --flag (1.05) are listed at the end. The results file has the CPU model, every
round's values and the errors.
"""
import argparse
import importlib
import json
import os
import statistics
import subprocess
import sys
import time

import common
import peak

BENCH = os.path.dirname(os.path.abspath(__file__))
SUITES = ("core", "ops", "models", "jit")
SUITE_ARGS = {"jit": {"ort": False}}
# environment variables by which scripts/dev_env.sh points a python at a development build
DEV_ENV = ("PYTHONPATH", "OAR_BUILD", "OAR_EXT_DIR", "SKBUILD_EDITABLE_SKIP")


def oar_metrics(suite):
    """The suite's METRICS that are measured Oar figures: [(name, unit, better)]."""
    mod = importlib.import_module(f"bench_{suite}")
    return [(n, u, b) for n, u, b in mod.METRICS
            if u not in ("x", "%") and not n.endswith(("_ort_ms", "_peak_gflops"))]


UNKNOWN_CASE = "bench_builds: --cases names no such case:"


def probe(suite, threads, only):
    """In a fresh process of one build: run the suite's oar cases (those named in `only`,
    or all) and print {"results", "errors", "oar"} as one JSON line."""
    mod = importlib.import_module(f"bench_{suite}")
    oar = common.import_framework("oar", threads)
    cases = mod.oar_cases(oar, **SUITE_ARGS.get(suite, {}))
    missing = [c for c in only if c not in cases]
    if missing:  # a misspelt --cases would otherwise measure nothing and say so nowhere
        raise SystemExit(f"{UNKNOWN_CASE} {', '.join(f'{suite}:{c}' for c in missing)} "
                         f"(bench_{suite}'s cases: {', '.join(cases)})")
    cases = {k: v for k, v in cases.items() if not only or k in only}
    results, errors = common.run_cases(cases)
    print("BUILDS_JSON " + json.dumps({"results": results, "errors": errors, "oar": oar._C.__file__,
                                       "clock": common.CLOCK.__name__}), flush=True)


def run_probe(python, env, suite, threads, only, timeout):
    cmd = [python, os.path.abspath(__file__), "--probe", suite, "--threads", str(threads),
           "--cases", ",".join(f"{suite}:{c}" for c in only)]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"results": {}, "errors": {"*": f"timed out after {timeout} s"}}
    for line in r.stdout.splitlines():
        if line.startswith("BUILDS_JSON "):
            return json.loads(line[len("BUILDS_JSON "):])
    return {"results": {}, "errors": {"*": f"probe exited {r.returncode}: {r.stderr[-1500:]}"}}


def build_envs(args):
    """{label: (python, environment)}: the base without dev_env.sh's variables."""
    common_env = dict(os.environ, OMP_NUM_THREADS=str(args.threads), MKL_NUM_THREADS=str(args.threads),
                      OPENBLAS_NUM_THREADS=str(args.threads), BENCH_CLOCK=args.clock)
    base_env = {k: v for k, v in common_env.items() if k not in DEV_ENV}
    return {"base": (args.base_python, base_env), "new": (args.python, common_env)}


def factor(unit_better, base, new):
    """new/base as a time: > 1 means the new build is slower."""
    return base / new if unit_better == "high" else new / base


def summarize(suites, rounds, filtered=False):
    """rounds: [{suite: {label: probe result}}]; filtered: --cases chose the cases. Returns
    the table's rows."""
    rows = []
    for suite in suites:
        for name, unit, better in oar_metrics(suite):
            vals = {lab: [r[suite][lab]["results"][name] for r in rounds
                          if name in r[suite][lab]["results"]] for lab in ("base", "new")}
            row = {"suite": suite, "metric": name, "unit": unit, "better": better,
                   "base_rounds": vals["base"], "new_rounds": vals["new"]}
            paired = [factor(better, r[suite]["base"]["results"][name], r[suite]["new"]["results"][name])
                      for r in rounds if name in r[suite]["base"]["results"] and name in r[suite]["new"]["results"]]
            if paired:
                row.update(base=statistics.median(vals["base"]), new=statistics.median(vals["new"]),
                           factor=statistics.median(paired), factor_rounds=paired)
            elif filtered and not any(r[suite][lab]["errors"] for r in rounds for lab in ("base", "new")):
                continue  # a case that --cases left out
            else:
                errs = {lab: sorted({e for r in rounds for e in r[suite][lab]["errors"].values()})
                        for lab in ("base", "new")}
                row["not_comparable"] = "; ".join(f"{lab}: {' | '.join(e)[:300]}" for lab, e in errs.items() if e) \
                    or "measured by neither build"
            rows.append(row)
    return rows


def print_table(rows, flag):
    print(f"{'suite':<7}{'metric':<32}{'unit':>8}{'base':>10}{'new':>10}{'new/base':>9}  rounds")
    for r in rows:
        if "factor" in r:
            mark = " <" if r["factor"] > flag else ""
            print(f"{r['suite']:<7}{r['metric']:<32}{r['unit']:>8}{common.fmt(r['base']):>10}"
                  f"{common.fmt(r['new']):>10}{r['factor']:>9.3f}  "
                  + " ".join(f"{f:.2f}" for f in r["factor_rounds"]) + mark)
        else:
            print(f"{r['suite']:<7}{r['metric']:<32}{r['unit']:>8}  not comparable: {r['not_comparable'][:150]}")
    over = [r for r in rows if r.get("factor", 0) > flag]
    print(f"\n{len(over)} of {sum('factor' in r for r in rows)} comparable figures over {flag}: "
          + (", ".join(f"{r['suite']}:{r['metric']} {r['factor']:.3f}" for r in over) or "none"))
    print(f"not comparable: {sum('factor' not in r for r in rows)}")


def markdown(rows, flag):
    """The table as Markdown (for docs/notes): one line per figure."""
    lines = ["| suite | figure | unit | base | new | new/base | rounds |", "|---|---|---|---:|---:|---:|---|"]
    for r in rows:
        if "factor" in r:
            f = f"**{r['factor']:.3f}**" if r["factor"] > flag else f"{r['factor']:.3f}"
            lines.append(f"| {r['suite']} | {r['metric']} | {r['unit']} | {common.fmt(r['base'])} | "
                         f"{common.fmt(r['new'])} | {f} | {' '.join(f'{x:.2f}' for x in r['factor_rounds'])} |")
        else:
            lines.append(f"| {r['suite']} | {r['metric']} | {r['unit']} | - | - | not comparable | "
                         f"{r['not_comparable'][:120]} |")
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base-python", help="the python of the base build's environment")
    ap.add_argument("--python", default=sys.executable, help="the python of the new build (default: this one)")
    ap.add_argument("--suites", default=",".join(SUITES), help="comma list of " + ",".join(SUITES))
    ap.add_argument("--cases", default="", help="comma list of suite:case (a suite's oar_cases key, "
                    "e.g. ops:tanh, core:mlp_step, jit:infer_lenet); default all")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--clock", choices=("cpu", "wall"), help="default: cpu at 1 thread, else wall")
    ap.add_argument("--flag", type=float, default=1.05, help="list the figures whose factor exceeds this")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per probe process")
    ap.add_argument("--out", help="results JSON (default bench/results/builds_<threads>t.json)")
    ap.add_argument("--probe", choices=SUITES, help=argparse.SUPPRESS)
    args = ap.parse_args()
    only = {}
    for item in filter(None, args.cases.split(",")):
        suite, _, case = item.partition(":")
        if suite not in SUITES or not case:
            ap.error(f"--cases: {item!r} is not suite:case with a suite in {', '.join(SUITES)}")
        only.setdefault(suite, []).append(case)
    if args.probe:
        return probe(args.probe, args.threads, only.get(args.probe, []))
    if not args.base_python:
        ap.error("--base-python is required")
    if args.rounds < 1:
        ap.error(f"--rounds must be >= 1, got {args.rounds}")
    suites = [s for s in args.suites.split(",") if s]
    unknown = [s for s in suites if s not in SUITES]
    if unknown:
        ap.error(f"--suites: unknown {', '.join(unknown)}; known: {', '.join(SUITES)}")
    if only:
        suites = [s for s in suites if s in only]
    args.clock = args.clock or ("cpu" if args.threads == 1 else "wall")
    envs = build_envs(args)
    rounds, modules = [], {}
    for r in range(args.rounds):
        order = ("base", "new") if r % 2 == 0 else ("new", "base")
        rounds.append({})
        for suite in suites:
            rounds[-1][suite] = {}
            for label in order:
                t0 = time.time()
                res = run_probe(*envs[label], suite, args.threads, only.get(suite, []), args.timeout)
                err = res["errors"].get("*", "")
                if UNKNOWN_CASE in err:
                    raise SystemExit(UNKNOWN_CASE + err.split(UNKNOWN_CASE, 1)[1].rstrip())
                rounds[-1][suite][label] = res
                modules.setdefault(label, res.get("oar"))
                print(f"[bench_builds] round {r + 1}/{args.rounds} {suite} {label}: "
                      f"{len(res['results'])} figures, {len(res['errors'])} failed cases, "
                      f"{time.time() - t0:.0f} s, load {os.getloadavg()[0]:.1f}", file=sys.stderr, flush=True)
            if modules.get("base") and modules.get("base") == modules.get("new"):
                raise SystemExit(f"both builds imported {modules['base']}: check --base-python and the environment")
    rows = summarize(suites, rounds, bool(only))
    machine = peak.cpu_info()
    print(f"\n{machine['cpu_model']} ({', '.join(machine['cpu_isa'])}), {machine['cpus']} cpus; threads "
          f"{args.threads}, clock {args.clock}, {args.rounds} alternating round(s); base {modules.get('base')}, "
          f"new {modules.get('new')}")
    print_table(rows, args.flag)
    print("\n" + "\n".join(markdown(rows, args.flag)))
    out = args.out or os.path.join(BENCH, "results", f"builds_{args.threads}t.json")
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w") as f:
        json.dump({"time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **machine,
                   "command": " ".join(sys.argv), "threads": args.threads, "clock": args.clock,
                   "rounds": args.rounds, "modules": modules, "rows": rows,
                   "errors": [{"round": i + 1, "suite": s, "build": lab, "errors": res["errors"]}
                              for i, rd in enumerate(rounds) for s, by in rd.items()
                              for lab, res in by.items() if res["errors"]]}, f, indent=1)
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
