"""paddle.incubate additions: minimize_bfgs/minimize_lbfgs, layers.partial_concat /
partial_sum / shuffle_batch, identity_loss, registered rng states, autotune, prim switch."""
import json

import numpy as np
import pytest
from op_test_utils import OpCase, case_id, check_case

import oar
from oar.incubate.optimizer.functional import minimize_bfgs, minimize_lbfgs

MINIMIZERS = [minimize_bfgs, minimize_lbfgs]


def _quadratic(n, seed):
    rng = np.random.default_rng(seed)
    m = rng.standard_normal((n, n))
    a = m @ m.T + n * np.eye(n)
    b = rng.standard_normal(n)
    at, bt = oar.to_tensor(a), oar.to_tensor(b)
    return a, b, lambda x: 0.5 * (x * oar.matmul(at.astype(x.dtype), x)).sum() - (bt.astype(x.dtype) * x).sum()


@pytest.mark.parametrize("fn", MINIMIZERS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("n", [1, 4, 7])
def test_quadratic_minimum_matches_solve(fn, n):
    a, b, f = _quadratic(n, n)
    out = fn(f, oar.zeros([n], dtype="float64"), dtype="float64")
    assert bool(out[0]) and int(out[1]) >= 1
    np.testing.assert_allclose(out[2].numpy(), np.linalg.solve(a, b), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(float(out[3]), -0.5 * b @ np.linalg.solve(a, b), rtol=1e-8)
    assert float(out[4].abs().max()) < 1e-5
    if fn is minimize_bfgs:  # the inverse Hessian estimate approaches A^-1 on a quadratic
        assert out[5].shape == [n, n]


@pytest.mark.parametrize("fn", MINIMIZERS, ids=lambda f: f.__name__)
def test_rosenbrock_and_float32(fn):
    def rosen(x):
        return (100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2).sum()
    out = fn(rosen, oar.to_tensor([-1.2, 1.0], dtype="float64"), max_iters=200, dtype="float64")
    np.testing.assert_allclose(out[2].numpy(), [1.0, 1.0], atol=1e-4)
    out32 = fn(rosen, oar.to_tensor([-1.2, 1.0]), max_iters=200)
    assert out32[2].dtype == oar.float32 and out32[3].dtype == oar.float32


def test_max_iters_zero_and_history():
    _, _, f = _quadratic(3, 0)
    out = minimize_bfgs(f, oar.zeros([3], dtype="float64"), max_iters=0, dtype="float64")
    assert not bool(out[0]) and int(out[1]) == 1 and float(out[2].abs().max()) == 0.0
    a, b, f = _quadratic(5, 1)
    out = minimize_lbfgs(f, oar.zeros([5], dtype="float64"), history_size=1, max_iters=500, dtype="float64")
    np.testing.assert_allclose(out[2].numpy(), np.linalg.solve(a, b), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("fn", MINIMIZERS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("kwargs, err, msg", [
    (dict(initial_position=oar.zeros([2, 2])), ValueError, "initial_position must be 1-D"),
    (dict(dtype="float16"), ValueError, "dtype must be 'float32' or 'float64'"),
    (dict(line_search_fn="hager_zhang"), NotImplementedError, "line_search_fn must be 'strong_wolfe'"),
    (dict(max_iters=-1), ValueError, "max_iters must be an int in [0, 1000000], got -1"),
    (dict(tolerance_grad=float("nan")), ValueError, "tolerance_grad must be a number >= 0"),
    (dict(objective_func=3), TypeError, "objective_func must be callable"),
    (dict(objective_func=lambda x: x * 2), ValueError, "objective_func must return a one-element tensor"),
    (dict(initial_inverse_hessian_estimate=oar.eye(3)), ValueError, "must have shape [2, 2]"),
])
def test_bad_inputs(fn, kwargs, err, msg):
    args = dict(objective_func=lambda x: (x * x).sum(), initial_position=oar.ones([2]))
    args.update(kwargs)
    with pytest.raises(err) as e:
        fn(**args)
    assert msg in str(e.value) and fn.__name__ in str(e.value)


def _window_np(xs, start_index, length, op):
    cols = xs[0].shape[1]
    stop = cols if length < 0 else start_index + length
    parts = [x[:, start_index:stop] for x in xs]
    return np.concatenate(parts, axis=1) if op == "concat" else sum(parts)


L = oar.incubate.layers
WINDOW_CASES = [
    OpCase("partial_concat", lambda x, y, **k: L.partial_concat([x, y], **k),
           lambda x, y, **k: _window_np([x, y], op="concat", **k), inputs=[(3, 5), (3, 5)],
           attrs=dict(start_index=1, length=3), shapes=[[(3, 5), (3, 5)], [(0, 5), (0, 5)]],
           bad_inputs=[([oar.ones([2, 5]), oar.ones([2, 4])], ValueError, "every input must have 5 columns"),
                       ([oar.ones([2, 5]), oar.ones([3, 5])], ValueError, "must have the rows and dtype"),
                       ([oar.ones([5]), oar.ones([5])], ValueError, "must be a 2-D tensor")]),
    OpCase("partial_sum", lambda x, y, **k: L.partial_sum([x, y], **k),
           lambda x, y, **k: _window_np([x, y], op="sum", **k), inputs=[(4, 6), (4, 6)],
           attrs=dict(start_index=2, length=-1), shapes=[[(4, 6), (4, 6)], [(0, 6), (0, 6)]],
           bad_inputs=[([oar.ones([2, 5]), oar.ones([2, 5])], ValueError, "exceeds the 5 columns",
                        dict(start_index=3, length=4))]),
]


@pytest.mark.parametrize("case", WINDOW_CASES, ids=case_id)
def test_partial_window_ops(case):
    check_case(case)


def test_shuffle_batch():
    a = np.arange(24.0).reshape(2, 3, 4)
    out = L.shuffle_batch(oar.to_tensor(a), seed=5).numpy()
    assert out.shape == a.shape
    rows = sorted(map(tuple, out.reshape(6, 4).tolist()))
    assert rows == sorted(map(tuple, a.reshape(6, 4).tolist()))
    np.testing.assert_array_equal(L.shuffle_batch(oar.to_tensor(a), seed=5).numpy(), out)
    with pytest.raises(TypeError, match="shuffle_batch: seed must be an int"):
        L.shuffle_batch(oar.ones([2, 2]), seed=1.5)
    # static programs: test_shuffle_batch_static.py


def test_identity_loss():
    x = oar.to_tensor(np.arange(6.0).reshape(2, 3), stop_gradient=False)
    assert float(oar.incubate.identity_loss(x, "sum")) == 15.0
    assert float(oar.incubate.identity_loss(x, 1)) == 2.5
    assert oar.incubate.identity_loss(x, 2) is x
    oar.incubate.identity_loss(x, 0).backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.ones([2, 3]))
    with pytest.raises(ValueError, match="identity_loss: reduction must be"):
        oar.incubate.identity_loss(x, 3)


def test_registered_rng_states():
    inc = oar.incubate
    start = inc.get_rng_state(use_index=True)
    oar.seed(1)
    idx = inc.register_rng_state_as_index()
    a = oar.rand([3]).numpy()  # drawn from the state in use (start's slot)
    inc.set_rng_state(idx, use_index=True)
    np.testing.assert_array_equal(oar.rand([3]).numpy(), a)  # the registered state draws the same
    inc.set_rng_state(start, use_index=True)
    assert inc.get_rng_state(use_index=True) == start
    with pytest.raises(ValueError, match="set_rng_state: index must be one of the registered indices"):
        inc.set_rng_state([99], use_index=True)


def test_autotune_and_prim(tmp_path):
    at = oar.incubate.autotune
    at.set_config({"kernel": {"enable": True, "tuning_range": [1, 5]}})
    assert at.get_config()["kernel"] == {"enable": True, "tuning_range": [1, 5]}
    p = tmp_path / "c.json"
    p.write_text(json.dumps({"dataloader": {"enable": True}}))
    at.set_config(str(p))
    assert at.get_config()["dataloader"]["enable"] is True
    for bad, msg in (({"gpu": {}}, "unknown section 'gpu'"), ({"kernel": {"enable": 1}}, "enable must be a bool"),
                     ({"kernel": {"tuning_range": [5, 1]}}, "tuning_range must be"),
                     (str(tmp_path / "missing.json"), "cannot read the JSON config")):
        with pytest.raises((ValueError, TypeError), match=msg):
            at.set_config(bad)
    from oar.incubate.autograd import disable_prim, enable_prim, prim2orig, prim_enabled
    enable_prim()
    try:
        assert prim_enabled() and oar.get_flags(["FLAGS_prim_all"])["FLAGS_prim_all"] in (True, "true", "1", 1)
        prim2orig()
    finally:
        disable_prim()
    assert not prim_enabled()
    with pytest.raises(TypeError, match="prim2orig: block must be a program block"):
        prim2orig(block=3)


@pytest.mark.parametrize("fn", MINIMIZERS, ids=lambda f: f.__name__)
def test_unbounded_function_stops(fn):
    out = fn(lambda x: -oar.exp(oar.exp(x)).sum(), oar.to_tensor([1.0], dtype="float64"), max_iters=1000,
             dtype="float64")
    assert not bool(out[0]) and int(out[1]) < 1000  # diverged to a non-finite value: stopped, not converged


def _random_tree(rng, node_nums, child_nums):
    tree = np.zeros([node_nums, 3 + child_nums], "int64")
    tree[:, 0] = rng.integers(0, 3, node_nums)  # item ids (0: not a leaf)
    tree[:, 3:] = rng.integers(0, node_nums, [node_nums, child_nums])
    return tree


def _tdm_child_ref(tree, ids):
    child = tree[ids.reshape(-1), 3:]
    leaf = (tree[child, 0] != 0).astype(np.int64)
    shape = list(ids.shape) + [tree.shape[1] - 3]
    return child.reshape(shape), leaf.reshape(shape)


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_tdm_child_eager_and_static_match_numpy(dtype):
    rng = np.random.default_rng(7)
    tree = _random_tree(rng, 9, 3)
    ids = rng.integers(0, 9, [5, 1]).astype(dtype)
    attr = oar.ParamAttr(initializer=oar.nn.initializer.Assign(tree.astype("float64")))
    child, leaf = L.tdm_child(oar.to_tensor(ids), 9, 3, param_attr=attr, dtype=dtype)
    ref_child, ref_leaf = _tdm_child_ref(tree, ids.astype("int64"))
    assert child.dtype.name == dtype and leaf.dtype.name == dtype
    np.testing.assert_array_equal(child.numpy(), ref_child)
    np.testing.assert_array_equal(leaf.numpy(), ref_leaf)
    empty, _ = L.tdm_child(oar.zeros([0, 1], dtype=dtype), 9, 3, param_attr=attr, dtype=dtype)
    assert list(empty.shape) == [0, 1, 3]
    oar.enable_static()
    try:
        main, startup = oar.static.Program(), oar.static.Program()
        with oar.static.program_guard(main, startup), oar.static.scope_guard(oar.static.Scope()):
            x = oar.static.data("x", [None, 1], dtype, lod_level=1)
            c, m = L.tdm_child(x, 9, 3, param_attr=oar.ParamAttr(initializer=oar.nn.initializer.Assign(tree)),
                               dtype=dtype)
            exe = oar.static.Executor()
            exe.run(startup)
            got_c, got_m = exe.run(main, feed={"x": ids}, fetch_list=[c, m])
    finally:
        oar.disable_static()
    np.testing.assert_array_equal(got_c, ref_child)
    np.testing.assert_array_equal(got_m, ref_leaf)


@pytest.mark.parametrize("args, err, msg", [
    ((oar.to_tensor([[9]], dtype="int32"), 7, 2), ValueError, "node ids must be in [0, 7), got values in [9, 9]"),
    ((oar.to_tensor([[1.0]]), 7, 2), TypeError, "x must be an int32/int64 tensor"),
    ((oar.to_tensor([[1]], dtype="int32"), 0, 2), ValueError, "node_nums must be an int >= 1, got 0"),
    ((oar.to_tensor([[1]], dtype="int32"), 2 ** 40, 2 ** 40), MemoryError, "tdm_child"),
])
def test_tdm_child_bad_inputs(args, err, msg):
    with pytest.raises(err) as e:
        L.tdm_child(*args)
    assert msg in str(e.value) and "tdm_child" in str(e.value)


def test_ps_dispatchers_and_single_worker_fleet():
    from oar.incubate.distributed.fleet.parameter_server.ir.ps_dispatcher import HashName, RoundRobin
    from oar.incubate.distributed.fleet.parameter_server.pslib import fleet
    eps = ["127.0.0.1:6007", "127.0.0.1:6008", "127.0.0.1:6009"]
    rr = RoundRobin(eps)
    assert rr.dispatch(["a", "b", "c", "d"]) == [eps[0], eps[1], eps[2], eps[0]]
    assert rr.dispatch(["e"]) == [eps[1]]  # continues where it stopped
    rr.reset()
    assert rr.dispatch(["f"]) == [eps[0]]
    h = HashName(eps).dispatch(["w1", "w2", "w1"])
    assert h[0] == h[2] and all(e in eps for e in h) and h == HashName(eps).dispatch(["w1", "w2", "w1"])
    with pytest.raises(ValueError, match="RoundRobin: pserver_endpoints must be a non-empty list"):
        RoundRobin([])
    with pytest.raises(TypeError, match="dispatch: expected variables or their names"):
        HashName(eps).dispatch([3])
    fleet.init()
    assert (fleet.worker_num(), fleet.worker_index(), fleet.is_worker(), fleet.is_server()) == (1, 0, True, False)
    with pytest.raises(RuntimeError, match="no parameter server"):
        fleet.run_server()
