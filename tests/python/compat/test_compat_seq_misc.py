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
