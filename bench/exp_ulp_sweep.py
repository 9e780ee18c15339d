"""Every float32 in exp's vector range through oar.exp, against float64's exp: the worst
error in float32 ulps (Note [exp's reduction and polynomial], docs/notes/cpu_speed_steps.md).

    python bench/exp_ulp_sweep.py            # the CPU's own ISA copy
    OAR_CPU_CAPABILITY=avx2 python bench/exp_ulp_sweep.py

About 2.1e9 floats ([-87.33, 88.37], both signs walked by bit pattern), a minute or two.
"""
import sys

import numpy as np

import oar


def sweep(lo_bits, hi_bits, chunk=1 << 25):
    worst, at = 0.0, None
    for b0 in range(lo_bits, hi_bits + 1, chunk):
        x = np.arange(b0, min(b0 + chunk, hi_bits + 1), dtype=np.uint32).view(np.float32)
        got = oar.exp(oar.to_tensor(x)).numpy().astype(np.float64)
        ref = np.exp(x.astype(np.float64))
        ulp = np.ldexp(1.0, np.maximum(np.frexp(ref)[1] - 24, -149))
        err = np.abs(got - ref) / ulp
        i = int(np.argmax(err))
        if err[i] > worst:
            worst, at = float(err[i]), float(x[i])
    return worst, at


def main():
    oar.set_num_threads(1)
    bits = lambda v: int(np.array(v, np.float32).view(np.uint32))  # noqa: E731
    pos = sweep(bits(0.0), bits(88.37))
    neg = sweep(bits(-0.0), bits(-87.33))
    worst, at = max(pos, neg)
    print(f"exp float32 over [-87.33, 88.37]: worst {worst:.4f} ulp at {at!r}")
    return 0 if worst <= 1 else 1


if __name__ == "__main__":
    sys.exit(main())
