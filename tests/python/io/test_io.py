"""oar.io: datasets, samplers, DataLoader (single process and worker processes: forked, or
started from a forkserver under ASan, build_tree.worker_start_method; every dataset and
function the workers get is defined at module level so that both can send it)."""

import os
import signal
import time

import numpy as np
import pytest

import oar
from build_tree import worker_start_method
from oar.io import (
    BatchSampler,
    ChainDataset,
    ComposeDataset,
    DataLoader,
    Dataset,
    DistributedBatchSampler,
    IterableDataset,
    RandomSampler,
    SequenceSampler,
    Subset,
    TensorDataset,
    WeightedRandomSampler,
    get_worker_info,
    random_split,
)

MP = worker_start_method()


class Range(Dataset):
    def __init__(self, n, dim=3):
        self.n, self.dim = n, dim

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(i)
        return np.full([self.dim], i, np.float32), np.int64(i)

    def __len__(self):
        return self.n


class Failing(Range):
    def __getitem__(self, i):
        if i == 7:
            raise KeyError("sample seven is broken")
        return super().__getitem__(i)


class Dying(Range):
    def __getitem__(self, i):
        if i == 5:
            os.kill(os.getpid(), signal.SIGKILL)
        return super().__getitem__(i)


class Stream(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        start, step = (0, 1) if info is None else (info.id, info.num_workers)
        for i in range(start, self.n, step):
            yield np.array([i], np.int64)


class WorkerInfoRows(Dataset):
    def __getitem__(self, i):
        info = get_worker_info()
        return np.array(
            [
                info.id,
                info.num_workers,
                os.environ.get("OAR_T_INIT") == str(info.id),
                np.random.randint(0, 1 << 30),
            ],
            np.int64,
        )

    def __len__(self):
        return 8


def set_init_env(wid):
    os.environ["OAR_T_INIT"] = str(wid)


def collate_mixed(samples):
    return {
        "x": np.stack([s[0] for s in samples]),
        "n": len(samples),
        "t": oar.to_tensor(np.stack([s[1] for s in samples])),
    }


def collate_with_tensor(samples):
    return {"x": np.stack([s[0] for s in samples]), "t": oar.to_tensor(np.ones(2))}


class NestedDicts(Dataset):
    def __getitem__(self, i):
        return {"img": np.full([2, 2], i, np.uint8), "meta": {"id": i, "name": f"n{i}"}}

    def __len__(self):
        return 5


def no_space(wid):
    import errno

    def fail(fd, offset, length):
        raise OSError(errno.ENOSPC, "No space left on device")

    os.posix_fallocate = fail  # only inside this worker


class Uneven(IterableDataset):
    def __iter__(self):
        info = get_worker_info()
        n = 3 if info.id == 0 else 11  # worker 0 runs dry early
        for i in range(n):
            yield np.array([info.id * 100 + i], np.int64)


@pytest.fixture(autouse=True)
def private_shm_dir(tmp_path, monkeypatch):
    """Each test's workers write their batches into its own directory (forked workers
    inherit the setting), so a concurrent test session on the machine cannot make the
    leak checks below see its files."""
    from oar.io import collate

    d = tmp_path / "shm"
    d.mkdir()
    monkeypatch.setattr(collate, "_SHM_DIR", str(d))


def shm_files():
    from oar.io import collate

    return {f for f in os.listdir(collate._SHM_DIR) if f.startswith("oar_dl_")}


def labels_of(loader):
    return [int(v) for _, y in loader for v in y.numpy().reshape(-1)]


def test_tensor_compose_subset_datasets():
    x = oar.to_tensor(np.arange(12, dtype=np.float32).reshape(6, 2))
    y = oar.to_tensor(np.arange(6))
    ds = TensorDataset([x, y])
    assert len(ds) == 6
    a, b = ds[2]
    np.testing.assert_array_equal(a.numpy(), [4, 5])
    assert int(b) == 2
    with pytest.raises(ValueError, match="TensorDataset"):
        TensorDataset([x, oar.to_tensor(np.arange(5))])
    comp = ComposeDataset([ds, Range(6)])
    assert len(comp[3]) == 4
    with pytest.raises(ValueError, match="ComposeDataset"):
        ComposeDataset([ds, Range(5)])
    sub = Subset(Range(10), [9, 1])
    assert len(sub) == 2 and int(sub[0][1]) == 9


def test_chain_dataset():
    assert [int(v[0]) for v in ChainDataset([Stream(2), Stream(3)])] == [0, 1, 0, 1, 2]
    with pytest.raises(TypeError, match="ChainDataset"):
        ChainDataset([Range(2)])


def test_random_split_partitions_and_is_seeded():
    oar.seed(3)
    parts = random_split(Range(10), [3, 7])
    oar.seed(3)
    again = random_split(Range(10), [3, 7])
    idx = sorted(parts[0].indices + parts[1].indices)
    assert idx == list(range(10))
    assert parts[0].indices == again[0].indices
    assert [len(p) for p in random_split(Range(10), [0.5, 0.5])] == [5, 5]
    with pytest.raises(ValueError, match="random_split"):
        random_split(Range(10), [3, 3])


def test_samplers():
    assert list(SequenceSampler(Range(4))) == [0, 1, 2, 3]
    oar.seed(1)
    p1 = list(RandomSampler(Range(50)))
    oar.seed(1)
    p2 = list(RandomSampler(Range(50)))
    assert p1 == p2 and sorted(p1) == list(range(50)) and p1 != list(range(50))
    r = list(RandomSampler(Range(5), replacement=True, num_samples=20))
    assert len(r) == 20 and all(0 <= i < 5 for i in r)
    bs = BatchSampler(Range(10), batch_size=4)
    assert list(bs) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]] and len(bs) == 3
    bs = BatchSampler(Range(10), batch_size=4, drop_last=True)
    assert len(list(bs)) == 2 == len(bs)
    with pytest.raises(ValueError, match="batch_size"):
        BatchSampler(Range(10), batch_size=0)
    with pytest.raises(ValueError, match="exactly one"):
        BatchSampler()


