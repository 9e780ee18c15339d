"""oar.autograd.PyLayer: Python forward/backward pairs (python/oar/autograd/py_layer.py,
python/csrc/pylayer_py.cc), eagerly and under to_static."""
import gc
import weakref

import numpy as np
import pytest

import oar
from oar.autograd import PyLayer


def t(a, grad=True):
    x = oar.to_tensor(np.asarray(a, dtype="float64"))
    x.stop_gradient = not grad
    return x


class Tanh(PyLayer):
    @staticmethod
    def forward(ctx, x, scale=1.0):
        y = oar.tanh(x) * scale
        ctx.save_for_backward(y)
        ctx.scale = scale
        return y

    @staticmethod
    def backward(ctx, dy):
        (y,) = ctx.saved_tensor()
        return dy * (ctx.scale - y * y / ctx.scale)


class MulAdd(PyLayer):
    """(x * y + z, x - y) with hand-written gradients; z may be a Python number."""

    @staticmethod
    def forward(ctx, x, y, z):
        ctx.save_for_backward(x, y)
        return x * y + z, x - y

    @staticmethod
    def backward(ctx, da, db):
        x, y = ctx.saved_tensor()
        return da * y + db, da * x - db


def numeric_grad(f, xs, eps=1e-6):
    grads = []
    for x in xs:
        g = np.zeros_like(x)
        for i in np.ndindex(x.shape):
            old = x[i]
            x[i] = old + eps
            hi = f(*xs)
            x[i] = old - eps
            lo = f(*xs)
            x[i] = old
            g[i] = (hi - lo) / (2 * eps)
        grads.append(g)
    return grads


def test_forward_and_backward_match_numpy_and_finite_differences():
    rng = np.random.default_rng(0)
    for shape in [(3, 4), (0, 2), ()]:
        xn = rng.standard_normal(shape)
        x = t(xn)
        y = Tanh.apply(x, scale=2.0)
        np.testing.assert_allclose(y.numpy(), 2 * np.tanh(xn), rtol=1e-12)
        w = rng.standard_normal(shape)
        (y * t(w, False)).sum().backward()
        (num,) = numeric_grad(lambda a: float((2 * np.tanh(a) * w).sum()), [xn.copy()])
        np.testing.assert_allclose(x.grad.numpy(), num, rtol=1e-6, atol=1e-8)


def test_several_inputs_outputs_and_a_python_argument():
    rng = np.random.default_rng(1)
    xn, yn = rng.standard_normal((2, 3)), rng.standard_normal((2, 3))
    x, y = t(xn), t(yn)
    a, b = MulAdd.apply(x, y, 1.5)
    np.testing.assert_allclose(a.numpy(), xn * yn + 1.5)
    (a.sum() * 2 + (b * b).sum()).backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * yn + 2 * (xn - yn))
    np.testing.assert_allclose(y.grad.numpy(), 2 * xn - 2 * (xn - yn))


def test_input_without_gradient_gets_none_and_output_grads_are_zeros_when_unused():
    seen = {}

    class Two(PyLayer):
        @staticmethod
        def forward(ctx, x, y):
            return x * 2, y * 3

        @staticmethod
        def backward(ctx, dx, dy):
            seen["dy"] = dy.numpy().copy()
            return dx * 2, None

    x, y = t([1.0, 2.0]), t([3.0, 4.0], grad=False)
    a, b = Two.apply(x, y)
    assert b.stop_gradient is False  # differentiable output
    a.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0])
    np.testing.assert_allclose(seen["dy"], [0.0, 0.0])  # materialized
    assert y.grad is None


def test_set_materialize_grads_false_passes_none():
    seen = {}

    class Two(PyLayer):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, da, db):
            seen["db"] = db
            return da * 2

    x = t([1.0, 2.0])
    a, _ = Two.apply(x)
    a.sum().backward()
    assert seen["db"] is None
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0])


def test_mark_non_differentiable_and_input_returned_as_is():
    class ArgMaxAndSelf(PyLayer):
        @staticmethod
        def forward(ctx, x):
            idx = oar.argmax(x).astype("float64")
            ctx.mark_non_differentiable(idx)
            return x, idx

        @staticmethod
        def backward(ctx, dx, didx):
            return dx * 10

    x = t([1.0, 5.0, 2.0])
    y, idx = ArgMaxAndSelf.apply(x)
    assert idx.stop_gradient and not y.stop_gradient
    assert y is not x  # its own handle, so x keeps being a leaf
    assert x.is_leaf
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [10.0, 10.0, 10.0])


