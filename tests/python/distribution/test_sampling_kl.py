"""Sampling (Kolmogorov-Smirnov and moment tests on large float64 samples), rsample
gradients against finite differences, and KL divergences against closed forms, exact
sums or Monte-Carlo estimates."""
import numpy as np
import pytest
from scipy import stats

import oar
import oar.distribution as D

RNG = np.random.default_rng(7)
N = 40000


def T(a, grad=False):
    t = oar.to_tensor(np.asarray(a, dtype="float64"))
    t.stop_gradient = not grad
    return t


# KS test: with N = 40000 a wrong parameter by a few percent gives p < 1e-6; the
# threshold 1e-4 fails a correct sampler once in 10,000 runs (and the seed is fixed).
KS = {
    "Normal": (lambda: D.Normal(T(1.5), T(0.7)), stats.norm(1.5, 0.7).cdf),
    "Uniform": (lambda: D.Uniform(T(-1.0), T(2.5)), stats.uniform(-1, 3.5).cdf),
    "Cauchy": (lambda: D.Cauchy(T(0.3), T(1.7)), stats.cauchy(0.3, 1.7).cdf),
    "Laplace": (lambda: D.Laplace(T(-0.4), T(0.9)), stats.laplace(-0.4, 0.9).cdf),
    "Gumbel": (lambda: D.Gumbel(T(0.5), T(2.0)), stats.gumbel_r(0.5, 2.0).cdf),
    "Exponential": (lambda: D.Exponential(T(2.5)), stats.expon(scale=0.4).cdf),
    "Gamma_small": (lambda: D.Gamma(T(0.4), T(2.0)), stats.gamma(0.4, scale=0.5).cdf),
    "Gamma_large": (lambda: D.Gamma(T(7.5), T(0.5)), stats.gamma(7.5, scale=2.0).cdf),
    "Chi2": (lambda: D.Chi2(T(3.0)), stats.chi2(3.0).cdf),
    "Beta": (lambda: D.Beta(T(0.6), T(2.5)), stats.beta(0.6, 2.5).cdf),
    "StudentT": (lambda: D.StudentT(T(4.0), T(1.0), T(2.0)), stats.t(4.0, 1.0, 2.0).cdf),
    "LogNormal": (lambda: D.LogNormal(T(0.2), T(0.6)), stats.lognorm(0.6, scale=np.exp(0.2)).cdf),
    "ContinuousBernoulli": (lambda: D.ContinuousBernoulli(T(0.8)), None),
}


@pytest.mark.parametrize("name", sorted(KS))
def test_sample_distribution(name):
    oar.seed(11)
    build, cdf = KS[name]
    d = build()
    s = d.sample([N])
    assert s.shape == [N] and s.dtype == oar.float64 and s.stop_gradient
    if cdf is None:
        cdf = lambda x: d.cdf(T(x)).numpy()  # noqa: E731  (checked against integrals elsewhere)
    p = stats.kstest(s.numpy(), cdf).pvalue
    assert p > 1e-4, f"{name}: KS p-value {p}"


def test_sample_shapes_follow_paddle():
    d = D.Normal(T(np.zeros((2, 3))), T(1.0))
    assert d.sample().shape == [2, 3]
    assert d.sample([4]).shape == [4, 2, 3]
    assert d.rsample((4, 5)).shape == [4, 5, 2, 3]
    assert D.Normal(0.0, 1.0).sample([3]).shape == [3]
    assert D.Dirichlet(T(np.ones((2, 4)))).sample([5]).shape == [5, 2, 4]
    assert D.MultivariateNormal(T(np.zeros(3)), scale_tril=T(np.eye(3))).sample([2]).shape == [2, 3]
    assert D.Categorical(T(np.ones((2, 4)))).sample([5, 3]).shape == [5, 3, 2]
    assert D.Multinomial(4, T(np.ones(3))).sample([2]).shape == [2, 3]
    assert D.Normal(0.0, 1.0).sample([0]).shape == [0]


def _check_moments(s, mean, var, axis=0):
    s = np.asarray(s, dtype="float64")
    se = np.sqrt(np.asarray(var) / s.shape[axis])
    assert np.all(np.abs(s.mean(axis) - mean) < 5 * se + 1e-12), (s.mean(axis), mean, se)
    # the sample variance's standard error is about var * sqrt(2 / n) (+ kurtosis; 8x margin)
    assert np.all(np.abs(s.var(axis) - var) < 8 * np.asarray(var) * np.sqrt(2 / s.shape[axis])
                  + 1e-12), (s.var(axis), var)


