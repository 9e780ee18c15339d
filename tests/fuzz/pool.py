"""A pool of forked workers that evaluate call recipes, each under a time limit. A worker
that dies (a signal, an abort, an exit) or does not answer within the limit is a finding:
the parent writes a one-file reproducer, starts a fresh worker and goes on.

Workers are forked from the parent after `import oar` (so a new worker costs a fork, not an
import); the parent itself never runs an op, so no thread pool exists at fork time (the
entry point pins OpenMP/OpenBLAS to one thread before importing oar)."""
import collections
import inspect
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from multiprocessing import Pipe
from multiprocessing.connection import wait

from . import runtime

RECYCLE_AFTER = 400       # calls per worker before a fresh fork: global state stays near clean
HISTORY = 25              # recipes kept per worker for a reproducer that needs its context
MEM_HEADROOM = 1 << 30    # address space a worker may add to the parent's (bytes)


def _worker_main(conn, mem_limit, scratch):
    os.setpgid(0, 0)
    if mem_limit:
        resource.setrlimit(resource.RLIMIT_AS, (mem_limit, mem_limit))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    os.chdir(scratch)
    import math
    import warnings

    import numpy as np

    import oar
    warnings.simplefilter("ignore")
    import base64
    ns = {"oar": oar, "np": np, "math": math, "base64": base64, "T": runtime.T,
          "load_as": runtime.load_as}
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)  # calls that print (summary, print-like ops) stay quiet
    while True:
        try:
            job = conn.recv()
        except EOFError:
            os._exit(0)
        if job is None:
            os._exit(0)
        src = job
        try:
            r = eval(compile(src, "<fuzz>", "eval"), ns)
            if isinstance(r, oar.Tensor) and 0 <= r.size <= 1 << 20:
                r.numpy()  # read the result back: a view with a bad layout shows here
            out = "ok"
        except MemoryError:
            out = "MemoryError"
        except RecursionError:
            out = "RecursionError"
        except Exception as e:  # any Python exception is the intended answer to a bad call
            out = type(e).__name__
        except BaseException as e:  # SystemExit/KeyboardInterrupt from an op is a finding
            out = "Base:" + type(e).__name__
        conn.send(out)


class Worker:
    def __init__(self, mem_limit):
        parent, child = Pipe()
        # Calls that write files (save, jit.save to a generated path) write in the worker's
        # scratch folder, which the parent removes when the worker ends, however it ends.
        self.scratch = tempfile.mkdtemp(prefix="oar-fuzz-")
        pid = os.fork()
        if pid == 0:
            parent.close()
            try:
                _worker_main(child, mem_limit, self.scratch)
            finally:
                os._exit(0)
        child.close()
        self.pid, self.conn = pid, parent
        self.calls = 0
        self.job = None          # (call number, target name, source) while busy
        self.deadline = None
        self.history = collections.deque(maxlen=HISTORY)

    def send(self, job, timeout):
        self.job = job
        self.deadline = time.monotonic() + timeout
        self.conn.send(job[2])

    def kill(self):
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        return self.reap()

    def reap(self):
        _, status = os.waitpid(self.pid, 0)
        self.conn.close()
        shutil.rmtree(self.scratch, ignore_errors=True)
        return status


def _mem_limit():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024 + MEM_HEADROOM
    return 0


def _heap_check_note():
    """The reproducer's run line under the fuzzer's checking heap (__main__), if it was on:
    a heap overrun aborts at once only with it."""
    if not os.environ.get("MALLOC_CHECK_"):
        return []
    env = " ".join(f"{k}={os.environ[k]}" for k in ("LD_PRELOAD", "MALLOC_CHECK_",
                                                   "FLAGS_oar_allocator_cache_limit_mb") if k in os.environ)
    return [f"# The fuzzer ran it with a checking heap: {env} python <this file>"]


def reproducer(kind, target, src, history, note):
    """One self-contained script: the runtime helpers, the context calls (each may fail),
    then the call that crashed or hung."""
    lines = [f"# oar fuzz finding: {kind} in {target}. {note}",
             "# Run: python <this file>. With the bug present it dies by the signal or hangs;",
             "# fixed, it ends with a Python exception or prints 'no crash'.",
             *_heap_check_note(),
             "import base64  # noqa: F401", "import math  # noqa: F401", ""]
    lines += [inspect.getsource(runtime), ""]
    for h in history:
        lines += ["try:", f"    {h}", "except Exception:", "    pass"]
    lines += [f"r = {src}", "if isinstance(r, oar.Tensor) and 0 <= r.size <= 1 << 20:",
              "    r.numpy()", "print('no crash')", ""]
    return "\n".join(lines)


