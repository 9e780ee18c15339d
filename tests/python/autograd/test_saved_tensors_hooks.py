"""oar.autograd.saved_tensors_hooks: pack when a grad node saves a tensor, unpack when the
backward reads it; gradients equal those without hooks (float64 NumPy references and
finite differences), nesting, PyLayer, and errors from hooks reaching Python."""
import numpy as np
import pytest

import oar
from oar.autograd import PyLayer, saved_tensors_hooks

rng = np.random.default_rng(18)


def leaf(a):
    return oar.to_tensor(a, stop_gradient=False)


def to_numpy_hooks(log=None):
    def pack(t):
        if log is not None:
            log.append(("pack", list(t.shape)))
        return t.numpy().copy()

    def unpack(a):
        if log is not None:
            log.append(("unpack", list(a.shape)))
        return oar.to_tensor(a)
    return pack, unpack


def sum_to(g, shape):
    g = np.asarray(g, dtype=np.float64)
    while g.ndim > len(shape):
        g = g.sum(axis=0)
    for i, n in enumerate(shape):
        if n == 1 and g.shape[i] != 1:
            g = g.sum(axis=i, keepdims=True)
    return g


def grads_of(fn, arrays, hooks=None):
    xs = [leaf(a) for a in arrays]
    if hooks is None:
        out = fn(*xs)
    else:
        with saved_tensors_hooks(*hooks):
            out = fn(*xs)
    out.sum().backward()
    return [x.grad.numpy() for x in xs]


@pytest.mark.parametrize("shape_a,shape_b", [((3, 4), (3, 4)), ((2, 1, 4), (3, 1)), ((0, 3), (0, 3)),
                                             ((5,), ())])
def test_multiply_grads_equal_numpy_reference(shape_a, shape_b):
    a, b = rng.standard_normal(shape_a), rng.standard_normal(shape_b)
    log = []
    ga, gb = grads_of(lambda x, y: x * y, [a, b], to_numpy_hooks(log))
    out_shape = np.broadcast_shapes(shape_a, shape_b)
    np.testing.assert_allclose(ga, sum_to(np.broadcast_to(b, out_shape), shape_a), rtol=1e-12)
    np.testing.assert_allclose(gb, sum_to(np.broadcast_to(a, out_shape), shape_b), rtol=1e-12)
    # multiply saves both inputs: two packs in the forward, two unpacks in the backward
    assert [k for k, _ in log] == ["pack", "pack", "unpack", "unpack"]


def test_outputs_and_chains_match_no_hooks_and_finite_differences():
    a = rng.standard_normal((4, 3))
    w = rng.standard_normal((3, 5))

    def f(x, y):  # tanh and exp save their outputs, matmul its inputs
        return oar.exp(oar.tanh(oar.matmul(x, y)) * 0.5).sum(axis=1)

    plain = grads_of(f, [a, w])
    hooked = grads_of(f, [a, w], to_numpy_hooks())
    for p, h in zip(plain, hooked):
        np.testing.assert_allclose(h, p, rtol=1e-12)

    def ref(x, y):
        return np.exp(np.tanh(x @ y) * 0.5).sum()
    eps = 1e-6
    num = np.zeros_like(a)
    for i in np.ndindex(a.shape):
        d = np.zeros_like(a)
        d[i] = eps
        num[i] = (ref(a + d, w) - ref(a - d, w)) / (2 * eps)
    np.testing.assert_allclose(hooked[0], num, rtol=1e-6, atol=1e-8)


def test_hooks_see_saved_values_and_unpack_replaces_them():
    # unpack gets back exactly what pack returned; the backward uses unpack's tensor
    x = leaf(np.array([1.0, 2.0, 3.0]))
    seen = []

    def pack(t):
        seen.append(t.numpy().copy())
        return ("token", len(seen) - 1)

    def unpack(tok):
        assert tok[0] == "token"
        return oar.to_tensor(seen[tok[1]] * 10.0)  # a transform the gradient must show
    with saved_tensors_hooks(pack, unpack):
        y = x * x  # saves x twice
    y.sum().backward()
    np.testing.assert_allclose(seen[0], [1, 2, 3])
    np.testing.assert_allclose(x.grad.numpy(), 2 * 10.0 * np.array([1.0, 2.0, 3.0]))


