"""linalg.eig / eigvals (LAPACK geev), complex eigh / eigvalsh (heevd), svd's
singular-vector signs, svd_lowrank and pca_lowrank: against
complex128/float64 NumPy on random inputs (batch and 0-size shapes), Paddle's documented
outputs, central finite differences and bad inputs."""
import numpy as np
import pytest

import oar
from oar import linalg as L

DTYPES = ["float32", "float64", "complex64", "complex128"]
TOL = {"float32": 2e-4, "complex64": 2e-4, "float64": 1e-9, "complex128": 1e-9}
CDTYPE = {"float32": "complex64", "complex64": "complex64", "float64": "complex128",
          "complex128": "complex128"}


def _rand(rng, shape, dtype):
    a = rng.standard_normal(shape)
    if dtype.startswith("complex"):
        a = a + 1j * rng.standard_normal(shape)
    return a.astype(dtype)


def _t(a, stop_gradient=True):
    return oar.to_tensor(a, stop_gradient=stop_gradient)


# ---- eig / eigvals
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4), (1, 1), (6, 6), (0, 3, 3), (2, 0, 0)],
                         ids=str)
def test_eig_matches_numpy(dtype, shape):
    rng = np.random.default_rng(1)
    a = _rand(rng, shape, dtype)
    w, v = L.eig(_t(a))
    assert w.dtype.name == CDTYPE[dtype] and v.dtype.name == CDTYPE[dtype]
    assert list(w.shape) == list(shape[:-1]) and list(v.shape) == list(shape)
    wn, vn = w.numpy().astype(np.complex128), v.numpy().astype(np.complex128)
    a64 = a.astype(np.complex128)
    tol = TOL[dtype] * 10
    if a.size:
        ref = np.linalg.eigvals(a64)
        scale = max(1.0, np.abs(ref).max())  # every eigenvalue has a match in the other set
        gap = np.abs(wn[..., :, None] - ref[..., None, :])
        assert gap.min(-1).max() < tol * scale and gap.min(-2).max() < tol * scale
        # A v_j = w_j v_j with unit-norm v_j
        np.testing.assert_allclose(a64 @ vn, vn * wn[..., None, :], atol=tol * 10, rtol=tol)
        np.testing.assert_allclose(np.linalg.norm(vn, axis=-2), 1.0, atol=tol)
    np.testing.assert_allclose(L.eigvals(_t(a)).numpy(), w.numpy())
    np.testing.assert_allclose(_t(a).eig()[0].numpy(), w.numpy())


def test_eig_real_matrix_with_a_complex_pair():
    a = np.array([[1.0, -2.0, 0.0], [2.0, 1.0, 0.0], [0.0, 0.0, 3.0]])
    w, v = L.eig(_t(a))
    np.testing.assert_allclose(np.sort_complex(w.numpy()), [1 - 2j, 1 + 2j, 3], atol=1e-12)
    vn = v.numpy()
    np.testing.assert_allclose(a @ vn, vn * w.numpy()[None, :], atol=1e-12)
    i = int(np.argmax(w.numpy().imag))  # the pair's vectors are conjugates
    j = int(np.argmin(w.numpy().imag))
    np.testing.assert_allclose(vn[:, j], np.conj(vn[:, i]), atol=1e-12)


def test_eig_paddle_example():
    x = oar.to_tensor([[1.6707249, 7.2249975, 6.5045543], [9.956216, 8.749598, 6.066444],
                       [4.4251957, 1.7983172, 0.370647]])
    w, v = L.eig(x)
    np.testing.assert_allclose(w.numpy(), [16.50470733642578, -5.503481388092041,
                                           -0.21026138961315155], atol=2e-5)
    np.testing.assert_allclose(v.numpy(), [[0.5061365365982056, 0.7971761226654053, 0.1851806491613388],
                                           [0.8308236598968506, -0.3463813066482544, -0.6837005615234375],
                                           [0.23142573237419128, -0.49449989199638367, 0.7058765292167664]],
                               atol=2e-6)


def _eig_features(x):
    """Phase-invariant features of eig(x): Re w, Im w and |v|^2 (per-column phases of v are
    arbitrary; |v_ij|^2 is not)."""
    w, v = L.eig(x)
    return oar.real(w), oar.imag(w), oar.real(v) ** 2 + oar.imag(v) ** 2