def test_discrete_and_multivariate_sample_moments():
    oar.seed(5)
    p = np.array([0.1, 0.5, 0.85])
    for d in (D.Bernoulli(T(p)), D.Geometric(T(p)), D.Poisson(T([0.5, 4.0, 60.0])),
              D.Binomial(T([3.0, 40.0, 500.0]), T(p))):
        s = d.sample([N]).numpy()
        _check_moments(s, d.mean.numpy(), d.variance.numpy())
        assert np.all(s == np.round(s)) and np.all(s >= 0)
    w = np.array([0.2, 1.0, 3.0, 0.8])
    c = D.Categorical(T(np.log(w)))
    s = c.sample([N]).numpy()
    freq = np.bincount(s, minlength=4) / N
    pw = w / w.sum()
    assert np.all(np.abs(freq - pw) < 5 * np.sqrt(pw * (1 - pw) / N))
    m = D.Multinomial(7, T(w))
    s = m.sample([N // 4]).numpy()
    assert np.all(s.sum(-1) == 7)
    _check_moments(s, m.mean.numpy(), m.variance.numpy())
    alpha = np.array([0.5, 2.0, 4.0])
    dr = D.Dirichlet(T(alpha))
    s = dr.sample([N]).numpy()
    np.testing.assert_allclose(s.sum(-1), 1.0, rtol=1e-12)
    _check_moments(s, dr.mean.numpy(), dr.variance.numpy())
    cov = np.array([[2.0, 0.6, 0.1], [0.6, 1.0, -0.3], [0.1, -0.3, 0.5]])
    mvn = D.MultivariateNormal(T([1.0, -2.0, 0.5]), covariance_matrix=T(cov))
    s = mvn.sample([N]).numpy()
    _check_moments(s, [1.0, -2.0, 0.5], np.diag(cov))
    np.testing.assert_allclose(np.cov(s.T), cov, atol=0.05)


@pytest.mark.parametrize("method", ["onion", "cvine"])
def test_lkj_samples(method):
    """Each off-diagonal correlation of LKJ(dim, eta) is 2 Beta(b, b) - 1 with
    b = eta - 1 + dim / 2, so its variance is 1 / (2 eta - 1 + dim)."""
    oar.seed(3)
    dim, eta = 4, 1.5
    L = D.LKJCholesky(dim, T(eta), sample_method=method).sample([N // 4]).numpy()
    assert L.shape == (N // 4, dim, dim)
    assert np.allclose(np.triu(L, 1), 0) and np.all(np.diagonal(L, axis1=1, axis2=2) > 0)
    C = L @ L.transpose(0, 2, 1)
    np.testing.assert_allclose(np.diagonal(C, axis1=1, axis2=2), 1.0, rtol=1e-10)
    r = C[:, np.tril_indices(dim, -1)[0], np.tril_indices(dim, -1)[1]]
    want = 1.0 / (2 * eta - 1 + dim)
    assert np.all(np.abs(r.mean(0)) < 5 * np.sqrt(want / r.shape[0]))
    assert np.all(np.abs(r.var(0) - want) < 0.1 * want), r.var(0)


# ---- rsample gradients: d/dparam sum(rsample) with the same seed, by finite differences
RSAMPLE = {
    "Normal": (lambda a, b: D.Normal(a, b), [0.3, 1.2]),
    "Uniform": (lambda a, b: D.Uniform(a, b), [-0.5, 2.0]),
    "Cauchy": (lambda a, b: D.Cauchy(a, b), [0.1, 0.8]),
    "Laplace": (lambda a, b: D.Laplace(a, b), [0.4, 1.3]),
    "Gumbel": (lambda a, b: D.Gumbel(a, b), [-0.2, 0.9]),
    "Exponential": (lambda r: D.Exponential(r), [1.7]),
    "ContinuousBernoulli": (lambda p: D.ContinuousBernoulli(p), [0.3]),
    "LogNormal": (lambda a, b: D.LogNormal(a, b), [0.1, 0.4]),
    "MultivariateNormal": (lambda a, L: D.MultivariateNormal(a.reshape([1]).tile([2]),
                                                             scale_tril=L * T(np.eye(2))),
                           [0.5, 1.5]),
}


@pytest.mark.parametrize("name", sorted(RSAMPLE))
def test_rsample_gradient(name):
    build, vals = RSAMPLE[name]

    def f(params):
        oar.seed(99)
        return build(*params).rsample([64]).tanh().sum()
    params = [T(v, grad=True) for v in vals]
    grads = oar.grad(f(params), params)
    for i, v in enumerate(vals):
        h = 1e-6
        up = [T(x + (h if j == i else 0.0)) for j, x in enumerate(vals)]
        dn = [T(x - (h if j == i else 0.0)) for j, x in enumerate(vals)]
        fd = (float(f(up)) - float(f(dn))) / (2 * h)
        assert abs(float(grads[i]) - fd) < 1e-5 * max(1.0, abs(fd)), (name, i, float(grads[i]), fd)


def test_gamma_rsample_gradient_through_rate():
    def f(rate):
        oar.seed(4)
        return D.Gamma(T(2.5), rate).rsample([32]).sum()
    r = T(1.3, grad=True)
    (g,) = oar.grad(f(r), [r])
    fd = (float(f(T(1.3 + 1e-6))) - float(f(T(1.3 - 1e-6)))) / 2e-6
    assert abs(float(g) - fd) < 1e-5 * abs(fd)


def test_bernoulli_relaxed_rsample():
    oar.seed(8)
    p = T([0.2, 0.7], grad=True)
    s = D.Bernoulli(p).rsample([N], temperature=0.05)
    hard = (oar.nn.functional.sigmoid(s).numpy() > 0.5).mean(0)
    assert np.all(np.abs(hard - [0.2, 0.7]) < 5 * np.sqrt(0.25 / N))
    (g,) = oar.grad(oar.nn.functional.sigmoid(s).sum(), [p])
    assert np.all(g.numpy() > 0)  # more probability, more (relaxed) ones


@pytest.mark.parametrize("name", ["Beta", "Gamma", "StudentT", "Dirichlet", "Binomial"])
def test_log_prob_gradient(name):
    x = {"Beta": 0.3, "Gamma": 1.7, "StudentT": 0.4, "Dirichlet": [0.2, 0.3, 0.5],
         "Binomial": 3.0}[name]
    build = {
        "Beta": (lambda a, b: D.Beta(a, b), [0.7, 2.2]),
        "Gamma": (lambda a, b: D.Gamma(a, b), [1.4, 0.6]),
        "StudentT": (lambda n, a, b: D.StudentT(n, a, b), [3.5, 0.2, 1.1]),
        "Dirichlet": (lambda a: D.Dirichlet(a), [[0.9, 1.7, 2.4]]),
        "Binomial": (lambda p: D.Binomial(8, p), [0.35]),
    }[name]
    ctor, vals = build

    def f(params):
        d = ctor(*params)
        return (d.log_prob(T(x)).sum() + d.entropy().sum()) if name != "Binomial" \
            else d.log_prob(T(x)).sum() + d.entropy().sum()
    params = [T(v, grad=True) for v in vals]
    grads = oar.grad(f(params), params)
    for i, v in enumerate(vals):
        v = np.asarray(v, dtype="float64")
        for idx in np.ndindex(v.shape):
            e = np.zeros_like(v)
            e[idx] = 1e-6
            up = [T(np.asarray(w) + (e if j == i else 0)) for j, w in enumerate(vals)]
            dn = [T(np.asarray(w) - (e if j == i else 0)) for j, w in enumerate(vals)]
            fd = (float(f(up)) - float(f(dn))) / 2e-6
            got = float(grads[i].numpy()[idx])
            assert abs(got - fd) < 1e-5 * max(1.0, abs(fd)), (name, i, idx, got, fd)


# ---- KL divergences
def _mc_kl(p, q, n=N):
    oar.seed(21)
    x = p.sample([n])
    d = (p.log_prob(x) - q.log_prob(x)).numpy()
    return d.mean(0), d.std(0) / np.sqrt(n)


KL_MC = {
    "Normal": (D.Normal(T([0.0, 1.0]), T([1.0, 0.5])), D.Normal(T(0.5), T([2.0, 0.7]))),
    "LogNormal": (D.LogNormal(T(0.2), T(0.5)), D.LogNormal(T(-0.1), T(0.8))),
    "Uniform": (D.Uniform(T(0.0), T(1.0)), D.Uniform(T(-0.5), T(2.0))),
    "Laplace": (D.Laplace(T(0.0), T(1.0)), D.Laplace(T(1.0), T(0.5))),
    "Cauchy": (D.Cauchy(T(0.1), T(1.2)), D.Cauchy(T(1.2), T(2.3))),
    "Exponential": (D.Exponential(T(1.5)), D.Exponential(T(0.4))),
    "Gamma": (D.Gamma(T(2.0), T(1.5)), D.Gamma(T(3.5), T(0.7))),
    "Beta": (D.Beta(T(0.5), T(0.5)), D.Beta(T(0.3), T(0.7))),
    "ContinuousBernoulli": (D.ContinuousBernoulli(T([0.2, 0.8])),
                            D.ContinuousBernoulli(T([0.7, 0.5]))),
    "Dirichlet": (D.Dirichlet(T([1.0, 2.0, 3.0])), D.Dirichlet(T([2.0, 0.5, 1.5]))),
    "MultivariateNormal": (
        D.MultivariateNormal(T([2.0, 5.0]), covariance_matrix=T([[2.0, 1.0], [1.0, 2.0]])),
        D.MultivariateNormal(T([-1.0, 3.0]), covariance_matrix=T([[3.0, 2.0], [2.0, 3.0]]))),
}


@pytest.mark.parametrize("name", sorted(KL_MC))
def test_kl_against_monte_carlo(name):
    p, q = KL_MC[name]
    kl = D.kl_divergence(p, q).numpy()
    est, se = _mc_kl(p, q)
    assert np.all(np.abs(kl - est) < 5 * se + 1e-9), (kl, est, se)
    np.testing.assert_allclose(p.kl_divergence(q).numpy(), kl)
    if name not in ("ContinuousBernoulli", "Cauchy", "Uniform"):
        assert np.all(np.abs(D.kl_divergence(p, p).numpy()) < 1e-9)


def test_kl_discrete_exact_sums():
    pairs = [  # (p, q, support size)
        (D.Geometric(T([0.5, 0.3])), D.Geometric(T([0.1, 0.6])), 400),
        (D.Poisson(T([30.0, 8.0])), D.Poisson(T([1000.0, 7.0])), 400),
        (D.Binomial(T(20.0), T([0.3, 0.9])), D.Binomial(T(20.0), T([0.6, 0.5])), 21),
        (D.Bernoulli(T([0.3, 0.0])), D.Bernoulli(T([0.7, 0.4])), 2),
    ]
    for p, q, n in pairs:
        k = np.arange(0, n, dtype="float64")[:, None]
        lp, lq = p.log_prob(T(k)).numpy(), q.log_prob(T(k)).numpy()
        pk = np.exp(lp)
        want = np.where(pk > 0, pk * (np.where(pk > 0, lp, 0) - lq), 0).sum(0)
        np.testing.assert_allclose(D.kl_divergence(p, q).numpy(), want, rtol=1e-8, atol=1e-12)


def test_kl_exponential_family_fallback_and_register():
    p, q = D.Poisson(T([3.0, 9.0])), D.Poisson(T([5.0, 2.0]))
    from oar.distribution.kl import _kl_expfamily
    np.testing.assert_allclose(_kl_expfamily(p, q).numpy(), D.kl_divergence(p, q).numpy(),
                               rtol=1e-10)
    pb, qb = D.Beta(T(0.5), T(0.5)), D.Beta(T(0.3), T(0.7))
    np.testing.assert_allclose(_kl_expfamily(pb, qb).numpy(), D.kl_divergence(pb, qb).numpy(),
                               rtol=1e-10)

    class MyNormal(D.Normal):
        pass

    @D.register_kl(MyNormal, MyNormal)
    def _kl(p, q):
        return oar.full([], 42.0, dtype="float64")
    assert float(D.kl_divergence(MyNormal(T(0.0), T(1.0)), MyNormal(T(1.0), T(1.0)))) == 42.0
    # a subclass paired with its base falls back to the base pair's formula
    mixed = D.kl_divergence(MyNormal(T(0.0), T(1.0)), D.Normal(T(1.0), T(1.0)))
    np.testing.assert_allclose(float(mixed), 0.5)
    with pytest.raises(NotImplementedError, match="Normal.*Gamma"):
        D.kl_divergence(D.Normal(0.0, 1.0), D.Gamma(1.0, 1.0))
    with pytest.raises(TypeError, match="register_kl"):
        D.register_kl(int, D.Normal)


def test_exponential_family_generic_entropy_matches_closed_forms():
    """ExponentialFamily.entropy (from the log normalizer by autograd) against each
    class's closed form."""
    dists = [D.Beta(T([0.5, 2.0]), T([0.7, 3.0])), D.Gamma(T([0.4, 5.0]), T([2.0, 0.3])),
             D.Exponential(T([0.5, 4.0])), D.Dirichlet(T([[1.0, 2.0, 3.0], [0.3, 0.4, 5.0]])),
             D.Bernoulli(T([0.2, 0.9]))]
    for d in dists:
        np.testing.assert_allclose(D.ExponentialFamily.entropy(d).numpy(), d.entropy().numpy(),
                                   rtol=1e-10, err_msg=type(d).__name__)
    p, q = D.Dirichlet(T([1.0, 2.0, 3.0])), D.Dirichlet(T([2.0, 0.5, 1.5]))
    from oar.distribution.kl import _kl_expfamily
    np.testing.assert_allclose(_kl_expfamily(p, q).numpy(), D.kl_divergence(p, q).numpy(),
                               rtol=1e-10)
