"""Note [Fork safety] (docs/notes/fork_safety.md): a process forked while Oar's own threads
are busy (a compiled program running without the GIL in another thread: OpenMP team,
allocator, random generator) gets a usable Oar, and DataLoader workers started then finish;
DataLoader(multiprocessing_context=...) picks the start method as in PyTorch."""

import multiprocessing
import os
import threading
import time

import numpy as np
import pytest

import oar
import oar.nn.functional as F
from build_tree import asan_runtime_loaded, worker_start_method
from oar.io import DataLoader, Dataset

MP = worker_start_method()
# Big enough for an OpenMP team (kParallelGrain elements) in every op below.
N = 256


class OpsDataset(Dataset):
    """Samples computed with Oar ops in the worker: allocator, kernels, generator."""

    def __getitem__(self, i):
        x = oar.full([N, N], float(i) / N)
        y = oar.matmul(x, x) + oar.rand([N, N]) * 0
        return np.float64(y.sum().item()), np.int64(i)

    def __len__(self):
        return 6


class Plain(Dataset):
    def __getitem__(self, i):
        return np.full([2], i, np.float32), np.int64(i)

    def __len__(self):
        return 9


@pytest.fixture(autouse=True)
def two_threads():
    """OpenMP teams of 2 (the machine's default may be 1), restored afterwards."""
    before = oar.get_num_threads()
    oar.set_num_threads(2)
    yield
    oar.set_num_threads(before)


@pytest.fixture
def busy_thread():
    """Another thread runs a compiled program (no GIL while it runs: Executor/run_program)
    whose matmul opens OpenMP teams, whose ops allocate, and whose dropout holds the
    generator's lock while it draws, until the test ends."""
    @oar.jit.to_static
    def step(x, w):
        return F.dropout(oar.matmul(x, w), 0.5, training=True)

    x, w = oar.rand([N, N]), oar.rand([N, N])
    step(x, w)  # compiled here, in the main thread
    stop, runs, errors = threading.Event(), [0], []

    def loop():
        try:
            while not stop.is_set():
                step(x, w)
                runs[0] += 1
        except BaseException as e:  # reported by the test
            errors.append(e)

    t = threading.Thread(target=loop, daemon=True)
    t.start()
    yield runs
    stop.set()
    t.join(timeout=60)
    assert not t.is_alive() and not errors, errors
    assert runs[0] > 0


