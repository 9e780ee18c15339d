"""paddle.incubate: autograd.vjp/jvp/Jacobian/Hessian against float64 NumPy (analytic and
finite differences), LookAhead against a NumPy simulation, the graph operators' earlier names
against oar.geometric, the RNG state round trip, and bad inputs."""
import numpy as np
import pytest

import oar

A = oar.incubate.autograd
RNG = np.random.default_rng(3)


def t(a):
    return oar.to_tensor(np.asarray(a, np.float64))


def fd_jacobian(f, xs, eps=1e-6):
    """[M, N]: flattened f(*xs) by the concatenated flattened xs (NumPy)."""
    base = np.concatenate([x.ravel() for x in xs])
    sizes = np.cumsum([0] + [x.size for x in xs])

    def call(flat):
        parts = [flat[sizes[i]:sizes[i + 1]].reshape(x.shape) for i, x in enumerate(xs)]
        return np.asarray(f(*parts)).ravel()
    cols = []
    for j in range(base.size):
        p, m = base.copy(), base.copy()
        p[j] += eps
        m[j] -= eps
        cols.append((call(p) - call(m)) / (2 * eps))
    return np.stack(cols, axis=1)


def test_vjp_jvp_of_matmul():
    x, v = RNG.standard_normal((3, 3)), RNG.standard_normal((3, 3))
    ys, g = A.vjp(lambda a: oar.matmul(a, a), t(x), t(v))
    np.testing.assert_allclose(ys.numpy(), x @ x, rtol=1e-12)
    np.testing.assert_allclose(g.numpy(), v @ x.T + x.T @ v, rtol=1e-10, atol=1e-12)
    _, jv = A.jvp(lambda a: oar.matmul(a, a), t(x), t(v))
    np.testing.assert_allclose(jv.numpy(), v @ x + x @ v, rtol=1e-10, atol=1e-12)
    _, ones = A.jvp(lambda a: oar.matmul(a, a), t(x))
    o = np.ones((3, 3))
    np.testing.assert_allclose(ones.numpy(), o @ x + x @ o, rtol=1e-10)
    assert not g.stop_gradient and not jv.stop_gradient


def test_vjp_jvp_several_inputs():
    x, y = RNG.standard_normal((2, 3)), RNG.standard_normal((2, 3))
    _, (gx, gy) = A.vjp(lambda a, b: a * b + oar.sin(a), [t(x), t(y)])
    np.testing.assert_allclose(gx.numpy(), y + np.cos(x), rtol=1e-12)
    np.testing.assert_allclose(gy.numpy(), x, rtol=1e-12)
    vx, vy = RNG.standard_normal((2, 3)), RNG.standard_normal((2, 3))
    _, jv = A.jvp(lambda a, b: a * b, [t(x), t(y)], [t(vx), t(vy)])
    np.testing.assert_allclose(jv.numpy(), vx * y + x * vy, rtol=1e-12)


def test_jacobian_matches_finite_differences():
    x, y = RNG.standard_normal((2, 3)), RNG.standard_normal((3,))

    def f(a, b):
        return np.tanh(a @ b)[:, None] * a

    J = A.Jacobian(lambda a, b: oar.tanh(oar.matmul(a, b)).unsqueeze(1) * a, [t(x), t(y)])
    np.testing.assert_allclose(J[:, :].numpy(), fd_jacobian(f, [x, y]), rtol=1e-6, atol=1e-8)
    assert J.shape == [6, 9]
    np.testing.assert_allclose(J[1, :].numpy(), fd_jacobian(f, [x, y])[1], rtol=1e-6, atol=1e-8)


def test_batched_jacobian_and_hessian():
    x = RNG.standard_normal((4, 3))
    J = A.Jacobian(lambda a: a * a, t(x), is_batched=True)
    want = np.stack([np.diag(2 * row) for row in x])
    np.testing.assert_allclose(J[:].numpy(), want, rtol=1e-12)
    H = A.Hessian(lambda a: (a ** 3).sum(), t(x[0]))
    np.testing.assert_allclose(H[:].numpy(), np.diag(6 * x[0]), rtol=1e-12)
    y = RNG.standard_normal(3)
    H2 = A.Hessian(lambda a, b: (a * a * b).sum(), [t(x[0]), t(y)])
    want = np.block([[np.diag(2 * y), np.diag(2 * x[0])], [np.diag(2 * x[0]), np.zeros((3, 3))]])
    np.testing.assert_allclose(H2[:].numpy(), want, rtol=1e-12, atol=1e-12)
    Hb = A.Hessian(lambda a: (a ** 3).sum(axis=1), t(x), is_batched=True)
    np.testing.assert_allclose(Hb[:].numpy(), np.stack([np.diag(6 * r) for r in x]), rtol=1e-12)


