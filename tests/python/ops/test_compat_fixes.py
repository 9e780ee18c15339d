"""Behaviour Paddle 3.3's docs rely on: searchsorted across dtypes and with a 1-D sequence for
N-D values, gelu's string modes, silu(inplace=True), set_grad_enabled called as a function,
Paddle's flag names, paddle.framework.ParamAttr."""
import math

import numpy as np
import pytest

import oar
import oar.nn.functional as F


@pytest.mark.parametrize("sdt, vdt", [("int64", "int32"), ("int32", "int64"), ("float32", "int64"),
                                      ("float64", "float32"), ("int64", "int64")])
@pytest.mark.parametrize("right", [False, True])
def test_searchsorted_dtypes_and_shapes(sdt, vdt, right):
    rng = np.random.default_rng(0)
    seq = np.sort(rng.integers(-20, 20, 9)).astype(sdt)
    vals = rng.integers(-25, 25, (3, 4, 2)).astype(vdt)
    side = "right" if right else "left"
    got = oar.searchsorted(oar.to_tensor(seq), oar.to_tensor(vals), right=right)
    np.testing.assert_array_equal(got.numpy(), np.searchsorted(seq, vals, side=side))
    seq2 = np.sort(rng.integers(-20, 20, (3, 6)), axis=-1).astype(sdt)
    vals2 = rng.integers(-25, 25, (3, 5)).astype(vdt)
    got = oar.searchsorted(oar.to_tensor(seq2), oar.to_tensor(vals2), right=right)
    want = np.stack([np.searchsorted(a, b, side=side) for a, b in zip(seq2, vals2)])
    np.testing.assert_array_equal(got.numpy(), want)


def test_gelu_modes_and_silu_inplace():
    x = np.linspace(-3, 3, 13)
    exact = 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))
    tanh = 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    t = oar.to_tensor(x)
    for mode, ref in ((False, exact), ("none", exact), (True, tanh), ("tanh", tanh)):
        np.testing.assert_allclose(F.gelu(t, mode).numpy(), ref, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(oar.nn.GELU(mode)(t).numpy(), ref, rtol=1e-12, atol=1e-14)
    with pytest.raises(ValueError, match="gelu: approximate must be a bool, 'tanh' or 'none'"):
        F.gelu(t, "erf")
    y = oar.to_tensor([1.0, -2.0, 3.0])
    out = oar.nn.Silu(True)(y)
    want = np.array([1.0, -2.0, 3.0]) / (1 + np.exp(-np.array([1.0, -2.0, 3.0])))
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-6)
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-6)  # written in place
    z = oar.to_tensor([1.0, 2.0])
    F.silu(z)
    assert z.numpy().tolist() == [1.0, 2.0]


def test_set_grad_enabled_as_function_and_context():
    x = oar.to_tensor([1.0], stop_gradient=False)
    try:
        with oar.set_grad_enabled(False):
            assert (x * 2).stop_gradient
        assert oar.is_grad_enabled()
        oar.set_grad_enabled(False)
        assert not oar.is_grad_enabled() and (x * 2).stop_gradient
        oar.set_grad_enabled(True)
        assert not (x * 2).stop_gradient

        @oar.set_grad_enabled(False)
        def f():
            return (x * 2).stop_gradient
        assert f() and oar.is_grad_enabled()
    finally:
        oar.set_grad_enabled(True)


