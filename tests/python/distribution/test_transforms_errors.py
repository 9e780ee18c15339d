"""Transforms (forward/inverse against NumPy, log-det-Jacobians against autograd and
numerical Jacobians), bad inputs that must raise errors naming the class and argument,
the samplers oar.standard_gamma / oar.binomial, and the lazy import."""
import subprocess
import sys

import numpy as np
import pytest
from scipy import special

import oar
import oar.distribution as D

RNG = np.random.default_rng(3)


def T(a, grad=False):
    t = oar.to_tensor(np.asarray(a, dtype="float64"))
    t.stop_gradient = not grad
    return t


# elementwise bijections: (transform, numpy forward, numpy inverse, domain sampler)
ELEMENTWISE = {
    "Exp": (D.ExpTransform(), np.exp, np.log, lambda s: RNG.normal(size=s)),
    "Affine": (D.AffineTransform(T(0.7), T(-2.5)), lambda x: 0.7 - 2.5 * x,
               lambda y: (y - 0.7) / -2.5, lambda s: RNG.normal(size=s)),
    "Power": (D.PowerTransform(T(2.5)), lambda x: x ** 2.5, lambda y: y ** 0.4,
              lambda s: RNG.uniform(0.1, 3, s)),
    "Sigmoid": (D.SigmoidTransform(), special.expit, special.logit,
                lambda s: RNG.normal(size=s) * 3),
    "Tanh": (D.TanhTransform(), np.tanh, np.arctanh, lambda s: RNG.normal(size=s)),
}


@pytest.mark.parametrize("name", sorted(ELEMENTWISE))
@pytest.mark.parametrize("shape", [(3, 4), (0, 2), ()])
def test_elementwise_transform(name, shape):
    t, fwd, inv, dom = ELEMENTWISE[name]
    x = dom(shape)
    y = t.forward(T(x))
    np.testing.assert_allclose(y.numpy(), fwd(x), rtol=1e-12)
    np.testing.assert_allclose(t.inverse(y).numpy(), x, rtol=1e-9, atol=1e-12)
    xt = T(x, grad=True)
    if x.size:
        (dydx,) = oar.grad(t.forward(xt).sum(), [xt])
        want = np.log(np.abs(dydx.numpy()))
    else:
        want = np.zeros(shape)
    got = t.forward_log_det_jacobian(T(x)).numpy()
    np.testing.assert_allclose(np.broadcast_to(got, shape), want, rtol=1e-9, atol=1e-12)
    ild = t.inverse_log_det_jacobian(y).numpy()
    np.testing.assert_allclose(np.broadcast_to(ild, shape), -want, rtol=1e-9, atol=1e-9)
    assert t(T(x)).shape == list(shape)


def test_tanh_log_det_is_stable_for_large_inputs():
    x = np.array([-30.0, -5.0, 0.0, 5.0, 30.0])
    got = D.TanhTransform().forward_log_det_jacobian(T(x)).numpy()
    want = 2 * (np.log(2) - np.abs(x) - np.log1p(np.exp(-2 * np.abs(x))))
    np.testing.assert_allclose(got, want, rtol=1e-12)


def _num_jacobian(f, x, h=1e-6):
    cols = []
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = h
        cols.append((f(x + e) - f(x - e)) / (2 * h))
    return np.stack(cols, -1)


def test_stick_breaking():
    t = D.StickBreakingTransform()
    x = RNG.normal(size=(2, 3))
    y = t.forward(T(x)).numpy()
    assert y.shape == (2, 4)
    np.testing.assert_allclose(y.sum(-1), 1.0, rtol=1e-12)
    assert np.all(y > 0)
    np.testing.assert_allclose(t.inverse(T(y)).numpy(), x, rtol=1e-9, atol=1e-12)
    fld = t.forward_log_det_jacobian(T(x)).numpy()
    for i in range(2):  # Jacobian of x -> y[:K] (the last piece is determined by the others)
        J = _num_jacobian(lambda v: t.forward(T(v)).numpy()[:-1], x[i])
        np.testing.assert_allclose(fld[i], np.linalg.slogdet(J)[1], rtol=1e-6)
    assert t.forward_shape((5, 3)) == (5, 4) and t.inverse_shape((5, 4)) == (5, 3)