@pytest.mark.parametrize("alpha,k", [(0.2, 5), (0.5, 1), (1.0, 3)])
def test_lookahead_matches_numpy(alpha, k):
    oar.seed(0)
    lin = oar.nn.Linear(4, 2)
    w = lin.weight.numpy().astype(np.float64)
    xs = [RNG.standard_normal((3, 4)) for _ in range(7)]
    opt = oar.incubate.LookAhead(oar.optimizer.SGD(0.1, parameters=[lin.weight]), alpha, k)
    slow = None
    for step, x in enumerate(xs, 1):
        xt = oar.to_tensor(x.astype(lin.weight.numpy().dtype))
        (oar.matmul(xt, lin.weight) ** 2).sum().backward()
        opt.step()
        opt.clear_grad()
        grad = 2 * x.T @ (x @ w)
        w = w - 0.1 * grad
        if step == 1:
            slow = w.copy()
        if step % k == 0:
            w = alpha * w + (1 - alpha) * slow
            slow = w.copy()
        np.testing.assert_allclose(lin.weight.numpy(), w, rtol=1e-4, atol=1e-5)


def test_graph_aliases_equal_geometric():
    x = t(RNG.standard_normal((4, 3)))
    src, dst = oar.to_tensor([0, 1, 2, 3, 0]), oar.to_tensor([1, 1, 2, 0, 3])
    for pool in ("sum", "mean", "max", "min"):
        np.testing.assert_array_equal(oar.incubate.graph_send_recv(x, src, dst, pool).numpy(),
                                      oar.geometric.send_u_recv(x, src, dst, pool).numpy())
    nodes = oar.to_tensor([0, 1, 2])
    nb1, c1 = oar.to_tensor([8, 9, 0, 4, 7, 6, 7]), oar.to_tensor([2, 3, 2], dtype="int32")
    nb2, c2 = oar.to_tensor([0, 2, 3, 5, 1]), oar.to_tensor([1, 3, 1], dtype="int32")
    got = oar.incubate.graph_reindex(nodes, oar.concat([nb1, nb2]), oar.concat([c1, c2]))
    want = oar.geometric.reindex_heter_graph(nodes, [nb1, nb2], [c1, c2])
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.numpy(), w.numpy())
    row, colptr = oar.to_tensor([3, 7, 0, 9, 1]), oar.to_tensor([0, 2, 4, 5])
    nbrs, cnt = oar.incubate.graph_sample_neighbors(row, colptr, oar.to_tensor([0, 2]))
    np.testing.assert_array_equal(nbrs.numpy(), [3, 7, 1])
    np.testing.assert_array_equal(cnt.numpy(), [2, 1])
    np.testing.assert_array_equal(oar.incubate.segment_sum(x, oar.to_tensor([0, 0, 1, 1])).numpy(),
                                  oar.geometric.segment_sum(x, oar.to_tensor([0, 0, 1, 1])).numpy())


def test_rng_state_round_trip():
    state = oar.incubate.get_rng_state()
    a = oar.rand([5]).numpy()
    oar.incubate.set_rng_state(state)
    np.testing.assert_array_equal(oar.rand([5]).numpy(), a)


BAD = [
    (lambda: A.vjp(lambda a: a, [1.0]), TypeError, "vjp"),
    (lambda: A.vjp(lambda a: a * 2, t(np.ones(3)), t(np.ones(2))), ValueError, "v must match"),
    (lambda: A.jvp(lambda a: a * 2, t(np.ones(3)), [t(np.ones(3)), t(np.ones(3))]), ValueError,
     "jvp"),
    (lambda: A.Hessian(lambda a: a * 2, t(np.ones(3))), ValueError, "Hessian"),
    (lambda: A.Jacobian(lambda a: a.sum(), t(np.ones(3)), is_batched=True), ValueError,
     "is_batched"),
    (lambda: oar.incubate.LookAhead(None), TypeError, "inner_optimizer"),
    (lambda: oar.incubate.LookAhead(oar.optimizer.SGD(0.1, parameters=[]), alpha=2), ValueError,
     "alpha"),
    (lambda: oar.incubate.LookAhead(oar.optimizer.SGD(0.1, parameters=[]), k=0), ValueError, "k"),
    (lambda: oar.incubate.graph_send_recv(t(np.ones((2, 2))), oar.to_tensor([0]),
                                          oar.to_tensor([0]), "prod"), ValueError, "reduce_op"),
]


@pytest.mark.parametrize("call,exc,needle", BAD)
def test_bad_inputs(call, exc, needle):
    with pytest.raises(exc, match=needle):
        call()
