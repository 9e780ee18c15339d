"""Issue 18 (compat_seq): isin's search paths against np.isin (assume_unique's sort-based
answer on repeated values, as Paddle's), paddle.LazyGuard, paddle.MmapStorage, the printed
class of a Tensor, and int64 fetches typed as Paddle's."""
import numpy as np
import pytest

import oar


@pytest.mark.parametrize("n,m", [(100, 50), (7, 300), (0, 5), (5, 0), (1000, 999), (30, 2)])
@pytest.mark.parametrize("dtype", ["int64", "float32", "float64", "int32"])
def test_isin_against_numpy(n, m, dtype):
    rng = np.random.default_rng(n * 7 + m)
    a, b = rng.integers(-20, 20, n).astype(dtype), rng.integers(-20, 20, m).astype(dtype)
    for invert in (False, True):
        got = oar.isin(oar.to_tensor(a.reshape(-1, 1) if n else a), oar.to_tensor(b), invert=invert)
        want = np.isin(a, b, invert=invert)
        assert got.dtype == oar.bool and (got.numpy().reshape(-1) == want).all()
    ua, ub = rng.permutation(3 * n + 3)[:n].astype(dtype), rng.permutation(3 * m + 3)[:m].astype(dtype)
    got = oar.isin(oar.to_tensor(ua), oar.to_tensor(ub), assume_unique=True)
    assert (got.numpy() == np.isin(ua, ub)).all()


def test_isin_assume_unique_on_repeats_is_paddles_sort_rule_and_0d():
    x = oar.to_tensor([0.0, 1.0, 2.0] * 20).reshape([20, 3])
    t = oar.to_tensor([0.0, 1.0] * 20)
    exact = oar.isin(x, t).numpy()
    assert (exact == np.isin(x.numpy(), t.numpy())).all()
    fast = oar.isin(x, t, assume_unique=True).numpy()
    # rule: the next element of the stable sort of [x, t] equals it; only the last 2.0 has none
    want = np.ones([20, 3], bool)
    want[-1, -1] = False
    assert (fast == want).all()
    got = oar.isin(oar.to_tensor(3.0), oar.to_tensor([1.0, 3.0]))
    assert got.shape == [] and bool(got)
    with pytest.raises(TypeError, match="isin.*test_x"):
        oar.isin(x, [1.0])


def test_lazy_guard_defers_initialization():
    oar.seed(5)
    ref = oar.nn.Linear(6, 4)
    oar.seed(5)
    with oar.LazyGuard():
        net = oar.nn.Linear(6, 4)
    assert net.weight._lazy_initializer is not None and net.weight.shape == [6, 4]
    oar.seed(5)  # the initializer draws when it runs, from the stream as it is then
    for p in net.parameters():
        p.initialize()
    np.testing.assert_array_equal(net.weight.numpy(), ref.weight.numpy())
    np.testing.assert_array_equal(net.bias.numpy(), ref.bias.numpy())
    with pytest.raises(RuntimeError, match="initialize.*LazyGuard"):
        net.weight.initialize()
    assert oar.nn.Linear(2, 2).weight._lazy_initializer is None  # guard left


def test_mmap_storage_slices(tmp_path):
    a = np.arange(24, dtype=np.float32)
    f = tmp_path / "w.bin"
    a.tofile(f)
    st = oar.MmapStorage(str(f), a.nbytes)
    np.testing.assert_array_equal(st.get_slice(oar.float32, 0, 24).reshape([4, 6]).numpy(),
                                  a.reshape(4, 6))
    np.testing.assert_array_equal(st.get_slice("float32", 3, 11, 2).numpy(), a[3:11:2])
    np.testing.assert_array_equal(st.get_slice("float32").numpy(), a)  # stop=-1: to the end
    assert st.get_slice().numpy().tolist() == list(a.view(np.uint8))
    assert st.get_slice("float64", 0, 12).numpy().tolist() == a.view(np.float64).tolist()
    assert oar.MmapStorage(str(f), 0).get_slice("float32").shape == [0]
    with pytest.raises(ValueError, match="MmapStorage.*nbytes"):
        oar.MmapStorage(str(f), a.nbytes + 1)
    with pytest.raises(ValueError, match="get_slice.*start"):
        st.get_slice("float32", 5, 30)
    with pytest.raises(ValueError, match="get_slice.*step"):
        st.get_slice("float32", 0, 4, 0)


