"""The xccl backend on the sample device (run as each rank of a job): argv[1] picks
"collectives" (workers/collectives.py's whole suite on sample:0, plus what is xccl's own),
"data_parallel" (DataParallel on sample:0 against single-process CPU training),
"dead_peer" or "stuck_peer" (a killed or absent rank makes the other raise in time),
"own_op" (a task's wait ends with its own op, not with ops queued after it)."""
import os
import signal
import sys
import time

import numpy as np

import oar
import oar.distributed as dist
from oar.distributed import CommunicationError
from peer_failure import report_and_exit


def on_sample():
    oar.device.load_plugin(os.environ["OAR_SAMPLE_DEVICE_LIB"])
    oar.set_device("sample:0")


def collectives():
    on_sample()
    group = dist.init_parallel_env()
    rank, n = dist.get_rank(), dist.get_world_size()
    assert dist.get_backend() == "XCCL" and group.process_group.backend == "xccl", dist.get_backend()
    # Results stay on the device.
    t = oar.full([4], float(rank + 1))
    dist.all_reduce(t)
    assert "sample:0" in str(t.place), t.place
    np.testing.assert_array_equal(t.numpy(), np.full(4, n * (n + 1) / 2, dtype="float32"))
    # A CPU tensor goes through device memory and stays on the CPU.
    c = oar.to_tensor(np.arange(6, dtype="int64") * (rank + 1), place="cpu")
    dist.all_reduce(c, dist.ReduceOp.MAX)
    assert "cpu" in str(c.place).lower(), c.place
    np.testing.assert_array_equal(c.numpy(), np.arange(6) * n)
    # A tensor on another device of the same type is refused, naming op, argument and places.
    other = oar.ones([2]).to("sample:1")
    try:
        dist.all_reduce(other)
    except ValueError as e:
        assert "all_reduce" in str(e) and "sample:1" in str(e) and "sample:0" in str(e), e
    else:
        raise AssertionError("all_reduce of a sample:1 tensor on a sample:0 group did not raise")
    # An op queued on a side stream runs after the kernels queued there before it.
    s = oar.device.Stream("sample:0")
    with oar.device.stream_guard(s):
        x = oar.full([1 << 12], float(rank), dtype="float32")
        x = x + 1.0
        task = dist.all_reduce(x, sync_op=False)
    task.wait()
    np.testing.assert_array_equal(x.numpy(), np.full(1 << 12, n * (n + 1) / 2, dtype="float32"))

    import collectives as suite  # workers/collectives.py: every op, dtype and reduce op
    # reduce and reduce_scatter with every dtype and reduce op (the suite does all_reduce so)
    ints = ("bool", "int8", "uint8", "int16", "int32", "int64")
    for dtype in suite.DTYPES:
        for name, op in suite.OPS.items():
            if name == "AVG" and dtype in ints:
                continue
            ins = [suite.data(r, dtype, salt=40) for r in range(n)]
            t = suite.tensor(ins[rank], dtype)
            dist.reduce(t, dst=1, op=op)
            want = suite.reduce_np(ins, name, dtype) if rank == 1 else ins[rank]
            suite.expect(suite.value(t), want, f"reduce {name} {dtype}")
            lists = [[suite.data(r, dtype, salt=50 + c) for c in range(n)] for r in range(n)]
            t = suite.tensor(np.zeros((3, 4), dtype=ins[0].dtype), dtype)
            dist.reduce_scatter(t, [suite.tensor(a, dtype) for a in lists[rank]], op=op)
            suite.expect(suite.value(t), suite.reduce_np([lists[r][rank] for r in range(n)], name, dtype),
                         f"reduce_scatter {name} {dtype}")
    # 0-size tensors
    z = oar.zeros([0, 3])
    dist.all_reduce(z)
    out = []
    dist.all_gather(out, z)
    assert len(out) == n and all(tuple(o.shape) == (0, 3) for o in out), [o.shape for o in out]
    suite.main()


