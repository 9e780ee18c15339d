"""paddle.base datasets: DatasetFactory, MultiSlot files through the pipe command,
in-memory shuffles, Executor.train_from_dataset, and their errors."""
import numpy as np
import pytest

import oar
from oar import static


def _write(path, rows):
    """rows: [(dense values, sparse ids)] in MultiSlot text."""
    with open(path, "w") as f:
        for dense, ids in rows:
            f.write(f"{len(dense)} {' '.join(map(str, dense))} {len(ids)} {' '.join(map(str, ids))}\n")


def _rows(rng, n):
    return [(list(np.round(rng.standard_normal(3), 4)), list(rng.integers(0, 100, rng.integers(1, 4))))
            for _ in range(n)]


def test_factory_classes_and_desc():
    f = oar.base.DatasetFactory()
    assert type(f.create_dataset()).__name__ == "QueueDataset"
    for name in ("InMemoryDataset", "QueueDataset", "FileInstantDataset", "BoxPSDataset"):
        assert type(f.create_dataset(name)).__name__ == name
    with pytest.raises(ValueError, match="create_dataset: datafeed class 'Nope' does not exist"):
        f.create_dataset("Nope")
    ds = f.create_dataset("InMemoryDataset")
    ds.set_batch_size(7)
    ds.set_thread(3)
    ds.set_pipe_command("cat -")
    text = ds.desc()
    assert 'name: "MultiSlotInMemoryDataFeed"' in text and "batch_size: 7" in text
    assert 'pipe_command: "cat -"' in text and "thread_num: 3" in text


@pytest.mark.parametrize("call, msg", [
    (lambda d: d.set_batch_size(0), "set_batch_size: batch_size must be an int >= 1, got 0"),
    (lambda d: d.set_thread(True), "set_thread: thread_num must be an int >= 1, got True"),
    (lambda d: d.set_filelist("a.txt"), "set_filelist: filelist must be a list"),
    (lambda d: d.set_date("2021-11-11"), "set_date: date must be 'YYYYMMDD', got '2021-11-11'"),
    (lambda d: d.set_pipe_command(3), "set_pipe_command: pipe_command must be a str"),
    (lambda d: d.local_shuffle(), "local_shuffle: no data in memory"),
    (lambda d: d.set_graph_config([1]), "set_graph_config: config must be a dict"),
])
def test_bad_settings(call, msg):
    with pytest.raises((ValueError, TypeError, RuntimeError), match=msg):
        call(oar.base.DatasetFactory().create_dataset("InMemoryDataset"))


def test_set_use_var_slots_and_dtypes(progs):
    ds = oar.base.DatasetFactory().create_dataset()
    x = static.data("x", [None, 2, 3], "float32")
    ids = static.data("ids", [None, 1], "int64", lod_level=1)
    ds.set_use_var([x, ids])
    slots = ds.proto_desc.slots
    assert [(s.name, s.type, s.is_dense, s.shape) for s in slots] == [
        ("x", "float", True, [-1, 2, 3]), ("ids", "uint64", False, [])]
    with pytest.raises(ValueError, match="set_use_var: variable 'f64' has dtype .*float64"):
        ds.set_use_var([static.data("f64", [None, 1], "float64")])


def test_in_memory_load_shuffle_and_train(progs, tmp_path):
    rng = np.random.default_rng(0)
    files = [str(tmp_path / "a.txt"), str(tmp_path / "b.txt")]
    rows = _rows(rng, 5), _rows(rng, 4)
    for p, r in zip(files, rows):
        _write(p, r)
    x = static.data("x", [None, 3], "float32")
    ids = static.data("ids", [None, 1], "int64", lod_level=1)
    y = oar.sum(x, axis=1)
    cnt = oar.sum(ids.astype("float32"))
    ds = oar.base.DatasetFactory().create_dataset("InMemoryDataset")
    ds.set_use_var([x, ids])
    ds.set_batch_size(4)
    ds.set_filelist(files)
    ds.load_into_memory()
    assert ds.get_memory_data_size() == 9
    batches = list(ds._feeds())
    assert [b["x"].shape for b in batches] == [(4, 3), (4, 3), (1, 3)]
    flat = rows[0] + rows[1]
    np.testing.assert_allclose(np.concatenate([b["x"] for b in batches]),
                               np.array([r[0] for r in flat], "float32"))
    np.testing.assert_array_equal(np.concatenate([b["ids"] for b in batches]).ravel(),
                                  np.concatenate([r[1] for r in flat]))
    ds.local_shuffle()
    shuffled = np.concatenate([b["x"] for b in ds._feeds()])
    assert sorted(map(tuple, shuffled.tolist())) == sorted(map(tuple, np.array([r[0] for r in flat],
                                                                                "float32").tolist()))
    exe = static.Executor()
    exe.run(static.default_startup_program())
    got = [exe.run(feed=b, fetch_list=[y, cnt]) for b in ds._feeds()]
    for (gy, gc), b in zip(got, ds._feeds()):
        np.testing.assert_allclose(gy, b["x"].astype(np.float64).sum(1), rtol=1e-5)
        np.testing.assert_allclose(gc, b["ids"].sum(), rtol=1e-6)
    exe.train_from_dataset(static.default_main_program(), ds, fetch_list=[cnt], print_period=1)
    exe.infer_from_dataset(static.default_main_program(), ds)


