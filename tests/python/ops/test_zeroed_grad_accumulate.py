"""Note [Accumulating into a zeroed gradient] (paddle_core/autograd/node.cc): a .grad left as
zeros by clear_grad() is replaced by the new gradient instead of added to; any other .grad is
still accumulated. Values against float64 NumPy references."""
import numpy as np
import pytest

import oar as paddle


def _linear_grads(w_np, x_np):
    # d/dW sum(x @ W) = x^T @ ones
    return x_np.T.astype(np.float64) @ np.ones((x_np.shape[0], w_np.shape[1]))


@pytest.mark.parametrize("shape", [(3, 5), (130, 17), (1, 1), (1025, 3)])
def test_zeroed_grad_then_backward_equals_fresh_gradient(shape):
    rng = np.random.default_rng(0)
    w_np = rng.standard_normal(shape).astype(np.float32)
    x_np = rng.standard_normal((4, shape[0])).astype(np.float32)
    w = paddle.to_tensor(w_np, stop_gradient=False)
    x = paddle.to_tensor(x_np)
    paddle.matmul(x, w).sum().backward()
    w.clear_gradient(True)  # zeros, kept
    np.testing.assert_array_equal(w.grad.numpy(), np.zeros(shape, np.float32))
    paddle.matmul(x, w).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), _linear_grads(w_np, x_np), rtol=1e-5, atol=1e-5)


def test_nonzero_grad_still_accumulates():
    rng = np.random.default_rng(1)
    w_np = rng.standard_normal((6, 7)).astype(np.float32)
    x_np = rng.standard_normal((5, 6)).astype(np.float32)
    w = paddle.to_tensor(w_np, stop_gradient=False)
    x = paddle.to_tensor(x_np)
    for _ in range(3):
        paddle.matmul(x, w).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), 3 * _linear_grads(w_np, x_np), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("pos", [0, 1023, 4096, 5000 * 7 - 1])
def test_one_nonzero_element_in_zeroed_grad_is_kept(pos):
    # A .grad that is zero except one element (set in place after clear_grad) must be added to:
    # the scan may not stop early or skip a block.
    w = paddle.to_tensor(np.ones((5000, 7), np.float32), stop_gradient=False)
    x = paddle.to_tensor(np.ones((2, 5000), np.float32))
    paddle.matmul(x, w).sum().backward()
    w.clear_gradient(True)
    g = w.grad
    flat = np.zeros(5000 * 7, np.float32)
    flat[pos] = 10.0
    g.set_value(paddle.to_tensor(flat.reshape(5000, 7)))
    assert w.grad.numpy().ravel()[pos] == 10.0  # written into the .grad buffer itself
    paddle.matmul(x, w).sum().backward()
    expect = np.full((5000, 7), 2.0) + flat.reshape(5000, 7)
    np.testing.assert_allclose(w.grad.numpy(), expect)


def test_optimizer_steps_match_reference_sgd():
    # Three SGD steps with clear_grad() between them, against float64 NumPy.
    rng = np.random.default_rng(2)
    w_np = rng.standard_normal((8, 3)).astype(np.float64)
    x_np = rng.standard_normal((10, 8)).astype(np.float32)
    w = paddle.create_parameter([8, 3], "float32", default_initializer=paddle.nn.initializer.Assign(
        w_np.astype(np.float32)))
    opt = paddle.optimizer.SGD(learning_rate=0.1, parameters=[w])
    ref = w_np.copy()
    for _ in range(3):
        (paddle.matmul(paddle.to_tensor(x_np), w) ** 2).sum().backward()
        opt.step()
        opt.clear_grad()
        ref -= 0.1 * (2 * x_np.T.astype(np.float64) @ (x_np.astype(np.float64) @ ref))
    np.testing.assert_allclose(w.numpy(), ref, rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(w.grad.numpy(), np.zeros((8, 3), np.float32))


def test_zeroed_grad_of_other_dtype_or_shape_is_added():
    # float64 parameter: the zero check compares dtypes; the result is the plain gradient.
    w = paddle.to_tensor(np.ones((3, 4)), stop_gradient=False)
    (w * 2.0).sum().backward()
    w.clear_gradient(True)
    (w * 3.0).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), np.full((3, 4), 3.0))


def test_create_graph_keeps_accumulating_with_history():
    x = paddle.to_tensor(np.array([1.5, -2.0], np.float32), stop_gradient=False)
    (x * x).sum().backward()
    x.clear_gradient(True)
    y = (x ** 3).sum()
    (g,) = paddle.grad(y, x, create_graph=True)
    np.testing.assert_allclose(g.numpy(), 3 * np.array([1.5, -2.0]) ** 2, rtol=1e-6)


# Note [Deferred zeroing of .grad] (paddle_core/autograd/node.cc): where nothing else holds
# the gradient, clear_grad() only marks it; every way of reading it must still see zeros.
def _fresh(shape=(6, 4), seed=3):
    rng = np.random.default_rng(seed)
    w_np = rng.standard_normal(shape).astype(np.float32)
    x_np = rng.standard_normal((5, shape[0])).astype(np.float32)
    return paddle.to_tensor(w_np, stop_gradient=False), paddle.to_tensor(x_np), w_np, x_np


