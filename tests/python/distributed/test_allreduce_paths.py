"""Oar's all-reduce transport (Note [All-reduce transport]): the direct exchange and the
ring, uneven chunks, every element size, bitwise agreement between ranks, on 2 and 4
processes (workers/allreduce_paths.py)."""
import pytest

from _harness import assert_all_ok, run_ranks

import oar

pytestmark = pytest.mark.skipif(not oar._C.distributed.available, reason="built without Gloo")


@pytest.mark.parametrize("nprocs", [2, 4])
def test_allreduce_paths_match_numpy(nprocs, tmp_path):
    results, _ = run_ranks("allreduce_paths.py", nprocs, tmp_path=tmp_path)
    assert_all_ok(results)
    for rank, (_, out) in enumerate(results):
        assert f"allreduce paths ok {rank}" in out