def test_queue_dataset_streams_through_pipe_command(progs, tmp_path):
    p = str(tmp_path / "q.txt")
    _write(p, [([1, 2, 3], [5]), ([4, 5, 6], [6, 7])])
    x = static.data("x", [None, 3], "float32")
    ids = static.data("ids", [None, 1], "int64", lod_level=1)
    ds = oar.base.DatasetFactory().create_dataset("QueueDataset")
    ds.set_use_var([x, ids])
    ds.set_pipe_command("tac")  # the command's output is what is read: lines reversed
    ds.set_filelist([p])
    (b,) = list(ds._feeds())
    np.testing.assert_array_equal(b["x"], [[4, 5, 6], [1, 2, 3]])
    np.testing.assert_array_equal(b["ids"].ravel(), [6, 7, 5])
    with pytest.raises(NotImplementedError, match="QueueDataset does not support local shuffle"):
        ds.local_shuffle()


@pytest.mark.parametrize("line, msg", [
    ("2 1 2 1 5", "dense slot of shape \\[-1, 3\\] takes 3 values, got 2"),
    ("3 1 2 3", "the line ends before this slot"),
    ("3 1 2 3 x 5", "expected a value count, got 'x'"),
    ("3 1 2 3 9 5", "count 9 does not fit the line"),
    ("3 1 2 3 1 5 7", "1 values after the last slot"),
    ("3 1 a 3 1 5", "are not float"),
])
def test_bad_lines_name_file_line_and_slot(progs, tmp_path, line, msg):
    p = str(tmp_path / "bad.txt")
    with open(p, "w") as f:
        f.write("3 1 2 3 1 4\n" + line + "\n")
    ds = oar.base.DatasetFactory().create_dataset("InMemoryDataset")
    ds.set_use_var([static.data("x", [None, 3], "float32"), static.data("ids", [None, 1], "int64", lod_level=1)])
    ds.set_filelist([p])
    with pytest.raises(ValueError, match=msg) as e:
        ds.load_into_memory()
    assert "bad.txt:2" in str(e.value)


def test_missing_file_and_failing_command(progs, tmp_path):
    ds = oar.base.DatasetFactory().create_dataset("InMemoryDataset")
    ds.set_use_var([static.data("x", [None, 1], "float32")])
    ds.set_filelist([str(tmp_path / "missing.txt")])
    with pytest.raises(ValueError, match="cannot read file"):
        ds.load_into_memory()
    p = str(tmp_path / "ok.txt")
    with open(p, "w") as f:
        f.write("1 1\n")
    ds.set_filelist([p])
    ds.set_pipe_command("exit 3")
    with pytest.raises(RuntimeError, match="pipe command 'exit 3' failed .*exit 3"):
        ds.load_into_memory()


def test_preload_slots_shuffle_and_passes(progs, tmp_path):
    p = str(tmp_path / "p.txt")
    _write(p, [([float(i)] * 3, [i]) for i in range(6)])
    ds = oar.base.DatasetFactory().create_dataset("BoxPSDataset")
    ds.set_use_var([static.data("x", [None, 3], "float32"), static.data("ids", [None, 1], "int64", lod_level=1)])
    ds.set_filelist([p])
    ds.preload_into_memory()
    ds.wait_preload_done()
    ds.set_fea_eval(10, True)
    ds.slots_shuffle(["ids"])
    got = sorted(int(v) for b in ds._feeds() for v in b["ids"].ravel())
    assert got == list(range(6))  # values moved between instances, none lost
    ds.begin_pass()
    with pytest.raises(RuntimeError, match="a pass is already running"):
        ds.begin_pass()
    ds.end_pass(True)
    with pytest.raises(TypeError, match="train_from_dataset: dataset must be made by DatasetFactory"):
        static.Executor().train_from_dataset(static.default_main_program(), [1])
