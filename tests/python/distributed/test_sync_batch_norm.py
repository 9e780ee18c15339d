"""SyncBatchNorm on 2 processes equals BatchNorm on the whole batch (workers/sync_batch_norm.py)."""
import pytest

from _harness import assert_all_ok, run_ranks

import oar

pytestmark = pytest.mark.skipif(not oar._C.distributed.available, reason="built without Gloo")


def test_sync_batch_norm_matches_whole_batch(tmp_path):
    results, _ = run_ranks("sync_batch_norm.py", 2, tmp_path=tmp_path)
    assert_all_ok(results)
    assert all("sync batch norm ok" in text for _, text in results)
