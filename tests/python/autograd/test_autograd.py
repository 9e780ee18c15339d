"""The eager autograd engine: accumulation, retain_graph, higher-order gradients, hooks,
grad modes, in-place checks, views and graph lifetime."""
import gc
import weakref

import numpy as np
import pytest

import oar
from op_test_utils import tensor


def leaf(data, dtype="float64"):
    return tensor(data, dtype, stop_gradient=False)


# ---- backward basics
def test_backward_accumulates_across_calls():
    x = leaf([1.0, 2.0, 3.0])
    (x * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2, 4, 6])
    (x * 3.0).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [5, 7, 9])
    # Paddle's rule: an engine-computed .grad reads stop_gradient=False, yet carries no history
    assert not x.grad.stop_gradient and x.grad.is_leaf and x.grad._grad_fn_name is None


def test_backward_twice_needs_retain_graph():
    x = leaf([1.0, 2.0])
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), [4, 8])
    with pytest.raises(RuntimeError, match="second time"):
        y.backward()


def test_backward_errors():
    x = leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match="stop_gradient=True"):
        tensor([1.0]).backward()
    with pytest.raises(ValueError, match="does not match tensor shape"):
        (x * 2).backward(tensor([1.0, 2.0, 3.0], "float64"))


def test_backward_with_grad_tensor():
    x = leaf([1.0, 2.0])
    (x * x).backward(tensor([10.0, 100.0], "float64"))
    np.testing.assert_allclose(x.grad.numpy(), [20, 400])


def test_multiple_roots():
    x = leaf([1.0, 2.0])
    a, b = (x * x).sum(), (x * 3.0)
    oar.autograd.backward([a, b], [None, tensor([1.0, -1.0], "float64")])
    np.testing.assert_allclose(x.grad.numpy(), [2 + 3, 4 - 3])
    y = leaf([1.0])
    oar.autograd.backward([y * 2.0, y * 5.0])
    np.testing.assert_allclose(y.grad.numpy(), [7])


def test_diamond_graph_sums_both_paths():
    x = leaf([2.0])
    a = x * 3.0
    y = a * a + oar.exp(a) * 0.0 + a  # a is used three times
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [(2 * 6.0 + 1) * 3])


# ---- oar.grad
def test_grad_does_not_touch_dot_grad_and_grad_outputs():
    x = leaf([1.0, 2.0, 3.0])
    y = x * x
    (gx,) = oar.grad([y], [x], grad_outputs=[tensor([1.0, 0.5, -1.0], "float64")],
                     retain_graph=True)
    np.testing.assert_allclose(gx.numpy(), [2, 2, -6])
    assert x.grad is None and gx.stop_gradient
    (gx,) = oar.grad(y.sum(), x)  # single tensors instead of lists
    np.testing.assert_allclose(gx.numpy(), [2, 4, 6])


def test_grad_allow_unused():
    x, z = leaf([1.0]), leaf([2.0])
    y = x * 4.0
    with pytest.raises(ValueError, match=r"inputs\[1\] is not used"):
        oar.grad([y], [x, z], retain_graph=True)
    gx, gz = oar.grad([y], [x, z], allow_unused=True)
    assert gz is None
    np.testing.assert_allclose(gx.numpy(), [4])


def test_grad_of_intermediate():
    x = leaf([3.0])
    h = x * x
    y = h * 2.0
    (gh,) = oar.grad(y, h)
    np.testing.assert_allclose(gh.numpy(), [2])


def test_grad_input_with_stop_gradient_raises():
    x = leaf([1.0])
    with pytest.raises(ValueError, match="stop_gradient=True"):
        oar.grad(x * 2.0, tensor([1.0], "float64"))


def _nth_grads(fn, x, n=4):
    """[f'(x), f''(x), ...] by repeated oar.grad with create_graph."""
    out, grads = fn(x), []
    for _ in range(n):
        (g,) = oar.grad(out.sum(), x, create_graph=True, allow_unused=True)
        if g is None:
            g = oar.zeros_like(x)
        grads.append(g.numpy().copy())
        out = g
    return grads


X = np.array([-1.3, -0.2, 0.4, 1.7])


