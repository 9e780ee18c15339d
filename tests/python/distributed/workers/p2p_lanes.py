"""Point-to-point completion scenarios (Note [Completion lanes]), one per argv[1]: sends whose
receivers post late, crossing the receives their sender waits for."""
import os
import sys
import time

import numpy as np

import oar
import oar.distributed as dist
from oar.distributed import CommunicationError
from peer_failure import report_and_exit


def _vals(seed, n=1000):
    return np.random.default_rng(seed).standard_normal(n)


def crossing():
    # Rank 0 sends A while rank 1 posts A's recv only after a barrier that rank 0 reaches once
    # B (from rank 1) arrived: B's task must finish while A's send still waits for its receiver.
    dist.init_parallel_env()
    rank = dist.get_rank()
    a, b = _vals(1), _vals(2)
    for step in range(3):  # the lanes are reused
        if rank == 0:
            ta = dist.isend(oar.to_tensor(a + step), 1)
            rb = oar.zeros([1000], dtype="float64")
            tb = dist.irecv(rb, 1)
            tb.wait(timeout=20)
            np.testing.assert_array_equal(rb.numpy(), b - step)
            assert not ta.is_completed(), "A completed before its receiver posted"
            dist.barrier()
            ta.wait(timeout=20)
            assert ta.is_completed() and tb.is_completed()
        else:
            tb = dist.isend(oar.to_tensor(b - step), 0)
            time.sleep(0.3)  # rank 0 checks A is still pending meanwhile
            dist.barrier()
            ra = oar.zeros([1000], dtype="float64")
            dist.recv(ra, 0)
            np.testing.assert_array_equal(ra.numpy(), a + step)
            tb.wait(timeout=20)
    print("CROSSING OK", flush=True)


def three_peers():
    # Rank 0 waits on its recv from rank 2 while its earlier recv from rank 1 is pending; rank
    # 1 sends only after rank 0's send, which rank 0 issues after that wait.
    dist.init_parallel_env()
    rank = dist.get_rank()
    if rank == 0:
        r1, r2 = oar.zeros([4], dtype="float64"), oar.zeros([4], dtype="float64")
        t1, t2 = dist.irecv(r1, 1), dist.irecv(r2, 2)
        t2.wait(timeout=20)
        assert not t1.is_completed()
        np.testing.assert_array_equal(r2.numpy(), [2.0] * 4)
        dist.send(oar.full([4], 7.0, dtype="float64"), 1)
        t1.wait(timeout=20)
        np.testing.assert_array_equal(r1.numpy(), [8.0] * 4)
    elif rank == 1:
        x = oar.zeros([4], dtype="float64")
        dist.recv(x, 0)
        dist.send(x + 1, 0)
    else:
        dist.send(oar.full([4], 2.0, dtype="float64"), 0)
    dist.barrier()
    print("THREE PEERS OK", flush=True)


def task_states():
    # is_completed() is False while the peer has not posted, wait() then returns, and a wait
    # with a timeout shorter than the peer's delay raises without failing the op.
    dist.init_parallel_env()
    rank = dist.get_rank()
    if rank == 0:
        ts = dist.isend(oar.to_tensor(_vals(3)), 1)
        r = oar.zeros([1000], dtype="float64")
        tr = dist.irecv(r, 1)
        assert not ts.is_completed() and not tr.is_completed()
        try:
            tr.wait(timeout=0.2)
        except CommunicationError as e:
            assert "recv" in str(e) and "timed out" in str(e), e
        else:
            raise AssertionError("a 0.2 s wait on a recv posted 1 s later did not time out")
        tr.wait()
        ts.wait()
        assert ts.is_completed() and tr.is_completed()
        np.testing.assert_array_equal(r.numpy(), _vals(4))
    else:
        time.sleep(1.0)
        x = oar.zeros([1000], dtype="float64")
        dist.recv(x, 0)
        np.testing.assert_array_equal(x.numpy(), _vals(3))
        dist.send(oar.to_tensor(_vals(4)), 0)
    print("TASK STATES OK", flush=True)


def dead_receiver(kind):
    # Rank 1 exits without posting its recv (or its send): rank 0's pending op fails within the
    # timeout naming the op and rank 1, and a later op says the group is unusable.
    dist.init_parallel_env()
    rank = dist.get_rank()
    dist.barrier()
    if rank == 1:
        time.sleep(0.5)
        os._exit(3)
    start = time.monotonic()
    if kind == "send":
        task = dist.isend(oar.ones([1 << 20], dtype="float32"), 1)
    else:
        task = dist.irecv(oar.zeros([1 << 20], dtype="float32"), 1)
    try:
        task.wait()
    except CommunicationError as e:
        assert task.is_completed()
        report_and_exit(e, start)
    raise AssertionError(f"{kind} to a dead peer did not raise")


def destroy_pending():
    # destroy_process_group with a send still waiting for its receiver: it returns once the
    # receiver posted (the lane finishes what it holds), the task completed without error.
    dist.init_parallel_env()
    rank = dist.get_rank()
    if rank == 0:
        task = dist.isend(oar.to_tensor(_vals(5)), 1)
        start = time.monotonic()
        dist.destroy_process_group()
        took = time.monotonic() - start
        assert task.is_completed(), "destroy returned with a send pending"
        task.wait()
        print(f"DESTROYED after {took:.1f}s", flush=True)
    else:
        time.sleep(1.0)
        x = oar.zeros([1000], dtype="float64")
        dist.recv(x, 0)
        np.testing.assert_array_equal(x.numpy(), _vals(5))
        dist.destroy_process_group()
    print("DESTROY OK", flush=True)


if __name__ == "__main__":
    name = sys.argv[1]
    if name.startswith("dead_"):
        dead_receiver(name[len("dead_"):])
    else:
        globals()[name]()