def test_no_node_without_gradients():
    x = t([1.0, 2.0], grad=False)
    assert Tanh.apply(x).stop_gradient
    with oar.no_grad():
        assert Tanh.apply(t([1.0])).stop_gradient


def test_double_backward_through_a_backward_made_of_ops():
    class Cube(PyLayer):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x * x

        @staticmethod
        def backward(ctx, dy):
            (x,) = ctx.saved_tensor()
            return dy * 3 * x * x

    x = t([1.0, 2.0])
    y = Cube.apply(x)
    (g,) = oar.grad(y.sum(), x, create_graph=True)
    np.testing.assert_allclose(g.numpy(), [3.0, 12.0])
    (g2,) = oar.grad(g.sum(), x)
    np.testing.assert_allclose(g2.numpy(), [6.0, 12.0])


def test_bad_backwards_raise_naming_the_layer():
    def layer(ret):
        class Bad(PyLayer):
            @staticmethod
            def forward(ctx, x, y):
                return x + y

            @staticmethod
            def backward(ctx, d):
                return ret(d)
        return Bad

    x, y = t([1.0, 2.0]), t([1.0, 2.0])
    with pytest.raises(ValueError, match=r"Bad.backward returned 1 gradients, but forward took 2"):
        layer(lambda d: (d,)).apply(x, y).sum().backward()
    with pytest.raises(ValueError, match=r"Bad.backward: gradient 1 has shape \[3\].*shape \[2\]"):
        layer(lambda d: (d, oar.ones([3], dtype="float64"))).apply(x, y).sum().backward()
    with pytest.raises(TypeError, match=r"Bad.backward: gradient 0 must be a Tensor or None, got str"):
        layer(lambda d: ("a", d)).apply(x, y).sum().backward()
    with pytest.raises(TypeError, match=r"Bad.backward must return a Tensor or a tuple"):
        layer(lambda d: 3).apply(x, y).sum().backward()

    class NoTensor(PyLayer):
        @staticmethod
        def forward(ctx, x):
            return 3

    with pytest.raises(TypeError, match="NoTensor.forward must return a Tensor"):
        NoTensor.apply(x)
    with pytest.raises(TypeError, match="save_for_backward: argument 0 must be a Tensor"):
        class SaveBad(PyLayer):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward([x])
                return x
        SaveBad.apply(x)


def test_backward_twice_needs_retain_graph_and_graph_is_freed():
    x = t([0.5])
    y = Tanh.apply(x)
    y.sum().backward(retain_graph=True)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * (1 - np.tanh(0.5) ** 2))
    with pytest.raises(RuntimeError, match="second time"):
        y.sum().backward()
    # the saved output does not keep itself alive through the node (no cycle)
    z = Tanh.apply(t([0.1, 0.2]))
    ref = weakref.ref(z)
    del z
    gc.collect()
    assert ref() is None


def test_user_exception_in_backward_propagates():
    class Boom(PyLayer):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, d):
            raise KeyError("boom")

    with pytest.raises(KeyError, match="boom"):
        Boom.apply(t([1.0])).sum().backward()


def test_pylayer_under_to_static_trains_like_eager():
    class Net(oar.nn.Layer):
        def __init__(self):
            super().__init__()
            self.fc = oar.nn.Linear(4, 3)

        def forward(self, x):
            return MulAdd.apply(Tanh.apply(self.fc(x), scale=1.5), x[:, :3], 0.25)[0].sum()

    oar.seed(3)
    net = Net()
    x = oar.to_tensor(np.random.default_rng(4).standard_normal((5, 4)).astype("float32"))
    ref = net(x)
    ref.backward()
    ref_grads = [p.grad.numpy().copy() for p in net.parameters()]
    net.clear_gradients()
    static = oar.jit.to_static(net)
    for _ in range(2):
        out = static(x)
        out.backward()
        np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-6)
        for g, r in zip([p.grad.numpy() for p in net.parameters()], ref_grads):
            np.testing.assert_allclose(g, r, rtol=1e-5, atol=1e-6)
        net.clear_gradients()
    (prog,) = static.forward.concrete_programs
    assert "tanh" in str(prog.program) and prog.backward_program is not None
