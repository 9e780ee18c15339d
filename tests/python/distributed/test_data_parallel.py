"""DataParallel (and fleet) training on 2 processes reproduces single-process training in
float64 to 1e-10 (workers/data_parallel.py)."""
import pytest

from _harness import assert_all_ok, run_ranks

import oar

pytestmark = pytest.mark.skipif(not oar._C.distributed.available, reason="built without Gloo")


@pytest.mark.parametrize("mode", ["mlp", "no_sync", "unused", "fleet", "gpt"])
def test_data_parallel_matches_single_process(mode, tmp_path):
    results, _ = run_ranks("data_parallel.py", 2, [mode], tmp_path=tmp_path)
    assert_all_ok(results)
    assert "max loss diff" in results[0][1]