@pytest.mark.parametrize("fn, derivatives", [
    (lambda x: x ** 3, [3 * X ** 2, 6 * X, 6 + 0 * X, 0 * X]),
    (oar.exp, [np.exp(X)] * 4),
    (lambda x: oar.sin(x) * oar.cos(x),
     [np.cos(2 * X), -2 * np.sin(2 * X), -4 * np.cos(2 * X), 8 * np.sin(2 * X)]),
    (oar.tanh, [1 - np.tanh(X) ** 2, -2 * np.tanh(X) * (1 - np.tanh(X) ** 2),
                (6 * np.tanh(X) ** 2 - 2) * (1 - np.tanh(X) ** 2),
                8 * np.tanh(X) * (1 - np.tanh(X) ** 2) * (2 - 3 * np.tanh(X) ** 2)]),
    (oar.sigmoid, None),
    (oar.nn.functional.gelu, None),
    (lambda x: oar.nn.functional.gelu(x, approximate=True), None),
    (lambda x: oar.nn.functional.gelu(x) * x, None),  # gelu's 3rd derivative must not vanish silently
], ids=["cube", "exp", "sin_cos", "tanh", "sigmoid", "gelu", "gelu_tanh", "gelu_times_x"])
def test_higher_order_grads(fn, derivatives):
    grads = _nth_grads(fn, leaf(X))
    if derivatives is None:  # check each order against central differences of the previous
        h = 1e-5
        prev = lambda v: fn(tensor(v, "float64")).numpy()  # noqa: E731
        for k, g in enumerate(grads):
            num = (prev(X + h) - prev(X - h)) / (2 * h)
            np.testing.assert_allclose(g, num, rtol=1e-5, atol=1e-6, err_msg=f"order {k + 1}")
            prev = lambda v, k=k: _nth_grads(fn, leaf(v), k + 1)[k]  # noqa: E731
        return
    for k, (g, d) in enumerate(zip(grads, derivatives)):
        np.testing.assert_allclose(g, d, rtol=1e-10, atol=1e-10, err_msg=f"order {k + 1}")


def test_higher_order_grads_through_matmul():
    rng = np.random.default_rng(0)
    a, w = rng.standard_normal((2, 3)), rng.standard_normal((3, 4))
    x, W = leaf(a), tensor(w, "float64")
    grads = _nth_grads(lambda t: oar.matmul(t, W) ** 3, x)
    y, c = a @ w, w.sum(0)
    np.testing.assert_allclose(grads[0], (3 * y ** 2) @ w.T, rtol=1e-10)
    np.testing.assert_allclose(grads[1], (6 * y * c) @ w.T, rtol=1e-10)
    np.testing.assert_allclose(grads[2], np.broadcast_to((6 * c * c) @ w.T, (2, 3)), rtol=1e-10)
    np.testing.assert_allclose(grads[3], np.zeros((2, 3)), atol=1e-12)


def test_mixed_second_derivative():
    x, y = leaf([2.0]), leaf([3.0])
    f = x * x * y
    (gx,) = oar.grad(f, x, create_graph=True)
    (gxy,) = oar.grad(gx, y)
    np.testing.assert_allclose(gx.numpy(), [12])
    np.testing.assert_allclose(gxy.numpy(), [4])


# ---- hooks
def test_hook_on_leaf_modifies_grad_and_can_be_removed():
    x = leaf([1.0, 2.0])
    seen = []
    h1 = x.register_hook(lambda g: g * 2.0)
    x.register_hook(lambda g: seen.append(g.numpy().copy()))  # returns None: observes only
    (x * 3.0).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [6, 6])
    np.testing.assert_allclose(seen[0], [6, 6])  # hooks run in order, on the modified grad
    h1.remove()
    x.clear_gradient(False)
    (x * 3.0).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [3, 3])


def test_hook_on_non_leaf():
    x = leaf([1.0, 2.0])
    h = x * 2.0
    handle = h.register_hook(lambda g: g * 10.0)
    (h * h).sum().backward(retain_graph=True)
    np.testing.assert_allclose(x.grad.numpy(), 10 * 2 * 2 * np.array([2.0, 4.0]))
    handle.remove()
    x.clear_gradient(False)
    (h * h).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * 2 * np.array([2.0, 4.0]))
    assert h.grad is None  # non-leaves keep no .grad ...


