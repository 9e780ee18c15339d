"""Failure scenarios, one per argv[1], run as the ranks of a 2-rank job."""
import os
import sys
import time

import oar
import oar.distributed as dist
from oar.distributed import CommunicationError
from peer_failure import report_and_exit


def dead_peer():
    # Rank 1 leaves in the middle of an all-reduce; rank 0 must fail, not hang.
    dist.init_parallel_env()
    big = oar.ones([1 << 22], dtype="float32")
    if dist.get_rank() == 1:
        dist.all_reduce(big, sync_op=False)
        os._exit(3)
    time.sleep(0.5)
    start = time.monotonic()
    try:
        for _ in range(50):
            dist.all_reduce(big)
    except CommunicationError as e:
        report_and_exit(e, start)
    raise AssertionError("all_reduce with a dead peer did not raise")


def stuck_peer():
    # Rank 1 never reaches the collective: rank 0 times out naming it.
    dist.init_parallel_env()
    if dist.get_rank() == 1:
        time.sleep(8)  # past rank 0's 3 s timeout and its 2 s post-mortem
        os._exit(0)
    start = time.monotonic()
    try:
        dist.all_reduce(oar.ones([8]))
    except CommunicationError as e:
        print(f"RAISED after {time.monotonic() - start:.1f}s: {e}", flush=True)
        os._exit(0)
    raise AssertionError("all_reduce with a stuck peer did not raise")


def debug_mismatch():
    # OAR_DIST_DEBUG=1: shapes are compared before the op; every rank raises naming rank 1.
    dist.init_parallel_env()
    rank = dist.get_rank()
    t = oar.ones([4, 3 if rank == 0 else 5])
    try:
        dist.all_reduce(t)
    except ValueError as e:
        print(f"RAISED: {e}", flush=True)
    else:
        raise AssertionError("mismatched shapes did not raise under OAR_DIST_DEBUG")
    t = oar.ones([4, 3])  # the group still works
    dist.all_reduce(t)
    assert float(t.numpy()[0, 0]) == 2.0
    print("GROUP STILL WORKS", flush=True)


def world_mismatch():
    # Launched with a different PADDLE_TRAINERS_NUM per rank.
    try:
        dist.init_parallel_env()
    except (ValueError, CommunicationError) as e:
        print(f"RAISED: {e}", flush=True)
        os._exit(0)
    raise AssertionError("init_parallel_env with mismatched world sizes did not raise")


if __name__ == "__main__":
    globals()[sys.argv[1]]()
    sys.exit(0)