def test_weighted_random_sampler():
    oar.seed(0)
    w = [0.0, 1.0, 3.0]
    draws = list(WeightedRandomSampler(w, 4000))
    counts = np.bincount(draws, minlength=3)
    assert counts[0] == 0
    assert abs(counts[2] / counts[1] - 3.0) < 0.4
    nr = list(WeightedRandomSampler([1, 1, 1, 0], 3, replacement=False))
    assert sorted(nr) == [0, 1, 2]
    with pytest.raises(ValueError, match="WeightedRandomSampler"):
        WeightedRandomSampler([-1.0, 1.0], 2)
    with pytest.raises(ValueError, match="exceeds"):
        WeightedRandomSampler([1, 0], 2, replacement=False)


def test_distributed_batch_sampler_covers_dataset():
    n, seen = 11, []
    for rank in range(3):
        s = DistributedBatchSampler(Range(n), batch_size=2, num_replicas=3, rank=rank)
        batches = list(s)
        assert len(batches) == len(s)
        seen += [i for b in batches for i in b]
    assert len(seen) == 12 and set(seen) == set(range(n))  # padded to 12
    s = DistributedBatchSampler(Range(n), 2, num_replicas=2, rank=0, shuffle=True)
    s.set_epoch(5)
    a = list(s)
    s.set_epoch(5)
    assert a == list(s)
    with pytest.raises(ValueError, match="rank"):
        DistributedBatchSampler(Range(4), 2, num_replicas=2, rank=2)


def test_default_collate_structures():
    class Dicts(Dataset):
        def __getitem__(self, i):
            return {
                "x": np.ones([2], np.float32) * i,
                "y": i,
                "name": f"s{i}",
                "pair": (np.int32(i), 1.5),
            }

        def __len__(self):
            return 3

    b = next(iter(DataLoader(Dicts(), batch_size=3)))
    assert isinstance(b["x"], oar.Tensor) and b["x"].shape == [3, 2]
    assert b["y"].dtype == oar.int64 and b["name"] == ["s0", "s1", "s2"]
    assert b["pair"][0].dtype == oar.int32 and b["pair"][1].dtype == oar.float64
    x, y = next(iter(DataLoader(Range(5), batch_size=2)))
    assert x.shape == [2, 3] and y.numpy().tolist() == [0, 1]


def test_single_process_loader_basics():
    ld = DataLoader(Range(10), batch_size=4, drop_last=False)
    assert len(ld) == 3 and labels_of(ld) == list(range(10))
    ld = DataLoader(Range(10), batch_size=4, drop_last=True)
    assert len(ld) == 2 and labels_of(ld) == list(range(8))
    ld = DataLoader(Range(3), batch_size=None)
    x, y = next(iter(ld))
    assert x.shape == [3]
    ld = DataLoader(Range(4), batch_size=2, collate_fn=lambda s: len(s))
    assert list(ld) == [2, 2]
    with pytest.raises(ValueError, match="num_workers"):
        DataLoader(Range(4), num_workers=-1)


def test_shuffle_reproducible_under_seed():
    ld = DataLoader(Range(30), batch_size=5, shuffle=True)
    oar.seed(7)
    a = labels_of(ld)
    oar.seed(7)
    b = labels_of(ld)
    assert a == b and sorted(a) == list(range(30)) and a != list(range(30))


