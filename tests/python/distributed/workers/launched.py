"""A training script for the launcher tests; argv[1] picks the behaviour."""
import os
import signal
import sys
import time

import oar
import oar.distributed as dist

mode = sys.argv[1]
dist.init_parallel_env()
rank, n = dist.get_rank(), dist.get_world_size()
env = dist.ParallelEnv()
assert env.trainer_endpoints[rank] == env.current_endpoint, (env.trainer_endpoints, env.current_endpoint)
print(f"rank {rank} of {n}, restart {os.environ['PADDLE_RESTART_COUNT']}, "
      f"local {os.environ['PADDLE_LOCAL_RANK']}", flush=True)
if mode == "kill" and rank == 1:
    os.kill(os.getpid(), signal.SIGKILL)
if mode == "fail_once" and rank == 1 and os.environ["PADDLE_RESTART_COUNT"] == "0":
    sys.exit(7)
if mode == "kill":
    time.sleep(60)  # rank 0 would wait far longer than the job may take to stop
t = oar.full([4], float(rank + 1))
dist.all_reduce(t)
assert float(t.numpy()[0]) == n * (n + 1) / 2
print(f"rank {rank} done", flush=True)
