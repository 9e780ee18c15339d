"""oar.save / oar.load of a whole static Program (Note [Saved programs] in docs/notes/static.md)."""
import numpy as np
import pytest

import oar
from oar import static


def _model():
    x = static.data("x", [None, 6], "float32")
    h = static.nn.fc(x, 4)
    y = oar.nn.functional.relu(h) * 2.0
    return x, h, y


def test_saved_program_runs_like_the_original(progs, tmp_path):
    main, startup = progs
    _, h, y = _model()
    oar.save(main, str(tmp_path / "main.pdmodel"))
    oar.save(startup, str(tmp_path / "startup.pdmodel"))
    loaded_main = oar.load(str(tmp_path / "main.pdmodel"))
    loaded_startup = oar.load(str(tmp_path / "startup.pdmodel"))
    assert loaded_main.feed_names == ["x"]
    names = [t.name for t in loaded_main.fetch_targets]
    assert h.name in names and len(names) == 3  # fc's two named results and the unnamed relu * 2

    exe = static.Executor()
    exe.run(startup)
    for rows in (1, 5, 0):  # the batch stays dynamic in the saved program
        xs = np.random.default_rng(rows).standard_normal((rows, 6)).astype("float32")
        want_h, want_y = exe.run(main, feed={"x": xs}, fetch_list=[h, y])
        got_h, got_y = exe.run(loaded_main, feed={"x": xs}, fetch_list=[h, names[-1]])
        np.testing.assert_array_equal(got_h, want_h)
        np.testing.assert_array_equal(got_y, want_y)
        fc = h.name.split(".")[0]
        w = np.asarray(static.global_scope().find_var(f"{fc}.w_0").get_tensor())
        b = np.asarray(static.global_scope().find_var(f"{fc}.b_0").get_tensor())
        np.testing.assert_allclose(got_y, np.maximum(xs.astype(np.float64) @ w + b, 0) * 2, rtol=1e-5, atol=1e-5)

    # the loaded startup program initialises a fresh scope with the same values
    with static.scope_guard(static.Scope()):
        exe.run(loaded_startup)
        xs = np.ones((2, 6), "float32")
        got, = exe.run(loaded_main, feed={"x": xs}, fetch_list=[h])
    want, = exe.run(main, feed={"x": xs}, fetch_list=[h])
    np.testing.assert_array_equal(got, want)


def test_saved_program_in_a_container_and_a_buffer(progs):
    import io

    main, _ = progs
    _model()
    buf = io.BytesIO()
    oar.save({"program": main, "step": 3}, buf)
    buf.seek(0)
    back = oar.load(buf)
    assert back["step"] == 3 and back["program"].feed_names == ["x"]


def test_loaded_program_needs_the_startup_values(progs, tmp_path):
    main, _ = progs
    _, h, _ = _model()
    oar.save(main, str(tmp_path / "m"))
    loaded = oar.load(str(tmp_path / "m"))
    with static.scope_guard(static.Scope()):
        with pytest.raises(RuntimeError, match="parameter 'fc_\\d+\\.[wb]_0'.*startup"):
            static.Executor().run(loaded, feed={"x": np.ones((1, 6), "float32")}, fetch_list=[h])


def test_loaded_program_rejects_unknown_fetch_and_feed(progs, tmp_path):
    main, startup = progs
    _model()
    oar.save(main, str(tmp_path / "m"))
    loaded = oar.load(str(tmp_path / "m"))
    exe = static.Executor()
    exe.run(startup)
    with pytest.raises(ValueError, match="fetch_list\\[0\\] is no fetch target"):
        exe.run(loaded, feed={"x": np.ones((1, 6), "float32")}, fetch_list=["nope"])
    with pytest.raises(ValueError, match="feed names 'y'"):
        exe.run(loaded, feed={"y": np.ones((1, 6), "float32")}, fetch_list=[])
    with pytest.raises(ValueError, match="'x'"):
        exe.run(loaded, feed={"x": np.ones((1, 5), "float32")}, fetch_list=[])


def test_program_with_a_backward_is_refused_naming_the_way_out(progs, tmp_path):
    main, _ = progs
    _, _, y = _model()
    loss = oar.mean(y)
    oar.optimizer.SGD(0.1).minimize(loss)
    with pytest.raises(NotImplementedError, match="oar.save: .*backward.*clone\\(for_test=True\\)"):
        oar.save(main, str(tmp_path / "m"))
    oar.save(main.clone(for_test=True), str(tmp_path / "m"))  # the forward part saves
    assert oar.load(str(tmp_path / "m")).feed_names == ["x"]
