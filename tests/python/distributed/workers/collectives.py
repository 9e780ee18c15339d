"""Every collective against NumPy, on every dtype and reduce op (run as each rank of a job)."""
import sys

import numpy as np

import oar
import oar.distributed as dist

DTYPES = ["bool", "int8", "uint8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
          "float64"]
OPS = {"SUM": dist.ReduceOp.SUM, "MAX": dist.ReduceOp.MAX, "MIN": dist.ReduceOp.MIN,
       "PROD": dist.ReduceOp.PROD, "AVG": dist.ReduceOp.AVG}


def data(rank, dtype, shape=(3, 4), salt=0):
    """Rank `rank`'s input: small integers, so every reduction is exact in every dtype."""
    rng = np.random.default_rng(1000 * salt + rank)
    if dtype == "bool":
        return rng.random(shape) < 0.5
    lo = 0 if dtype == "uint8" else -3
    return rng.integers(lo, 4, size=shape).astype("float64" if dtype == "bfloat16" else dtype)


def tensor(a, dtype):
    t = oar.to_tensor(a.astype("float32") if dtype == "bfloat16" else a)
    return t.astype("bfloat16") if dtype == "bfloat16" else t


def value(t):
    return t.astype("float32").numpy() if str(t.dtype).endswith("bfloat16") else t.numpy()


def expect(got, want, what):
    got = np.asarray(got)
    want = np.asarray(want)
    if got.shape != want.shape or not np.array_equal(got.astype("float64"), want.astype("float64")):
        raise AssertionError(f"{what}: got\n{got}\nwant\n{want}")


def reduce_np(arrays, op, dtype):
    if dtype == "bool":
        return {"SUM": np.logical_or, "MAX": np.logical_or, "PROD": np.logical_and,
                "MIN": np.logical_and}[op].reduce(arrays)
    stack = np.stack([a.astype("float64") for a in arrays])
    return {"SUM": stack.sum(0), "MAX": stack.max(0), "MIN": stack.min(0), "PROD": stack.prod(0),
            "AVG": stack.mean(0)}[op]