def test_retain_grads():
    x = leaf([1.0, 2.0])
    h = x * 2.0
    h.retain_grads()  # ... unless asked to
    (h * h).sum().backward()
    np.testing.assert_allclose(h.grad.numpy(), [4, 8])


def test_hook_on_stop_gradient_tensor_raises():
    with pytest.raises(RuntimeError, match="register_hook"):
        tensor([1.0]).register_hook(lambda g: g)


# ---- grad modes, stop_gradient, detach
def test_stop_gradient_propagation():
    x, c = leaf([1.0]), tensor([2.0], "float64")
    assert not x.stop_gradient and x.is_leaf
    assert c.stop_gradient
    assert (c * 2.0).stop_gradient
    y = x * c
    assert not y.stop_gradient and not y.is_leaf and y._grad_fn_name == "MultiplyGradNode"
    y.sum().backward()
    assert c.grad is None


def test_detach_shares_storage_without_history():
    x = leaf([1.0, 2.0])
    y = x * 2.0
    d = y.detach()
    assert d.stop_gradient and d.is_leaf and d._share_storage_with(y)
    (d * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2, 4])  # no gradient through d


def test_no_grad_context_and_decorators():
    x = leaf([1.0])
    with oar.no_grad():
        assert not oar.is_grad_enabled()
        y = x * 2.0
        with oar.enable_grad():
            z = x * 2.0
    assert oar.is_grad_enabled()
    assert y.stop_gradient and not z.stop_gradient

    @oar.no_grad()
    def f(t):
        return t * 2.0

    @oar.no_grad
    def g(t):
        return t * 2.0

    assert f(x).stop_gradient and g(x).stop_gradient
    assert f.__name__ == "f" and g.__name__ == "g"
    with oar.set_grad_enabled(False):
        assert (x * 1.0).stop_gradient
    assert not (x * 1.0).stop_gradient


def test_no_grad_restores_mode_on_exception():
    with pytest.raises(ZeroDivisionError), oar.no_grad():
        _ = 1 / 0
    assert oar.is_grad_enabled()


# ---- in-place ops and the version counter
def test_inplace_after_save_raises():
    x = leaf([1.0, 2.0])
    a = x * 1.0
    b = a * a  # saves a
    a.add_(tensor([1.0, 1.0], "float64"))
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        b.sum().backward()


def test_inplace_on_saved_output_raises():
    x = leaf([0.5, 1.0])
    y = oar.exp(x)  # saves its output
    y.scale_(2.0)
    with pytest.raises(RuntimeError, match="inplace"):
        y.sum().backward()


def test_inplace_on_leaf_requiring_grad():
    x = leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match="leaf tensor that requires grad"):
        x.add_(tensor([1.0, 1.0], "float64"))
    with oar.no_grad():
        x.add_(tensor([1.0, 1.0], "float64"))  # allowed (optimizer updates)
    np.testing.assert_allclose(x.numpy(), [2, 3])


def test_inplace_is_differentiable():
    x = leaf([1.0, 2.0])
    y = x * 1.0
    y.multiply_(x)  # y = x^2, recorded in place
    y.exp_()
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.array([1.0, 2.0]) * np.exp([1.0, 4.0]))


def test_inplace_on_view_updates_base_history():
    x = leaf([1.0, 2.0])
    a = x * 1.0
    a.reshape([2]).multiply_(tensor([3.0, 3.0], "float64"))
    np.testing.assert_allclose(a.numpy(), [3, 6])
    a.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [3, 3])


def test_version_counter():
    x = tensor([1.0, 2.0])
    assert x._version == 0
    x.add_(x)
    assert x._version == 1
    v = x.reshape([2, 1])  # views share the counter
    x.scale_(2.0)
    assert x._version == 2 and v._version == 2 and x.inplace_version == 2
    (x * 2).numpy()  # out-of-place ops do not bump it
    assert x._version == 2


def test_clear_gradient():
    x = leaf([1.0, 2.0])
    (x * 2.0).sum().backward()
    g = x.grad
    x.clear_gradient()  # set_to_zero=True: keeps a zero gradient of the same shape
    np.testing.assert_array_equal(x.grad.numpy(), [0, 0])
    np.testing.assert_array_equal(g.numpy(), [0, 0])
    (x * 2.0).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2, 2])
    x.clear_gradient(set_to_zero=False)
    assert x.grad is None
    x.clear_grad()
    assert x.grad is None