@pytest.mark.parametrize("workers", [1, 3])
def test_workers_every_sample_once_in_order(workers):
    ld = DataLoader(Range(37), batch_size=4, num_workers=workers, prefetch_factor=2, multiprocessing_context=MP)
    for _ in range(2):
        got = labels_of(ld)
        assert got == list(range(37))
    x, _ = next(iter(ld))
    assert isinstance(x, oar.Tensor) and x.dtype == oar.float32 and x.shape == [4, 3]


def test_workers_shuffle_matches_single_process():
    oar.seed(11)
    a = labels_of(
        DataLoader(Range(40), batch_size=3, shuffle=True, num_workers=2, multiprocessing_context=MP)
    )
    oar.seed(11)
    b = labels_of(DataLoader(Range(40), batch_size=3, shuffle=True, num_workers=0))
    assert a == b and sorted(a) == list(range(40))


def test_worker_info_init_fn_and_seeds():
    oar.seed(5)
    rows = np.concatenate(
        [b.numpy() for b in DataLoader(WorkerInfoRows(), batch_size=2, num_workers=2, worker_init_fn=set_init_env,
                   multiprocessing_context=MP)]
    )
    assert set(rows[:, 0]) == {0, 1} and (rows[:, 1] == 2).all() and rows[:, 2].all()
    oar.seed(5)
    again = np.concatenate([b.numpy() for b in DataLoader(WorkerInfoRows(), batch_size=2, num_workers=2,
                                                  multiprocessing_context=MP)])
    np.testing.assert_array_equal(rows[:, 3], again[:, 3])
    assert get_worker_info() is None


def test_worker_error_carries_worker_traceback():
    before = shm_files()
    ld = DataLoader(Failing(12), batch_size=2, num_workers=2, multiprocessing_context=MP)
    with pytest.raises(KeyError) as e:
        labels_of(ld)
    msg = str(e.value)
    assert "DataLoader worker" in msg and "sample seven is broken" in msg
    assert "in __getitem__" in msg  # the worker's own frame
    assert shm_files() - before == set()


def test_worker_death_raises_instead_of_hanging():
    before = shm_files()
    ld = DataLoader(Dying(12), batch_size=2, num_workers=2, multiprocessing_context=MP)
    t = time.time()
    with pytest.raises(RuntimeError, match="exited unexpectedly"):
        labels_of(ld)
    assert time.time() - t < 20
    assert shm_files() - before == set()


def test_abandoned_iterator_cleans_up():
    before = shm_files()
    ld = DataLoader(Range(100), batch_size=2, num_workers=2, prefetch_factor=4, multiprocessing_context=MP)
    it = iter(ld)
    next(it)
    procs = list(it.workers.procs)
    del it
    for p in procs:
        p.join(timeout=10)
        assert not p.is_alive()
    assert shm_files() - before == set()


def test_exit_with_live_workers_does_not_hang_or_leak(tmp_path):
    import subprocess
    import sys

    script = tmp_path / "s.py"
    # the child's batches go to its own directory, so files of concurrent runs (another
    # test session on the machine) cannot make the leak check fail
    shm = tmp_path / "child_shm"
    shm.mkdir()
    script.write_text(
        "import numpy as np, oar\n"
        "import oar.io.collate\n"
        f"oar.io.collate._SHM_DIR = {str(shm)!r}\n"
        "from oar.io import DataLoader, Dataset\n"
        "class R(Dataset):\n"
        "    def __getitem__(s, i): return np.full([8], i, np.float32)\n"
        "    def __len__(s): return 10000\n"
        "if __name__ == '__main__':\n"  # a forkserver's workers import this file
        f"    mp = {MP!r}\n"
        "    import multiprocessing\n"
        "    multiprocessing.set_forkserver_preload(['oar'])  # used when mp is 'forkserver'\n"
        "    it = iter(DataLoader(R(), batch_size=4, num_workers=2, prefetch_factor=8,\n"
        "                         multiprocessing_context=mp))\n"
        "    next(it)\n"
        "    ld = DataLoader(R(), batch_size=4, num_workers=2, persistent_workers=True,\n"
        "                    multiprocessing_context=mp)\n"
        "    for i, b in enumerate(ld):\n"
        "        if i == 3: break\n"
        "    print('ok', flush=True)\n"
    )
    limit = 30 if MP is None else 150  # a forkserver under ASan imports oar once more
    t = time.time()
    out = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=limit + 30,
        env=os.environ.copy(),
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok" and time.time() - t < limit
    assert os.listdir(shm) == []


def test_persistent_workers_reused():
    ld = DataLoader(Range(10), batch_size=3, num_workers=2, persistent_workers=True, multiprocessing_context=MP)
    assert labels_of(ld) == list(range(10))
    pool = ld._persistent
    assert pool is not None and all(p.is_alive() for p in pool.procs)
    assert labels_of(ld) == list(range(10))
    assert ld._persistent is pool
    pool.shutdown()


