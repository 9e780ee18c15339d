"""autograd.jacobian / hessian against analytic float64 derivatives and central differences,
batched and tuple forms, bad inputs."""
import numpy as np
import pytest

import oar

RNG = np.random.default_rng(3)
A = RNG.standard_normal((4, 3))


def T(a):
    t = oar.to_tensor(np.asarray(a, np.float64))
    t.stop_gradient = False
    return t


def f_np(x):
    return np.tanh(A @ x) + np.concatenate([x ** 3, [0.0]])


def f(x):
    return oar.tanh(oar.to_tensor(A) @ x) + oar.concat([x ** 3, oar.zeros([1], "float64")])


def central_jac(fn, x, eps=1e-6):
    cols = []
    for i in range(x.size):
        d = np.zeros_like(x)
        d[i] = eps
        cols.append((fn(x + d) - fn(x - d)) / (2 * eps))
    return np.stack(cols, axis=-1)


def test_jacobian_matches_analytic_and_differences():
    x = RNG.standard_normal(3)
    J = oar.autograd.jacobian(f(T(x)), T(x))
    xt = T(x)
    J = oar.autograd.jacobian(f(xt), xt)
    assert J.shape == [4, 3]
    analytic = (1 - np.tanh(A @ x) ** 2)[:, None] * A
    analytic[:3] += np.diag(3 * x ** 2)
    np.testing.assert_allclose(J[:].numpy(), analytic, rtol=1e-10)
    np.testing.assert_allclose(J[:].numpy(), central_jac(f_np, x), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(J[1, 2].numpy(), analytic[1, 2], rtol=1e-10)


def test_jacobian_tuples_scalars_and_batches():
    x1, x2 = T(RNG.standard_normal(3)), T(RNG.standard_normal(3))
    J = oar.autograd.jacobian(x1 * x2, (x1, x2))
    np.testing.assert_allclose(J[0][:].numpy(), np.diag(x2.numpy()))
    np.testing.assert_allclose(J[1][:].numpy(), np.diag(x1.numpy()))
    JJ = oar.autograd.jacobian((x1 * 2, x1.sum()), (x1, x2))
    assert JJ[0][1][:].numpy().tolist() == np.zeros((3, 3)).tolist()  # unused input: zeros
    assert JJ[1][0].shape == [3] and JJ[1][0][:].numpy().tolist() == [1.0, 1.0, 1.0]
    xb = T(RNG.standard_normal((5, 3)))
    Jb = oar.autograd.jacobian(oar.sin(xb) * 2, xb, batch_axis=0)
    assert Jb.shape == [5, 3, 3]
    want = np.stack([np.diag(2 * np.cos(r)) for r in xb.numpy()])
    np.testing.assert_allclose(Jb[:].numpy(), want, rtol=1e-12)


def test_hessian_matches_differences_of_the_gradient():
    x1, x2 = RNG.standard_normal(3), RNG.standard_normal(2)

    def y_np(a, b):
        return np.sum(np.sin(a) * a ** 2) * np.sum(b ** 2)

    t1, t2 = T(x1), T(x2)
    y = (oar.sin(t1) * t1 ** 2).sum() * (t2 ** 2).sum()
    H = oar.autograd.hessian(y, (t1, t2))
    assert [H[i][j].shape for i in range(2) for j in range(2)] == [[3, 3], [3, 2], [2, 3], [2, 2]]
    full = np.block([[H[0][0][:].numpy(), H[0][1][:].numpy()],
                     [H[1][0][:].numpy(), H[1][1][:].numpy()]])
    v = np.concatenate([x1, x2])

    def grad_np(z, eps=1e-6):
        return central_jac(lambda w: np.array([y_np(w[:3], w[3:])]), z, eps)[0]
    num = central_jac(grad_np, v, 1e-4)
    np.testing.assert_allclose(full, num, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(full, full.T, rtol=1e-12)
    single = oar.autograd.hessian((t1 ** 3).sum(), t1)
    np.testing.assert_allclose(single[:].numpy(), np.diag(6 * x1), rtol=1e-12)


def test_bad_inputs():
    x = T(np.ones((2, 2)))
    with pytest.raises(ValueError, match="jacobian: with batch_axis=None ys must be 0-D or 1-D"):
        oar.autograd.jacobian(x * 2, x)
    with pytest.raises(ValueError, match="jacobian: batch_axis must be None or 0, got 1"):
        oar.autograd.jacobian(x, x, batch_axis=1)
    with pytest.raises(TypeError, match="jacobian: xs must be a Tensor"):
        oar.autograd.jacobian(x[0], [1.0])
    with pytest.raises(ValueError, match="hessian: ys must be a 0-D Tensor"):
        oar.autograd.hessian(x[0] * 2, x[0])
    with pytest.raises(ValueError, match="jacobian: ys and xs have batch sizes 2 and 3"):
        oar.autograd.jacobian(x, T(np.ones((3, 2))), batch_axis=0)
