"""Runs a worker script as the ranks of one job on loopback, one thread per rank (the way
the launcher would, without it), and returns each rank's exit code and output."""
import os
import socket
import subprocess
import sys
import time

WORKERS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "workers")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def worker_env(rank, nprocs, master, extra=None):
    env = dict(os.environ)
    env.update({"PADDLE_TRAINER_ID": str(rank), "PADDLE_TRAINERS_NUM": str(nprocs),
                "PADDLE_MASTER": master, "PADDLE_CURRENT_ENDPOINT": "127.0.0.1:0",
                "OMP_NUM_THREADS": "1", "PADDLE_DIST_TIMEOUT": "60"})
    env.update(extra or {})
    return env


def run_ranks(script, nprocs, args=(), timeout=180, env=None, tmp_path=None):
    """Starts `nprocs` ranks of workers/<script>; returns [(returncode, output)] by rank and
    the seconds they took. Ranks still running after `timeout` are killed (rc -9)."""
    master = f"127.0.0.1:{free_port()}"
    procs, outs = [], []
    start = time.monotonic()
    for rank in range(nprocs):
        out = open(os.path.join(str(tmp_path), f"rank{rank}.log"), "w+") if tmp_path else \
            subprocess.DEVNULL
        outs.append(out)
        procs.append(subprocess.Popen(
            [sys.executable, os.path.join(WORKERS, script)] + [str(a) for a in args],
            env=worker_env(rank, nprocs, master, env), stdout=out, stderr=subprocess.STDOUT))
    results = []
    for p, out in zip(procs, outs):
        try:
            p.wait(max(1.0, timeout - (time.monotonic() - start)))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        text = ""
        if tmp_path:
            out.seek(0)
            text = out.read()
            out.close()
        results.append((p.returncode, text))
    return results, time.monotonic() - start


def assert_all_ok(results):
    bad = [(r, rc, text[-3000:]) for r, (rc, text) in enumerate(results) if rc != 0]
    assert not bad, "\n".join(f"rank {r} exited {rc}:\n{text}" for r, rc, text in bad)