def replay(path, timeout):
    """Runs a reproducer in a fresh interpreter: 'crash'/'hang' when it still fails."""
    try:
        p = subprocess.run([sys.executable, path], capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "hang"
    return "crash" if p.returncode < 0 or p.returncode > 1 else "ok"


def describe(status):
    if os.WIFSIGNALED(status):
        return f"crash ({signal.Signals(os.WTERMSIG(status)).name})"
    return f"exit ({os.WEXITSTATUS(status)})"


class Pool:
    def __init__(self, n, timeout, findings_dir, log=print):
        self.n, self.timeout, self.dir, self.log = n, timeout, findings_dir, log
        self.mem_limit = _mem_limit() if os.environ.get("OAR_FUZZ_NO_RLIMIT") is None else 0
        self.workers = [Worker(self.mem_limit) for _ in range(n)]
        self.findings = []  # dicts: kind, target, source, file
        self.outcomes = collections.Counter()
        self.ok_targets = set()
        self.reached = set()
        self.per_target = collections.Counter()

    def _finish(self, w, result):
        call, target, src = w.job
        if result.startswith("Base:"):
            self._finding(result, w, keep=True)
        w.history.append(src)
        w.job = None
        w.calls += 1
        self.outcomes[result] += 1
        self.reached.add(target)
        self.per_target[target] += 1
        if result == "ok":
            self.ok_targets.add(target)

    def _finding(self, kind, w, keep=False):
        call, target, src = w.job
        self.reached.add(target)
        history = list(w.history)
        os.makedirs(self.dir, exist_ok=True)
        base = f"{kind.split()[0]}-{target}-{call}".replace("/", "_")
        path = os.path.join(self.dir, base + ".py")
        with open(path, "w") as f:
            f.write(reproducer(kind, target, src, [], f"Call {call}."))
        self.findings.append({"kind": kind, "target": target, "call": call, "source": src,
                              "file": path, "history": history})
        self.log(f"FINDING {kind} in {target}: {src}  -> {path}")
        if not keep:
            w.job = None

    def run(self, jobs, stop_at):
        """Evaluates `jobs` (an iterator of (call number, target, source)) until it ends or
        time.monotonic() passes `stop_at`; returns how many calls finished."""
        done = 0
        jobs = iter(jobs)
        exhausted = False
        while True:
            now = time.monotonic()
            for i, w in enumerate(self.workers):
                if w.job is None and not exhausted and now < stop_at:
                    if w.calls >= RECYCLE_AFTER:
                        w.kill()
                        w = self.workers[i] = Worker(self.mem_limit)
                    job = next(jobs, None)
                    if job is None:
                        exhausted = True
                    else:
                        w.send(job, self.timeout)
            busy = [w for w in self.workers if w.job is not None]
            if not busy:
                return done
            wait_s = max(0.0, min(w.deadline for w in busy) - time.monotonic())
            ready = wait([w.conn for w in busy], timeout=wait_s)
            for i, w in enumerate(self.workers):
                if w.job is None:
                    continue
                if w.conn in ready:
                    try:
                        result = w.conn.recv()
                    except (EOFError, ConnectionResetError):
                        status = w.reap()
                        self._finding(describe(status), w)
                        self.workers[i] = Worker(self.mem_limit)
                        done += 1
                        continue
                    self._finish(w, result)
                    done += 1
                elif time.monotonic() >= w.deadline:
                    w.kill()
                    self._finding(f"hang (no answer in {self.timeout:g} s)", w)
                    self.workers[i] = Worker(self.mem_limit)
                    done += 1

    def close(self):
        for w in self.workers:
            try:
                w.conn.send(None)  # not EOF: later workers hold copies of this end
            except OSError:
                pass
            deadline = time.monotonic() + 5
            exited = False
            while not exited and time.monotonic() < deadline:
                exited = os.waitpid(w.pid, os.WNOHANG)[0] != 0
                time.sleep(0 if exited else 0.02)
            if not exited:
                w.kill()  # also reaps it and removes its scratch folder
                continue
            w.conn.close()
            shutil.rmtree(w.scratch, ignore_errors=True)

    def confirm(self, timeout):
        """Replays each finding alone in a fresh interpreter; a finding that needs its
        worker's earlier calls gets them written into its reproducer."""
        for f in self.findings:
            f["alone"] = replay(f["file"], timeout)
            if f["alone"] == "ok" and f["history"]:
                with open(f["file"], "w") as fh:
                    fh.write(reproducer(f["kind"], f["target"], f["source"], f["history"],
                                        f"Call {f['call']}, after its worker's earlier calls."))
                f["with_history"] = replay(f["file"], timeout)
