"""ProcessGroup's completion lanes (Note [Completion lanes]): a pending send or recv never holds
back another peer's or direction's task; tasks' states; dead peers and destruction while a
send is pending (workers/p2p_lanes.py)."""
import re

import pytest

from _harness import assert_all_ok, run_ranks

import oar

pytestmark = pytest.mark.skipif(not oar._C.distributed.available, reason="built without Gloo")


@pytest.mark.parametrize("scenario,nprocs,marker", [
    ("crossing", 2, "CROSSING OK"), ("three_peers", 3, "THREE PEERS OK"),
    ("task_states", 2, "TASK STATES OK"), ("destroy_pending", 2, "DESTROY OK")])
def test_lanes(tmp_path, scenario, nprocs, marker):
    # A deadlock would run into the 20 s wait timeouts (or the 60 s job limit), never pass.
    results, _ = run_ranks("p2p_lanes.py", nprocs, [scenario], timeout=60, tmp_path=tmp_path,
                           env={"PADDLE_DIST_TIMEOUT": "30"})
    assert_all_ok(results)
    for _, out in results:
        assert marker in out, out
    if scenario == "destroy_pending":
        took = float(re.search(r"DESTROYED after ([\d.]+)s", results[0][1]).group(1))
        assert 0.5 < took < 20, took  # waited for the receiver (posting after 1 s)


@pytest.mark.parametrize("kind", ["send", "recv"])
def test_dead_peer_fails_pending_p2p(tmp_path, kind):
    results, _ = run_ranks("p2p_lanes.py", 2, [f"dead_{kind}"], timeout=60, tmp_path=tmp_path,
                           env={"PADDLE_DIST_TIMEOUT": "8"})
    rc0, out0 = results[0]
    assert rc0 == 0, out0
    assert results[1][0] == 3
    msg = re.search(r"RAISED after ([\d.]+)s: (.*)", out0)
    assert msg, out0
    assert float(msg.group(1)) < 12  # within the 8 s timeout plus the post-mortem
    want = rf"{kind} on process group 'default' \(global ranks \[0, 1\], op #\d+\) " + \
        ("to" if kind == "send" else "from") + " rank 1 failed on rank 0 after"
    assert re.match(want, msg.group(2)), msg.group(2)
    assert "Rank 1 exited, was killed, or never posted the matching" in msg.group(2), msg.group(2)
    assert "LATER CALL RAISED" in out0