def _fd_check(make, a, complex_input, eps=1e-6, rtol=1e-5, atol=1e-7):
    """The gradient of loss(make(x)) (a real scalar) against central differences on the real
    (and imaginary) parts of a; the complex gradient is dL/dRe + i dL/dIm."""
    x = _t(a, stop_gradient=False)
    loss = make(x)
    loss.backward()
    got = x.grad.numpy()
    num = np.zeros(a.shape, np.complex128 if complex_input else np.float64)
    steps = (1.0, 1j) if complex_input else (1.0,)
    for idx in np.ndindex(*a.shape):
        for step in steps:
            hi, lo = a.copy(), a.copy()
            hi[idx] += eps * step
            lo[idx] -= eps * step
            with oar.no_grad():
                d = (float(make(_t(hi))) - float(make(_t(lo)))) / (2 * eps)
            num[idx] += d * step
    np.testing.assert_allclose(got, num, rtol=rtol, atol=atol)


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
@pytest.mark.parametrize("kind", ["real_spectrum", "complex_pair", "batch"])
def test_eig_gradient_matches_finite_differences(dtype, kind):
    rng = np.random.default_rng(5)
    if kind == "real_spectrum":
        a = rng.standard_normal((4, 4)) * 0.3 + np.diag([0.0, 2.0, 4.0, 6.0])
    elif kind == "complex_pair":
        a = np.array([[1.0, -2.0, 0.5], [2.0, 1.0, 0.0], [0.3, 0.1, 3.0]]) + rng.standard_normal((3, 3)) * 0.1
    else:
        a = rng.standard_normal((2, 3, 3)) * 0.3 + np.diag([0.0, 2.0, 4.0])
    if dtype == "complex128":
        a = a + 0.2j * rng.standard_normal(a.shape)
    c = [rng.standard_normal(s) for s in (a.shape[:-1], a.shape[:-1], a.shape)]

    def loss(x):
        re, im, mag = _eig_features(x)
        return (re * _t(c[0])).sum() + (im * _t(c[1])).sum() + (mag * _t(c[2])).sum()
    _fd_check(loss, a, dtype == "complex128")


def test_eig_gradient_dtype_is_the_input_dtype():
    x = _t(np.diag([1.0, 2.0, 3.0]) + 0.1, stop_gradient=False)
    w, _ = L.eig(x)
    oar.real(w).sum().backward()
    assert x.grad.dtype.name == "float64"
    np.testing.assert_allclose(x.grad.numpy(), np.eye(3), atol=1e-12)  # d trace = I


@pytest.mark.parametrize("fn", [L.eig, L.eigvals], ids=["eig", "eigvals"])
def test_eig_bad_inputs(fn):
    op = fn.__name__
    with pytest.raises(ValueError, match=f"{op}: x must be a stack of square matrices"):
        fn(_t(np.ones((2, 3))))
    with pytest.raises(ValueError, match=f"{op}: x must have rank >= 2"):
        fn(_t(np.ones(3)))
    with pytest.raises(TypeError, match=f"{op}: x must be float32 or float64 "
                                        r"\(or complex64/complex128\), got int64"):
        fn(_t(np.ones((2, 2), np.int64)))
    with pytest.raises(TypeError, match=f"{op}: x must be a Tensor"):
        fn(np.ones((2, 2)))
    with pytest.raises(ValueError, match=f"{op}: the input contains NaN or Inf"):
        fn(_t(np.array([[1.0, np.nan], [0.0, 1.0]])))


# ---- complex eigh / eigvalsh
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("uplo", ["L", "U"])
@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 3), (0, 2, 2), (1, 1)], ids=str)
def test_complex_eigh_matches_numpy(dtype, uplo, shape):
    rng = np.random.default_rng(2)
    a = _rand(rng, shape, dtype)  # not Hermitian: only the UPLO triangle may be read
    w, v = L.eigh(_t(a), UPLO=uplo)
    real = {"complex64": "float32", "complex128": "float64"}[dtype]
    assert w.dtype.name == real and v.dtype.name == dtype
    tol = TOL[dtype] * 10
    a64 = a.astype(np.complex128)
    np.testing.assert_allclose(w.numpy(), np.linalg.eigvalsh(a64, UPLO=uplo), atol=tol, rtol=tol)
    tri = np.tril(a64) if uplo == "L" else np.triu(a64)
    h = tri + np.conj(np.swapaxes(tri, -1, -2))
    # the triangle as Hermitian; LAPACK reads the diagonal's real part only
    h = h - np.eye(shape[-1]) * np.real(np.diagonal(a64, 0, -2, -1))[..., None, :]
    vn = v.numpy().astype(np.complex128)
    np.testing.assert_allclose(h @ vn, vn * w.numpy()[..., None, :], atol=tol * 10)
    np.testing.assert_allclose(np.conj(np.swapaxes(vn, -1, -2)) @ vn,
                               np.broadcast_to(np.eye(shape[-1]), vn.shape), atol=tol)
    np.testing.assert_allclose(L.eigvalsh(_t(a), UPLO=uplo).numpy(), w.numpy())
    np.testing.assert_allclose(oar.eigvalsh(_t(a), uplo).numpy(), w.numpy())


