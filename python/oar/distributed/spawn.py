"""spawn(func, args, nprocs): a job of nprocs processes started from Python (Paddle's
paddle.distributed.spawn), the in-process alternative to the launcher. Each child gets the
launcher's environment (PADDLE_TRAINER_ID, PADDLE_MASTER, ...) and calls func(*args); func
calls init_parallel_env() itself, as in Paddle. Children start with the 'spawn' method (a
fresh interpreter: forking a process with OpenMP and communication threads is unsafe), so
func must be importable (defined at a module's top level)."""
import multiprocessing
import os
import socket
import traceback

__all__ = ["spawn"]


def _child(func, args, env, errors, rank):
    os.environ.update(env)
    try:
        func(*args)
    except BaseException:  # noqa: B036 - reported to the parent, then re-raised
        errors.put((rank, traceback.format_exc()))
        raise


class MultiprocessContext:
    """The started processes; join() waits for them and raises when one failed."""

    def __init__(self, processes, errors):
        self.processes = processes
        self._errors = errors

    def join(self, timeout=None):
        """Waits for every process (up to `timeout` seconds). When one fails, the others are
        terminated and an Exception carries the failed rank's traceback."""
        import time
        deadline = None if timeout is None else time.monotonic() + timeout
        while any(p.is_alive() for p in self.processes):
            failed = [(r, p) for r, p in enumerate(self.processes)
                      if p.exitcode is not None and p.exitcode != 0]
            if failed or (deadline is not None and time.monotonic() > deadline):
                break
            time.sleep(0.05)
        failed = [(r, p.exitcode) for r, p in enumerate(self.processes)
                  if p.exitcode is not None and p.exitcode != 0]
        if not failed:
            return not any(p.is_alive() for p in self.processes)
        for p in self.processes:
            if p.is_alive():
                p.terminate()
        for p in self.processes:
            p.join()
        rank, code = failed[0]
        detail = ""
        while not self._errors.empty():
            r, tb = self._errors.get()
            if r == rank:
                detail = "\n" + tb
        raise Exception(f"spawn: process of rank {rank} exited with code {code}{detail}")


def spawn(func, args=(), nprocs=-1, join=True, daemon=False, **options):
    """Runs func(*args) in `nprocs` new processes, ranks 0..nprocs-1 (nprocs=-1: one)."""
    if not callable(func):
        raise TypeError(f"spawn: func must be callable, got {type(func).__name__}")
    nprocs = 1 if nprocs in (-1, None) else int(nprocs)
    if nprocs < 1:
        raise ValueError(f"spawn: nprocs must be >= 1 (or -1), got {nprocs}")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        master = f"127.0.0.1:{s.getsockname()[1]}"
    endpoints = ",".join(f"127.0.0.1:{0}" for _ in range(nprocs))
    ctx = multiprocessing.get_context(options.get("start_method", "spawn"))
    errors = ctx.SimpleQueue()
    procs = []
    for rank in range(nprocs):
        env = {"PADDLE_TRAINER_ID": str(rank), "PADDLE_TRAINERS_NUM": str(nprocs),
               "PADDLE_MASTER": master, "PADDLE_TRAINER_ENDPOINTS": endpoints,
               "PADDLE_CURRENT_ENDPOINT": "127.0.0.1:0", "PADDLE_LOCAL_RANK": str(rank)}
        p = ctx.Process(target=_child, args=(func, tuple(args), env, errors, rank), daemon=daemon)
        p.start()
        procs.append(p)
    context = MultiprocessContext(procs, errors)
    if join:
        context.join()
    return context
