"""fleet's job queries, all_reduce and collective_perf on each rank of a collective job."""
import warnings

import numpy as np

import oar.distributed as dist
from oar.distributed import fleet

fleet.init(is_collective=True)
rank, world = dist.get_rank(), dist.get_world_size()
assert fleet.worker_index() == rank and fleet.worker_num() == world
assert fleet.is_first_worker() == (rank == 0) and fleet.is_worker() and not fleet.is_server()
assert fleet.server_num() == 0
x = np.arange(6, dtype=np.float64).reshape(2, 3) * (rank + 1)
every = [np.arange(6, dtype=np.float64).reshape(2, 3) * (r + 1) for r in range(world)]
np.testing.assert_allclose(fleet.all_reduce(x, "sum"), sum(every))
np.testing.assert_allclose(fleet.all_reduce(x, "mean"), sum(every) / world)
np.testing.assert_allclose(fleet.all_reduce(x, "max"), np.maximum.reduce(every))
np.testing.assert_allclose(fleet.all_reduce(-x, "min"), -np.maximum.reduce(every))
assert fleet.all_reduce(rank + 1).item() == world * (world + 1) // 2
fleet.barrier_worker()
for op in ("allreduce", "broadcast", "reduce", "allgather", "reduce_scatter"):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no limit exceeded -> no warning; limits -1: none checked
        times = fleet.collective_perf(op, round=3, size_and_time={1 << 10: -1, 1 << 16: -1})
    assert sorted(times) == [1 << 10, 1 << 16] and all(t > 0 for t in times.values()), times
try:
    fleet.save_persistables()
    raise AssertionError("a collective job of several ranks must not skip save_persistables")
except NotImplementedError as e:
    assert "needs Paddle's fleet runtime" in str(e)
print(f"fleet roles ok {rank}", flush=True)