def test_complex_eigh_paddle_example():
    x = oar.to_tensor([[1, -2j], [2j, 5]])
    w, v = L.eigh(x, UPLO="L")
    assert w.dtype.name == "float32" and v.dtype.name == "complex64"
    np.testing.assert_allclose(w.numpy(), [0.17157286, 5.82842731], rtol=1e-6)
    np.testing.assert_allclose(v.numpy(), [[-0.92387950, -0.38268340],
                                           [0.38268340j, -0.92387950j]], atol=1e-6)


def test_complex_eigh_gradient_matches_finite_differences():
    rng = np.random.default_rng(9)
    a = rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3))
    cw, cv = rng.standard_normal(3), rng.standard_normal((3, 3))

    def loss(x):  # eigh of the Hermitian part, so that every perturbation stays Hermitian
        h = (x + oar.conj(x.transpose([1, 0]))) * 0.5
        w, v = L.eigh(h)
        return (w * _t(cw)).sum() + ((oar.real(v) ** 2 + oar.imag(v) ** 2) * _t(cv)).sum()
    _fd_check(loss, a, True)


def test_eigh_bad_inputs():
    with pytest.raises(ValueError, match="eigh: UPLO must be 'L' or 'U', got 'X'"):
        L.eigh(_t(np.eye(2)), UPLO="X")
    with pytest.raises(TypeError, match="eigvalsh: x must be float32 or float64 "
                                        r"\(or complex64/complex128\), got int32"):
        L.eigvalsh(_t(np.eye(2, dtype=np.int32)))
    with pytest.raises(ValueError, match="eigh: x must be a stack of square matrices"):
        L.eigh(_t(np.ones((2, 2, 3), np.complex64)))


# ---- svd: LAPACK on A itself gives Paddle's (and NumPy's) singular-vector signs
def test_svd_paddle_example_signs():
    x = oar.to_tensor([[1.0, 2.0], [1.0, 3.0], [4.0, 6.0]]).astype("float64")
    u, s, vh = L.svd(x)
    np.testing.assert_allclose(u.numpy(), [[-0.27364809, -0.21695147], [-0.37892198, -0.87112408],
                                           [-0.88404460, 0.44053933]], atol=1e-8)
    np.testing.assert_allclose(s.numpy(), [8.14753743, 0.78589688], atol=1e-8)
    np.testing.assert_allclose(vh.numpy(), [[-0.51411221, -0.85772294], [0.85772294, -0.51411221]],
                               atol=1e-8)


@pytest.mark.parametrize("shape", [(4, 3), (3, 5), (2, 4, 4)], ids=str)
@pytest.mark.parametrize("full", [False, True])
def test_svd_vectors_match_numpy(shape, full):
    a = np.random.default_rng(6).standard_normal(shape)
    u, s, vh = L.svd(_t(a), full_matrices=full)
    ru, rs, rvh = np.linalg.svd(a, full_matrices=full)
    np.testing.assert_allclose(s.numpy(), rs, atol=1e-12)
    k = min(shape[-2:])  # the vectors of nonzero singular values are unique up to sign
    np.testing.assert_allclose(u.numpy()[..., :k], ru[..., :k], atol=1e-10)
    np.testing.assert_allclose(vh.numpy()[..., :k, :], rvh[..., :k, :], atol=1e-10)


# ---- svd_lowrank / pca_lowrank
def _low_rank(rng, shape, r):
    *b, m, n = shape
    return rng.standard_normal((*b, m, r)) @ rng.standard_normal((*b, r, n))


@pytest.mark.parametrize("shape, q", [((6, 4), 3), ((4, 7), 3), ((2, 5, 5), 4), ((8, 3), None)],
                         ids=str)
