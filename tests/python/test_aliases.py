"""Paddle 3.3's torch-style names (oar._aliases): aliases are the same functions, range /
as_tensor / asarray / from_numpy / view against NumPy, bad inputs name the function."""
import math

import numpy as np
import pytest

import oar
from oar import _aliases


@pytest.mark.parametrize("name", sorted(_aliases.ALIASES))
def test_alias_is_the_paddle_function(name):
    target, method = _aliases.ALIASES[name]
    fn = getattr(oar, name)
    if fn is not getattr(oar, target):  # an alias of a lazily served name calls it
        x, y = oar.to_tensor([1.0, 3.0]), oar.to_tensor([2.0, 2.0])
        np.testing.assert_array_equal(fn(x, y).numpy(), getattr(oar, target)(x, y).numpy())
        assert fn.__name__ == name
    if method:
        assert getattr(oar.Tensor, name) is getattr(oar.Tensor, target)


def test_constants_and_functional_names():
    assert oar.newaxis is None and oar.pi == math.pi and oar.e == math.e and math.isinf(oar.inf)
    assert math.isnan(oar.nan)
    assert oar.conv1d is oar.nn.functional.conv1d
    assert oar.adaptive_avg_pool1d is oar.nn.functional.adaptive_avg_pool1d
    x = oar.to_tensor([[1.0, 2.0, 3.0]])
    np.testing.assert_array_equal(x[:, oar.newaxis].shape, [1, 1, 3])


@pytest.mark.parametrize("args, kwargs", [((5,), {}), ((3, 9, 2.0), {}), ((4.999,), {"dtype": "float32"}),
                                          ((1, -2, -1), {}), ((0.5, 2.0, 0.25), {}), ((2, 2), {}),
                                          ((0, 1, 0.1), {"dtype": "float64"})])
def test_range_includes_end(args, kwargs):
    start, end, step = (0, args[0], 1) if len(args) == 1 else (args + (1,))[:3]
    n = math.floor((end - start) / step) + 1
    ref = start + np.arange(n) * step
    out = oar.range(*args, **kwargs)
    want = kwargs.get("dtype") or ("int64" if all(isinstance(a, int) for a in args) else "float32")
    assert out.dtype.name == want and out.shape == [n]
    np.testing.assert_allclose(out.numpy(), ref.astype(want), rtol=1e-6)


def test_range_tensor_bounds_out_and_errors():
    np.testing.assert_array_equal(oar.range(oar.to_tensor(3), 7).numpy(), [3, 4, 5, 6, 7])
    buf = oar.zeros([3], "int64")
    assert oar.range(0, 2, out=buf) is buf and buf.numpy().tolist() == [0, 1, 2]
    assert not oar.range(3, dtype="float32", requires_grad=True).stop_gradient
    with pytest.raises(ValueError, match="range: step must be nonzero"):
        oar.range(0, 3, 0)
    with pytest.raises(ValueError, match="range: end 0 is on the wrong side of start 3"):
        oar.range(3, 0, 1)
    with pytest.raises(ValueError, match="range: end must be a finite number"):
        oar.range(0, float("inf"))
    with pytest.raises(ValueError, match="range: start must be a number or a 1-element"):
        oar.range(oar.ones([2]), 3)
    with pytest.raises((MemoryError, ValueError), match="arange|range"):
        oar.range(2 ** 62)


def test_as_tensor_asarray_from_numpy():
    t = oar.as_tensor([[1 + 1j, 2], [3 + 2j, 4]], dtype="complex64")
    assert t.dtype.name == "complex64" and t.numpy()[1, 0] == 3 + 2j
    x = oar.as_tensor(1, requires_grad=True)
    assert not x.stop_gradient and x.dtype.name == "int64"
    y = oar.asarray(x)
    assert y.stop_gradient and int(y) == 1
    y.set_value(oar.to_tensor(5))
    assert int(x) == 1  # a copy
    f = oar.asarray([0.5, 1.5], dtype="float64", device="cpu", copy=False)
    assert f.dtype.name == "float64" and f.numpy().tolist() == [0.5, 1.5]
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    np.testing.assert_array_equal(oar.from_numpy(a).numpy(), a)
    assert oar.from_numpy(a).dtype.name == "int32"
    with pytest.raises(TypeError, match="from_numpy: ndarray must be a numpy.ndarray, got list"):
        oar.from_numpy([1, 2])


def test_view_shapes():
    x = oar.rand([2, 4, 6])
    np.testing.assert_array_equal(oar.view(x, [8, -1]).numpy(), x.numpy().reshape(8, 6))
    assert x.view([48]).shape == [48]
    assert oar.view(x, "uint8").shape == [2, 4, 24]  # bit-cast: tests/python/test_view_dtype.py
    with pytest.raises(ValueError):
        oar.view(x, [5, -1])


def test_tensor_is_callable_and_a_namespace():
    t = oar.tensor([[0.1, 0.2], [0.3, 0.4]], device=oar.CPUPlace(), requires_grad=True)
    assert isinstance(t, oar.Tensor) and not t.stop_gradient and t.dtype.name == "float32"
    assert oar.tensor(t).stop_gradient  # a new tensor
    assert oar.tensor.math.frexp is oar.frexp and oar.tensor.creation.to_tensor is oar.to_tensor
    import oar.tensor as namespace
    assert namespace.argwhere is oar.argwhere