def test_dot_grad_does_not_alias_other_buffers():
    x = leaf([1.0, 2.0])
    g = tensor([5.0, 6.0], "float64")
    (x * 1.0).backward(g)
    x.clear_gradient()  # zeroes .grad in place: must not zero the caller's g
    np.testing.assert_allclose(g.numpy(), [5, 6])


# ---- views
def test_gradients_through_views():
    a = np.arange(12.0).reshape(3, 4)
    x = leaf(a)
    cot = np.random.default_rng(1).standard_normal((4, 3))
    x.transpose([1, 0]).backward(tensor(cot, "float64"))
    np.testing.assert_allclose(x.grad.numpy(), cot.T)

    x = leaf(a)
    x.reshape([2, 6]).backward(tensor(cot.reshape(2, 6), "float64"))
    np.testing.assert_allclose(x.grad.numpy(), cot.reshape(3, 4))

    x = leaf(a)
    s = oar._C.ops.strided_slice_view(x, [0, 1], [2, 3], [-4, 0], [-1, -2])  # x[2::-1, 3:0:-2]
    np.testing.assert_array_equal(s.numpy(), a[2::-1, 3:0:-2])
    assert s._share_storage_with(x)
    s.backward(tensor(np.ones((3, 2)), "float64"))
    expected = np.zeros((3, 4))
    expected[2::-1, 3:0:-2] = 1
    np.testing.assert_allclose(x.grad.numpy(), expected)

    x = leaf([[1.0], [2.0]])
    e = oar.expand(x, [3, 2, 4])
    assert e._share_storage_with(x)
    (e * 2.0).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[24.0], [24.0]])


def test_chain_of_views_then_op():
    a = np.arange(24.0).reshape(2, 3, 4)
    x = leaf(a)
    v = oar._C.ops.strided_slice_view(x.transpose([2, 0, 1]).reshape([8, 3]), [0], [1], [8], [3])
    y = (v * v).sum()
    y.backward()
    ref = np.zeros_like(a)
    r = a.transpose(2, 0, 1).reshape(8, 3)
    g = np.zeros_like(r)
    g[1:8:3] = 2 * r[1:8:3]
    ref = g.reshape(4, 2, 3).transpose(1, 2, 0)
    np.testing.assert_allclose(x.grad.numpy(), ref)


# ---- in-place ops on views (Note [Views and in-place ops] in docs/notes/autograd.md)
def _fd_check(fn, *arrays, eps=1e-6, rtol=1e-6, atol=1e-8):
    """Gradients of the scalar fn(*leaves) by backward() against central differences."""
    leaves = [leaf(a) for a in arrays]
    fn(*leaves).backward()
    for i, a in enumerate(arrays):
        num = np.zeros_like(a)
        for idx in np.ndindex(a.shape):
            vals = []
            for d in (eps, -eps):
                b = [x.copy() for x in arrays]
                b[i][idx] += d
                with oar.no_grad():
                    vals.append(fn(*[tensor(x, "float64") for x in b]).item())
            num[idx] = (vals[0] - vals[1]) / (2 * eps)
        got = leaves[i].grad
        np.testing.assert_allclose(got.numpy() if got is not None else np.zeros_like(a), num,
                                   rtol=rtol, atol=atol, err_msg=f"gradient of input {i}")


RNG = np.random.default_rng(7)
A34 = RNG.uniform(0.5, 1.5, (3, 4))


def _select_exp(x):
    y = x * 1.5
    y[1].exp_()  # select view
    return (y * y).sum()


def _strided_slice_multiply(x, t):
    y = x * 1.0
    y[:, ::2].multiply_(t)  # a slice with a step; t broadcasts over the view's rows
    return y.sin().sum()


def _transpose_tanh(x):
    y = x + 1.0
    y.transpose([1, 0])[2].tanh_()  # a select of a transpose: column 2 of y
    return (y * y * A34).sum()


