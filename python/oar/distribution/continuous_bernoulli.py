"""Continuous Bernoulli distribution (Loaiza-Ganem & Cunningham, 2019)."""
import math

import oar
from .distribution import Distribution, _dtype_name, check, sample_shape, to_params


class ContinuousBernoulli(Distribution):
    """ContinuousBernoulli(probs, lims=(0.499, 0.501)): density C(p) p^x (1-p)^(1-x) on
    [0, 1], with C(p) = 2 atanh(1 - 2p) / (1 - 2p). Inside lims (p near 1/2, where the
    closed forms lose precision) Taylor expansions around p = 1/2 are used."""

    def __init__(self, probs, lims=(0.499, 0.501)):
        (self.probs,) = to_params("ContinuousBernoulli", probs=probs)
        check("ContinuousBernoulli", "probs", self.probs, lambda a: (a >= 0) & (a <= 1),
              "in [0, 1]")
        if not (isinstance(lims, (list, tuple)) and len(lims) == 2 and lims[0] < 0.5 < lims[1]):
            raise ValueError(f"ContinuousBernoulli: argument 'lims' must be a pair (lo, hi) "
                             f"with lo < 0.5 < hi, got {lims!r}")
        self.lims = (float(lims[0]), float(lims[1]))
        self._dtype = _dtype_name(self.probs.dtype)
        eps = 1e-12 if self._dtype == "float64" else 1e-6
        self._p = self.probs.clip(eps, 1.0 - eps)  # keeps the logs finite at 0 and 1
        super().__init__(self.probs.shape)

    def _outside(self):
        return (self._p < self.lims[0]).logical_or(self._p > self.lims[1])

    def _safe_p(self):
        """p outside lims, and lims[0] inside (so the unselected branch stays finite)."""
        return oar.where(self._outside(), self._p, oar.full_like(self._p, self.lims[0]))

    def _log_norm(self):
        """log C(p)."""
        p = self._safe_p()
        exact = (2.0 * oar.atanh(1.0 - 2.0 * p)).abs().log() - (1.0 - 2.0 * p).abs().log()
        d = self._p - 0.5
        d2 = d * d
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * d2) * d2
        return oar.where(self._outside(), exact, taylor)

    @property
    def mean(self):
        p = self._safe_p()
        exact = p / (2.0 * p - 1.0) + 1.0 / (2.0 * oar.atanh(1.0 - 2.0 * p))
        d = self._p - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * d * d) * d
        return oar.where(self._outside(), exact, taylor)

    @property
    def variance(self):
        p = self._safe_p()
        t = 2.0 * oar.atanh(1.0 - 2.0 * p)
        exact = p * (p - 1.0) / ((1.0 - 2.0 * p) * (1.0 - 2.0 * p)) + 1.0 / (t * t)
        d2 = (self._p - 0.5) * (self._p - 0.5)
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * d2) * d2
        return oar.where(self._outside(), exact, taylor)

    def rsample(self, shape=()):
        """icdf(u), u ~ U[0, 1): differentiable in probs."""
        shape = self._extend_shape(sample_shape("ContinuousBernoulli", shape))
        return self.icdf(self._uniform(shape))

    def log_prob(self, value):
        value = self._value(value)
        p = self._p
        return value * p.log() + (1.0 - value) * (-p).log1p() + self._log_norm()

    def cdf(self, value):
        value = self._value(value)
        p = self._safe_p()
        exact = (p.pow(value) * (1.0 - p).pow(1.0 - value) + p - 1.0) / (2.0 * p - 1.0)
        d = self._p - 0.5  # inside lims: first order in p - 1/2 (error O((p - 1/2)^2))
        c = oar.where(self._outside(), exact, value + 2.0 * d * value * (value - 1.0))
        c = oar.where(value <= 0.0, oar.zeros_like(c), c)
        return oar.where(value >= 1.0, oar.ones_like(c), c)

    def icdf(self, value):
        value = self._value(value)
        p = self._safe_p()
        exact = (((2.0 * p - 1.0) * value - p).log1p() - (-p).log1p()) / (p.log() - (-p).log1p())
        d = self._p - 0.5
        return oar.where(self._outside(), exact, value - 2.0 * d * value * (value - 1.0))

    def entropy(self):
        m = self.mean
        p = self._p
        return -(m * p.log() + (1.0 - m) * (-p).log1p() + self._log_norm())
