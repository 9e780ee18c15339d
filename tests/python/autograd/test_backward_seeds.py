"""Paddle's implicit seeds: backward()/oar.autograd.backward/oar.grad with no (or a None)
initial gradient back-propagate a tensor of ones shaped like the root, whatever its size."""
import numpy as np
import pytest

import oar


def leaf(v, dtype="float64"):
    return oar.to_tensor(np.asarray(v, dtype=dtype), stop_gradient=False)


def test_tensor_backward_non_scalar_seeds_ones():
    a = np.array([[1.0, 2.0], [3.0, 4.0]])
    x = leaf(a)
    (x * x).backward()  # d(sum of x*x)/dx = 2x: the seed is ones, not the error of before
    np.testing.assert_allclose(x.grad.numpy(), 2 * a)
    (x * 3).backward()  # accumulates, as a scalar root would
    np.testing.assert_allclose(x.grad.numpy(), 2 * a + 3)


def test_seed_matches_an_explicit_ones_seed_and_keeps_dtype():
    a = np.array([0.5, -1.0, 2.0], dtype="float32")
    x, y = leaf(a, "float32"), leaf(a, "float32")
    oar.tanh(x).backward()
    oar.tanh(y).backward(oar.ones([3], "float32"))
    np.testing.assert_array_equal(x.grad.numpy(), y.grad.numpy())
    assert x.grad.dtype == oar.float32
    # float32 tanh is within 3 ulp (Note [tanh on expm1]); 1 - t^2 near t = 0.96 (x = 2)
    # multiplies its relative error by t^2 / (1 - t^2) ~ 13
    np.testing.assert_allclose(x.grad.numpy(), 1 - np.tanh(a.astype(np.float64)) ** 2, rtol=1e-5)


def test_explicit_grad_tensor_and_scalar_roots_unchanged():
    x = leaf([1.0, 2.0])
    (x * x).backward(oar.to_tensor([10.0, 100.0], "float64"))
    np.testing.assert_allclose(x.grad.numpy(), [20, 400])
    s = leaf(5.0)
    oar.pow(s, 4.0).backward()
    np.testing.assert_allclose(s.grad.numpy(), 500.0)


def test_autograd_backward_fills_each_none_entry():
    x = leaf([1.0, 2.0, 3.0])
    oar.autograd.backward([x * 2, x * x], [None, oar.to_tensor([1.0, 0.0, 1.0], "float64")])
    np.testing.assert_allclose(x.grad.numpy(), [2 + 2, 2, 2 + 6])
    x.clear_grad()
    oar.autograd.backward(x * x * x)  # a single tensor, no seeds at all
    np.testing.assert_allclose(x.grad.numpy(), [3, 12, 27])


def test_grad_seeds_ones_and_leaves_grad_alone():
    x = leaf([[1.0, 2.0], [3.0, 4.0]])
    (g,) = oar.grad(x * x * x, x)
    np.testing.assert_allclose(g.numpy(), 3 * x.numpy() ** 2)
    assert x.grad is None
    (g,) = oar.grad([x * x, x * 2], x, [None, oar.full([2, 2], 10.0, "float64")])
    np.testing.assert_allclose(g.numpy(), 2 * x.numpy() + 20)


def test_grad_seed_supports_double_backward():
    x = leaf([1.0, 2.0])
    (g,) = oar.grad(x * x * x, x, create_graph=True)  # 3x^2, differentiable
    g.backward()  # non-scalar again: seeds ones
    np.testing.assert_allclose(x.grad.numpy(), [6, 12])


def test_bad_seeds_still_fail_naming_the_problem():
    x = leaf([1.0, 2.0])
    with pytest.raises(ValueError, match="does not match tensor shape"):
        (x * 2).backward(oar.to_tensor([1.0, 2.0, 3.0], "float64"))
    with pytest.raises(RuntimeError, match="stop_gradient=True"):
        oar.to_tensor([1.0, 2.0]).backward()
    with pytest.raises(ValueError, match="got 2 tensors but 1 gradients"):
        oar.autograd.backward([x * 2, x * 3], [None])  # one seed for two roots
