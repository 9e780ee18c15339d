"""Copies to a device from pageable vs pinned memory (Note [Pinned memory]).

Host time to issue x.to('sample:0', blocking=False) of a 16 MiB float32 tensor, and the
time until the data is on the device, from pageable memory (the sample device stages it:
a memcpy at enqueue) and from pinned memory (queued, copied by the stream's worker),
in interleaved rounds; best and median of each.

    python bench/bench_pinned.py <path of liboar_sample_device.so> [rounds]
"""
import sys
import time

import numpy as np

import oar


def main():
    oar.device.load_plugin(sys.argv[1])
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 21
    a = np.random.default_rng(0).standard_normal(4 << 20).astype("float32")
    pageable = oar.to_tensor(a, place="cpu")
    pinned = pageable.pin_memory("sample:0")
    oar.device.synchronize("sample:0")
    res = {"pageable": ([], []), "pinned": ([], [])}
    order = [("pageable", pageable), ("pinned", pinned)]
    for r in range(rounds):
        for name, src in order if r % 2 == 0 else order[::-1]:
            t0 = time.perf_counter()
            d = src.to("sample:0", blocking=False)
            t1 = time.perf_counter()
            oar.device.synchronize("sample:0")
            t2 = time.perf_counter()
            res[name][0].append(t1 - t0)
            res[name][1].append(t2 - t0)
            del d
    for name, (issue, total) in res.items():
        print(f"{name:9s} issue best {min(issue) * 1e6:8.1f} us median {np.median(issue) * 1e6:8.1f} us | "
              f"until done best {min(total) * 1e6:8.1f} us median {np.median(total) * 1e6:8.1f} us")
    np.testing.assert_array_equal(pinned.to("sample:0", blocking=False).numpy(), a)


if __name__ == "__main__":
    main()
