"""The sample device's convolutions alone: LeNet's two conv layers (batch 8) forward and
backward on sample:0, synchronized each iteration (issue 13; the GEMMs of
backends/examples/sample_device/kernels_cnn.cc).

    python3 bench/bench_sample_conv.py <liboar_sample_device.so> [iterations]

Prints the best wall time per iteration and the process CPU time per iteration (both
threads: the host's and the stream worker's), which a loaded machine disturbs less.
Compare two builds of the plugin by running it on each, alternately.
"""
import resource
import sys
import time

import numpy as np

import oar
import oar.nn.functional as F


def cpu_seconds():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main():
    oar.device.load_plugin(sys.argv[1])
    iters = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    oar.set_device("sample:0")
    rng = np.random.default_rng(0)
    x1 = oar.to_tensor(rng.standard_normal((8, 1, 28, 28)).astype("float32"))
    w1 = oar.to_tensor(rng.standard_normal((6, 1, 3, 3)).astype("float32"), stop_gradient=False)
    x2 = oar.to_tensor(rng.standard_normal((8, 6, 14, 14)).astype("float32"), stop_gradient=False)
    w2 = oar.to_tensor(rng.standard_normal((16, 6, 5, 5)).astype("float32"), stop_gradient=False)
    walls, c0 = [], None
    for i in range(iters + 20):
        if i == 20:
            c0 = cpu_seconds()
        t0 = time.perf_counter()
        y = F.conv2d(x1, w1, padding=1).sum() + F.conv2d(x2, w2).sum()
        y.backward()
        oar.device.synchronize("sample:0")
        if i >= 20:
            walls.append(time.perf_counter() - t0)
        for t in (w1, w2, x2):
            t.clear_grad()
    print(f"wall min {min(walls) * 1e3:.3f} ms, process CPU {(cpu_seconds() - c0) / iters * 1e3:.3f} ms "
          f"per iteration")


if __name__ == "__main__":
    main()
