"""A dead or stuck peer, mismatched shapes and mismatched worlds are errors that name the
op, the group and the rank, never a hang (workers/failures.py)."""
import re

import pytest

from _harness import assert_all_ok, run_ranks

import oar

pytestmark = pytest.mark.skipif(not oar._C.distributed.available, reason="built without Gloo")


def test_dead_peer_mid_collective_raises_naming_it(tmp_path):
    results, seconds = run_ranks("failures.py", 2, ["dead_peer"], timeout=60, tmp_path=tmp_path,
                                 env={"PADDLE_DIST_TIMEOUT": "10"})
    rc0, out0 = results[0]
    assert rc0 == 0, out0
    assert results[1][0] == 3
    msg = re.search(r"RAISED after ([\d.]+)s: (.*)", out0)
    assert msg, out0
    assert float(msg.group(1)) < 15  # within the 10 s timeout plus the post-mortem
    assert "all_reduce" in msg.group(2) and "'default'" in msg.group(2)
    assert "did not arrive: [1]" in msg.group(2), msg.group(2)
    assert "LATER CALL RAISED" in out0


def test_stuck_peer_times_out_naming_it(tmp_path):
    results, _ = run_ranks("failures.py", 2, ["stuck_peer"], timeout=60, tmp_path=tmp_path,
                           env={"PADDLE_DIST_TIMEOUT": "3"})
    rc0, out0 = results[0]
    assert rc0 == 0, out0
    msg = re.search(r"RAISED after ([\d.]+)s: (.*)", out0)
    assert msg, out0
    assert 2.5 < float(msg.group(1)) < 15
    assert "all_reduce" in msg.group(2) and "did not arrive: [1]" in msg.group(2), msg.group(2)


def test_debug_flag_names_the_rank_whose_shape_differs(tmp_path):
    results, _ = run_ranks("failures.py", 2, ["debug_mismatch"], timeout=60, tmp_path=tmp_path,
                           env={"OAR_DIST_DEBUG": "1"})
    assert_all_ok(results)
    for _, out in results:
        assert "RAISED" in out and "GROUP STILL WORKS" in out, out
        line = out.split("RAISED: ")[1].splitlines()[0]
        assert "all_reduce" in line and "rank 1" in line and "[4, 5]" in line and "[4, 3]" in line, line


def test_world_size_mismatch_is_an_error(tmp_path):
    # Rank 1 believes the job has 3 ranks: rank 0 names the mismatch; rank 1 fails too,
    # naming the mismatch, the rank that never came, or the store gone with rank 0.
    import _harness
    master = f"127.0.0.1:{_harness.free_port()}"
    import subprocess
    import sys
    import os
    procs = []
    for rank, world in ((0, 2), (1, 3)):
        env = _harness.worker_env(rank, world, master, {"PADDLE_DIST_TIMEOUT": "4"})
        procs.append(subprocess.Popen([sys.executable, os.path.join(_harness.WORKERS, "failures.py"),
                                       "world_mismatch"], env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True))
    outs = [p.communicate(timeout=60)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    assert "RAISED" in outs[0] and "rank 1" in outs[0] and "world size" in outs[0], outs[0]
    assert "RAISED" in outs[1], outs[1]
    assert any(m in outs[1] for m in ("never arrived: [2]", "master process (rank 0)",
                                      "rank 1 was started for ranks [0, 1, 2] but rank 0 for [0, 1]")), outs[1]
