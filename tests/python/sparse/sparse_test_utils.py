"""Helpers of the paddle.sparse tests: random sparse arrays, float64 references, finite
differences through a sparse tensor's values."""
import numpy as np

import oar

RNG = np.random.default_rng(18)


def random_sparse(shape, density=0.4, sparse_dim=None, rng=RNG):
    """A float64 array of `shape` whose zero pattern is random over its first sparse_dim dims."""
    shape = tuple(shape)
    sparse_dim = len(shape) if sparse_dim is None else sparse_dim
    mask = rng.random(shape[:sparse_dim]) < density
    vals = rng.standard_normal(shape)
    vals[vals == 0] = 0.5
    return np.where(mask.reshape(mask.shape + (1,) * (len(shape) - sparse_dim)), vals, 0.0)  # +0


def t(a, dtype="float64", grad=False):
    x = oar.to_tensor(np.asarray(a), dtype=dtype)
    x.stop_gradient = not grad
    return x


def numeric_grad(f, x, eps=1e-6):
    """Central differences of the scalar f at the float64 array x."""
    g = np.zeros_like(x)
    for i in np.ndindex(*x.shape):
        xp, xm = x.copy(), x.copy()
        xp[i] += eps
        xm[i] -= eps
        g[i] = (f(xp) - f(xm)) / (2 * eps)
    return g


def check_values_grad(build, values, weights=None, atol=1e-6):
    """build(values_tensor) -> a dense Tensor or sparse tensor; the gradient of
    sum(w * dense(build(v))) with respect to v, against finite differences."""
    values = np.asarray(values, dtype=np.float64)

    def loss_np(v):
        out = build(t(v))
        d = (out.to_dense() if hasattr(out, "is_sparse") and out.is_sparse() else out).numpy()
        return float((d * w).sum())

    probe = build(t(values))
    dense = probe.to_dense() if probe.is_sparse() else probe
    w = RNG.standard_normal(dense.shape) if weights is None else weights
    v = t(values, grad=True)
    out = build(v)
    d = out.to_dense() if out.is_sparse() else out
    (d * t(w)).sum().backward()
    np.testing.assert_allclose(v.grad.numpy(), numeric_grad(loss_np, values), atol=atol, rtol=1e-5)
