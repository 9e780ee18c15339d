"""All-reduce on both paths of Oar's transport (Note [All-reduce transport]): the direct
exchange (small) and the ring (above 1 MiB received), at sizes that do not split evenly,
against NumPy, and bitwise equal on every rank for inexact float sums; reduce_scatter on
the ring."""
import numpy as np

import oar
import oar.distributed as dist
from collectives import OPS, data, expect, reduce_np, tensor, value

# (dtype, elements): around the direct/ring switch (1 MiB received in all), ring chunks of
# uneven lengths, one-byte and two-byte elements, a chunk larger than the ring's 1 MiB staging.
CASES = [("float32", 1), ("float32", 3), ("float32", (1 << 18) // 3), ("float32", (1 << 18) + 3),
         ("float64", (3 << 17) + 5), ("int8", (1 << 20) + 1), ("float16", (1 << 19) + 7),
         ("bfloat16", (1 << 19) + 1), ("int64", (1 << 17) + 9), ("float32", (3 << 20) + 3)]


def main():
    dist.init_parallel_env()
    rank, n = dist.get_rank(), dist.get_world_size()
    for i, (dtype, count) in enumerate(CASES):
        for name in ("SUM", "MAX", "MIN", "PROD", "AVG"):
            if name == "AVG" and dtype in ("int8", "int64"):
                continue
            if name == "PROD" and count > 1 << 20:
                continue  # the same code path as SUM; keeps the suite short
            ins = [data(r, dtype, (count,), salt=i) for r in range(n)]
            t = tensor(ins[rank], dtype)
            dist.all_reduce(t, OPS[name])
            want = reduce_np(ins, name, dtype)
            if name == "AVG":  # 1/n is exact for n = 2, 4 but the float16 sum then rounds
                got = value(t).astype("float64")
                tol = 1e-2 if dtype in ("float16", "bfloat16") else 1e-6
                if not np.allclose(got, want, rtol=tol, atol=tol):
                    raise AssertionError(f"all_reduce AVG {dtype}[{count}]: max error "
                                         f"{np.abs(got - want).max()}")
            else:
                expect(value(t), want.astype(value(t).dtype), f"all_reduce {name} {dtype}[{count}]")

    # Inexact sums: the ranks must still agree to the bit (one rank finishes each chunk).
    for count in (1000, (1 << 18) + 3, (3 << 18) + 1):
        rng = np.random.default_rng(7 + rank)
        x = oar.to_tensor(rng.standard_normal(count).astype("float32") * 10.0 ** rng.integers(-3, 4, count))
        dist.all_reduce(x)
        everyone = []
        dist.all_gather(everyone, x)
        for r, other in enumerate(everyone):
            if not np.array_equal(other.numpy().view("uint32"), x.numpy().view("uint32")):
                raise AssertionError(f"all_reduce of {count} float32: rank {r} differs from rank {rank}")

    # reduce_scatter runs the ring's first half on a copy: the input stays as it was.
    for dtype, count in (("float32", (1 << 18) + 1), ("int16", 5)):
        for name in ("SUM", "MAX", "AVG"):
            if name == "AVG" and dtype == "int16":
                continue
            ins = [[data(r, dtype, (count,), salt=50 + c) for c in range(n)] for r in range(n)]
            parts = [tensor(a, dtype) for a in ins[rank]]
            out = tensor(np.zeros(count, dtype), dtype)
            dist.reduce_scatter(out, parts, OPS[name])
            want = reduce_np([ins[r][rank] for r in range(n)], name, dtype)
            expect(value(out), want.astype(value(out).dtype), f"reduce_scatter {name} {dtype}[{count}]")
            for c in range(n):
                expect(value(parts[c]), ins[rank][c], f"reduce_scatter {name}: input {c} unchanged")

    # A large strided view, and an async op, on the ring.
    base = oar.ones([2, (1 << 19) + 1], dtype="float32")
    view = base[:, 1:]
    dist.all_reduce(view)
    expect(base.numpy()[:, 1:], np.full((2, 1 << 19), float(n), "float32"), "all_reduce of a view")
    expect(base.numpy()[:, 0], np.ones(2, "float32"), "all_reduce of a view: outside it")
    big = oar.full([3 << 18], float(rank + 1), dtype="float32")
    task = dist.all_reduce(big, sync_op=False)
    task.wait()
    expect(big.numpy(), np.full(3 << 18, n * (n + 1) / 2, "float32"), "async all_reduce on the ring")
    print(f"allreduce paths ok {rank}", flush=True)


if __name__ == "__main__":
    main()