def test_iterable_dataset_with_workers():
    single = sorted(
        int(v) for b in DataLoader(Stream(10), batch_size=3) for v in b.numpy().reshape(-1)
    )
    assert single == list(range(10))
    multi = [
        int(v)
        for b in DataLoader(Stream(10), batch_size=2, num_workers=2, multiprocessing_context=MP)
        for v in b.numpy().reshape(-1)
    ]
    assert sorted(multi) == list(range(10))


def test_custom_collate_in_workers_converts_arrays():
    # As Paddle: a collate_fn's NumPy arrays reach the loop as Tensors, other leaves as they are.
    b = next(iter(DataLoader(Range(6), batch_size=3, num_workers=1, collate_fn=collate_mixed,
                             multiprocessing_context=MP)))
    assert isinstance(b["x"], oar.Tensor) and b["n"] == 3 and isinstance(b["t"], oar.Tensor)
    assert b["t"].numpy().tolist() == [0, 1, 2]


def test_tensor_dataset_and_dict_samples_through_workers():
    x = oar.to_tensor(np.arange(40, dtype=np.float32).reshape(20, 2))
    y = oar.to_tensor(np.arange(20))
    ld = DataLoader(TensorDataset([x, y]), batch_size=6, num_workers=2, multiprocessing_context=MP)
    xs, ys = zip(*[(bx.numpy(), by.numpy()) for bx, by in ld])
    np.testing.assert_array_equal(np.concatenate(xs), x.numpy())
    np.testing.assert_array_equal(np.concatenate(ys), y.numpy())

    b = list(DataLoader(NestedDicts(), batch_size=5, num_workers=1, multiprocessing_context=MP))[0]
    assert b["img"].dtype == oar.uint8 and b["img"].shape == [5, 2, 2]
    assert b["meta"]["id"].numpy().tolist() == [0, 1, 2, 3, 4]
    assert b["meta"]["name"] == ["n0", "n1", "n2", "n3", "n4"]


def test_batch_sampler_argument_and_distributed_sampler_in_loader():
    bs = DistributedBatchSampler(Range(10), batch_size=2, num_replicas=2, rank=1)
    ld = DataLoader(Range(10), batch_sampler=bs, num_workers=1, multiprocessing_context=MP)
    assert len(ld) == 3
    assert labels_of(ld) == [2, 3, 6, 7, 9]  # rank 1 of 2: its local batches and tail
    with pytest.raises(ValueError, match="exclusive"):
        DataLoader(Range(10), batch_sampler=bs, batch_size=4)


def test_without_shared_memory():
    before = shm_files()
    ld = DataLoader(Range(11), batch_size=4, num_workers=2, use_shared_memory=False, multiprocessing_context=MP)
    assert labels_of(ld) == list(range(11))

    b = next(
        iter(
            DataLoader(
                Range(4), batch_size=2, num_workers=1, collate_fn=collate_with_tensor,
                use_shared_memory=False, multiprocessing_context=MP,
            )
        )
    )
    assert isinstance(b["x"], oar.Tensor) and isinstance(b["t"], oar.Tensor)
    assert shm_files() - before == set()


def test_full_shared_memory_reports_a_clear_error():
    before = shm_files()
    ld = DataLoader(Range(8), batch_size=2, num_workers=1, worker_init_fn=no_space,
                    multiprocessing_context=MP)
    with pytest.raises(OSError, match="use_shared_memory=False"):
        labels_of(ld)
    assert shm_files() - before == set()


def test_iterable_uneven_workers_and_drop_last():
    got = [
        int(v)
        for b in DataLoader(Uneven(), batch_size=2, num_workers=2, prefetch_factor=1, multiprocessing_context=MP)
        for v in b.numpy().reshape(-1)
    ]
    assert sorted(got) == sorted(list(range(3)) + [100 + i for i in range(11)])
    dropped = [
        b.shape[0] for b in DataLoader(Uneven(), batch_size=2, num_workers=2, drop_last=True, multiprocessing_context=MP)
    ]
    assert all(n == 2 for n in dropped) and sum(dropped) == 2 + 10


def test_samplers_draw_from_numpy_as_paddle():
    # Paddle 3.3's docstring outputs for np.random.seed(2023): RandomSampler and
    # WeightedRandomSampler draw through np.random.choice.
    np.random.seed(2023)
    assert list(RandomSampler(Range(100)))[:8] == [56, 12, 68, 0, 82, 66, 91, 44]
    np.random.seed(2023)
    assert list(WeightedRandomSampler([0.1, 0.3, 0.5, 0.7, 0.2], 5, replacement=True)) == \
        [2, 4, 3, 1, 1]
    np.random.seed(5)
    r = list(RandomSampler(Range(7), replacement=True, num_samples=9))
    np.random.seed(5)
    assert r == np.random.choice(np.arange(7), 9, replace=True).tolist()
