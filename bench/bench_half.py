"""16-bit float suite: Oar vs PyTorch CPU time of pointwise ops, a reduction and the casts
on float16 and bfloat16 tensors of 1M elements (what AMP O2 runs between its GEMMs).

    bash bench/run.sh half [--threads 1,2] [--rounds 3] [--dtypes float16,bfloat16]

Both frameworks get the same float32 NumPy inputs cast once to the 16-bit type; every
metric is the median time of one call (common.bench). With --rounds N the oar and torch
workers alternate N times and a case's oar/torch is the median of the rounds' ratios.
"""
import argparse
import os
import statistics

import numpy as np

import common

DTYPES = ("float16", "bfloat16")
OPS = ("add", "mul", "relu", "gelu", "exp", "sum", "to_float32", "from_float32")
N = 1 << 20
rng = np.random.default_rng(0)
X = rng.standard_normal(N, dtype=np.float32)
Y = rng.standard_normal(N, dtype=np.float32)


def _cases(dtypes, F, exp, total, to, fp32_of, x32, y32):
    out = {}
    for dt in dtypes:
        x, y = to(x32, dt), to(y32, dt)
        fns = {"add": lambda x=x, y=y: x + y, "mul": lambda x=x, y=y: x * y,
               "relu": lambda x=x: F.relu(x), "gelu": lambda x=x: F.gelu(x),
               "exp": lambda x=x: exp(x), "sum": lambda x=x: total(x),
               "to_float32": lambda x=x: fp32_of(x), "from_float32": lambda dt=dt: to(x32, dt)}
        for op in OPS:
            name = f"{op}_{dt}"
            out[name] = lambda name=name, fn=fns[op]: {
                f"{name}_ms": common.bench(fn, repeat=7, target=0.05, warmup=2) * 1e3}
    return out


def cases(fw, mod, dtypes):
    if fw == "torch":
        x32, y32 = mod.from_numpy(X), mod.from_numpy(Y)
        return _cases(dtypes, mod.nn.functional, mod.exp, mod.sum, lambda t, dt: t.to(getattr(mod, dt)),
                      lambda t: t.float(), x32, y32)
    x32, y32 = mod.to_tensor(X), mod.to_tensor(Y)
    return _cases(dtypes, mod.nn.functional, mod.exp, mod.sum, lambda t, dt: t.astype(dt),
                  lambda t: t.astype("float32"), x32, y32)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--frameworks", default="oar,torch", help="comma list of oar,torch")
    ap.add_argument("--threads", default="1", help="comma list of thread counts")
    ap.add_argument("--rounds", type=int, default=1, help="interleaved rounds (oar, torch, oar, ...)")
    ap.add_argument("--dtypes", default=",".join(DTYPES), help="comma list of float16,bfloat16")
    ap.add_argument("--timeout", type=float, default=900, help="seconds per worker")
    ap.add_argument("--out", help="result JSON (default bench/results/half.json)")
    ap.add_argument("--worker", choices=common.FRAMEWORKS, help=argparse.SUPPRESS)
    common.add_isa_argument(ap)
    args = ap.parse_args()
    if args.worker:  # the driver passes its --dtypes through the environment
        args.dtypes = os.environ.get("BENCH_HALF_DTYPES", args.dtypes)
    dtypes = [d for d in args.dtypes.split(",") if d]
    bad = [d for d in dtypes if d not in DTYPES]
    if bad:
        ap.error(f"--dtypes: unknown dtype(s) {', '.join(bad)}; known: {', '.join(DTYPES)}")
    if args.worker:
        return common.worker(args.worker, int(args.threads), lambda fw, mod: cases(fw, mod, dtypes))
    if not 1 <= args.rounds <= 100:
        ap.error(f"--rounds must be in [1, 100], got {args.rounds}")
    metrics = [(f"{op}_{dt}_ms", "ms", "low") for dt in dtypes for op in OPS]
    common.force_isa(args.isa)
    frameworks = [f for f in args.frameworks.split(",") if f]
    threads_list = [int(t) for t in args.threads.split(",")]
    os.environ["BENCH_HALF_DTYPES"] = args.dtypes
    per_round, runs, versions = common.run_rounds(os.path.abspath(__file__), "half", frameworks, threads_list,
                                                  args.rounds, args.timeout, metrics)
    ratios = {}
    if "oar" in per_round and "torch" in per_round:
        for t in threads_list:
            for name, _, _ in metrics:
                rs = [o[name] / p[name] for o, p in zip(per_round["oar"][t], per_round["torch"][t])
                      if name in o and p.get(name)]
                if rs:
                    ratios.setdefault(str(t), {})[name] = rs
    common.report("half", metrics, runs, threads_list, versions, args.rounds, args.out, {"round_ratios": ratios})
    for t, rs in ratios.items():
        print(f"\n{t} thread(s), oar/torch (median of rounds):")
        for name, r in rs.items():
            print(f"  {name[:-3]:<24} {statistics.median(r):6.2f}  ({min(r):.2f}-{max(r):.2f})")


if __name__ == "__main__":
    main()
