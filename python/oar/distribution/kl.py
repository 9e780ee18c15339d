"""kl_divergence(p, q) and the pairwise table behind it (register_kl)."""
import functools

import oar
from .bernoulli import Bernoulli, _xlogy
from .beta import Beta, _lbeta
from .binomial import Binomial
from .categorical import Categorical
from .cauchy import Cauchy
from .continuous_bernoulli import ContinuousBernoulli
from .dirichlet import Dirichlet
from .distribution import Distribution, ExponentialFamily, sum_rightmost
from .exponential import Exponential
from .gamma import Gamma
from .geometric import Geometric
from .laplace import Laplace
from .lognormal import LogNormal
from .multivariate_normal import MultivariateNormal, _kl_mvn
from .normal import Normal
from .poisson import Poisson
from .uniform import Uniform

__all__ = ["kl_divergence", "register_kl"]

_REGISTRY = {}  # (type p, type q) -> kl function


def register_kl(cls_p, cls_q):
    """Decorator registering f(p, q) as KL(p || q) for p an instance of cls_p and q of
    cls_q. Lookup picks the most specific registered pair (by the classes' MRO)."""
    if not (isinstance(cls_p, type) and issubclass(cls_p, Distribution)
            and isinstance(cls_q, type) and issubclass(cls_q, Distribution)):
        raise TypeError(f"register_kl: cls_p and cls_q must be Distribution subclasses, got "
                        f"{cls_p!r} and {cls_q!r}")

    def decorator(f):
        _REGISTRY[cls_p, cls_q] = f
        _dispatch.cache_clear()
        return f
    return decorator


@functools.lru_cache(maxsize=None)
def _dispatch(type_p, type_q):
    best, best_rank = None, None
    for (cp, cq), f in _REGISTRY.items():
        if issubclass(type_p, cp) and issubclass(type_q, cq):
            rank = (type_p.__mro__.index(cp), type_q.__mro__.index(cq))
            if best_rank is None or rank < best_rank:
                best, best_rank = f, rank
    return best


def kl_divergence(p, q):
    """KL(p || q) = E_p[log p(X) - log q(X)], from the registered pairwise formulas."""
    if not isinstance(p, Distribution) or not isinstance(q, Distribution):
        raise TypeError(f"kl_divergence: p and q must be Distributions, got "
                        f"{type(p).__name__} and {type(q).__name__}")
    f = _dispatch(type(p), type(q))
    if f is None:
        raise NotImplementedError(f"kl_divergence: no KL formula is registered for "
                                  f"({type(p).__name__}, {type(q).__name__})")
    return f(p, q)


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli(p, q):
    a, b = p.probs, q.probs
    return _xlogy(a, a) - _xlogy(a, b) + _xlogy(1.0 - a, 1.0 - a) - _xlogy(1.0 - a, 1.0 - b)


@register_kl(Beta, Beta)
def _kl_beta(p, q):
    a1, b1, a2, b2 = p.alpha, p.beta, q.alpha, q.beta
    return (_lbeta(a2, b2) - _lbeta(a1, b1) + (a1 - a2) * a1.digamma()
            + (b1 - b2) * b1.digamma() + (a2 - a1 + b2 - b1) * (a1 + b1).digamma())


@register_kl(Binomial, Binomial)
def _kl_binomial(p, q):
    if p.total_count.size and not bool((p.total_count == q.total_count).all()):
        raise NotImplementedError("kl_divergence: KL between Binomials with different "
                                  "total_count is not implemented (it is infinite when "
                                  "p's count exceeds q's)")
    n, a, b = p.total_count, p.probs, q.probs
    return n * (_xlogy(a, a) - _xlogy(a, b) + _xlogy(1.0 - a, 1.0 - a)
                - _xlogy(1.0 - a, 1.0 - b))


@register_kl(Categorical, Categorical)
def _kl_categorical(p, q):
    return p.kl_divergence(q)