def test_paddle_flag_names_and_param_attr():
    flags = oar.get_flags(["FLAGS_eager_delete_tensor_gb", "FLAGS_check_nan_inf", "FLAGS_use_stride_kernel"])
    assert flags == {"FLAGS_eager_delete_tensor_gb": 0.0, "FLAGS_check_nan_inf": False,
                     "FLAGS_use_stride_kernel": True}
    try:
        oar.set_flags({"FLAGS_eager_delete_tensor_gb": 1.0, "FLAGS_use_stride_kernel": False})
        assert oar.get_flags("FLAGS_eager_delete_tensor_gb")["FLAGS_eager_delete_tensor_gb"] == 1.0
        assert oar.get_flags("FLAGS_use_stride_kernel")["FLAGS_use_stride_kernel"] is False
        oar.set_flags({"FLAGS_check_nan_inf": True})  # Paddle's name of oar_check_nan_inf
        assert oar.get_flags("FLAGS_oar_check_nan_inf")["FLAGS_oar_check_nan_inf"] is True
        with pytest.raises(ValueError, match="set_flags: FLAGS_use_stride_kernel takes a bool"):
            oar.set_flags({"FLAGS_use_stride_kernel": "maybe"})
        with pytest.raises(ValueError, match="set_flags: FLAGS_eager_delete_tensor_gb takes a float"):
            oar.set_flags({"FLAGS_eager_delete_tensor_gb": "lots"})
    finally:
        oar.set_flags({"FLAGS_eager_delete_tensor_gb": 0.0, "FLAGS_use_stride_kernel": True,
                       "FLAGS_check_nan_inf": False})
    assert oar.framework.ParamAttr is oar.ParamAttr
    lin = oar.nn.Linear(2, 2, weight_attr=oar.framework.ParamAttr(
        name="w", initializer=oar.nn.initializer.Constant(0.5)))
    assert lin.weight.name == "w" and lin.weight.numpy().tolist() == [[0.5, 0.5], [0.5, 0.5]]


def test_lstsq_rank_iinfo_linspace():
    x = oar.to_tensor([[1, 3], [3, 2], [5, 6.0]])
    y = oar.to_tensor([[3, 4, 6], [5, 3, 4], [1, 2, 1.0]])
    rank = oar.linalg.lstsq(x, y, driver="gelsd")[2]
    assert rank.dtype.name == "int32" and int(rank) == 2
    assert repr(oar.iinfo(oar.uint8)) == "paddle.iinfo(min=0, max=255, bits=8, dtype=uint8)"
    np.testing.assert_allclose(oar.linspace(0, 10, 5, device="cpu").numpy(), np.linspace(0, 10, 5))
    assert not oar.linspace(0, 1, 3, requires_grad=True).stop_gradient
    buf = oar.zeros([4])
    assert oar.linspace(oar.to_tensor(1.0), 4, 4, out=buf) is buf
    assert buf.numpy().tolist() == [1.0, 2.0, 3.0, 4.0]


def test_log_normal_in_place_and_polar():
    oar.seed(200)
    x = oar.randn([3, 4])
    assert x.log_normal_() is x
    # Paddle 3.3.1's docstring values for this seed
    np.testing.assert_allclose(x.numpy()[0], [3.99360156, 0.11746082, 12.14813519, 4.74383831],
                               rtol=1e-6)
    big = oar.zeros([20000], "float64").log_normal_(0.5, 0.25)
    logs = np.log(big.numpy())
    assert abs(logs.mean() - 0.5) < 0.01 and abs(logs.std() - 0.25) < 0.01
    with pytest.raises(TypeError, match="log_normal_: x must be a float Tensor"):
        oar.to_tensor([1, 2]).log_normal_()
    r = np.array([1.0, 2.0, 0.5])
    th = np.array([np.pi / 2, 5 * np.pi / 4, -1.0])
    out = oar.polar(oar.to_tensor(r), oar.to_tensor(th))
    assert out.dtype.name == "complex128"
    np.testing.assert_allclose(out.numpy(), r * np.exp(1j * th), rtol=1e-14, atol=1e-15)
    rt, tt = oar.to_tensor(r, stop_gradient=False), oar.to_tensor(th, stop_gradient=False)
    gr, gt = oar.grad([oar.real(oar.polar(rt, tt)).sum()], [rt, tt])
    np.testing.assert_allclose(gr.numpy(), np.cos(th), rtol=1e-12)
    np.testing.assert_allclose(gt.numpy(), -r * np.sin(th), rtol=1e-12)
    with pytest.raises(TypeError, match="polar: abs and angle must have one dtype"):
        oar.polar(oar.to_tensor(r), oar.to_tensor(th, "float32"))
    with pytest.raises(TypeError, match="polar: abs must be a float32/float64 Tensor"):
        oar.polar(oar.to_tensor([1, 2]), oar.to_tensor(th[:2]))
