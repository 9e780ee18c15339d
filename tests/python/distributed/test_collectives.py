"""Collectives against NumPy on 2 and 4 processes over loopback: every collective, dtype and
reduce op (workers/collectives.py), and both paths of the all-reduce transport, Note
[All-reduce transport]: the direct exchange and the ring, uneven chunks, every element size,
bitwise agreement between ranks, reduce_scatter on the ring (workers/allreduce_paths.py)."""
import pytest

from _harness import assert_all_ok, run_ranks

import oar

pytestmark = pytest.mark.skipif(not oar._C.distributed.available, reason="built without Gloo")


@pytest.mark.parametrize("script,done", [("collectives.py", "collectives ok"),
                                         ("allreduce_paths.py", "allreduce paths ok")])
@pytest.mark.parametrize("nprocs", [2, 4])
def test_collectives_match_numpy(script, done, nprocs, tmp_path):
    results, _ = run_ranks(script, nprocs, tmp_path=tmp_path)
    assert_all_ok(results)
    for rank, (_, out) in enumerate(results):
        assert f"{done} {rank}" in out
