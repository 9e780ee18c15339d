"""The launcher: Paddle's environment and logs per worker, a killed worker ends the job
naming it, --max_restart restarts the group; spawn() runs a function as a job."""
import os
import subprocess
import sys
import time

import pytest

from _harness import WORKERS

import oar
import oar.distributed as dist

pytestmark = pytest.mark.skipif(not oar._C.distributed.available, reason="built without Gloo")


def launch(tmp_path, *args, timeout=120):
    env = dict(os.environ, OMP_NUM_THREADS="1", PADDLE_DIST_TIMEOUT="60")
    start = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "oar.distributed.launch", "--log_dir", str(tmp_path / "log"),
                        *map(str, args)], env=env, capture_output=True, text=True, timeout=timeout)
    return p, time.monotonic() - start


def log(tmp_path, n):
    return (tmp_path / "log" / f"workerlog.{n}").read_text()


def test_launch_runs_the_ranks_with_paddles_environment(tmp_path):
    p, _ = launch(tmp_path, "--nproc_per_node", 2, "--max_restart", 0, "--job_id", "j1",
                  os.path.join(WORKERS, "launched.py"), "ok")
    assert p.returncode == 0, p.stderr
    assert "rank 0 of 2, restart 0, local 0" in log(tmp_path, 0) and "rank 0 done" in log(tmp_path, 0)
    assert "rank 1 of 2, restart 0, local 1" in log(tmp_path, 1) and "rank 1 done" in log(tmp_path, 1)


def test_killed_worker_ends_the_job_naming_it(tmp_path):
    p, seconds = launch(tmp_path, "--nproc_per_node", 2, "--max_restart", 0,
                        os.path.join(WORKERS, "launched.py"), "kill")
    assert p.returncode != 0
    assert "rank 1" in p.stderr and "SIGKILL" in p.stderr, p.stderr
    assert "job default failed" in p.stderr, p.stderr
    assert seconds < 30


def test_max_restart_restarts_once_then_succeeds(tmp_path):
    p, _ = launch(tmp_path, "--nproc_per_node", 2, "--max_restart", 1,
                  os.path.join(WORKERS, "launched.py"), "fail_once")
    assert p.returncode == 0, p.stderr
    assert "rank 1" in p.stderr and "exited with code 7" in p.stderr, p.stderr
    assert "restarting the job (1 of --max_restart 1)" in p.stderr
    assert "rank 1 of 2, restart 1" in log(tmp_path, 1) and "rank 1 done" in log(tmp_path, 1)


def test_launcher_argument_errors(tmp_path):
    p, _ = launch(tmp_path, "--nnodes", 2, "--rank", 0, os.path.join(WORKERS, "launched.py"), "ok")
    assert p.returncode != 0 and "--master host:port is required with --nnodes > 1" in p.stderr
    p, _ = launch(tmp_path, "--nproc_per_node", 0, "missing_script.py")
    assert p.returncode != 0 and "--nproc_per_node must be >= 1" in p.stderr
    assert "'missing_script.py' does not exist" in p.stderr


def _spawned(path):
    dist.init_parallel_env()
    t = oar.full([2], float(dist.get_rank() + 1))
    dist.all_reduce(t)
    with open(f"{path}.{dist.get_rank()}", "w") as f:
        f.write(str(float(t.numpy()[0])))


def _spawned_fails():
    if int(os.environ["PADDLE_TRAINER_ID"]) == 1:
        raise KeyError("boom on rank 1")


def test_spawn(tmp_path):
    dist.spawn(_spawned, args=(str(tmp_path / "out"),), nprocs=2)
    assert (tmp_path / "out.0").read_text() == "3.0" and (tmp_path / "out.1").read_text() == "3.0"
    with pytest.raises(Exception, match="rank 1 exited with code 1(.|\n)*boom on rank 1"):
        dist.spawn(_spawned_fails, nprocs=2)


def test_two_nodes_meet_through_the_master(tmp_path):
    # Two launchers on one machine play two nodes: node 0's launcher hosts the store.
    import _harness
    master = f"127.0.0.1:{_harness.free_port()}"
    env = dict(os.environ, OMP_NUM_THREADS="1", PADDLE_DIST_TIMEOUT="60")
    procs = [subprocess.Popen(
        [sys.executable, "-m", "oar.distributed.launch", "--nnodes", "2", "--rank", str(r),
         "--master", master, "--nproc_per_node", "1", "--max_restart", "0",
         "--log_dir", str(tmp_path / f"node{r}"), os.path.join(WORKERS, "launched.py"), "ok"],
        env=env, stderr=subprocess.PIPE, text=True) for r in range(2)]
    errs = [p.communicate(timeout=120)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], errs
    for r in range(2):
        out = (tmp_path / f"node{r}" / "workerlog.0").read_text()
        assert f"rank {r} of 2" in out and f"rank {r} done" in out, out