def wait_child(pid, timeout=30.0):
    """The child's exit status; kills it and fails when it does not exit in `timeout` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.01)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    pytest.fail(f"forked child {pid} hung (killed after {timeout} s)")


def fork_and_run_ops(seed):
    """Forks a child that seeds, allocates and runs OpenMP-parallel ops; its exit code."""
    pid = os.fork()
    if pid == 0:  # the child: never return into pytest
        code = 1
        try:
            oar.seed(seed)
            a = oar.rand([N, N])
            b = oar.matmul(a, oar.ones([N, N]))
            want = a.numpy().astype(np.float64).sum(axis=1, keepdims=True)
            code = 0 if np.allclose(b.numpy(), np.broadcast_to(want, [N, N]), rtol=1e-4) else 3
        finally:
            os._exit(code)
    return wait_child(pid)


def test_forked_child_opens_openmp_teams_after_the_parent_did():
    # GNU OpenMP's pool of the forking thread does not exist in the child: without the fork
    # handler the child's first parallel region waits for it forever.
    x = oar.rand([N, N])
    oar.matmul(x, x).numpy()  # this thread's OpenMP pool now exists
    assert oar.get_num_threads() == 2
    for seed in range(3):
        assert fork_and_run_ops(seed) == 0
    oar.matmul(x, x).numpy()  # and the parent starts its team again


@pytest.mark.skipif(
    asan_runtime_loaded(),
    reason="GCC 12's ASan runtime has no fork handler of its own: a fork while another "
    "thread allocates can hang the child inside ASan's allocator (Note [Fork safety])",
)
def test_forked_children_run_ops_while_another_thread_holds_oar_locks(busy_thread):
    for seed in range(40):
        assert fork_and_run_ops(seed) == 0, f"fork {seed}"
    assert busy_thread[0] > 0


def test_dataloader_workers_finish_while_oar_threads_are_busy(busy_thread):
    # Each round forks (or, under ASan, starts from the forkserver) two workers while the
    # other thread is inside Oar; a worker that hangs fails the round by the timeout.
    want = [float(((np.full([N, N], i / N) @ np.full([N, N], i / N))).sum()) for i in range(6)]
    for r in range(4 if MP else 12):  # a forkserver's worker starts slower
        ld = DataLoader(OpsDataset(), batch_size=2, num_workers=2, timeout=60,
                        multiprocessing_context=MP)
        got = [(s.numpy().tolist(), i.numpy().tolist()) for s, i in ld]  # or timeout's error
        assert [i for _, ids in got for i in ids] == list(range(6))
        np.testing.assert_allclose([v for s, _ in got for v in s], want, rtol=1e-4)


@pytest.mark.parametrize("method", ["spawn", "forkserver", pytest.param("fork", marks=pytest.mark.skipif(
    asan_runtime_loaded(), reason="fork under GCC 12's ASan runtime: see the test above"))])
def test_multiprocessing_context_start_methods(method):
    ctx_arg = method if method != "fork" else multiprocessing.get_context("fork")
    # Persistent: one start of each worker (a spawned one imports oar: seconds).
    ld = DataLoader(Plain(), batch_size=4, num_workers=2, multiprocessing_context=ctx_arg,
                    persistent_workers=True)
    for _ in range(2):
        got = [int(v) for _, y in ld for v in y.numpy()]
        assert got == list(range(9))
    pool = ld._persistent
    assert pool is not None and all(p.is_alive() for p in pool.procs)
    x, _ = next(iter(ld))
    assert isinstance(x, oar.Tensor) and x.shape == [4, 2]
    pool.shutdown()
    assert not any(p.is_alive() for p in pool.procs)


def test_multiprocessing_context_bad_values():
    with pytest.raises(ValueError, match=r"multiprocessing_context .*'threads'"):
        DataLoader(Plain(), num_workers=1, multiprocessing_context="threads")
    with pytest.raises(TypeError, match="multiprocessing_context .* int"):
        DataLoader(Plain(), num_workers=1, multiprocessing_context=3)


def test_unpicklable_dataset_with_spawn_is_a_clear_error():
    class Local(Plain):  # a local class cannot be pickled for a spawned worker
        pass

    before = {p.pid for p in multiprocessing.active_children()}
    with pytest.raises(RuntimeError, match="multiprocessing_context='spawn' pickles the dataset"):
        next(iter(DataLoader(Local(), batch_size=2, num_workers=2,
                             multiprocessing_context="spawn")))
    assert {p.pid for p in multiprocessing.active_children()} - before == set()


def test_tensor_datasets_reach_forkserver_workers():
    # Tensors in the dataset are pickled for the worker: values, dtype and stop_gradient.
    from multiprocessing.reduction import ForkingPickler

    from oar.io import TensorDataset

    x = oar.to_tensor(np.arange(24, dtype=np.float32).reshape(8, 3) / 7)
    y = oar.to_tensor(np.arange(8))
    z = (x * 3).astype("float16")
    ld = DataLoader(TensorDataset([x, y, z]), batch_size=3, num_workers=1,
                    multiprocessing_context="forkserver")
    bx, by, bz = (np.concatenate(parts) for parts in zip(*[
        (a.numpy(), b.numpy(), c.numpy()) for a, b, c in ld]))
    np.testing.assert_array_equal(bx, x.numpy())
    np.testing.assert_array_equal(by, y.numpy())
    assert bz.dtype == np.float16
    np.testing.assert_array_equal(bz, z.numpy())
    for t in [(x * 3).astype("bfloat16"), oar.zeros([0, 2], "complex64"), oar.to_tensor(True)]:
        t.stop_gradient = False
        u = ForkingPickler.loads(ForkingPickler.dumps(t))
        assert u.dtype == t.dtype and u.shape == t.shape and u.stop_gradient is False
        np.testing.assert_array_equal(u.astype("float32").numpy() if t.dtype == oar.bfloat16
                                      else u.numpy(),
                                      t.astype("float32").numpy() if t.dtype == oar.bfloat16
                                      else t.numpy())