def test_tensor_class_prints_as_paddles():
    x = oar.to_tensor([1.0])
    assert str(type(x)) == "<class 'paddle.Tensor'>" and type(x) is oar.Tensor
    assert isinstance(oar.nn.Linear(1, 1).weight, oar.Tensor)


def test_static_fetch_int64_repr_names_its_dtype():
    oar.enable_static()
    try:
        x = oar.static.data(name="x", shape=[3, 5], dtype="float32")
        out = oar.shape(x)
        exe = oar.static.Executor(oar.CPUPlace())
        exe.run(oar.static.default_startup_program())
        res = exe.run(oar.static.default_main_program(), feed={"x": np.ones((3, 5), np.float32)},
                      fetch_list=[out])
    finally:
        oar.disable_static()
    assert res[0].dtype == np.int64 and res[0].tolist() == [3, 5]
    assert repr(res[0]) == "array([3, 5], dtype=int64)"


def test_grad_stop_gradient_follows_paddles_rule():
    x = oar.to_tensor([1.0, 2.0], stop_gradient=False)
    (x * x).sum().backward()
    assert not x.grad.stop_gradient and x.grad._grad_fn_name is None  # engine-computed
    x.clear_grad()
    (x * 3.0).sum().backward()
    assert not x.grad.stop_gradient and x.grad.numpy().tolist() == [3.0, 3.0]
    h = oar.to_tensor([1.0, 2.0], stop_gradient=False)
    h.register_hook(lambda g: g * 2)
    seen = []
    w = h * h
    w.register_hook(lambda g: seen.append(g.stop_gradient))  # a hook sees the flag too
    root = oar.ones([2])
    w.backward(root)
    assert seen == [False] and root.stop_gradient  # the caller's grad tensor is untouched
    assert not h.grad.stop_gradient and h.grad.numpy().tolist() == [4.0, 8.0]

    class Square(oar.autograd.PyLayer):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a * a

        @staticmethod
        def backward(ctx, dy):
            (a,) = ctx.saved_tensor()
            return dy * 2 * a  # made under no_grad: Paddle keeps stop_gradient=True

    p = oar.to_tensor([3.0], stop_gradient=False)
    Square.apply(p).sum().backward()
    assert p.grad.stop_gradient and p.grad.numpy().tolist() == [6.0]
    Square.apply(p).sum().backward()
    assert p.grad.stop_gradient and p.grad.numpy().tolist() == [12.0]
    # an update computed from a gradient outside no_grad records nothing on the parameter
    lin = oar.nn.Linear(2, 1)
    lin(oar.ones([1, 2])).sum().backward()
    with oar.no_grad():
        lin.weight.set_value(lin.weight - 0.1 * lin.weight.grad)
    assert lin.weight.is_leaf


def test_save_scope_tensor_and_program_state_dict(tmp_path):
    oar.enable_static()
    try:
        main, start = oar.static.Program(), oar.static.Program()
        with oar.static.program_guard(main, start):
            x = oar.static.data(name="x", shape=[None, 6], dtype="float32")
            oar.static.nn.fc(x, 3)
        exe = oar.static.Executor(oar.CPUPlace())
        exe.run(start)
        w = [v for v in main.list_vars() if list(v.shape) == [6, 3]][0]
        scope_t = oar.static.global_scope().find_var(w.name).get_tensor()
        oar.save(scope_t, str(tmp_path / "w.pdtensor"))
        back = oar.load(str(tmp_path / "w.pdtensor"))
        np.testing.assert_array_equal(np.asarray(back.numpy()), np.array(scope_t))
        oar.save(main.state_dict("param"), str(tmp_path / "p.pdparams"))
        assert sorted(oar.load(str(tmp_path / "p.pdparams"))) == sorted(main.state_dict("param"))
    finally:
        oar.disable_static()
    class Strings:
        def __array__(self, dtype=None, copy=None):
            return np.array(["a"])

    with pytest.raises(TypeError, match="oar.save: cannot save Strings of dtype"):
        oar.save(Strings(), str(tmp_path / "s.pd"))
    with pytest.raises(TypeError, match="oar.save: cannot save an object of type object"):
        oar.save(object(), str(tmp_path / "s.pd"))