def test_nested_contexts_innermost_applies_and_outer_comes_back():
    log = []

    def tagged(tag):
        return (lambda t: (log.append(("pack", tag)), t.numpy())[1],
                lambda a: (log.append(("unpack", tag)), oar.to_tensor(a))[1])
    x = leaf(rng.standard_normal(4))
    with saved_tensors_hooks(*tagged("outer")):
        y = oar.sin(x)
        with saved_tensors_hooks(*tagged("inner")):
            z = oar.cos(y)
        w = oar.tanh(z)  # tanh saves its output: the outer pair packs it
    (w.sum()).backward()
    packs = [t for k, t in log if k == "pack"]
    assert packs == ["outer", "inner", "outer"]
    unpacks = sorted(t for k, t in log if k == "unpack")
    assert unpacks == ["inner", "outer", "outer"]
    xv = x.numpy()
    ref = (1 - np.tanh(np.cos(np.sin(xv))) ** 2) * -np.sin(np.sin(xv)) * np.cos(xv)
    np.testing.assert_allclose(x.grad.numpy(), ref, rtol=1e-12)
    # after both contexts, nothing is packed
    log.clear()
    (oar.sin(leaf(np.ones(2)))).sum().backward()
    assert log == []


def test_double_backward_through_packed_leaf_reaches_the_leaf():
    xv = rng.standard_normal(5)
    x = leaf(xv)
    with saved_tensors_hooks(*to_numpy_hooks()):
        y = (x * x * x).sum()
    (g,) = oar.grad(y, x, create_graph=True)
    np.testing.assert_allclose(g.numpy(), 3 * xv ** 2, rtol=1e-12)
    (gg,) = oar.grad(g.sum(), x)
    np.testing.assert_allclose(gg.numpy(), 6 * xv, rtol=1e-12)


def test_pylayer_save_for_backward_is_packed():
    log = []

    class Mul(PyLayer):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a * b

        @staticmethod
        def backward(ctx, dy):
            a, b = ctx.saved_tensor()
            return dy * b, dy * a
    av, bv = rng.standard_normal((2, 3)), rng.standard_normal((2, 3))
    a, b = leaf(av), leaf(bv)
    with saved_tensors_hooks(*to_numpy_hooks(log)):
        y = Mul.apply(a, b)
    y.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), bv, rtol=1e-12)
    np.testing.assert_allclose(b.grad.numpy(), av, rtol=1e-12)
    assert ("pack", [2, 3]) in log and ("unpack", [2, 3]) in log


def test_errors_from_hooks_propagate():
    x = leaf(np.ones(3))

    def bad_pack(t):
        raise KeyError("pack failed here")
    with pytest.raises(KeyError, match="pack failed here"):
        with saved_tensors_hooks(bad_pack, lambda a: a):
            x * x

    def bad_unpack(a):
        raise ValueError("unpack failed here")
    with saved_tensors_hooks(lambda t: t.numpy(), bad_unpack):
        y = x * x
    with pytest.raises(ValueError, match="unpack failed here"):
        y.sum().backward()

    with saved_tensors_hooks(lambda t: t.numpy(), lambda a: a):  # a numpy array, not a Tensor
        y = x * x
    with pytest.raises(TypeError, match="unpack_hook must return a Tensor"):
        y.sum().backward()

    with saved_tensors_hooks(lambda t: t.numpy(), lambda a: oar.to_tensor(a[:2])):
        y = x * x
    with pytest.raises(ValueError, match=r"saved_tensors_hooks: unpack_hook returned a tensor of shape \[2\]"):
        y.sum().backward()

    with pytest.raises(TypeError, match="pack_hook must be callable"):
        saved_tensors_hooks(3, lambda a: a)
    with pytest.raises(TypeError, match="unpack_hook must be callable"):
        saved_tensors_hooks(lambda a: a, "x")
    # a failed context leaves no pair behind
    log = []
    (oar.sin(leaf(np.ones(2)))).sum().backward()
    assert log == [] and oar._C._saved_tensors_hooks_top() is None


def test_second_backward_without_retain_graph_still_raises():
    x = leaf(np.ones(3))
    with saved_tensors_hooks(*to_numpy_hooks()):
        y = (x * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="second time"):
        y.backward()


def test_retain_graph_unpacks_each_time():
    log = []
    x = leaf(np.array([1.0, 2.0]))
    with saved_tensors_hooks(*to_numpy_hooks(log)):
        y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), [4.0, 8.0])
    kinds = [k for k, _ in log]
    assert kinds.count("pack") >= 2 and kinds.count("unpack") == 2 * kinds.count("pack")


def test_no_grad_saves_nothing():
    log = []
    x = leaf(np.ones(3))
    with oar.no_grad(), saved_tensors_hooks(*to_numpy_hooks(log)):
        x * x
    assert log == []