@register_kl(Cauchy, Cauchy)
def _kl_cauchy(p, q):
    d = p.loc - q.loc
    s = p.scale + q.scale
    return (s * s + d * d).log() - (4.0 * p.scale * q.scale).log()


@register_kl(ContinuousBernoulli, ContinuousBernoulli)
def _kl_cb(p, q):
    m = p.mean
    return (m * (p._p.log() - q._p.log()) + (1.0 - m) * ((-p._p).log1p() - (-q._p).log1p())
            + p._log_norm() - q._log_norm())


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet(p, q):
    a, b = p.concentration, q.concentration
    a0 = a.sum(-1)
    return (a0.lgamma() - a.lgamma().sum(-1) - b.sum(-1).lgamma() + b.lgamma().sum(-1)
            + ((a - b) * (a.digamma() - a0.unsqueeze(-1).digamma())).sum(-1))


@register_kl(Exponential, Exponential)
def _kl_exponential(p, q):
    r = q.rate / p.rate
    return r - r.log() - 1.0


@register_kl(Gamma, Gamma)
def _kl_gamma(p, q):
    a1, b1, a2, b2 = p.concentration, p.rate, q.concentration, q.rate
    return ((a1 - a2) * a1.digamma() - a1.lgamma() + a2.lgamma() + a2 * (b1.log() - b2.log())
            + a1 * (b2 - b1) / b1)


@register_kl(Geometric, Geometric)
def _kl_geometric(p, q):
    """log(p/q) + E_p[X] log((1-p)/(1-q)), E_p[X] = (1-p)/p. (Paddle 3.3 returns the
    Bernoulli KL here, which is wrong; see Note [Distributions].)"""
    a, b = p.probs, q.probs
    return a.log() - b.log() + (1.0 / a - 1.0) * ((-a).log1p() - (-b).log1p())


@register_kl(Laplace, Laplace)
def _kl_laplace(p, q):
    d = (p.loc - q.loc).abs()
    return (q.scale.log() - p.scale.log() + d / q.scale
            + p.scale / q.scale * (-d / p.scale).exp() - 1.0)


@register_kl(LogNormal, LogNormal)
def _kl_lognormal(p, q):
    return _kl_normal(p._base, q._base)


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_mvn_mvn(p, q):
    return _kl_mvn(p, q)


@register_kl(Normal, Normal)
def _kl_normal(p, q):
    r = p.scale / q.scale
    d = (p.loc - q.loc) / q.scale
    return 0.5 * (r * r + d * d - 1.0) - r.log()


@register_kl(Poisson, Poisson)
def _kl_poisson(p, q):
    a, b = p.rate, q.rate
    return _xlogy(a, a) - _xlogy(a, b) - a + b


@register_kl(Uniform, Uniform)
def _kl_uniform(p, q):
    """log((hq - lq) / (hp - lp)) when p's support lies inside q's, else +inf."""
    inside = (q.low <= p.low).logical_and(p.high <= q.high)
    kl = (q.high - q.low).log() - (p.high - p.low).log()
    return oar.where(inside, kl, oar.full_like(kl, float("inf")))


@register_kl(ExponentialFamily, ExponentialFamily)
def _kl_expfamily(p, q):
    """The Bregman divergence of the log normalizer, for two members of one family."""
    if type(p) is not type(q):
        raise NotImplementedError(f"kl_divergence: no KL formula is registered for "
                                  f"({type(p).__name__}, {type(q).__name__})")
    p_nat = [t.detach().clone() for t in p._natural_parameters]
    for t in p_nat:
        t.stop_gradient = False
    q_nat = q._natural_parameters
    p_a = p._log_normalizer(*p_nat)
    grads = oar.grad(p_a.sum(), p_nat, create_graph=True)
    kl = q._log_normalizer(*q_nat) - p_a
    for pn, qn, g in zip(p_nat, q_nat, grads):
        kl = kl - sum_rightmost((qn - pn) * g, pn.ndim - p_a.ndim)
    return kl