def test_deferred_clear_then_backward_unread():
    w, x, w_np, x_np = _fresh()
    paddle.matmul(x, w).sum().backward()
    paddle.matmul(x, w).sum().backward()  # 2x, so a stale buffer would show
    w.clear_gradient(True)  # nobody holds .grad: the zeros are left pending
    paddle.matmul(x, w).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), _linear_grads(w_np, x_np), rtol=1e-5, atol=1e-5)
    paddle.matmul(x, w).sum().backward()  # a real accumulation after the replacement
    np.testing.assert_allclose(w.grad.numpy(), 2 * _linear_grads(w_np, x_np), rtol=1e-5, atol=1e-5)


def test_deferred_clear_reads_zeros_and_bumps_version():
    w, x, _, _ = _fresh()
    paddle.matmul(x, w).sum().backward()
    v0 = w.grad._version
    w.clear_gradient(True)
    w.clear_gradient(True)  # twice: still zeros
    g = w.grad
    assert g._version > v0
    np.testing.assert_array_equal(g.numpy(), np.zeros((6, 4), np.float32))


@pytest.mark.parametrize("hold", ["handle", "view"])
def test_clear_writes_zeros_where_the_gradient_is_held(hold):
    # a live handle or a view shares the bytes: they must read zeros after the clear
    w, x, _, _ = _fresh()
    paddle.matmul(x, w).sum().backward()
    held = w.grad if hold == "handle" else w.grad[1:3]
    assert np.abs(held.numpy()).max() > 0
    w.clear_gradient(True)
    np.testing.assert_array_equal(held.numpy(), np.zeros(held.shape, np.float32))
    np.testing.assert_array_equal(w.grad.numpy(), np.zeros((6, 4), np.float32))


def test_set_to_zero_false_and_assignment_drop_a_pending_clear():
    w, x, w_np, x_np = _fresh()
    paddle.matmul(x, w).sum().backward()
    w.clear_gradient(True)
    w.clear_gradient(False)
    assert w.grad is None
    paddle.matmul(x, w).sum().backward()
    w.clear_gradient(True)
    w.grad = paddle.to_tensor(np.full((6, 4), 7.0, np.float32))  # an assigned gradient is kept
    np.testing.assert_array_equal(w.grad.numpy(), np.full((6, 4), 7.0, np.float32))
    paddle.matmul(x, w).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), 7.0 + _linear_grads(w_np, x_np), rtol=1e-5, atol=1e-5)


def test_retained_nonleaf_grad_after_deferred_clear():
    w, x, _, x_np = _fresh()
    y = paddle.matmul(x, w)
    y.retain_grads()
    (y * 3.0).sum().backward(retain_graph=True)
    (y * 3.0).sum().backward(retain_graph=True)
    y.clear_gradient(True)
    (y * 3.0).sum().backward()
    np.testing.assert_array_equal(y.grad.numpy(), np.full((5, 4), 3.0, np.float32))


def test_optimizer_sees_zeros_for_a_parameter_backward_skipped():
    # AdamW with weight decay updates a parameter whose .grad is zeros; the pending zeros must
    # give the same parameters as zeros written at once (read back after every clear).
    def train(read_after_clear):
        paddle.seed(0)
        a = paddle.create_parameter([4, 3], "float32")
        b = paddle.create_parameter([4, 3], "float32")
        opt = paddle.optimizer.AdamW(learning_rate=0.1, parameters=[a, b], weight_decay=0.1)
        x = paddle.to_tensor(np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4))
        for step in range(4):
            loss = paddle.matmul(x, a).sum() + (paddle.matmul(x, b).sum() if step == 0 else 0.0)
            loss.backward()
            opt.step()
            opt.clear_grad()
            if read_after_clear:
                assert float(a.grad.abs().max()) == 0 and float(b.grad.abs().max()) == 0
        return a.numpy(), b.numpy()

    for got, ref in zip(train(False), train(True)):
        np.testing.assert_array_equal(got, ref)


def test_grad_state_tells_pending_zeros_without_writing_them():
    """Tensor._grad_state(): 0 without .grad, 1 for a clear_grad's zeros not written yet,
    2 for a gradient. Asking writes nothing; reading .grad writes the zeros."""
    w = paddle.to_tensor(np.ones((3, 4), np.float32), stop_gradient=False)
    assert w._grad_state() == 0
    (w * 2).sum().backward()
    assert w._grad_state() == 2
    w.clear_gradient(True)
    assert w._grad_state() == 1
    assert w._grad_state() == 1  # asking twice writes nothing either
    np.testing.assert_array_equal(w.grad.numpy(), np.zeros((3, 4), np.float32))
    assert w._grad_state() == 2
    w.clear_gradient(False)
    assert w._grad_state() == 0
