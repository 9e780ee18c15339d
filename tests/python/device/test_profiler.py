"""paddle.profiler on one timeline: eager ops, backward nodes, executor steps and
RecordEvent from the host tracer, kernels and copies from a plugin's profiler hooks
(the sample device's), schedulers, Chrome trace export and summary()."""
import json
import os

import numpy as np
import pytest

import oar
import oar.profiler as profiler
from oar.profiler import ProfilerState as S

CPU = profiler.ProfilerTarget.CPU
CUSTOM = profiler.ProfilerTarget.CUSTOM_DEVICE


def quiet(**kw):
    return profiler.Profiler(on_trace_ready=lambda p: None, **kw)


def ops_named(prof, name):
    return [e for e in prof.profiler_result.host if e[0] == name and e[4] == profiler.TracerEventType.Operator.value]


def test_eager_ops_are_counted_once_per_call():
    x = oar.to_tensor(np.ones((3, 4), "float32"))
    with quiet(targets=[CPU]) as p:
        for _ in range(5):
            y = x + x
        z = oar.matmul(y, y.T)
    assert len(ops_named(p, "add")) == 5
    assert len(ops_named(p, "matmul")) == 1
    stats = dict((n, c) for n, c, _ in p.op_stats())
    assert stats["add"] == 5 and stats["matmul"] == 1
    for e in p.profiler_result.host:
        assert e[2] >= e[1] > 0
    # nothing records once stopped
    assert not oar._C.profiler.recording()
    before = len(p.profiler_result.host)
    _ = z + z
    assert len(p.profiler_result.host) == before


def test_backward_nodes_and_record_event_are_on_the_timeline():
    w = oar.to_tensor(np.random.rand(4, 4).astype("float32"), stop_gradient=False)
    x = oar.to_tensor(np.random.rand(2, 4).astype("float32"))

    @profiler.RecordEvent("decorated")
    def forward():
        return oar.matmul(x, w).sum()

    with quiet(targets=[CPU]) as p:
        with profiler.RecordEvent("train_step"):
            loss = forward()
            loss.backward()
        ev = profiler.RecordEvent("manual", profiler.TracerEventType.Optimization)
        ev.begin()
        _ = w * 2.0
        ev.end()
    host = p.profiler_result.host
    user = {e[0]: e for e in host if e[4] in (14, 11)}
    assert set(user) == {"train_step", "decorated", "manual"}
    assert user["manual"][4] == profiler.TracerEventType.Optimization.value
    backward = [e for e in host if e[4] == profiler.TracerEventType.Backward.value]
    assert any(e[0] == "MatmulGradNode" for e in backward), [e[0] for e in backward]
    step = user["train_step"]
    mm = ops_named(p, "matmul")[0]
    assert step[1] <= mm[1] and mm[2] <= step[2]  # nested in time
    assert "Backward" in p.summary() and "UserDefined" in p.summary()


def test_record_event_outside_a_profiler_records_nothing_and_checks_arguments():
    with profiler.RecordEvent("idle"):
        pass
    with pytest.raises(TypeError, match="RecordEvent: name must be a str"):
        profiler.RecordEvent(3)
    with pytest.raises(TypeError, match="event_type"):
        profiler.RecordEvent("x", event_type=2)


def test_make_scheduler_states():
    sched = profiler.make_scheduler(closed=1, ready=1, record=2, repeat=2, skip_first=1)
    got = [sched(i) for i in range(11)]
    assert got == [S.CLOSED, S.CLOSED, S.READY, S.RECORD, S.RECORD_AND_RETURN,
                   S.CLOSED, S.READY, S.RECORD, S.RECORD_AND_RETURN, S.CLOSED, S.CLOSED]
    forever = profiler.make_scheduler(closed=0, ready=0, record=1)
    assert all(forever(i) == S.RECORD_AND_RETURN for i in range(5))
    for bad in (dict(closed=-1, ready=0, record=1), dict(closed=0, ready=0, record=0),
                dict(closed=0, ready=0, record=1.5), dict(closed=0, ready=0, record=1, repeat=-2)):
        with pytest.raises(ValueError, match="make_scheduler: "):
            profiler.make_scheduler(**bad)


def test_tuple_scheduler_records_steps_start_to_end():
    results = []
    x = oar.ones([2])
    with profiler.Profiler(targets=[CPU], scheduler=(2, 5), on_trace_ready=lambda p: results.append(p.profiler_result)) as p:
        for i in range(8):
            for _ in range(i + 1):
                x = x + 1.0  # step i runs i + 1 adds
            p.step()
    assert len(results) == 1
    steps = sorted(e[0] for e in results[0].host if e[4] == profiler.TracerEventType.ProfileStep.value)
    assert steps == ["ProfileStep#2", "ProfileStep#3", "ProfileStep#4"]
    adds = [e for e in results[0].host if e[0] == "add"]
    assert len(adds) == 3 + 4 + 5
    for bad in ((3, 3), (1, 2, 3), (-1, 2)):
        with pytest.raises(ValueError, match="Profiler: "):
            profiler.Profiler(scheduler=bad)


def test_repeating_scheduler_hands_each_recording_over():
    seen = []
    sched = profiler.make_scheduler(closed=1, ready=0, record=2, repeat=2)
    p = profiler.Profiler(targets=[CPU], scheduler=sched, on_trace_ready=lambda prof: seen.append(prof.step_num))
    p.start()
    for _ in range(9):
        _ = oar.ones([1]) * 2.0
        p.step(num_samples=4)
    p.stop()
    assert seen == [3, 6]
    assert "ips" in p.step_info()


