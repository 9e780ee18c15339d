"""paddle.distributed's dataset API (init / update_settings / _init_distributed_settings) over
oar.base.dataset: a fleet.data_generator script as the pipe command, the batches it feeds
compared with the values written, Executor.train_from_dataset, and bad settings."""
import sys
import textwrap

import numpy as np
import pytest

import oar
from oar import static
from oar.distributed import fleet


@pytest.fixture
def gen_files(tmp_path):
    """Raw files of 'a b c label' lines and a MultiSlotDataGenerator script turning them
    into a dense float slot x (3 values) and a dense int64 slot y (1 value)."""
    rng = np.random.default_rng(7)
    rows = [(np.round(rng.standard_normal(3), 3), int(rng.integers(0, 5))) for _ in range(7)]
    files = []
    for k, part in enumerate((rows[:4], rows[4:])):
        p = tmp_path / f"part{k}.txt"
        p.write_text("".join(f"{a} {b} {c} {y}\n" for (a, b, c), y in part))
        files.append(str(p))
    script = tmp_path / "gen.py"
    script.write_text(textwrap.dedent("""
        import oar.distributed.fleet.data_generator as dg

        class Gen(dg.MultiSlotDataGenerator):
            def generate_sample(self, line):
                def it():
                    *x, y = line.split()
                    yield [("x", [float(v) for v in x]), ("y", [int(y)])]
                return it

        Gen().run_from_stdin()
    """))
    return rows, files, f"{sys.executable} {script}"


def test_in_memory_dataset_feeds_the_generated_slots(progs, gen_files):
    rows, files, cmd = gen_files
    x = static.data("x", [None, 3], "float32")
    y = static.data("y", [None, 1], "int64")
    ds = oar.distributed.InMemoryDataset()
    assert isinstance(ds, fleet.InMemoryDataset) and isinstance(ds, oar.base.dataset.InMemoryDataset)
    ds.init(batch_size=3, thread_num=1, use_var=[x, y], pipe_command=cmd)
    ds.set_filelist(files)
    ds.load_into_memory()
    assert ds.get_memory_data_size() == 7
    batches = list(ds._feeds())
    assert [len(b["x"]) for b in batches] == [3, 3, 1]
    np.testing.assert_allclose(np.concatenate([b["x"] for b in batches]),
                               np.array([r[0] for r in rows], np.float32), rtol=0, atol=0)
    np.testing.assert_array_equal(np.concatenate([b["y"] for b in batches]).ravel(), [r[1] for r in rows])
    ds.update_settings(batch_size=7, use_var=[x, y])  # slots replaced, not appended
    assert len(ds.proto_desc.slots) == 2 and [len(b["x"]) for b in ds._feeds()] == [7]

    total = oar.sum(x, axis=1)
    exe = static.Executor(oar.CPUPlace())
    exe.run(static.default_startup_program())
    exe.train_from_dataset(static.default_main_program(), ds, fetch_list=[total], print_period=100)
    ds.release_memory()
    assert ds.get_memory_data_size() == 0


def test_queue_dataset_streams(progs, gen_files):
    rows, files, cmd = gen_files
    x = static.data("x", [None, 3], "float32")
    y = static.data("y", [None, 1], "int64")
    ds = oar.distributed.QueueDataset()
    ds.init(batch_size=4, use_var=[x, y], pipe_command=cmd)
    ds.set_filelist(files)
    got = [b["y"].ravel().tolist() for b in ds._feeds()]
    assert got == [[r[1] for r in rows[:4]], [r[1] for r in rows[4:]]]  # per file, in order
    with pytest.raises(NotImplementedError, match="QueueDataset does not support local shuffle"):
        ds.local_shuffle()


def test_settings_and_errors(progs):
    ds = oar.distributed.InMemoryDataset()
    ds.init(batch_size=2, thread_num=2, use_var=[], pipe_command="cat", queue_num=3)
    ds._init_distributed_settings(parse_ins_id=True, fea_eval=True, candidate_size=50, merge_size=2)
    assert ds.parse_ins_id and ds.fea_eval and ds.record_candidate_size == 50 and ds.merge_size == 2
    assert ds.queue_num == 3 and ds.thread_num == 2 and 'name: "MultiSlotInMemoryDataFeed"' in ds._desc()
    ds.update_settings(pipe_command="cat -", parse_content=True)
    assert ds.proto_desc.pipe_command == "cat -" and ds.parse_content
    with pytest.raises(TypeError, match=r"InMemoryDataset.init: unknown settings \['batchsize'\]"):
        ds.init(batchsize=2)
    with pytest.raises(TypeError, match=r"update_settings: unknown settings \['speed'\]"):
        ds.update_settings(speed=2)
    with pytest.raises(TypeError, match="init: use_var must be a list of static variables, got str"):
        fleet.QueueDataset().init(use_var="x")
    with pytest.raises(ValueError, match="set_batch_size: batch_size must be an int >= 1, got 0"):
        fleet.DatasetBase().init(batch_size=0)
    box = fleet.BoxPSDataset()
    box.init(batch_size=2, rank_offset="offset", pv_batch_size=4)
    assert box.proto_desc.rank_offset == "offset" and box.proto_desc.pv_batch_size == 4
    box.begin_pass()
    with pytest.raises(RuntimeError, match="a pass is already running"):
        box.begin_pass()
    box.end_pass(True)


def test_dataloader_from_dataset(progs, gen_files):
    rows, files, cmd = gen_files
    x = static.data("x", [None, 3], "float32")
    y = static.data("y", [None, 1], "int64")
    ds = oar.distributed.QueueDataset()
    ds.init(batch_size=2, use_var=[x, y], pipe_command=cmd)
    ds.set_filelist(files)  # 4 + 3 rows: batches of 2, 2, 2, 1 (the files are read in turn)
    steps = list(oar.base.io.DataLoader.from_dataset(ds, static.cpu_places()))
    assert [len(s) for s in steps] == [1, 1, 1] and all(len(s[0]["x"]) == 2 for s in steps)
    np.testing.assert_array_equal(np.concatenate([s[0]["y"] for s in steps]).ravel(), [r[1] for r in rows[:6]])
    two = list(oar.io.DataLoader.from_dataset(ds, [oar.CPUPlace(), oar.CPUPlace()], drop_last=False))
    assert [len(s) for s in two] == [2, 2] and len(two[1][1]["x"]) == 1
    with pytest.raises(TypeError, match="DataLoader.from_dataset: dataset must be a slot-file dataset"):
        oar.io.DataLoader.from_dataset([1, 2], static.cpu_places())
    with pytest.raises(ValueError, match="places must name at least one place"):
        oar.io.DataLoader.from_dataset(ds, [])
