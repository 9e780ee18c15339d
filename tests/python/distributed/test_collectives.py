"""Collectives against NumPy on 2 and 4 processes over loopback (workers/collectives.py)."""
import pytest

from _harness import assert_all_ok, run_ranks

import oar

pytestmark = pytest.mark.skipif(not oar._C.distributed.available, reason="built without Gloo")


@pytest.mark.parametrize("nprocs", [2, 4])
def test_collectives_match_numpy(nprocs, tmp_path):
    results, _ = run_ranks("collectives.py", nprocs, tmp_path=tmp_path)
    assert_all_ok(results)
    for rank, (_, out) in enumerate(results):
        assert f"collectives ok {rank}" in out
