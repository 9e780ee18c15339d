"""Dygraph Optimizer.minimize / backward / apply_gradients as Paddle: the gradients are those
loss.backward() left on the parameters; minimize does not differentiate again."""
import numpy as np
import pytest

import oar


def _model_and_loss(seed=0):
    oar.seed(seed)
    lin = oar.nn.Linear(3, 2)
    x = oar.to_tensor(np.random.default_rng(seed).standard_normal((4, 3)).astype("float32"))
    return lin, lin(x).mean()


def _sgd_expected(lin, lr):
    return {id(p): p.numpy() - lr * p.grad.numpy() for p in lin.parameters()}


def test_minimize_after_backward_updates_once():
    lin, loss = _model_and_loss()
    opt = oar.optimizer.SGD(learning_rate=0.5, parameters=lin.parameters())
    loss.backward()
    want = _sgd_expected(lin, 0.5)
    ops, pairs = opt.minimize(loss)  # Paddle's doc example: backward, then minimize
    assert ops is None and len(pairs) == 2
    for p in lin.parameters():
        np.testing.assert_allclose(p.numpy(), want[id(p)], rtol=1e-6)


def test_minimize_without_gradients_changes_nothing():
    lin, loss = _model_and_loss()
    before = [p.numpy().copy() for p in lin.parameters()]
    _, pairs = oar.optimizer.Adam(parameters=lin.parameters()).minimize(loss)
    assert pairs == []
    for p, b in zip(lin.parameters(), before):
        np.testing.assert_array_equal(p.numpy(), b)


def test_backward_and_apply_gradients():
    lin, loss = _model_and_loss(1)
    opt = oar.optimizer.SGD(learning_rate=0.1, parameters=lin.parameters())
    loss.backward()
    pairs = opt.backward(loss)
    assert {id(p) for p, _ in pairs} == {id(p) for p in lin.parameters()}
    assert opt.backward(loss, no_grad_set=[lin.weight])[0][0] is lin.bias
    want = _sgd_expected(lin, 0.1)
    opt.apply_gradients([(lin.weight, lin.weight.grad)])  # only the weight moves
    np.testing.assert_allclose(lin.weight.numpy(), want[id(lin.weight)], rtol=1e-6)
    assert not np.allclose(lin.bias.numpy(), want[id(lin.bias)])


def test_backward_in_static_mode_says_what_to_use():
    opt = oar.optimizer.SGD(parameters=[oar.create_parameter([2], "float32")])
    oar.enable_static()
    try:
        with pytest.raises(NotImplementedError, match="Optimizer.backward: in static mode"):
            opt.backward(None)
    finally:
        oar.disable_static()