def _reshape_slice_add(x, t):
    y = x * x
    y.reshape([12])[3:7].add_(t)  # reshape is a view of contiguous memory
    return (y.exp() * A34).sum()


def _chain_of_views(x, t):
    y = x * 2.0
    v = y.unsqueeze([0]).transpose([2, 0, 1])[1:3].flatten(0, 1)[:, 1:]  # shape [2, 2]
    v.multiply_(t)
    v.sqrt_()  # a second write through the same view (its history is remade in between)
    return (y * A34).sum() + (v * v * v).sum()


def _two_views_of_one_base(x):
    y = x * 1.0
    r0, r2 = y[0], y[2]
    r0.exp_()
    r2.add_(r0.tanh())  # r0 is read after the base changed: its history is remade
    return (y * y).sum() + r0.sum()


def _base_written_after_view(x):
    y = x * 1.0
    v = y[:, 1]  # made before the base changes
    y.multiply_(x)  # in place on the base
    return (v * v).sum() + y.sum()


@pytest.mark.parametrize("fn,shapes", [
    (_select_exp, [(3, 4)]),
    (_strided_slice_multiply, [(3, 4), (2,)]),
    (_transpose_tanh, [(3, 4)]),
    (_reshape_slice_add, [(3, 4), (4,)]),
    (_chain_of_views, [(3, 4), (2, 2)]),
    (_two_views_of_one_base, [(3, 4)]),
    (_base_written_after_view, [(3, 4)]),
], ids=lambda v: v.__name__ if callable(v) else "")
def test_inplace_on_views_matches_finite_differences(fn, shapes):
    _fd_check(fn, *[RNG.uniform(0.5, 1.5, s) for s in shapes])


def test_inplace_on_view_brief_example():
    x = leaf([[1.0, 2.0], [3.0, 4.0]])
    y = x * 1
    v = y[0]
    v.exp_()
    assert y._grad_fn_name == "CopySlices" and v._grad_fn_name == "SelectGradNode"
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[np.e, np.e ** 2], [1, 1]])


def test_setitem_through_views_keeps_both_gradients():
    def f(x, t):
        y = x * 2.0
        y[0:2] = t  # setitem on the tensor itself
        row = y[2]
        row[1:3] = t[0, 0:2] * 3.0  # setitem on a view: the base y must see it
        return (y * y * A34).sum()
    _fd_check(f, RNG.uniform(0.5, 1.5, (3, 4)), RNG.uniform(0.5, 1.5, (2, 4)))

    x, t = leaf(np.ones((3, 4))), leaf([[10.0, 20.0]])
    y = x * 2.0
    y[1][0:2] = t * 3
    (y * y).sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), [[180.0, 360.0]])
    expected = np.full((3, 4), 8.0)
    expected[1, 0:2] = 0.0
    np.testing.assert_allclose(x.grad.numpy(), expected)


def test_inplace_on_view_of_base_without_grad():
    y = oar.zeros([4], "float64")
    t = leaf([5.0, 6.0])
    y[1:3].add_(t * 2.0)  # the base starts requiring grad, through the view
    assert not y.stop_gradient and not y.is_leaf and y._grad_fn_name == "CopySlices"
    (y * y).sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), [40.0, 48.0])
    z = oar.zeros([2, 2], "float64")
    z[0].fill_(3.0)  # no grad anywhere: a plain write
    assert z.stop_gradient and z.numpy().tolist() == [[3.0, 3.0], [0.0, 0.0]]


def test_fill_zero_copy_on_views_are_recorded():
    x = leaf([[1.0, 2.0], [3.0, 4.0]])
    t = leaf([9.0])
    y = x * 3.0
    y[1].zero_()
    y[0, 1:].fill_(2.0)
    y[1, 0:1].copy_(t * 1.0)
    np.testing.assert_array_equal(y.numpy(), [[3.0, 2.0], [9.0, 0.0]])
    (y * y).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[18.0, 0.0], [0.0, 0.0]])
    np.testing.assert_allclose(t.grad.numpy(), [18.0])


