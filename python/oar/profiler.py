"""oar.profiler: an op-by-op profile of converted programs (the executor's timing).

    with oar.profiler.Profiler() as prof:
        for _ in range(10):
            static_net(x)
    print(prof.summary())          # ops sorted by total time

Programs run by oar.jit (to_static functions, loaded layers) and oar.inference
predictors while the profiler is active are timed per op; eager ops are not.
"""
_active = []


class Profiler:
    def __init__(self, targets=None, scheduler=None, on_trace_ready=None, timer_only=False):
        self._executors = []
        self._running = False

    # -- lifecycle
    def start(self):
        if self._running:
            raise RuntimeError("Profiler.start: already started")
        self._running = True
        _active.append(self)

    def stop(self):
        if not self._running:
            raise RuntimeError("Profiler.stop: not started")
        self._running = False
        _active.remove(self)
        for ex in self._executors:
            ex.set_profiling(False)

    def step(self, num_samples=None):
        pass

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def _watch(self, executor):
        if all(e is not executor for e in self._executors):
            executor.reset_profile()
            executor.set_profiling(True)
            self._executors.append(executor)

    # -- results
    def op_stats(self):
        """[(op name, calls, total seconds)] over every profiled program, slowest first."""
        total = {}
        for ex in self._executors:
            for name, calls, secs in ex.profile():
                c, s = total.get(name, (0, 0.0))
                total[name] = (c + calls, s + secs)
        return sorted(((n, c, s) for n, (c, s) in total.items()), key=lambda r: -r[2])

    def summary(self, sorted_by=None, op_detail=True, thread_sep=False, time_unit="ms"):
        scale = {"s": 1.0, "ms": 1e3, "us": 1e6}.get(time_unit)
        if scale is None:
            raise ValueError(f"Profiler.summary: time_unit must be 's', 'ms' or 'us', got {time_unit!r}")
        rows = self.op_stats()
        total = sum(s for _, _, s in rows) or 1.0
        w = max([len(n) for n, _, _ in rows] + [2])
        lines = [f"{'op':<{w}}  {'calls':>7}  {'total(' + time_unit + ')':>12}  {'avg(' + time_unit + ')':>12}  {'ratio':>6}"]
        for n, c, s in rows:
            lines.append(f"{n:<{w}}  {c:>7}  {s * scale:>12.4f}  {s * scale / max(c, 1):>12.4f}  {100 * s / total:>5.1f}%")
        text = "\n".join(lines)
        print(text)
        return text


def _notify(executor):
    """Called by the jit/inference runners before each run."""
    for p in _active:
        p._watch(executor)
