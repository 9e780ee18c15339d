"""The 'xccl' process-group backend over the plugin ABI's collectives, on the sample device
(backends/examples/sample_device/collectives.cc), 2 processes (workers/xccl.py): every
collective against NumPy, DataParallel against single-process CPU training, auto-parallel
(workers/auto_parallel.py) on the device, and a killed or stuck peer raising in time, naming
the op, the group and the missing rank."""
import importlib.util
import os
import re
import time

import pytest

from _harness import assert_all_ok, run_ranks

import oar

pytestmark = pytest.mark.skipif(not oar._C.distributed.available, reason="built without Gloo")

_SAMPLE_PLUGIN = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                              "device", "sample_plugin.py")


@pytest.fixture(scope="module")
def plugin_env():
    """OAR_SAMPLE_DEVICE_LIB for the workers: the plugin the device suite builds."""
    spec = importlib.util.spec_from_file_location("_sample_plugin", _SAMPLE_PLUGIN)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return {"OAR_SAMPLE_DEVICE_LIB": mod.sample_plugin_path()}


def test_every_collective_on_the_sample_device(plugin_env, tmp_path):
    results, _ = run_ranks("xccl.py", 2, ["collectives"], timeout=120, tmp_path=tmp_path, env=plugin_env)
    assert_all_ok(results)
    for rank, (_, out) in enumerate(results):
        assert f"collectives ok {rank}" in out, out


def test_data_parallel_on_the_sample_device_matches_cpu(plugin_env, tmp_path):
    results, _ = run_ranks("xccl.py", 2, ["data_parallel"], timeout=120, tmp_path=tmp_path, env=plugin_env)
    assert_all_ok(results)
    assert "max loss diff" in results[0][1]


def test_auto_parallel_on_the_sample_device(plugin_env, tmp_path):
    """workers/auto_parallel.py's reshard transfers, sharded ops and tensor-parallel training
    with the device current: the local pieces are cut, padded and joined in device memory
    (distributed/reshard/local_copy.cc; the host may not touch it)."""
    modes = ["reshard", "ops", "mlp", "gpt", "errors"]
    results, _ = run_ranks("auto_parallel.py", 2, ["sample"] + modes, timeout=300, tmp_path=tmp_path, env=plugin_env)
    assert_all_ok(results)
    for rank, (_, out) in enumerate(results):
        for mode in modes:
            assert f"{mode} ok {rank}" in out, out


@pytest.mark.parametrize("schedule", ["FThenB", "1F1B"])
def test_pipeline_stages_on_the_sample_device(schedule, plugin_env, tmp_path):
    """workers/pipeline.py's 2-stage GPT over xccl: the stages' forward sends and backward
    receives go through two groups, each on a stream of its own (Note [Group streams] in
    process_group_xccl.cc); on the caller's one stream they deadlocked. 1F1B also reads a
    received size on the host between sends: the groups' streams are non-blocking, so that
    read does not wait for a pending send to the peer, which reads the same way (Note
    [Non-blocking streams]); a blocking group stream, or numpy() waiting for the whole
    device, deadlocked both stages."""
    results, _ = run_ranks("pipeline.py", 2, ["sample", "pp", schedule], timeout=300, tmp_path=tmp_path,
                           env=plugin_env)
    assert_all_ok(results)
    for rank, (_, out) in enumerate(results):
        assert f"pp {schedule} ok {rank}" in out, out


def test_a_tasks_wait_ends_with_its_own_op(plugin_env, tmp_path):
    """task.wait() waits for its op, not for the ops queued after it on the group's stream
    (a per-op event, and ccl_comm_get_async_error for failures: ABI 1.3): waiting for the
    whole stream here waited for a send whose receiver waits for this very wait."""
    results, _ = run_ranks("xccl.py", 2, ["own_op"], timeout=60, tmp_path=tmp_path,
                           env={**plugin_env, "OWN_OP_DIR": str(tmp_path), "PADDLE_DIST_TIMEOUT": "10"})
    assert_all_ok(results)
    for rank, (_, out) in enumerate(results):
        assert f"own_op ok {rank}" in out, out


@pytest.mark.parametrize("kind,timeout", [("dead_peer", 10), ("stuck_peer", 3)])
def test_a_killed_or_stuck_peer_raises_naming_it(kind, timeout, plugin_env, tmp_path):
    results, _ = run_ranks("xccl.py", 2, [kind], timeout=60, tmp_path=tmp_path,
                           env=dict(plugin_env, PADDLE_DIST_TIMEOUT=str(timeout),
                                    SAMPLE_DEVICE_CCL_TIMEOUT_S=str(timeout + 1)))
    rc0, out0 = results[0]
    assert rc0 == 0, out0
    if kind == "dead_peer":
        assert results[1][0] == -9, results[1]
    msg = re.search(r"RAISED after ([\d.]+)s: (.*)", out0)
    assert msg, out0
    seconds, text = float(msg.group(1)), msg.group(2)
    assert "all_reduce" in text and "process group 'default'" in text, text
    assert "did not arrive: [1]" in text, text
    if kind == "dead_peer":
        # Seen at once (the plugin checks its peers' pids), not by the 10 s timeout; then the
        # post-mortem asks the store for 2 s which ranks arrived.
        assert seconds < 8, out0
        assert "peer rank 1" in text and "exited" in text and "timed out" not in text, text
    else:
        assert 2.5 < seconds < 9, out0
        assert "timed out after 3" in text, text
    assert "LATER CALL RAISED" in out0


def test_a_stuck_peer_is_aborted_so_the_stream_and_process_go_on(plugin_env, tmp_path):
    # The plugin's own timeout is 10 minutes: only the group's ccl_comm_abort (ABI 1.2)
    # frees the stream that the stuck all_reduce holds, before rank 1 finally exits at ~14 s.
    start = time.monotonic()
    results, _ = run_ranks("xccl.py", 2, ["stuck_abort"], timeout=60, tmp_path=tmp_path,
                           env=dict(plugin_env, PADDLE_DIST_TIMEOUT="3", SAMPLE_DEVICE_CCL_TIMEOUT_S="600"))
    rc0, out0 = results[0]
    assert rc0 == 0, out0
    raised = re.search(r"RAISED after ([\d.]+)s: (.*)", out0)
    assert raised and 2.5 < float(raised.group(1)) < 9, out0
    assert "timed out after 3" in raised.group(2), out0
    free = re.search(r"STREAM FREE after ([\d.]+)s", out0)
    assert free and float(free.group(1)) < 2.0, out0
    assert time.monotonic() - start < 40