def test_inplace_on_views_share_the_version_counter():
    x = leaf([1.0, 2.0, 3.0])
    y = x * 1.0
    v, w = y[0:2], y.reshape([3, 1])
    v.exp_()
    assert y._version == v._version == w._version == 1
    z = y * y  # saves y
    w.multiply_(tensor([[2.0]], "float64"))
    assert y._version == 2
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()
    y2 = x * 1.0
    e = y2[1:].exp()  # exp saves its output, not y2
    y2[0:1].add_(tensor([1.0], "float64"))
    e.sum().backward()  # still valid: what exp saved was not written
    np.testing.assert_allclose(x.grad.numpy(), [0.0, np.e ** 2, np.e ** 3])


def test_inplace_on_views_that_cannot_be_recorded():
    x = leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match="exp_: a view of a leaf tensor that requires grad"):
        x[0:1].exp_()
    np.testing.assert_array_equal(x.numpy(), [1.0, 2.0])  # nothing was written
    with oar.no_grad():
        x[0:1].exp_()  # allowed as an untracked update
    y = x * 1.0
    with oar.no_grad():
        v = y[0:1]
    with pytest.raises(RuntimeError, match="made in no_grad mode"):
        v.add_(tensor([1.0], "float64"))
    with oar.no_grad():
        v.add_(tensor([1.0], "float64"))
    e = oar.ones([1, 3]).expand([2, 3])
    with pytest.raises(ValueError, match="add_: the tensor written in place has elements that "
                                         "share memory"):
        e.add_(oar.ones([2, 3]))


def test_inplace_on_view_higher_order():
    a = np.array([0.5, 1.5, 2.0, -1.0])
    x = leaf(a)
    y = x * 1.0
    y[0:2].multiply_(x[0:2])  # y = [x0^2, x1^2, x2, x3]
    (g,) = oar.grad((y * y).sum(), x, create_graph=True)
    np.testing.assert_allclose(g.numpy(), [4 * a[0] ** 3, 4 * a[1] ** 3, 2 * a[2], 2 * a[3]])
    g.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [12 * a[0] ** 2, 12 * a[1] ** 2, 2, 2])


def test_inplace_with_aliased_operands():
    def f(x):
        y = x * 1.0
        y.add_(y)  # the operand is the tensor written
        y[1:].multiply_(y[:-1])  # the operand overlaps the written view
        return (y * y).sum()
    _fd_check(f, RNG.uniform(0.5, 1.5, (5,)))
    x = leaf([1.0, 2.0, 3.0])
    y = x * 1.0
    y[1:].multiply_(y[:-1])  # forward reads the values from before the write
    np.testing.assert_allclose(y.numpy(), [1.0, 2.0, 6.0])
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 4.0, 2.0])


_VIEWS = {
    "row": lambda v: v[1] if v.ndim >= 1 and v.shape[0] > 1 else v,
    "col": lambda v: v[:, 1] if v.ndim >= 2 and v.shape[1] > 1 else v,
    "T": lambda v: v.transpose([1, 0]) if v.ndim == 2 else v,
    "tail": lambda v: v[1:] if v.ndim >= 1 and v.shape[0] > 2 else v,
    "step": lambda v: v[:, ::2] if v.ndim >= 2 else v,
    "unsqueeze": lambda v: v.unsqueeze([0]),
    "split": lambda v: v.split([1, -1], axis=-1)[1] if v.ndim >= 1 and v.shape[-1] > 1 else v,
    "unbind": lambda v: oar.unbind(v, axis=0)[-1] if v.ndim >= 2 else v,
    "flatten": lambda v: v.flatten() if v.ndim == 2 and v.shape[1] == 4 else v,
}
_WRITES = {
    "exp_": lambda v, t: v.exp_(),
    "tanh_": lambda v, t: v.tanh_(),
    "scale_": lambda v, t: v.scale_(0.7, 0.2),
    "multiply_": lambda v, t: v.multiply_(t),
    "add_": lambda v, t: v.add_(t * 2.0),
    "self": lambda v, t: v.multiply_(v),
    "setitem": lambda v, t: v.__setitem__(Ellipsis, t * 3.0),
}