def test_profiler_errors():
    p = quiet(targets=[CPU])
    with pytest.raises(RuntimeError, match="nothing recorded"):
        p.summary()
    with pytest.raises(RuntimeError, match="not started"):
        p.step()
    p.start()
    with pytest.raises(RuntimeError, match="already started"):
        p.start()
    other = quiet(targets=[CPU])
    with pytest.raises(RuntimeError, match="already recording"):
        other.start()
    p.stop()
    with pytest.raises(ValueError, match="format must be 'json'"):
        p.export("x.pb", format="pb")
    with pytest.raises(ValueError, match="time_unit"):
        p.summary(time_unit="h")
    with pytest.raises(TypeError, match="targets"):
        profiler.Profiler(targets=["cpu"])
    bad = profiler.Profiler(targets=[CPU], scheduler=lambda step: "RECORD")
    with pytest.raises(TypeError, match="not a ProfilerState"):
        bad.start()
    forgotten = quiet(targets=[CPU])
    forgotten.start()
    assert oar._C.profiler.recording()
    del forgotten  # dropped while recording: recording stops
    assert not oar._C.profiler.recording()
    with quiet(targets=[CPU]) as again:
        _ = oar.ones([1]) + 1.0
    assert ops_named(again, "add")


def test_summary_sorts_operators_by_time(capsys):
    a = oar.to_tensor(np.random.rand(128, 128).astype("float32"))
    with quiet(targets=[CPU]) as p:
        for _ in range(3):
            _ = oar.matmul(a, a)
        _ = a + a
    text = p.summary(sorted_by=profiler.SortedKeys.CPUTotal, time_unit="us")
    assert text in capsys.readouterr().out
    rows = [line.split() for line in text.splitlines()]
    start = next(i for i, r in enumerate(rows) if r and r[0] == "Operator")
    names, totals = [], []
    for r in rows[start + 1:]:
        if not r:
            break
        names.append(r[0])
        totals.append(float(r[2]))
    assert set(names) == {"matmul", "add"} and totals == sorted(totals, reverse=True)
    assert rows[start + 1 + names.index("matmul")][1] == "3"


def test_device_kernels_and_copies_join_the_host_timeline(sample, tmp_path):
    oar.set_device("sample:0")
    try:
        a = np.random.rand(16, 16).astype("float32")
        with profiler.Profiler(targets=[CPU, CUSTOM], on_trace_ready=profiler.export_chrome_tracing(
                str(tmp_path), "w")) as p:
            x = oar.to_tensor(a)
            y = oar.matmul(x, x) + 1.0
            out = y.numpy()
        np.testing.assert_allclose(out, a @ a + 1.0, rtol=1e-5)
    finally:
        oar.set_device("cpu")
    dev = p.profiler_result.device
    places = {e[3] for e in dev}
    assert places == {"sample:0"}, places
    names = [e[0] for e in dev]
    assert "matmul" in names and "Memcpy HtoD" in names and "Memcpy DtoH" in names, names
    kernel = next(e for e in dev if e[0] == "matmul")
    host_mm = ops_named(p, "matmul")[0]
    assert kernel[1] >= host_mm[1] and kernel[2] >= kernel[1]  # queued by the op, run after
    add = next(e for e in dev if e[0] == "add")
    d2h = next(e for e in dev if e[0] == "Memcpy DtoH")
    assert kernel[2] <= add[1] and add[2] <= d2h[1], dev  # the stream's order, then the read back
    assert kernel[4] == add[4] != 0 and d2h[4] == 0  # one stream; the blocking copy on the default
    files = os.listdir(tmp_path)
    assert len(files) == 1 and files[0].startswith("w_time_") and files[0].endswith(".paddle_trace.json")
    trace = json.load(open(tmp_path / files[0]))["traceEvents"]
    procs = {e["args"]["name"] for e in trace if e["ph"] == "M"}
    assert "sample:0" in procs
    spans = [e for e in trace if e["ph"] == "X"]
    assert {"matmul", "add", "Memcpy HtoD"} <= {e["name"] for e in spans}
    assert {e["cat"] for e in spans} >= {"Operator", "Kernel", "Memcpy"}
    assert all(e["dur"] >= 0 for e in spans)
    assert "sample:0 matmul" in p.summary()


def test_cpu_target_only_leaves_the_devices_alone(sample):
    oar.set_device("sample:0")
    try:
        with quiet(targets=[CPU]) as p:
            (oar.ones([4]) * 3.0).numpy()
        with quiet(targets=[CUSTOM]) as q:
            (oar.ones([4]) * 3.0).numpy()
    finally:
        oar.set_device("cpu")
    assert p.profiler_result.device == [] and ops_named(p, "multiply")
    assert q.profiler_result.device and not ops_named(q, "multiply")


def test_default_on_trace_ready_writes_chrome_traces(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with profiler.Profiler(targets=[CPU]):
        _ = oar.ones([2]) + 1.0
    files = os.listdir(tmp_path / "profiler_log")
    assert len(files) == 1
    trace = json.load(open(tmp_path / "profiler_log" / files[0]))
    assert any(e["name"] == "add" for e in trace["traceEvents"])
