"""oar.profiler: paddle.profiler's API over one timeline (Note [Profiler] in docs/notes/devices.md).

    import oar.profiler as profiler
    with profiler.Profiler(targets=[profiler.ProfilerTarget.CPU, profiler.ProfilerTarget.CUSTOM_DEVICE],
                           scheduler=(2, 5), on_trace_ready=profiler.export_chrome_tracing("./log")) as p:
        for step in range(10):
            train_step()
            p.step()
    p.summary()                    # operators sorted by time, device kernels and copies

While a profiler records, the host tracer (paddle_core/base/host_tracer.h) keeps one event
per eager op call, executor step (to_static functions, loaded layers, predictors), backward
node and RecordEvent; a plugin device's profiler hooks (device_ext.h's profiler_* slots) add
its kernels and copies, on the same CLOCK_MONOTONIC axis. With none recording, an eager op
pays one relaxed atomic load.
"""
import contextlib
import json
import os
import socket
import time
from enum import Enum

from . import _C

__all__ = ["Profiler", "ProfilerState", "ProfilerTarget", "RecordEvent", "SortedKeys", "SummaryView",
           "TracerEventType", "export_chrome_tracing", "make_scheduler"]


class ProfilerState(Enum):
    """What the profiler does during a step (what a scheduler returns)."""
    CLOSED = 0             # nothing
    READY = 1              # about to record (nothing recorded)
    RECORD = 2             # recording
    RECORD_AND_RETURN = 3  # the last step of a recording: the result goes to on_trace_ready


class ProfilerTarget(Enum):
    """The devices a profiler records: CPU (the host) and plugin devices."""
    CPU = 0
    GPU = 1
    MLU = 2
    CUSTOM_DEVICE = 3


class TracerEventType(Enum):
    """The kinds of events on the timeline (Paddle's numbering)."""
    Operator = 0
    Dataloader = 1
    ProfileStep = 2
    CudaRuntime = 3
    Kernel = 4
    Memcpy = 5
    Memset = 6
    UserDefined = 7
    OperatorInner = 8
    Forward = 9
    Backward = 10
    Optimization = 11
    Communication = 12
    PythonOp = 13
    PythonUserDefined = 14


class SortedKeys(Enum):
    """The order of summary()'s tables (GPU*: device time, for the device kernel table)."""
    CPUTotal = 0
    CPUAvg = 1
    CPUMax = 2
    CPUMin = 3
    GPUTotal = 4
    GPUAvg = 5
    GPUMax = 6
    GPUMin = 7


class SummaryView(Enum):
    """The tables summary(views=...) may print (the ones Oar has data for are printed)."""
    DeviceView = 0
    OverView = 1
    ModelView = 2
    DistributedView = 3
    KernelView = 4
    OperatorView = 5
    MemoryView = 6
    MemoryManipulationView = 7
    UDFView = 8


def _check_count(api, name, v, least):
    if isinstance(v, bool) or not isinstance(v, int) or v < least:
        raise ValueError(f"{api}: {name} must be an int >= {least}, got {v!r}")


def make_scheduler(*, closed, ready, record, repeat=0, skip_first=0):
    """A scheduler: after `skip_first` steps, cycles `closed` CLOSED steps, `ready` READY
    steps and `record` recording steps (the last RECORD_AND_RETURN), `repeat` times (0:
    for ever), then stays CLOSED."""
    for name, v, least in (("closed", closed, 0), ("ready", ready, 0), ("record", record, 1),
                           ("repeat", repeat, 0), ("skip_first", skip_first, 0)):
        _check_count("make_scheduler", name, v, least)
    period = closed + ready + record

    def scheduler(step):
        if step < skip_first:
            return ProfilerState.CLOSED
        step -= skip_first
        if repeat > 0 and step // period >= repeat:
            return ProfilerState.CLOSED
        pos = step % period
        if pos < closed:
            return ProfilerState.CLOSED
        if pos < closed + ready:
            return ProfilerState.READY
        return ProfilerState.RECORD if pos < period - 1 else ProfilerState.RECORD_AND_RETURN
    return scheduler


def _default_scheduler(step):
    return ProfilerState.RECORD