@pytest.mark.parametrize("seed", range(40))
def test_random_view_write_programs_match_finite_differences(seed):
    r = np.random.default_rng(seed)
    program = [([r.choice(list(_VIEWS)) for _ in range(r.integers(1, 4))], r.choice(list(_WRITES)))
               for _ in range(r.integers(1, 4))]

    def f(x, t):
        y = x * 1.3 + 0.1
        for views, write in program:
            v = y
            for name in views:
                v = _VIEWS[name](v)
            _WRITES[write](v, t.reshape([1] * v.ndim) if v.ndim else t.reshape([]))
        return (y * y).sum() + y.sin().sum()
    _fd_check(f, r.uniform(0.2, 0.6, (3, 4)), r.uniform(0.5, 0.9, (1,)), rtol=1e-5, atol=1e-5)


def test_inplace_on_view_frees_its_graph():
    arr = np.arange(4.0)
    alive = weakref.ref(arr)
    base = oar.utils.dlpack.from_dlpack(arr)
    del arr
    t = leaf([1.0, 2.0])
    base[0:2].add_(t)
    w = base[1:3]
    w.multiply_(tensor([2.0], "float64"))
    (base * base).sum().backward(retain_graph=True)
    np.testing.assert_allclose(t.grad.numpy(), [2.0, 24.0])  # d(sum base^2)/dt, base = [1, 6, 4, 3]
    del base, w
    gc.collect()
    assert alive() is None  # no reference cycle through CopySlices keeps the base alive


# ---- graph lifetime
def _tracked_tensor():
    """A Tensor over NumPy memory (via DLPack) and a weakref that dies with its storage."""
    arr = np.arange(3.0)
    ref = weakref.ref(arr)
    return oar.utils.dlpack.from_dlpack(arr), ref


def test_saved_tensors_freed_after_backward():
    x = leaf([1.0, 2.0, 3.0])
    t, alive = _tracked_tensor()
    y = x * t  # the node saves t
    del t
    gc.collect()
    assert alive() is not None
    y.sum().backward()
    gc.collect()
    assert alive() is None  # freed, although y and its grad_fn are still alive
    assert y._grad_fn_name == "MultiplyGradNode"


def test_retained_graph_freed_with_its_outputs():
    x = leaf([1.0, 2.0, 3.0])
    t, alive = _tracked_tensor()
    y = (x * t).sum()
    del t
    y.backward(retain_graph=True)
    gc.collect()
    assert alive() is not None
    del y  # no reference cycles keep the graph alive
    gc.collect()
    assert alive() is None


def test_grad_does_not_run_the_node_that_made_an_input():
    # oar.grad(y, h) stops at h: the node that made h is neither run nor freed (PyTorch's
    # engine does the same), so a later backward through h still works.
    x = oar.to_tensor(np.array([1.0, 2.0]), stop_gradient=False)
    h = x * x
    y = (h * 3).sum()
    (gh,) = oar.grad(y, h)
    np.testing.assert_allclose(gh.numpy(), [3.0, 3.0])
    (h * 2).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [4.0, 8.0])
    # an input behind another input still gets the gradient of every path
    h2 = x * x
    gx, gh2 = oar.grad((h2 * x).sum(), [x, h2])
    np.testing.assert_allclose(gx.numpy(), 3 * np.array([1.0, 4.0]))
    np.testing.assert_allclose(gh2.numpy(), [1.0, 2.0])
    # stop_at_inputs (used by cf.if's backward): only the paths that reach x directly
    h3 = x * x
    gx, gh3 = oar._C.grad((h3 * x).sum(), [x, h3], None, False, False, False, True)
    np.testing.assert_allclose(gx.numpy(), [1.0, 4.0])
    np.testing.assert_allclose(gh3.numpy(), [1.0, 2.0])


def test_only_tensors_a_gradient_reads_are_saved():
    # x * 3: the gradient needs no value of x, so writing into x afterwards is legal (as
    # in PyTorch); a tensor whose values a needed gradient reads still refuses the write.
    x = oar.to_tensor(np.array([[1.0, 2.0], [3.0, 4.0]]), stop_gradient=False)
    y = x * 1
    y[:, 0] = y[:, 1] * 3
    (y * y).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[0.0, 2 * 2 + 2 * 9 * 2], [0.0, 2 * 4 + 2 * 9 * 4]])
    a = oar.to_tensor(np.array([1.0, 2.0]), stop_gradient=False)
    b = a * 1
    c = b * a  # the gradient for a reads b
    b[0] = 5.0
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        c.sum().backward()
