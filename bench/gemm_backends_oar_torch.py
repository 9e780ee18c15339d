"""Oar's float32 matmul at 1024^3 and 2048^3 and its bf16 matmul at 2048^3 against torch
2.15 and the measured peak (issue 17's sgemm and bf16 targets; docs/notes/gemm_backends.md).

    source scripts/dev_env.sh build/cp311-cp311-linux_x86_64
    python3 bench/gemm_backends_oar_torch.py [--threads 1] [--rounds 5]

Each round measures the FMA and bf16 peaks (bench/peak.py), then Oar and torch, each in a
fresh process pinned with taskset (gemm_backends.run_one), one after the other. Printed:
the medians over rounds of GFLOP/s by the wall clock (as % of the peak, the best round's) and per CPU-second
(the figure a shared machine does not distort: as % of the 1-core peak), and the median of
the per-round Oar/torch wall-clock ratios.
"""
import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gemm_backends  # noqa: E402
import peak  # noqa: E402

SPECS = ["1,1024,1024,1024,NN", "1,2048,2048,2048,NN"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--budget", type=float, default=1.0, help="seconds per case and framework per round")
    args = ap.parse_args()
    t = args.threads
    rows = {"oar": [], "torch": []}
    peaks = []
    for r in range(args.rounds):
        p = peak.measure(t)
        p1 = peak.measure(1) if t > 1 else p  # per CPU-second figures compare with one core
        peaks.append([x["fp32_peak"] for x in (p, p1)] + [x["bf16_peak"] or float("nan") for x in (p, p1)])
        for fw in rows:
            rows[fw].append(gemm_backends.run_one(fw, {}, t, args.budget, SPECS))
        print(f"# round {r + 1}: peaks fp32 {peaks[-1][0]:.1f}, bf16 {peaks[-1][2]:.1f} GFLOP/s", flush=True)
    # the peak is a ceiling: other work on the machine can only lower a round's figure
    fp32, core, bf16, core_bf16 = (max(p[i] for p in peaks) for i in range(4))
    info = peak.cpu_info()
    print(f"{info['cpu_model']} ({', '.join(info['cpu_isa'])}); {t} thread(s), {args.rounds} rounds, "
          f"load {os.getloadavg()[0]:.1f}; peaks (best round): fp32 {fp32:.1f}, bf16 {bf16:.1f} GFLOP/s, "
          f"1 core: fp32 {core:.1f}, bf16 {core_bf16:.1f}")
    for key in rows["oar"][0]:
        what, _, m, n, k, _ = key
        if not all(key in x for x in rows["oar"] + rows["torch"]):
            continue
        flop = 2.0 * m * n * k
        ref = bf16 if what == "bf16" else fp32
        ref1 = core_bf16 if what == "bf16" else core
        line = f"{what} {m}x{n}x{k}:"
        for fw in rows:
            wall = statistics.median(flop / x[key][0] / 1e9 for x in rows[fw])
            cpu = statistics.median(flop / x[key][1] / 1e9 for x in rows[fw])
            line += f" {fw} {wall:.1f} GFLOP/s ({100 * wall / ref:.0f}% of peak), {cpu:.1f} per CPU-s " \
                    f"({100 * cpu / ref1:.0f}% of 1 core);"
        ratio = statistics.median(b[key][0] / a[key][0] for a, b in zip(rows["oar"], rows["torch"]))
        print(f"{line} oar/torch {ratio:.2f}")


if __name__ == "__main__":
    main()