def data_parallel():
    import data_parallel as dp  # workers/data_parallel.py: the MLP, its batches and loss
    oar.set_default_dtype("float64")
    on_sample()
    dist.init_parallel_env()
    rank, n = dist.get_rank(), dist.get_world_size()
    got_losses, got_params = dp.train_parallel("mlp", rank, n)
    oar.set_device("cpu")
    want_losses, want_params = dp.train_reference("mlp", n)
    err = max(abs(a - b) for a, b in zip(got_losses, want_losses))
    perr = max(float(np.abs(a - b).max()) for a, b in zip(got_params, want_params))
    print(f"xccl data_parallel rank {rank}: max loss diff {err:.3e}, max param diff {perr:.3e}, "
          f"losses {got_losses[0]:.6f} -> {got_losses[-1]:.6f}", flush=True)
    assert got_losses[-1] < got_losses[0] * 0.95, "training did not progress"
    assert err < 1e-10 and perr < 1e-10, (err, perr)


BIG = 1 << 19  # float32 elements: 2 MiB, a send that completes only once its receiver takes it


def own_op():
    """Rank 0 queues a receive, then a send, and waits for the receive's task alone. Rank 1
    sends, then posts the matching receive only once rank 0's wait has returned (a file
    tells it): a wait that also waited for the later send, still queued on the group's
    stream, would hang until the group's timeout."""
    on_sample()
    dist.init_parallel_env()
    rank = dist.get_rank()
    flag = os.path.join(os.environ["OWN_OP_DIR"], "waited")
    if rank == 0:
        got = oar.zeros([8])
        recv = dist.irecv(got, src=1)
        send = dist.isend(oar.full([BIG], 3.0), dst=1)  # more than the sample's 1 MiB mailbox
        start = time.monotonic()
        recv.wait()
        waited = time.monotonic() - start
        assert recv.is_completed(), "the receive's task is not completed after its wait"
        assert (got.numpy() == 2.0).all(), got.numpy()
        with open(flag, "w") as f:
            f.write("x")
        send.wait()
        print(f"own_op ok {rank}: the receive's wait took {waited:.2f} s", flush=True)
    else:
        dist.send(oar.full([8], 2.0), dst=0)
        deadline = time.monotonic() + 30
        while not os.path.exists(flag):
            assert time.monotonic() < deadline, "rank 0's wait for its receive never returned"
            time.sleep(0.01)
        got = oar.zeros([BIG])
        dist.recv(got, src=0)
        assert (got.numpy() == 3.0).all(), got.numpy()
        print(f"own_op ok {rank}", flush=True)


def failure(kind):
    on_sample()
    dist.init_parallel_env()
    t = oar.ones([1 << 16])
    dist.all_reduce(t)  # the communicator works
    if dist.get_rank() == 1:
        if kind == "dead_peer":
            os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(7)  # stuck: past rank 0's 3 s timeout and its 2 s post-mortem
        os._exit(0)
    time.sleep(0.3)
    start = time.monotonic()
    try:
        dist.all_reduce(t)
        t.numpy()
    except CommunicationError as e:
        report_and_exit(e, start)
    raise AssertionError(f"all_reduce with a {kind} did not raise")


def stuck_abort():
    """Rank 1 stalls; rank 0 raises at the group's timeout, its stream runs again at once
    (the group aborted the communicator: ccl_comm_abort), and it exits normally."""
    on_sample()
    dist.init_parallel_env()
    t = oar.ones([1 << 16])
    dist.all_reduce(t)
    if dist.get_rank() == 1:
        time.sleep(14)  # alive but stuck, well past rank 0's timeout and exit
        os._exit(0)
    time.sleep(0.3)
    start = time.monotonic()
    try:
        dist.all_reduce(t)
        t.numpy()
    except CommunicationError as e:
        print(f"RAISED after {time.monotonic() - start:.1f}s: {e}", flush=True)
    else:
        raise AssertionError("all_reduce with a stuck peer did not raise")
    start = time.monotonic()
    y = (oar.ones([4]) * 2.0).numpy()  # queued behind the aborted all_reduce
    oar.device.synchronize()
    assert (y == 2.0).all(), y
    print(f"STREAM FREE after {time.monotonic() - start:.2f}s", flush=True)
    sys.exit(0)  # a normal interpreter exit, with the plugin's threads still there


if __name__ == "__main__":
    mode = sys.argv[1]
    {"collectives": collectives, "data_parallel": data_parallel,
     "stuck_abort": stuck_abort, "own_op": own_op}.get(mode, lambda: failure(mode))()
    sys.stdout.flush()
    os._exit(0)
