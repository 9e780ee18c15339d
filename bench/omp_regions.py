"""OpenMP regions per training step of bench_steps.py's models (Oar), by caller.

    gcc -O2 -shared -fPIC -fopenmp -o /tmp/gomp_count.so bench/gomp_count.c -ldl
    LD_PRELOAD=/tmp/gomp_count.so OMP_NUM_THREADS=2 python3 bench/omp_regions.py [--cases cnn] [--steps 20]

Counts libgomp's GOMP_parallel calls asking for more than one thread (bench/gomp_count.c),
after 3 warm-up steps (the convolution tuning runs in the first), divided by --steps.
"""
import argparse
import ctypes

import bench_steps


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", default="mlp,gpt,cnn,lstm")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    lib = ctypes.CDLL(None)
    try:
        total, reset, dump = lib.gomp_count_total, lib.gomp_count_reset, lib.gomp_count_dump
    except AttributeError:
        raise SystemExit("run under LD_PRELOAD=<bench/gomp_count.c built as a .so>")
    total.restype = ctypes.c_long
    lib.gomp_count_all.restype = ctypes.c_long
    import oar as paddle
    paddle.set_num_threads(args.threads)

    def count(fn, repeat=5):
        for _ in range(3):
            fn()
        reset()
        for _ in range(args.steps):
            fn()
        print(f"{name}: {total() / args.steps:.1f} OpenMP regions per step at {args.threads} threads "
              f"({lib.gomp_count_all() / args.steps:.1f} GOMP_parallel calls of any thread count)", flush=True)
        dump()
        return 0.0

    bench_steps.ms = count
    cases = bench_steps.oar_cases(paddle)
    for name in args.cases.split(","):
        cases[name]()


if __name__ == "__main__":
    main()
