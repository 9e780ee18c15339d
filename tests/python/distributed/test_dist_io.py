"""oar.distributed.io: a static program's persistables saved and loaded, per variable or in
one file, compared exactly with the scope's values; bad folders, files and shapes refused."""
import os

import numpy as np
import pytest

import oar
from oar.distributed import io as dio


@pytest.fixture
def fc_program(progs):
    main, startup = progs
    with oar.static.program_guard(main, startup):
        x = oar.static.data(name="x", shape=[None, 4], dtype="float32")
        y = oar.static.nn.fc(x, 3)
    exe = oar.static.Executor(oar.CPUPlace())
    exe.run(startup)
    return main, exe, x, y


def _values(exe, main):
    return {n: np.array(t.__array__()) for n, t in main.state_dict().items()}


@pytest.mark.parametrize("filename", [None, "all.params"])
def test_round_trip(fc_program, tmp_path, filename):
    main, exe, x, y = fc_program
    before = _values(exe, main)
    dio.save_persistables(exe, str(tmp_path), main, filename)
    assert sorted(os.listdir(tmp_path)) == ([filename] if filename else sorted(before))
    feed = {"x": np.arange(8, dtype=np.float32).reshape(2, 4)}
    want = exe.run(main, feed=feed, fetch_list=[y])[0]
    scope = oar.static.global_scope()
    for n, a in before.items():  # clobber, then load back
        scope._set(n, oar.to_tensor(np.zeros_like(a)))
    assert not np.allclose(exe.run(main, feed=feed, fetch_list=[y])[0], want)
    dio.load_persistables(exe, str(tmp_path), main, filename)
    for n, a in _values(exe, main).items():
        np.testing.assert_array_equal(a, before[n])
    np.testing.assert_array_equal(exe.run(main, feed=feed, fetch_list=[y])[0], want)
    assert dio.is_persistable(main.global_block().var(next(iter(before)))) and not dio.is_persistable(x)


def test_bad_arguments(fc_program, tmp_path):
    main, exe, x, y = fc_program
    with pytest.raises(TypeError, match="save_persistables: executor must be an oar.static.Executor, got int"):
        dio.save_persistables(3, str(tmp_path), main)
    with pytest.raises(TypeError, match="save_persistables: main_program must be an oar.static.Program, got str"):
        dio.save_persistables(exe, str(tmp_path), "main")
    with pytest.raises(ValueError, match="filename must be a plain file name inside dirname, got 'a/b'"):
        dio.save_persistables(exe, str(tmp_path), main, "a/b")
    with pytest.raises(TypeError, match="dirname must be a non-empty path, got ''"):
        dio.save_persistables(exe, "", main)
    with pytest.raises(FileNotFoundError, match=r"load_persistables: no file for variable 'fc_\d+.w_0'"):
        dio.load_persistables(exe, str(tmp_path), main)
    dio.save_persistables(exe, str(tmp_path / "o"), main, "p")
    other, other_startup = oar.static.Program(), oar.static.Program()
    with oar.static.program_guard(other, other_startup):
        oar.static.nn.fc(oar.static.data(name="x2", shape=[None, 5], dtype="float32"), 3)
    exe.run(other_startup)
    with pytest.raises(ValueError, match="lacks the variables"):
        dio.load_persistables(exe, str(tmp_path / "o"), other, "p")