def main():
    dist.init_parallel_env()
    rank, n = dist.get_rank(), dist.get_world_size()
    assert dist.is_initialized()
    last = n - 1

    for dtype in DTYPES:
        for name, op in OPS.items():
            ins = [data(r, dtype) for r in range(n)]
            t = tensor(ins[rank], dtype)
            if name == "AVG" and dtype in ("bool", "int8", "uint8", "int16", "int32", "int64"):
                try:
                    dist.all_reduce(t, op)
                except ValueError as e:
                    assert "AVG needs a floating-point tensor, got " + dtype in str(e), e
                else:
                    raise AssertionError(f"all_reduce AVG on {dtype} did not raise")
                continue
            dist.all_reduce(t, op)
            expect(value(t), reduce_np(ins, name, dtype), f"all_reduce {name} {dtype}")
            assert str(t.dtype).endswith(dtype), (t.dtype, dtype)

    for dtype in ["bool", "int64", "bfloat16", "float32", "float64"]:
        ins = [data(r, dtype, salt=1) for r in range(n)]
        # reduce: only dst's tensor changes
        t = tensor(ins[rank], dtype)
        dist.reduce(t, dst=last, op=dist.ReduceOp.MAX)
        expect(value(t), reduce_np(ins, "MAX", dtype) if rank == last else ins[rank], f"reduce {dtype}")
        # broadcast from rank 1
        t = tensor(ins[rank], dtype)
        dist.broadcast(t, src=1)
        expect(value(t), ins[1], f"broadcast {dtype}")
        # all_gather into a list, and into one tensor
        out = []
        dist.all_gather(out, tensor(ins[rank], dtype))
        assert len(out) == n
        for r in range(n):
            expect(value(out[r]), ins[r], f"all_gather {dtype} [{r}]")
        whole = tensor(np.zeros((3 * n, 4), dtype=ins[0].dtype), dtype)
        dist.all_gather(whole, tensor(ins[rank], dtype))
        expect(value(whole), np.concatenate(ins), f"all_gather into a tensor {dtype}")
        # reduce_scatter: chunk r of every rank's list, reduced, lands on rank r
        lists = [[data(r, dtype, salt=10 + c) for c in range(n)] for r in range(n)]
        t = tensor(np.zeros((3, 4), dtype=ins[0].dtype), dtype)
        dist.reduce_scatter(t, [tensor(a, dtype) for a in lists[rank]], op=dist.ReduceOp.SUM)
        expect(value(t), reduce_np([lists[r][rank] for r in range(n)], "SUM", dtype),
               f"reduce_scatter {dtype}")
        # scatter from rank 0
        t = tensor(np.zeros((3, 4), dtype=ins[0].dtype), dtype)
        parts = [tensor(data(0, dtype, salt=20 + c), dtype) for c in range(n)] if rank == 0 else None
        dist.scatter(t, parts, src=0)
        expect(value(t), data(0, dtype, salt=20 + rank), f"scatter {dtype}")
        # alltoall: chunk c of rank r goes to rank c
        out = []
        dist.alltoall(out, [tensor(data(rank, dtype, salt=30 + c), dtype) for c in range(n)])
        for r in range(n):
            expect(value(out[r]), data(r, dtype, salt=30 + rank), f"alltoall {dtype} [{r}]")

    # send/recv around a ring, sync and async
    nxt, prv = (rank + 1) % n, (rank - 1) % n
    got = oar.zeros([5], dtype="float64")
    if rank % 2 == 0:
        dist.send(oar.full([5], float(rank), dtype="float64"), dst=nxt)
        dist.recv(got, src=prv)
    else:
        dist.recv(got, src=prv)
        dist.send(oar.full([5], float(rank), dtype="float64"), dst=nxt)
    expect(got.numpy(), np.full(5, float(prv)), "send/recv")
    got = oar.zeros([7], dtype="int32")
    tasks = [dist.isend(oar.full([7], rank, dtype="int32"), nxt), dist.irecv(got, prv)]
    for task in tasks:
        task.wait()
        assert task.is_completed()
    expect(got.numpy(), np.full(7, prv), "isend/irecv")

    # async collectives: results land when wait() returns
    big = oar.full([1 << 16], float(rank + 1), dtype="float32")
    task = dist.all_reduce(big, sync_op=False)
    out = []
    task2 = dist.all_gather(out, oar.full([2], rank, dtype="int64"), sync_op=False)
    task.wait()
    task2.wait()
    assert task.is_completed() and task2.is_completed()
    expect(big.numpy(), np.full(1 << 16, n * (n + 1) / 2, dtype="float32"), "async all_reduce")
    expect(np.stack([o.numpy() for o in out]), np.repeat(np.arange(n)[:, None], 2, 1), "async all_gather")

    # a non-contiguous tensor is reduced through a copy and written back
    base = oar.to_tensor(np.arange(12, dtype="float64").reshape(3, 4) * (rank + 1))
    view = oar.transpose(base, [1, 0])
    dist.all_reduce(view)
    expect(base.numpy(), np.arange(12).reshape(3, 4) * n * (n + 1) / 2, "all_reduce of a view")

    # a collective writes in place: the version counter moves, so what caches a tensor's
    # contents sees the write (a convolution filter packed for reuse, Note [Filters reused
    # across calls])
    import oar.nn.functional as F
    x = oar.to_tensor(np.random.default_rng(3).standard_normal((1, 8, 6, 6)).astype("float32"))
    w = oar.full([8, 8, 3, 3], float(rank + 1), dtype="float32")
    with oar.no_grad():
        for _ in range(3):
            F.conv2d(x, w, padding=1)  # first sight, then packed
        v0 = w.inplace_version
        dist.all_reduce(w)
        assert w.inplace_version > v0, (v0, w.inplace_version)
        got = F.conv2d(x, w, padding=1).numpy()
        v1 = w.inplace_version
        dist.broadcast(w, src=0)
        assert w.inplace_version > v1, (v1, w.inplace_version)
    # a 3x3 filter of one value c: c times each pixel's 3x3 window summed over channels
    xp = np.pad(x.numpy()[0].astype("float64").sum(0), 1)
    window = sum(xp[i:i + 6, j:j + 6] for i in range(3) for j in range(3))
    want = np.broadcast_to(n * (n + 1) / 2 * window, (1, 8, 6, 6))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)

    # objects
    objs = []
    dist.all_gather_object(objs, {"rank": rank, "tag": "x" * (rank * 50)})
    assert objs == [{"rank": r, "tag": "x" * (r * 50)} for r in range(n)], objs
    lst = [{"cfg": [1, 2, 3]}, "hello", 3.5] if rank == 1 else [None, None, None]
    dist.broadcast_object_list(lst, src=1)
    assert lst == [{"cfg": [1, 2, 3]}, "hello", 3.5], lst

    # a group of ranks 0 and last; the others are not members
    g = dist.new_group([0, last])
    t = oar.full([3], float(rank + 1), dtype="float32")
    res = dist.all_reduce(t, group=g)
    if rank in (0, last):
        assert g.rank == (0 if rank == 0 else 1) and dist.get_rank(g) == g.rank
        expect(t.numpy(), np.full(3, 1.0 + n), "all_reduce on a new group")
    else:
        assert res is None and g.rank == -1
        expect(t.numpy(), np.full(3, rank + 1.0), "non-member untouched")
    dist.barrier()

    # bad arguments name the op and the value
    try:
        dist.broadcast(oar.zeros([2]), src=n + 3)
    except ValueError as e:
        assert "broadcast" in str(e) and str(n + 3) in str(e), e
    else:
        raise AssertionError("broadcast from a rank outside the group did not raise")
    try:
        dist.all_gather([], "not a tensor")
    except TypeError as e:
        assert "all_gather" in str(e), e
    else:
        raise AssertionError("all_gather of a non-tensor did not raise")
    dist.barrier()
    dist.destroy_process_group()
    assert not dist.is_initialized()
    print("collectives ok", rank, flush=True)


if __name__ == "__main__":
    main()
    sys.exit(0)