def test_softmax_abs_reshape_stack_chain_independent():
    x = RNG.normal(size=(2, 3))
    sm = D.SoftmaxTransform()
    np.testing.assert_allclose(sm.forward(T(x)).numpy(), special.softmax(x, -1), rtol=1e-12)
    np.testing.assert_allclose(sm.inverse(sm.forward(T(x))).numpy(),
                               x - special.logsumexp(x, -1, keepdims=True), rtol=1e-10)
    with pytest.raises(NotImplementedError, match="SoftmaxTransform"):
        sm.forward_log_det_jacobian(T(x))

    ab = D.AbsTransform()
    np.testing.assert_allclose(ab.forward(T(x)).numpy(), np.abs(x))
    neg, posv = ab.inverse(T(np.abs(x)))
    np.testing.assert_allclose(neg.numpy(), -np.abs(x))
    np.testing.assert_allclose(posv.numpy(), np.abs(x))

    rs = D.ReshapeTransform((2, 3), (3, 2))
    z = RNG.normal(size=(4, 2, 3))
    np.testing.assert_allclose(rs.forward(T(z)).numpy(), z.reshape(4, 3, 2))
    np.testing.assert_allclose(rs.inverse(rs.forward(T(z))).numpy(), z)
    assert rs.forward_log_det_jacobian(T(z)).shape == [4]
    assert rs.forward_shape((4, 2, 3)) == (4, 3, 2)
    with pytest.raises(ValueError, match="ReshapeTransform"):
        D.ReshapeTransform((2, 3), (4, 2))
    with pytest.raises(ValueError, match="ReshapeTransform"):
        rs.forward(T(np.ones((4, 3, 2))))

    st = D.StackTransform([D.ExpTransform(), D.PowerTransform(T(2.0))], axis=1)
    s = RNG.uniform(0.5, 2, (3, 2))
    want = np.stack([np.exp(s[:, 0]), s[:, 1] ** 2], 1)
    np.testing.assert_allclose(st.forward(T(s)).numpy(), want, rtol=1e-12)
    np.testing.assert_allclose(st.inverse(T(want)).numpy(), s, rtol=1e-12)
    np.testing.assert_allclose(st.forward_log_det_jacobian(T(s)).numpy(),
                               np.stack([s[:, 0], np.log(2 * s[:, 1])], 1), rtol=1e-12)
    with pytest.raises(ValueError, match="StackTransform"):
        st.forward(T(np.ones((3, 3))))

    ch = D.ChainTransform([D.AffineTransform(T(1.0), T(2.0)), D.ExpTransform()])
    np.testing.assert_allclose(ch.forward(T(x)).numpy(), np.exp(1 + 2 * x), rtol=1e-12)
    np.testing.assert_allclose(ch.inverse(ch.forward(T(x))).numpy(), x, rtol=1e-12)
    np.testing.assert_allclose(ch.forward_log_det_jacobian(T(x)).numpy(),
                               np.log(2) + 1 + 2 * x, rtol=1e-12)

    ind = D.IndependentTransform(D.ExpTransform(), 1)
    np.testing.assert_allclose(ind.forward_log_det_jacobian(T(x)).numpy(), x.sum(-1))
    chain2 = D.ChainTransform([D.StickBreakingTransform(), D.ExpTransform()])
    assert chain2.forward_log_det_jacobian(T(x)).shape == [2]  # exp's summed over the event

    # calling a transform on a distribution / a transform
    td = D.ExpTransform()(D.Normal(T(0.0), T(1.0)))
    assert isinstance(td, D.TransformedDistribution)
    assert isinstance(D.ExpTransform()(D.SigmoidTransform()), D.ChainTransform)


