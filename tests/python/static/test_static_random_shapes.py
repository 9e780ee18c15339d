"""Random ops sized from data in programs with a dynamic batch (Note [Run-time random
shapes] in docs/notes/static.md): a static program's None batch records dyn_uniform /
dyn_gaussian / dyn_randint reading the size when the program runs, so dropout,
bernoulli and rand(oar.shape(x)) draw the fed batch's size at every batch."""
import numpy as np
import pytest

import oar
from oar import static

BATCHES = (1, 2, 5, 64)


def _build(fn, width=4, dtype="float32"):
    """(main, startup, x, outputs of fn(x)) of a static program with x [None, width]."""
    main, startup = static.Program(), static.Program()
    oar.enable_static()
    try:
        with static.program_guard(main, startup):
            x = static.data("x", [None, width], dtype)
            outs = fn(x)
    finally:
        oar.disable_static()
    return main, startup, x, outs if isinstance(outs, (list, tuple)) else [outs]


def _run(main, startup, outs, feed):
    oar.enable_static()
    try:
        with static.scope_guard(static.Scope()):
            exe = static.Executor(oar.CPUPlace())
            exe.run(startup)
            return exe.run(main, feed=feed, fetch_list=list(outs))
    finally:
        oar.disable_static()


def _op_names(program):
    return [op.name() for op in program.global_block().ops]


def test_dropout_draws_the_fed_batch():
    main, startup, _, outs = _build(lambda x: oar.nn.functional.dropout(x, p=0.25))
    assert "pd_op.dyn_uniform" in _op_names(main)
    for b in BATCHES:
        y, = _run(main, startup, outs, {"x": np.ones((b, 4), "float32")})
        assert y.shape == (b, 4)
        # kept values are scaled by 1 / (1 - p), dropped ones are 0
        vals = np.unique(y)
        assert (np.isclose(vals, 0.0) | np.isclose(vals, 1 / 0.75)).all(), vals
    # the kept fraction over many rows: 1 - p within 5 standard deviations
    main, startup, _, outs = _build(lambda x: oar.nn.functional.dropout(x, p=0.25), width=64)
    for b in (64, 300):
        y, = _run(main, startup, outs, {"x": np.ones((b, 64), "float32")})
        n = y.size
        kept = (y != 0).mean()
        assert abs(kept - 0.75) < 5 * np.sqrt(0.75 * 0.25 / n), (b, kept)


def test_dropout_axis_and_dropout2d_masks_share_draws():
    main, startup, _, outs = _build(lambda x: oar.nn.functional.dropout(x, p=0.5, axis=0), width=8)
    y, = _run(main, startup, outs, {"x": np.ones((200, 8), "float32")})
    assert y.shape == (200, 8)
    rows = (y != 0)
    assert (rows.all(1) | (~rows).all(1)).all()  # one draw per row
    assert 0.3 < rows[:, 0].mean() < 0.7

    main, startup = static.Program(), static.Program()
    oar.enable_static()
    try:
        with static.program_guard(main, startup):
            x = static.data("x", [None, 3, 4, 4], "float32")
            y = oar.nn.functional.dropout2d(x, p=0.5)
    finally:
        oar.disable_static()
    out, = _run(main, startup, [y], {"x": np.ones((7, 3, 4, 4), "float32")})
    assert out.shape == (7, 3, 4, 4)
    per_channel = (out != 0).reshape(7, 3, 16)
    assert (per_channel.all(2) | (~per_channel).all(2)).all()


def test_bernoulli_and_rand_of_shape_follow_the_batch():
    def fn(x):
        return [oar.bernoulli(x), oar.bernoulli(x, p=0.0), oar.rand(oar.shape(x)),
                oar.randn([oar.shape(x)[0], 3]), oar.randint(0, 5, oar.shape(x)),
                oar.rand_like(x), oar.uniform(oar.shape(x), min=2.0, max=3.0)]
    main, startup, _, outs = _build(fn)
    names = _op_names(main)
    assert {"pd_op.dyn_uniform", "pd_op.dyn_gaussian", "pd_op.dyn_randint"} <= set(names)
    for b in BATCHES:
        probs = np.tile(np.array([0.0, 1.0, 0.5, 0.5], "float32"), (b, 1))
        bern, zero, u, g, ri, like, u23 = _run(main, startup, outs, {"x": probs})
        assert bern.shape == zero.shape == u.shape == ri.shape == like.shape == u23.shape == (b, 4)
        assert g.shape == (b, 3)
        assert (bern[:, 0] == 0).all() and (bern[:, 1] == 1).all()
        assert set(np.unique(bern[:, 2:])) <= {0.0, 1.0}
        assert not zero.any()
        assert ((0 <= u) & (u < 1)).all() and ((0 <= like) & (like < 1)).all()
        assert ((2 <= u23) & (u23 < 3)).all()
        assert ri.dtype == np.int64 and ((0 <= ri) & (ri < 5)).all()
    # statistics at a large batch
    probs = np.full((4096, 4), 0.3, "float32")
    bern, _, u, g, ri, _, _ = _run(main, startup, outs, {"x": probs})
    assert abs(bern.mean() - 0.3) < 5 * np.sqrt(0.3 * 0.7 / bern.size)
    assert abs(u.mean() - 0.5) < 5 * np.sqrt(1 / 12 / u.size)
    assert abs(g.mean()) < 5 / np.sqrt(g.size) and abs(g.std() - 1) < 0.05
    assert set(np.unique(ri)) == {0, 1, 2, 3, 4}


