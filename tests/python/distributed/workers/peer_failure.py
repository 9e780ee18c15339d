"""What a worker does once an op raised because its peer died or stalled: report the error
with the time it took, check that the group is unusable afterwards (a later call fails at
once instead of hanging), and exit 0 so the test reads both lines."""
import os
import time

import oar
import oar.distributed as dist
from oar.distributed import CommunicationError


def report_and_exit(error, start):
    print(f"RAISED after {time.monotonic() - start:.1f}s: {error}", flush=True)
    try:
        dist.all_reduce(oar.ones([2]))
    except CommunicationError as e2:
        assert "unusable" in str(e2), e2
        print("LATER CALL RAISED", flush=True)
    os._exit(0)