def export_chrome_tracing(dir_name, worker_name=None):
    """An on_trace_ready callback writing each result as Chrome trace JSON to
    dir_name/{worker_name}_time_{timestamp}.paddle_trace.json (worker_name defaults to
    hostname_pid)."""
    if not isinstance(dir_name, (str, os.PathLike)):
        raise TypeError(f"export_chrome_tracing: dir_name must be a path, got {type(dir_name).__name__}")
    if worker_name is not None and not isinstance(worker_name, str):
        raise TypeError(f"export_chrome_tracing: worker_name must be a str, got {type(worker_name).__name__}")

    def handle(prof):
        os.makedirs(dir_name, exist_ok=True)
        worker = worker_name or f"host_{socket.gethostname()}pid_{os.getpid()}"
        stamp = time.strftime("%Y_%m_%d_%H_%M_%S")
        prof._export_count += 1
        path = os.path.join(dir_name, f"{worker}_time_{stamp}_{prof._export_count}.paddle_trace.json")
        prof.export(path, format="json")
    return handle


class RecordEvent(contextlib.ContextDecorator):
    """A user range on the timeline: a context manager, a decorator, or begin()/end()."""

    def __init__(self, name, event_type=TracerEventType.PythonUserDefined):
        if not isinstance(name, str):
            raise TypeError(f"RecordEvent: name must be a str, got {type(name).__name__}")
        if not isinstance(event_type, TracerEventType):
            raise TypeError(f"RecordEvent: event_type must be a TracerEventType, got {event_type!r}")
        self.name = name
        self.event_type = event_type
        self._start = None

    def begin(self):
        self._start = _C.profiler.now_ns() if _C.profiler.recording() else None

    def end(self):
        if self._start is not None:
            _C.profiler.record(self.name, self.event_type.value, self._start, _C.profiler.now_ns())
            self._start = None

    def __enter__(self):
        self.begin()
        return self

    def __exit__(self, *exc):
        self.end()
        return False


class _Result:
    """One recording: host events (name, start_ns, end_ns, thread id, type) and device
    events (name, start_ns, end_ns, place, stream id)."""

    def __init__(self, host, device):
        self.host = host
        self.device = device


def _stats(events):
    """{name: [calls, total_ns, max_ns, min_ns]} over (name, start, end, ...) rows."""
    out = {}
    for e in events:
        d = e[2] - e[1]
        s = out.get(e[0])
        if s is None:
            out[e[0]] = [1, d, d, d]
        else:
            s[0] += 1
            s[1] += d
            s[2] = max(s[2], d)
            s[3] = min(s[3], d)
    return out


_SORT = {0: lambda s: s[1], 1: lambda s: s[1] / s[0], 2: lambda s: s[2], 3: lambda s: s[3]}


