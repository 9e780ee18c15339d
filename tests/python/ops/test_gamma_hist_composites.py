"""gammainc / gammaincc (against scipy.special in float64) and histogramdd (against
numpy.histogramdd), python/oar/_gamma_hist_composites.py: broadcast and 0-size shapes, the
gradient in y against central differences, in-place forms, bad inputs naming the op."""
import numpy as np
import pytest
import scipy.special as sp

import oar


@pytest.mark.parametrize("dtype, tol", [("float64", 1e-10), ("float32", 2e-6)])
@pytest.mark.parametrize("shapes", [((40,), (40,)), ((3, 1), (1, 5)), ((0,), (3, 0)), ((), (4,))],
                         ids=str)
def test_gammainc_gammaincc_match_scipy(dtype, tol, shapes):
    rng = np.random.default_rng(1)
    a = rng.uniform(0.05, 60.0, shapes[0])
    y = rng.uniform(0.0, 80.0, shapes[1])
    ta, ty = oar.to_tensor(a, dtype), oar.to_tensor(y, dtype)
    a32, y32 = ta.numpy().astype(np.float64), ty.numpy().astype(np.float64)
    p, q = oar.gammainc(ta, ty), oar.gammaincc(ta, ty)
    assert p.dtype.name == dtype and list(p.shape) == list(np.broadcast(a, y).shape)
    np.testing.assert_allclose(p.numpy(), sp.gammainc(a32, y32), atol=tol, rtol=tol * 10)
    np.testing.assert_allclose(q.numpy(), sp.gammaincc(a32, y32), atol=tol, rtol=tol * 10)


def test_gammainc_edges_examples_and_in_place():
    x = oar.to_tensor([0.5] * 5, "float64")
    y = oar.to_tensor([0, 1, 10, 100, 1000], "float64")
    np.testing.assert_allclose(oar.gammainc(x, y).numpy(), sp.gammainc(0.5, y.numpy()), atol=1e-14)
    np.testing.assert_allclose(x.gammaincc(y).numpy(), sp.gammaincc(0.5, y.numpy()), atol=1e-14)
    big = oar.to_tensor([500.0, 1000.0], "float64")
    np.testing.assert_allclose(oar.gammainc(big, big).numpy(), sp.gammainc(big.numpy(), big.numpy()),
                               rtol=1e-9)
    z = oar.to_tensor([2.0, 3.0], "float64")
    z.gammainc_(oar.to_tensor([1.0, 1.0], "float64"))
    np.testing.assert_allclose(z.numpy(), sp.gammainc([2.0, 3.0], 1.0), rtol=1e-12)


def test_gammainc_gradient_in_y():
    a = oar.to_tensor([0.7, 2.5, 9.0], "float64")
    y = oar.to_tensor([0.3, 4.0, 7.5], "float64", stop_gradient=False)
    oar.gammainc(a, y).sum().backward()
    # dP/dy = y^(a-1) e^-y / Gamma(a)
    want = np.exp((a.numpy() - 1) * np.log(y.numpy()) - y.numpy() - sp.gammaln(a.numpy()))
    np.testing.assert_allclose(y.grad.numpy(), want, rtol=1e-7)


@pytest.mark.parametrize("call, exc, msg", [
    (lambda: oar.gammainc(oar.to_tensor([1.0]), oar.to_tensor([-1.0])), ValueError,
     "gammainc: x and y must be non-negative"),
    (lambda: oar.gammaincc(oar.to_tensor([1]), oar.to_tensor([1])), TypeError,
     "gammaincc: x must be a float32/float64 tensor"),
    (lambda: oar.gammainc(oar.to_tensor([1.0]), oar.to_tensor([1.0], "float64")), TypeError,
     "gammainc: x and y must have one dtype"),
    (lambda: oar.gammainc([1.0], oar.to_tensor([1.0])), TypeError, "gammainc: x must be a Tensor"),
])
def test_gammainc_bad_inputs(call, exc, msg):
    with pytest.raises(exc, match=msg):
        call()


@pytest.mark.parametrize("n, d, bins, density, weighted", [
    (50, 2, [3, 4], False, False), (50, 3, 5, True, True), (0, 2, [2, 2], False, False),
    (30, 1, [6], True, False)])
def test_histogramdd_matches_numpy(n, d, bins, density, weighted):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((n, d))
    w = rng.uniform(0, 2, n) if weighted else None
    hist, edges = oar.histogramdd(oar.to_tensor(x), bins=bins, density=density,
                                  weights=None if w is None else oar.to_tensor(w))
    rng_arg = None if n else [(0.0, 1.0)] * d
    ref, ref_edges = np.histogramdd(x, bins=bins, range=rng_arg, density=density, weights=w)
    np.testing.assert_allclose(hist.numpy(), np.nan_to_num(ref), rtol=1e-12, atol=1e-12)
    for e, r in zip(edges, ref_edges):
        np.testing.assert_allclose(e.numpy(), r, rtol=1e-12)


def test_histogramdd_ranges_edges_and_batched_points():
    x = oar.to_tensor(np.array([[[0.0, 0.0], [1.0, 1.0]], [[2.0, 2.0], [0.25, 0.75]]]))
    hist, _ = oar.histogramdd(x, bins=[2, 2], ranges=[0.0, 1.0, 0.0, 1.0])
    np.testing.assert_array_equal(hist.numpy(), [[1.0, 1.0], [0.0, 1.0]])  # 2.0 is outside
    e = [oar.to_tensor([0.0, 0.5, 3.0], "float64"), oar.to_tensor([0.0, 3.0], "float64")]
    hist, edges = oar.histogramdd(x, bins=e)
    np.testing.assert_array_equal(hist.numpy(), [[2.0], [2.0]])
    for bad, exc, msg in [(dict(bins=[2]), ValueError, "bins must be"),
                          (dict(bins=[2, 0]), ValueError, "bins\\[1\\] must be a positive int"),
                          (dict(ranges=[0.0, 1.0]), ValueError, "ranges must hold 4"),
                          (dict(weights=oar.ones([3])), ValueError, "weights must be")]:
        with pytest.raises(exc, match=f"histogramdd: {msg}"):
            oar.histogramdd(x, **bad)
    with pytest.raises(TypeError, match="histogramdd: x must be a float Tensor"):
        oar.histogramdd(oar.to_tensor([[1, 2]]))
