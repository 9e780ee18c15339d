"""Tensor methods of python/oar/_tensor_more.py (repeat, split_with_sizes, apply/apply_,
requires_grad, itemsize, exponential_, random_, deepcopy), the arange element count, and
the paddle.tensor / paddle.nn.loss / paddle.base.set_flags namespaces."""
import copy

import numpy as np
import pytest

import oar


@pytest.mark.parametrize("shape, reps", [((3,), (2,)), ((2, 2), (2,)), ((2, 2), (2, 3)),
                                         ((1, 2, 2), (2, 1, 3)), ((0, 2), (2, 2))])
def test_repeat_is_numpy_tile(shape, reps):
    a = np.arange(np.prod(shape), dtype=np.float64).reshape(shape)
    x = oar.to_tensor(a)
    np.testing.assert_array_equal(x.repeat(*reps).numpy(), np.tile(a, reps))
    np.testing.assert_array_equal(x.repeat(list(reps)).numpy(), np.tile(a, reps))
    with pytest.raises(ValueError, match="repeat: repeats must be non-negative"):
        x.repeat(-1)


def test_repeat_gradient():
    x = oar.to_tensor([1.0, 2.0], dtype="float64", stop_gradient=False)
    (x.repeat(3) * oar.to_tensor(np.arange(6.0))).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0 + 2 + 4, 1 + 3 + 5])


def test_split_with_sizes():
    a = np.arange(12).reshape(3, 4)
    parts = oar.Tensor.split_with_sizes(oar.to_tensor(a), [1, 2], dim=0)
    for p, w in zip(parts, np.split(a, [1])):
        np.testing.assert_array_equal(p.numpy(), w)
    parts = oar.to_tensor(a).split_with_sizes([3, 1], dim=-1)
    assert [p.shape for p in parts] == [[3, 3], [3, 1]]
    with pytest.raises(ValueError, match="split_with_sizes: split_sizes"):
        oar.to_tensor(a).split_with_sizes([1, 1])


def test_apply_and_apply_():
    a = np.array([[0.3, 0.5], [0.9, 0.1]])
    x = oar.to_tensor(a)
    np.testing.assert_allclose(x.apply(lambda t: 3 * t + 2).numpy(), 3 * a + 2)
    np.testing.assert_array_equal(x.numpy(), a)
    assert x.apply_(lambda t: t * t) is x
    np.testing.assert_allclose(x.numpy(), a * a)
    y = oar.to_tensor(a, stop_gradient=False)
    with pytest.raises(RuntimeError, match="apply: cannot apply"):
        y.apply(lambda t: t)
    with pytest.raises(ValueError, match="apply_: func must keep the shape"):
        x.apply_(lambda t: t.sum())


def test_requires_grad_itemsize_deepcopy():
    x = oar.to_tensor([1.0, 2.0])
    assert x.requires_grad is False and x.itemsize == 4
    x.requires_grad = True
    assert x.stop_gradient is False
    assert oar.to_tensor([1], dtype="int64").itemsize == 8
    y = copy.deepcopy(x)
    assert y is not x and y.stop_gradient is False
    np.testing.assert_array_equal(y.numpy(), x.numpy())
    layer = oar.nn.Linear(2, 3)
    twin = copy.deepcopy(layer)
    np.testing.assert_array_equal(twin.weight.numpy(), layer.weight.numpy())


def test_exponential_and_random_():
    oar.seed(3)
    x = oar.zeros([20000], dtype="float64")
    assert x.exponential_(2.0) is x
    v = x.numpy()
    assert v.min() >= 0 and abs(v.mean() - 0.5) < 0.02
    with pytest.raises(ValueError, match="exponential_: lam"):
        x.exponential_(0.0)
    with pytest.raises(TypeError, match="exponential_"):
        oar.zeros([2], dtype="int64").exponential_()
    r = oar.zeros([1000]).random_(2, 6).numpy()
    assert set(np.unique(r)) == {2.0, 3.0, 4.0, 5.0}
    with pytest.raises(ValueError, match="random_: from"):
        oar.zeros([2]).random_(3, 3)


@pytest.mark.parametrize("start, end, step, dtype", [(0, 0.6, 0.1, "float32"), (0, 0.6, 0.1, "float64"),
                                                     (1.0, 0.0, -0.25, "float32"), (0.0, 1.0, 0.3, "float32"),
                                                     (0.5, 0.5, 0.1, "float32"), (0, 1.0, 2.0, "float32")])
def test_arange_counts_in_double(start, end, step, dtype):
    want = np.arange(start, end, step, dtype=np.float64)
    got = oar.arange(start, end, step, dtype)
    assert got.shape == [len(want)]
    np.testing.assert_allclose(got.numpy(), want.astype(dtype), rtol=1e-6)


def test_namespaces():
    assert oar.tensor.math.frexp is oar.frexp and oar.tensor.argwhere is oar.argwhere
    assert oar.tensor.create_tensor("float32").shape == [0]
    with pytest.raises(AttributeError, match="oar.tensor"):
        oar.tensor.no_such_function  # noqa: B018
    assert oar.nn.loss.PoissonNLLLoss is oar.nn.PoissonNLLLoss
    assert oar.nn.functional.loss.dice_loss is oar.nn.functional.dice_loss
    assert oar.base.set_flags is oar.set_flags