class Profiler:
    """Records the host and the devices in `targets` during the steps `scheduler` picks
    (None: from start() to stop(); a (start, end) tuple: steps [start, end)), handing each
    recording to on_trace_ready (default: export_chrome_tracing('./profiler_log/'))."""

    def __init__(self, *, targets=None, scheduler=None, on_trace_ready=None, record_shapes=False,
                 profile_memory=False, timer_only=False, emit_nvtx=False, custom_device_types=None,
                 with_flops=False):
        if targets is None:
            targets = [ProfilerTarget.CPU, ProfilerTarget.CUSTOM_DEVICE]
        targets = list(targets) if not isinstance(targets, (str, bytes)) else [targets]
        for t in targets:
            if not isinstance(t, ProfilerTarget):
                raise TypeError(f"Profiler: targets must be ProfilerTarget values, got {t!r}")
        self.targets = set(targets)
        if scheduler is None:
            self._scheduler = _default_scheduler
        elif isinstance(scheduler, tuple):
            if len(scheduler) != 2:
                raise ValueError(f"Profiler: a scheduler tuple is (start_batch, end_batch), got {scheduler!r}")
            start, end = scheduler
            _check_count("Profiler", "scheduler's start_batch", start, 0)
            _check_count("Profiler", "scheduler's end_batch", end, 1)
            if end <= start:
                raise ValueError(f"Profiler: scheduler's end_batch must exceed start_batch, got {scheduler!r}")
            self._scheduler = make_scheduler(closed=max(start - 1, 0), ready=1 if start > 0 else 0,
                                             record=end - start, repeat=1)
        elif callable(scheduler):
            self._scheduler = scheduler
        else:
            raise TypeError(f"Profiler: scheduler must be callable, a (start, end) tuple or None, got {scheduler!r}")
        if on_trace_ready is not None and not callable(on_trace_ready):
            raise TypeError(f"Profiler: on_trace_ready must be callable, got {on_trace_ready!r}")
        self.on_trace_ready = on_trace_ready if on_trace_ready is not None else export_chrome_tracing("./profiler_log/")
        self.timer_only = bool(timer_only)
        self.step_num = 0
        self.previous_state = self.current_state = ProfilerState.CLOSED
        self.profiler_result = None
        self._running = self._collecting = False
        self._export_count = 0
        self._step_start = None
        self._step_times = []
        self._step_samples = []

    # -- lifecycle
    def _state(self, step):
        state = self._scheduler(step)
        if not isinstance(state, ProfilerState):
            raise TypeError(f"Profiler: the scheduler returned {state!r} for step {step}, not a ProfilerState")
        return state

    def start(self):
        """Starts the profiler (recording at once if the scheduler says so for step 0)."""
        if self._running:
            raise RuntimeError("Profiler.start: already started")
        self._running = True
        self._step_start = time.perf_counter()
        if self.timer_only:
            return
        self.current_state = self._state(self.step_num)
        if self.current_state in (ProfilerState.RECORD, ProfilerState.RECORD_AND_RETURN):
            self._begin()

    def stop(self):
        """Stops the profiler; a recording in progress goes to on_trace_ready."""
        if not self._running:
            raise RuntimeError("Profiler.stop: not started")
        self._running = False
        if self._collecting:
            self._end_step_event()
            self._finish()
        self.previous_state = self.current_state = ProfilerState.CLOSED

    def step(self, num_samples=None):
        """Marks the end of one step (num_samples: the batch size, for step_info's ips)."""
        if not self._running:
            raise RuntimeError("Profiler.step: not started")
        if num_samples is not None:
            _check_count("Profiler.step", "num_samples", num_samples, 0)
        now = time.perf_counter()
        self._step_times.append(now - self._step_start)
        self._step_samples.append(num_samples)
        self._step_start = now
        if self.timer_only:
            self.step_num += 1
            return
        if self._collecting:
            self._end_step_event()
        self.step_num += 1
        self.previous_state, self.current_state = self.current_state, self._state(self.step_num)
        recording = (ProfilerState.RECORD, ProfilerState.RECORD_AND_RETURN)
        if self._collecting and (self.previous_state == ProfilerState.RECORD_AND_RETURN
                                 or self.current_state not in recording):
            self._finish()
        if not self._collecting and self.current_state in recording:
            self._begin()

    def step_info(self, unit=None):
        """'reader_cost: ... batch_cost: ... ips: ...' averaged over the steps since the last call."""
        times, samples = self._step_times, self._step_samples
        self._step_times, self._step_samples = [], []
        if not times:
            return "batch_cost: 0.00000 s"
        avg = sum(times) / len(times)
        text = f"reader_cost: 0.00000 s batch_cost: {avg:.5f} s"
        if all(s is not None for s in samples):
            text += f" ips: {sum(samples) / max(sum(times), 1e-12):.3f} {unit or 'samples'}/s"
        return text

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def __del__(self):
        # A profiler dropped while recording stops recording (its result is lost), so the
        # next one can start and eager ops go back to the one-load path.
        if getattr(self, "_collecting", False):
            try:
                _C.profiler.stop()
            except Exception:  # noqa: BLE001: interpreter shutdown, or a device that failed
                pass

    def _begin(self):
        devices = ProfilerTarget.CUSTOM_DEVICE in self.targets or ProfilerTarget.GPU in self.targets
        _C.profiler.start(devices)
        self._collecting = True
        self._step_event_start = _C.profiler.now_ns()

    def _end_step_event(self):
        _C.profiler.record(f"ProfileStep#{self.step_num}", TracerEventType.ProfileStep.value,
                           self._step_event_start, _C.profiler.now_ns())
        self._step_event_start = _C.profiler.now_ns()

    def _finish(self):
        host, device = _C.profiler.stop()
        self._collecting = False
        if ProfilerTarget.CPU not in self.targets:  # device rows only (and the step markers)
            host = [e for e in host if e[4] == TracerEventType.ProfileStep.value]
        self.profiler_result = _Result(host, device)
        self.on_trace_ready(self)

    def _result(self, api):
        if self.profiler_result is None:
            raise RuntimeError(f"Profiler.{api}: nothing recorded yet (no recording step has finished)")
        return self.profiler_result

    # -- results
    def export(self, path, format="json"):
        """Writes the last recording to `path` as Chrome trace JSON (format='json')."""
        if format != "json":
            raise ValueError(f"Profiler.export: format must be 'json', got {format!r}")
        r = self._result("export")
        pid = os.getpid()
        events = [{"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": f"Host pid {pid}"}}]
        for name, t0, t1, tid, typ in r.host:
            events.append({"name": name, "ph": "X", "cat": TracerEventType(typ).name, "pid": pid, "tid": tid,
                           "ts": t0 / 1e3, "dur": (t1 - t0) / 1e3})
        device_pids = {}
        for name, t0, t1, place, stream in r.device:
            if place not in device_pids:
                device_pids[place] = dpid = pid * 100 + 1 + len(device_pids)
                events.append({"name": "process_name", "ph": "M", "pid": dpid, "tid": 0, "args": {"name": place}})
            kind = "Memcpy" if name.startswith("Memcpy") else "Kernel"
            events.append({"name": name, "ph": "X", "cat": kind, "pid": device_pids[place], "tid": stream,
                           "ts": t0 / 1e3, "dur": (t1 - t0) / 1e3, "args": {"place": place, "stream": stream}})
        with open(path, "w") as f:
            json.dump({"displayTimeUnit": "ms", "traceEvents": events}, f)

    def op_stats(self):
        """[(op name, calls, total seconds)] of the last recording's operators, slowest first."""
        ops = [e for e in self._result("op_stats").host if e[4] == TracerEventType.Operator.value]
        return [(n, s[0], s[1] / 1e9) for n, s in sorted(_stats(ops).items(), key=lambda kv: -kv[1][1])]

    def summary(self, sorted_by=SortedKeys.CPUTotal, op_detail=True, thread_sep=False, time_unit="ms", views=None):
        """Prints (and returns) the last recording's tables: operators, user ranges and
        device activity, each sorted by `sorted_by`."""
        scale = {"s": 1e-9, "ms": 1e-6, "us": 1e-3, "ns": 1.0}.get(time_unit)
        if scale is None:
            raise ValueError(f"Profiler.summary: time_unit must be 's', 'ms', 'us' or 'ns', got {time_unit!r}")
        if not isinstance(sorted_by, SortedKeys):
            raise TypeError(f"Profiler.summary: sorted_by must be a SortedKeys value, got {sorted_by!r}")
        r = self._result("summary")
        key = _SORT[sorted_by.value % 4]
        u = time_unit
        lines = []

        def table(title, stats):
            if not stats:
                return
            total = sum(s[1] for s in stats.values()) or 1
            w = max([len(n) for n in stats] + [len(title)])
            lines.append(f"{title:<{w}}  {'calls':>7}  {'total(' + u + ')':>12}  {'avg(' + u + ')':>12}  "
                         f"{'max(' + u + ')':>12}  {'min(' + u + ')':>12}  {'ratio':>6}")
            for n, s in sorted(stats.items(), key=lambda kv: -key(kv[1])):
                lines.append(f"{n:<{w}}  {s[0]:>7}  {s[1] * scale:>12.4f}  {s[1] * scale / s[0]:>12.4f}  "
                             f"{s[2] * scale:>12.4f}  {s[3] * scale:>12.4f}  {100 * s[1] / total:>5.1f}%")
            lines.append("")

        steps = [e for e in r.host if e[4] == TracerEventType.ProfileStep.value]
        if steps:
            span = sum(e[2] - e[1] for e in steps)
            lines += [f"steps: {len(steps)}  total({u}): {span * scale:.4f}  avg({u}): {span * scale / len(steps):.4f}",
                      ""]
        if op_detail:
            table("Operator", _stats(e for e in r.host if e[4] == TracerEventType.Operator.value))
        table("Backward", _stats(e for e in r.host if e[4] == TracerEventType.Backward.value))
        user = (TracerEventType.PythonUserDefined.value, TracerEventType.UserDefined.value,
                TracerEventType.Forward.value, TracerEventType.Optimization.value)
        table("UserDefined", _stats(e for e in r.host if e[4] in user))
        table("Device (kernels, copies)", _stats((f"{e[3]} {e[0]}",) + e[1:] for e in r.device))
        text = "\n".join(lines) if lines else "(no events recorded)"
        print(text)
        return text