def test_svd_lowrank_recovers_a_low_rank_matrix(shape, q):
    rng = np.random.default_rng(3)
    r = min(3, *shape[-2:]) if q is None else q
    a = _low_rank(rng, shape, r)
    u, s, v = L.svd_lowrank(_t(a), q=q)
    k = min(6, *shape[-2:]) if q is None else q
    assert list(u.shape) == [*shape[:-1], k] and list(s.shape) == [*shape[:-2], k]
    assert list(v.shape) == [*shape[:-2], shape[-1], k]
    rec = u.numpy() @ (s.numpy()[..., None] * np.swapaxes(v.numpy(), -1, -2))
    np.testing.assert_allclose(rec, a, atol=1e-9)
    np.testing.assert_allclose(s.numpy()[..., :r], np.linalg.svd(a, compute_uv=False)[..., :r],
                               atol=1e-9)


def test_svd_lowrank_with_mean_and_pca():
    rng = np.random.default_rng(8)
    a = _low_rank(rng, (7, 5), 2)
    mean = rng.standard_normal((1, 5))
    u, s, v = L.svd_lowrank(_t(a + mean), q=2, M=_t(mean))
    np.testing.assert_allclose(u.numpy() @ np.diag(s.numpy()) @ v.numpy().T, a, atol=1e-9)
    centered = a - a.mean(0, keepdims=True)
    u, s, v = L.pca_lowrank(_t(a), q=2)
    np.testing.assert_allclose(u.numpy() @ np.diag(s.numpy()) @ v.numpy().T, centered, atol=1e-9)
    u, s, v = _t(a).pca_lowrank(q=2, center=False)
    np.testing.assert_allclose(u.numpy() @ np.diag(s.numpy()) @ v.numpy().T, a, atol=1e-9)


def test_svd_lowrank_paddle_example():
    oar.seed(2024)
    x = oar.randn((5, 5), dtype="float64")
    u, s, v = L.svd_lowrank(x)
    np.testing.assert_allclose(s.numpy(), [4.11253399, 3.03227120, 2.45499752, 1.25602436,
                                           0.45825337], atol=1e-8)
    np.testing.assert_allclose(u.numpy()[:, 0], [-0.03586982, -0.38386839, -0.85977150,
                                                 0.18611503, 0.27841082], atol=1e-8)
    np.testing.assert_allclose(v.numpy()[:, 0], [0.46401347, -0.48927226, -0.20494730,
                                                 -0.69645001, 0.13512270], atol=1e-8)


def test_svd_lowrank_gradient_of_the_nuclear_norm():
    a = np.random.default_rng(11).standard_normal((4, 3))
    x = _t(a, stop_gradient=False)
    L.svd_lowrank(x, q=3)[1].sum().backward()  # sum of all singular values
    u, _, vh = np.linalg.svd(a, full_matrices=False)
    np.testing.assert_allclose(x.grad.numpy(), u @ vh, atol=1e-8)


@pytest.mark.parametrize("call, exc, msg", [
    (lambda x: L.svd_lowrank(x, q=5), ValueError, "svd_lowrank: q must be an int in [0, min(m, n)] = [0, 3]"),
    (lambda x: L.svd_lowrank(x, q=-1), ValueError, "got -1"),
    (lambda x: L.svd_lowrank(x, q=2.0), ValueError, "got 2.0"),
    (lambda x: L.svd_lowrank(x, niter=-1), ValueError, "svd_lowrank: niter must be an int in [0, 1000]"),
    (lambda x: L.pca_lowrank(x, niter=2 ** 40), ValueError, "pca_lowrank: niter must be an int"),
    (lambda x: L.pca_lowrank(x, center="yes"), TypeError, "pca_lowrank: center must be a bool"),
    (lambda x: L.svd_lowrank(x, M=_t(np.ones((1, 3), np.float32))), TypeError,
     "svd_lowrank: M must be a Tensor of x's dtype float64"),
    (lambda x: L.svd_lowrank(x, M=_t(np.ones((2, 3)))), ValueError,
     "svd_lowrank: M of shape [2, 3] cannot be broadcast to x's shape [4, 3]"),
    (lambda x: L.svd_lowrank(np.ones((4, 3))), TypeError, "svd_lowrank: x must be a Tensor"),
    (lambda x: L.pca_lowrank(_t(np.ones(3))), ValueError, "pca_lowrank: x must have rank >= 2"),
])
def test_lowrank_bad_inputs(call, exc, msg):
    with pytest.raises(exc, match=msg.replace("[", r"\[").replace("]", r"\]").replace("(", r"\(")
                       .replace(")", r"\)")):
        call(_t(np.ones((4, 3))))