def test_draws_differ_between_runs_and_follow_the_seed():
    main, startup, _, outs = _build(lambda x: oar.rand(oar.shape(x)))
    feed = {"x": np.zeros((5, 4), "float32")}
    oar.seed(11)
    a, = _run(main, startup, outs, feed)
    b, = _run(main, startup, outs, feed)
    oar.seed(11)
    c, = _run(main, startup, outs, feed)
    assert not np.array_equal(a, b)
    np.testing.assert_array_equal(a, c)
    # the same numbers as the eager op of the fed size from the same state
    oar.seed(11)
    np.testing.assert_array_equal(a, oar.rand([5, 4]).numpy())


def test_static_sizes_keep_the_fixed_shape_op():
    main, startup, _, outs = _build(lambda x: oar.rand([3, 2]))
    assert "pd_op.uniform" in _op_names(main) and "pd_op.dyn_uniform" not in _op_names(main)
    y, = _run(main, startup, outs, {"x": np.zeros((5, 4), "float32")})
    assert y.shape == (3, 2)


def test_run_time_shape_errors_name_the_op():
    with pytest.raises(Exception, match="uniform.*negative|uniform.*shape"):
        oar._C.ops._dyn_uniform(oar.to_tensor(np.array([2, -3], "int64")), [], oar.float32, 0.0, 1.0, 0, None)
    with pytest.raises(Exception, match="randint.*shape.*int32 or int64"):
        oar._C.ops._dyn_randint(oar.to_tensor(np.array([2.0, 3.0], "float32")), [], 0, 3, oar.int64, None)
    with pytest.raises(Exception, match="gaussian.*1-D"):
        oar._C.ops._dyn_gaussian(oar.to_tensor(np.ones((2, 2), "int64")), [], 0.0, 1.0, 0, oar.float32, None)


def test_eager_dyn_ops_match_the_fixed_shape_ops():
    shape = oar.to_tensor(np.array([3, 0, 2], "int64"))
    assert list(oar._C.ops._dyn_uniform(shape, [], oar.float64, 0.0, 1.0, 0, None).shape) == [3, 0, 2]
    shape = oar.to_tensor(np.array([4, 3], "int32"))
    for dyn, fixed in (
        (lambda: oar._C.ops._dyn_uniform(shape, [], oar.float32, -2.0, 2.0, 0, None),
         lambda: oar._C.ops.uniform([4, 3], oar.float32, -2.0, 2.0, 0, None)),
        (lambda: oar._C.ops._dyn_gaussian(shape, [], 1.0, 2.0, 0, oar.float64, None),
         lambda: oar._C.ops.gaussian([4, 3], 1.0, 2.0, 0, oar.float64, None)),
        (lambda: oar._C.ops._dyn_randint(shape, [], -3, 9, oar.int32, None),
         lambda: oar._C.ops.randint(-3, 9, [4, 3], oar.int32, None)),
    ):
        oar.seed(5)
        a = dyn().numpy()
        oar.seed(5)
        np.testing.assert_array_equal(a, fixed().numpy())


def test_to_static_unchanged_and_dynamic_input_spec():
    class Net(oar.nn.Layer):
        def forward(self, x):
            return oar.nn.functional.dropout(x, p=0.5)

    f = oar.jit.to_static(Net())
    for b in (2, 5, 1):
        y = f(oar.ones([b, 6]))
        assert list(y.shape) == [b, 6]
        assert set(np.unique(y.numpy())) <= {0.0, 2.0}
    g = oar.jit.to_static(Net(), input_spec=[oar.static.InputSpec([None, 6], "float32")])
    for b in (3, 64):
        y = g(oar.ones([b, 6]))
        assert list(y.shape) == [b, 6]
        assert set(np.unique(y.numpy())) <= {0.0, 2.0}


def test_saved_program_with_dropout_runs_in_the_predictor_at_two_batches(tmp_path):
    main, startup = static.Program(), static.Program()
    oar.enable_static()
    try:
        with static.program_guard(main, startup), static.scope_guard(static.Scope()):
            x = static.data("x", [None, 8], "float32")
            h = static.nn.fc(x, 8)
            y = oar.nn.functional.dropout(h, p=0.5) + oar.rand(oar.shape(h)) * 0.0
            exe = static.Executor(oar.CPUPlace())
            exe.run(startup)
            prefix = str(tmp_path / "drop")
            static.save_inference_model(prefix, [x], [y, h], exe)
    finally:
        oar.disable_static()
    pred = oar.inference.create_predictor(oar.inference.Config(prefix + ".pdmodel", prefix + ".pdiparams"))
    for b in (3, 40):
        xs = np.random.default_rng(b).standard_normal((b, 8)).astype("float32")
        pred.get_input_handle(pred.get_input_names()[0]).copy_from_cpu(xs)
        pred.run()
        out, hv = (pred.get_output_handle(n).copy_to_cpu() for n in pred.get_output_names())
        assert out.shape == hv.shape == (b, 8)
        kept = out != 0
        np.testing.assert_allclose(out[kept], 2 * hv[kept], rtol=1e-5, atol=1e-6)
        assert 0 < kept.mean() < 1