BAD = [
    (lambda: D.Normal(0.0, -1.0), ValueError, r"Normal.*'scale'.*positive.*-1"),
    (lambda: D.Normal(T([0.0, 1.0]), T([1.0, 1.0, 1.0])), ValueError, r"Normal.*broadcast"),
    (lambda: D.Normal("a", 1.0), TypeError, r"Normal.*'loc'"),
    (lambda: D.Normal(oar.to_tensor([True]), 1.0), TypeError, r"Normal.*'loc'.*bool"),
    (lambda: D.Uniform(2.0, 1.0), ValueError, r"Uniform.*'high'"),
    (lambda: D.Cauchy(0.0, 0.0), ValueError, r"Cauchy.*'scale'"),
    (lambda: D.Laplace(0.0, -2.0), ValueError, r"Laplace.*'scale'"),
    (lambda: D.Gumbel(0.0, -2.0), ValueError, r"Gumbel.*'scale'"),
    (lambda: D.Exponential(T([1.0, 0.0])), ValueError, r"Exponential.*'rate'.*0\.0"),
    (lambda: D.Gamma(-1.0, 1.0), ValueError, r"Gamma.*'concentration'"),
    (lambda: D.Gamma(1.0, -1.0), ValueError, r"Gamma.*'rate'"),
    (lambda: D.Chi2(-3.0), ValueError, r"Chi2.*'concentration'"),
    (lambda: D.Beta(0.0, 1.0), ValueError, r"Beta.*'alpha'"),
    (lambda: D.StudentT(-1.0, 0.0, 1.0), ValueError, r"StudentT.*'df'"),
    (lambda: D.Dirichlet(T(1.0)), ValueError, r"Dirichlet.*'concentration'.*1-D"),
    (lambda: D.Dirichlet(T([1.0, -1.0])), ValueError, r"Dirichlet.*'concentration'"),
    (lambda: D.Bernoulli(1.5), ValueError, r"Bernoulli.*'probs'.*1\.5"),
    (lambda: D.Geometric(0.0), ValueError, r"Geometric.*'probs'"),
    (lambda: D.Poisson(-1.0), ValueError, r"Poisson.*'rate'"),
    (lambda: D.Binomial(2.5, 0.5), TypeError, r"Binomial.*'total_count'"),
    (lambda: D.Binomial(-2, T(0.5)), ValueError, r"Binomial.*'total_count'"),
    (lambda: D.Multinomial(0, T([0.5, 0.5])), ValueError, r"Multinomial.*'total_count'"),
    (lambda: D.ContinuousBernoulli(T(0.3), lims=(0.6, 0.7)), ValueError,
     r"ContinuousBernoulli.*'lims'"),
    (lambda: D.MultivariateNormal(T([0.0, 0.0])), ValueError, r"MultivariateNormal.*exactly one"),
    (lambda: D.MultivariateNormal(T([0.0, 0.0]), covariance_matrix=T(np.eye(3))), ValueError,
     r"MultivariateNormal.*'covariance_matrix'"),
    (lambda: D.MultivariateNormal(T([0.0, 0.0]), covariance_matrix=T([[1.0, 2.0], [2.0, 1.0]])),
     ValueError, r"MultivariateNormal.*'covariance_matrix'.*positive definite"),
    (lambda: D.LKJCholesky(1), ValueError, r"LKJCholesky.*'dim'"),
    (lambda: D.LKJCholesky(3, sample_method="x"), ValueError, r"LKJCholesky.*'sample_method'"),
    (lambda: D.Independent(D.Normal(0.0, 1.0), 1), ValueError,
     r"Independent.*'reinterpreted_batch_rank'"),
    (lambda: D.Normal(0.0, 1.0).sample([-1]), ValueError, r"Normal.sample.*shape"),
    (lambda: D.Normal(0.0, 1.0).sample("3"), TypeError, r"Normal.sample.*shape"),
    (lambda: D.Bernoulli(0.3).rsample([2], temperature=0.0), ValueError,
     r"Bernoulli.rsample.*'temperature'"),
    (lambda: D.Categorical(T([1.0, 2.0])).probs(oar.to_tensor([2, 5])), ValueError,
     r"Categorical.probs.*'value'"),
    (lambda: D.ExpTransform().forward(np.ones(2)), TypeError, r"ExpTransform.forward.*'x'"),
    (lambda: D.AffineTransform(0.0, 1.0), TypeError, r"AffineTransform.*'loc'"),
    (lambda: D.IndependentTransform(D.ExpTransform(), 0), ValueError,
     r"IndependentTransform.*'reinterpreted_batch_rank'"),
    (lambda: D.ChainTransform([1]), TypeError, r"ChainTransform.*'transforms'"),
    (lambda: D.TransformedDistribution(D.Normal(0.0, 1.0), [D.StickBreakingTransform()]),
     ValueError, r"TransformedDistribution.*event rank"),
    (lambda: oar.standard_gamma(T([1.0, -1.0])), ValueError, r"standard_gamma.*x"),
    (lambda: oar.binomial(oar.to_tensor([3]), T([1.5])), ValueError, r"binomial.*prob"),
    (lambda: oar.binomial(T([3.5]), T([0.5])), ValueError, r"binomial.*whole numbers.*3.5"),
]


@pytest.mark.parametrize("i", range(len(BAD)))
def test_bad_inputs_raise_naming_class_and_argument(i):
    fn, exc, pattern = BAD[i]
    with pytest.raises(exc, match=pattern):
        fn()


def test_dtypes():
    d = D.Normal(0.0, 1.0)
    assert d.loc.dtype == oar.float32 and d.sample([2]).dtype == oar.float32
    d64 = D.Normal(T(0.0), 1.0)
    assert d64.scale.dtype == oar.float64 and d64.rsample([2]).dtype == oar.float64
    assert D.Normal(np.array([0.0]), np.array([1.0])).loc.dtype == oar.float64
    assert d.log_prob(T(0.5)).dtype == oar.float32  # value follows the parameters
    g = oar.standard_gamma(oar.full([3], 2.0, dtype="float32"))
    assert g.dtype == oar.float32 and g.shape == [3]
    b = oar.binomial(oar.to_tensor([[5], [10]]), T([0.2, 0.5, 1.0]))
    assert b.dtype == oar.int64 and b.shape == [2, 3]
    assert np.all(b.numpy()[:, 2] == [5, 10])
    assert oar.binomial(oar.to_tensor(np.zeros((0,), "int64")), T(0.5)).shape == [0]


def test_seeded_samples_repeat():
    oar.seed(12)
    a = D.Gamma(T([0.5, 3.0]), T(1.0)).sample([5]).numpy()
    oar.seed(12)
    b = D.Gamma(T([0.5, 3.0]), T(1.0)).sample([5]).numpy()
    np.testing.assert_array_equal(a, b)


def test_import_oar_does_not_import_distribution():
    code = ("import sys, oar; assert 'oar.distribution' not in sys.modules; "
            "d = oar.distribution.Normal(0.0, 1.0); assert 'oar.distribution' in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)
