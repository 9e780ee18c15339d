"""oar.distribution against scipy.stats in float64: log_prob, prob, cdf, icdf, entropy,
mean and variance on random parameters with broadcast batch shapes (and 0-size ones)."""
import numpy as np
import pytest
from scipy import integrate, special, stats

import oar
import oar.distribution as D

RNG = np.random.default_rng(20261123)


def T(a):
    return oar.to_tensor(np.asarray(a, dtype="float64"))


def close(got, want, rtol=1e-9, atol=1e-11):
    got = got.numpy() if isinstance(got, oar.Tensor) else np.asarray(got)
    want = np.asarray(want, dtype="float64")
    assert got.dtype == np.float64, got.dtype
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


def pos(*shape, lo=0.3, hi=3.0):
    return RNG.uniform(lo, hi, shape)


# (name, build(params) -> (oar dist, scipy frozen), params (shapes [3, 1] and [4] broadcast
# to batch [3, 4]), value sampler, has icdf)
CASES = {
    "Normal": (lambda a, b: (D.Normal(T(a), T(b)), stats.norm(a, b)),
               (RNG.normal(size=(3, 1)), pos(4)), lambda s: RNG.normal(size=s) * 2, True),
    "Uniform": (lambda a, b: (D.Uniform(T(a), T(a + b)), stats.uniform(a, b)),
                (RNG.normal(size=(3, 1)), pos(4)), lambda s: RNG.uniform(-1.5, 4, s), True),
    "Cauchy": (lambda a, b: (D.Cauchy(T(a), T(b)), stats.cauchy(a, b)),
               (RNG.normal(size=(3, 1)), pos(4)), lambda s: RNG.normal(size=s) * 3, False),
    "Laplace": (lambda a, b: (D.Laplace(T(a), T(b)), stats.laplace(a, b)),
                (RNG.normal(size=(3, 1)), pos(4)), lambda s: RNG.normal(size=s) * 2, True),
    "Gumbel": (lambda a, b: (D.Gumbel(T(a), T(b)), stats.gumbel_r(a, b)),
               (RNG.normal(size=(3, 1)), pos(4)), lambda s: RNG.normal(size=s) * 2, False),
    "Exponential": (lambda r: (D.Exponential(T(r)), stats.expon(scale=1 / r)),
                    (pos(3, 4),), lambda s: RNG.uniform(0.01, 4, s), True),
    "Gamma": (lambda a, b: (D.Gamma(T(a), T(b)), stats.gamma(a, scale=1 / b)),
              (pos(3, 1), pos(4)), lambda s: RNG.uniform(0.05, 5, s), False),
    "Chi2": (lambda k: (D.Chi2(T(k)), stats.chi2(k)),
             (pos(3, 4, lo=0.5, hi=6),), lambda s: RNG.uniform(0.05, 8, s), False),
    "Beta": (lambda a, b: (D.Beta(T(a), T(b)), stats.beta(a, b)),
             (pos(3, 1), pos(4)), lambda s: RNG.uniform(0.01, 0.99, s), False),
    "StudentT": (lambda n, a, b: (D.StudentT(T(n), T(a), T(b)), stats.t(n, a, b)),
                 (pos(3, 1, lo=2.5, hi=9), RNG.normal(size=(4,)), pos(4)),
                 lambda s: RNG.normal(size=s) * 2, False),
    "LogNormal": (lambda a, b: (D.LogNormal(T(a), T(b)), stats.lognorm(b, scale=np.exp(a))),
                  (RNG.normal(size=(3, 1)) * 0.5, pos(4, hi=1.5)),
                  lambda s: RNG.uniform(0.05, 6, s), True),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_against_scipy(name):
    build, params, values, has_icdf = CASES[name]
    d, ref = build(*params)
    batch = np.broadcast_shapes(*[np.shape(p) for p in params])
    assert tuple(d.batch_shape) == batch and tuple(d.event_shape) == ()
    x = values(batch)
    close(d.log_prob(T(x)), ref.logpdf(x))
    close(d.prob(T(x)), ref.pdf(x))
    close(d.entropy(), np.broadcast_to(ref.entropy(), batch), rtol=1e-8)
    if hasattr(d, "cdf"):
        close(d.cdf(T(x)), ref.cdf(x))
    if has_icdf:
        q = RNG.uniform(0.02, 0.98, batch)
        close(d.icdf(T(q)), ref.ppf(q), rtol=1e-8)
    if name != "Cauchy":
        close(d.mean, np.broadcast_to(ref.mean(), batch), rtol=1e-8)
        close(d.variance, np.broadcast_to(ref.var(), batch), rtol=1e-8)
        close(d.stddev, np.broadcast_to(ref.std(), batch), rtol=1e-8)


def test_cauchy_has_no_moments():
    with pytest.raises(ValueError, match="Cauchy.*mean"):
        _ = D.Cauchy(0.0, 1.0).mean


def test_zero_size_batches():
    for d in (D.Normal(T(np.zeros((0, 3))), T(np.ones(3))), D.Gamma(T(np.ones((2, 0))), 1.0),
              D.Beta(T(np.ones(0)), T(np.ones(0)))):
        assert 0 in d.batch_shape
        assert d.log_prob(T(np.full(d.batch_shape, 0.5))).shape == list(d.batch_shape)
        assert d.entropy().shape == list(d.batch_shape)
        assert d.sample([2]).shape == [2] + list(d.batch_shape)


def test_continuous_bernoulli_against_integrals():
    lam = np.array([0.02, 0.2, 0.4995, 0.5, 0.5004, 0.73, 0.97])
    d = D.ContinuousBernoulli(T(lam))

    def pdf(x, p):
        return np.exp(x * np.log(p) + (1 - x) * np.log1p(-p) + np.log(_cb_norm(p)))
    x = np.array([0.1, 0.35, 0.5, 0.8, 0.95, 0.05, 0.6])
    close(d.prob(T(x)), pdf(x, lam), rtol=1e-6)
    mean = [integrate.quad(lambda t: t * pdf(t, p), 0, 1, epsabs=1e-13)[0] for p in lam]
    var = [integrate.quad(lambda t: (t - m) ** 2 * pdf(t, p), 0, 1, epsabs=1e-13)[0]
           for p, m in zip(lam, mean)]
    ent = [integrate.quad(lambda t: -pdf(t, p) * np.log(pdf(t, p)), 0, 1, epsabs=1e-13)[0]
           for p in lam]
    cdf = [integrate.quad(lambda t: pdf(t, p), 0, xi)[0] for p, xi in zip(lam, x)]
    close(d.mean, mean, rtol=1e-6, atol=1e-8)
    close(d.variance, var, rtol=1e-5, atol=1e-8)
    close(d.entropy(), ent, rtol=1e-5, atol=1e-7)
    close(d.cdf(T(x)), cdf, rtol=1e-6, atol=1e-8)
    close(d.icdf(d.cdf(T(x))), x, rtol=1e-6, atol=1e-8)
    close(d.cdf(T(np.full(7, -0.5))), np.zeros(7))
    close(d.cdf(T(np.full(7, 1.5))), np.ones(7))


def _cb_norm(p):
    p = np.asarray(p, dtype="float64")
    near = np.abs(p - 0.5) < 1e-3
    safe = np.where(near, 0.25, p)
    exact = 2 * np.arctanh(1 - 2 * safe) / (1 - 2 * safe)
    d = p - 0.5
    return np.where(near, 2 + 8 / 3 * d * d, exact)  # exp of the Taylor series, to O(d^4)


def test_discrete_against_scipy():
    p = RNG.uniform(0.05, 0.95, (3, 1))
    k = RNG.integers(0, 6, (3, 4)).astype("float64")
    b = D.Bernoulli(T(p))
    kb = (k > 2).astype("float64")
    close(b.log_prob(T(kb)), stats.bernoulli(p).logpmf(kb))
    close(b.entropy(), stats.bernoulli(p).entropy())
    close(b.mean, p)
    close(b.variance, p * (1 - p))
    b0 = D.Bernoulli(T(p[0, 0]))
    close(b0.cdf(T([-0.5, 0.0, 0.5, 1.0, 2.0])), stats.bernoulli(p[0, 0]).cdf([-0.5, 0, 0.5, 1, 2]))

    g = D.Geometric(T(p))
    ref = stats.geom(p, loc=-1)  # failures before the first success
    close(g.log_pmf(T(k)), ref.logpmf(k))
    close(g.pmf(T(k)), ref.pmf(k))
    close(g.cdf(T(k)), ref.cdf(k))
    close(g.entropy(), ref.entropy(), rtol=1e-8)
    close(g.mean, ref.mean())
    close(g.variance, ref.var())

    rate = RNG.uniform(0.2, 40, (3, 1))
    po = D.Poisson(T(rate))
    close(po.log_prob(T(k)), stats.poisson(rate).logpmf(k))
    close(po.entropy(), stats.poisson(rate).entropy(), rtol=1e-8)
    close(po.mean, rate)
    close(po.variance, rate)

    n = np.array([[5.0], [12.0], [30.0]])
    bi = D.Binomial(T(n), T(p.reshape(3, 1)))
    close(bi.log_prob(T(k)), stats.binom(n, p).logpmf(k))
    close(bi.entropy(), stats.binom(n, p).entropy(), rtol=1e-8)
    close(bi.mean, n * p)
    close(bi.variance, n * p * (1 - p))
    bi_int = D.Binomial(7, T(np.array([0.0, 0.3, 1.0])))
    close(bi_int.log_prob(T([0.0, 4.0, 7.0])), stats.binom(7, [0, 0.3, 1]).logpmf([0, 4, 7]))


def test_categorical():
    w = RNG.uniform(0.1, 2.0, (2, 5))
    c = D.Categorical(T(w))
    assert c.batch_shape == (2,) and c.event_shape == ()
    v = T(np.array([[0, 4, 2], [1, 1, 3]])).astype("int64")
    probs = w / w.sum(-1, keepdims=True)  # Paddle's probs/log_prob normalize by the sum
    close(c.probs(v), np.take_along_axis(probs, v.numpy(), -1))
    close(c.log_prob(v), np.log(np.take_along_axis(probs, v.numpy(), -1)))
    sm = special.softmax(w, -1)  # entropy / KL / sample use softmax(logits)
    close(c.entropy(), -(sm * np.log(sm)).sum(-1))
    w2 = RNG.uniform(0.1, 2.0, (2, 5))
    sm2 = special.softmax(w2, -1)
    close(c.kl_divergence(D.Categorical(T(w2))),
          (sm * np.log(sm / sm2)).sum(-1, keepdims=True))


def test_multivariate():
    k = 3
    a = RNG.normal(size=(2, k, k))
    cov = a @ a.transpose(0, 2, 1) + k * np.eye(k)
    loc = RNG.normal(size=(2, k))
    x = RNG.normal(size=(4, 2, k))
    for kw in ({"covariance_matrix": T(cov)}, {"precision_matrix": T(np.linalg.inv(cov))},
               {"scale_tril": T(np.linalg.cholesky(cov))}):
        m = D.MultivariateNormal(T(loc), **kw)
        assert m.batch_shape == (2,) and m.event_shape == (k,)
        want = np.stack([stats.multivariate_normal(loc[i], cov[i]).logpdf(x[:, i])
                         for i in range(2)], 1)
        close(m.log_prob(T(x)), want, rtol=1e-8)
        close(m.entropy(), [stats.multivariate_normal(loc[i], cov[i]).entropy()
                            for i in range(2)], rtol=1e-8)
        close(m.mean, loc)
        close(m.variance, np.diagonal(cov, axis1=1, axis2=2), rtol=1e-8)
        close(m.covariance_matrix, cov, rtol=1e-8)

    alpha = RNG.uniform(0.5, 3, (2, 4))
    dr = D.Dirichlet(T(alpha))
    assert dr.batch_shape == (2,) and dr.event_shape == (4,)
    xs = RNG.dirichlet(np.ones(4), size=2)
    close(dr.log_prob(T(xs)), [stats.dirichlet(alpha[i]).logpdf(xs[i]) for i in range(2)],
          rtol=1e-8)
    close(dr.entropy(), [stats.dirichlet(alpha[i]).entropy() for i in range(2)], rtol=1e-8)
    close(dr.mean, alpha / alpha.sum(-1, keepdims=True))
    close(dr.variance, np.stack([stats.dirichlet(alpha[i]).var() for i in range(2)]))

    pm = RNG.uniform(0.1, 1, (2, 3))
    mn = D.Multinomial(6, T(pm))
    pn = pm / pm.sum(-1, keepdims=True)
    cnt = np.array([[1.0, 2.0, 3.0], [6.0, 0.0, 0.0]])
    close(mn.log_prob(T(cnt)), [stats.multinomial(6, pn[i]).logpmf(cnt[i]) for i in range(2)])
    close(mn.entropy(), [stats.multinomial(6, pn[i]).entropy() for i in range(2)], rtol=1e-8)
    close(mn.mean, 6 * pn)
    close(mn.variance, 6 * pn * (1 - pn))


def test_lkj_log_prob_normalizes_in_2d():
    """For dim 2, L = [[1, 0], [r, sqrt(1 - r^2)]]: the density of r must integrate to 1."""
    for conc in (0.5, 1.0, 3.0):
        d = D.LKJCholesky(2, T(conc))

        def density(r):
            L = np.array([[1.0, 0.0], [r, np.sqrt(1 - r * r)]])
            return float(d.log_prob(T(L)).exp())
        total = integrate.quad(density, -1, 1)[0]
        assert abs(total - 1.0) < 1e-6, (conc, total)


def test_independent_and_transformed():
    loc, scale = RNG.normal(size=(3, 4)), pos(3, 4)
    base = D.Normal(T(loc), T(scale))
    ind = D.Independent(base, 1)
    assert ind.batch_shape == (3,) and ind.event_shape == (4,)
    x = RNG.normal(size=(3, 4))
    close(ind.log_prob(T(x)), stats.norm(loc, scale).logpdf(x).sum(-1))
    close(ind.entropy(), stats.norm(loc, scale).entropy().sum(-1))
    td = D.TransformedDistribution(base, [D.AffineTransform(T(1.5), T(2.0)), D.ExpTransform()])
    y = RNG.uniform(0.5, 30, (3, 4))
    # Y = exp(1.5 + 2 X): log Y ~ Normal(1.5 + 2 loc, 2 scale)
    close(td.log_prob(T(y)), stats.lognorm(2 * scale, scale=np.exp(1.5 + 2 * loc)).logpdf(y),
          rtol=1e-8)
    st = D.TransformedDistribution(D.Independent(base, 1), [D.StickBreakingTransform()])
    assert st.event_shape == (5,) and st.batch_shape == (3,)
    assert st.sample([2]).shape == [2, 3, 5]


def test_discrete_log_prob_outside_the_support_is_minus_inf():
    k = T([-1.0, 0.0, 3.0, 4.0])
    bi = D.Binomial(3, T(0.4)).log_prob(k).numpy()
    np.testing.assert_allclose(bi, stats.binom(3, 0.4).logpmf([-1, 0, 3, 4]))
    assert np.isneginf(bi[[0, 3]]).all()
    np.testing.assert_allclose(D.Poisson(T(2.0)).log_prob(k).numpy(),
                               stats.poisson(2.0).logpmf([-1, 0, 3, 4]))
    np.testing.assert_allclose(D.Geometric(T(0.3)).log_prob(k).numpy(),
                               stats.geom(0.3, loc=-1).logpmf([-1, 0, 3, 4]))


def test_student_t_moments_where_they_do_not_exist():
    d = D.StudentT(T([0.8, 1.5, 4.0]), T(2.0), T(3.0))
    np.testing.assert_array_equal(np.isnan(d.mean.numpy()), [True, False, False])
    np.testing.assert_allclose(d.mean.numpy()[1:], [2.0, 2.0])
    var = d.variance.numpy()
    assert np.isnan(var[0]) and np.isposinf(var[1])
    np.testing.assert_allclose(var[2], 9.0 * 4.0 / 2.0)


def test_transformed_log_prob_with_an_event_changing_transform():
    """Y = StickBreaking(X), X ~ Independent(Normal, 1): log p(y) = log p(x) - log|det J|."""
    loc, scale = RNG.normal(size=(2, 3)), pos(2, 3)
    td = D.TransformedDistribution(D.Independent(D.Normal(T(loc), T(scale)), 1),
                                   [D.StickBreakingTransform()])
    x = RNG.normal(size=(2, 3))
    t = D.StickBreakingTransform()
    y = t.forward(T(x))
    want = stats.norm(loc, scale).logpdf(x).sum(-1) - t.forward_log_det_jacobian(T(x)).numpy()
    close(td.log_prob(y), want, rtol=1e-8)
