"""Geometric distribution (the number of failures before the first success)."""
import numpy as np

import oar
from .distribution import Distribution, _dtype_name, check, sample_shape, to_params


class Geometric(Distribution):
    """Geometric(probs): P(X = k) = (1 - probs)^k probs for k = 0, 1, 2, ...;
    probs in (0, 1]."""

    def __init__(self, probs):
        (self.probs,) = to_params("Geometric", probs=probs)
        check("Geometric", "probs", self.probs, lambda a: (a > 0) & (a <= 1), "in (0, 1]")
        self._dtype = _dtype_name(self.probs.dtype)
        super().__init__(self.probs.shape)

    @property
    def mean(self):
        return 1.0 / self.probs - 1.0

    @property
    def variance(self):
        return (1.0 / self.probs - 1.0) / self.probs

    @property
    def stddev(self):
        return self.variance.sqrt()

    def rsample(self, shape=()):
        """floor(log(u) / log(1 - probs)), u ~ U(0, 1] (the floor has zero gradient)."""
        shape = self._extend_shape(sample_shape("Geometric", shape))
        u = self._uniform(shape, float(np.finfo("float32").tiny), 1.0)
        return (u.log() / (-self.probs).log1p()).floor()

    def log_pmf(self, k):
        k = self._value(k)
        p = self.probs
        q_term = oar.where(k == 0.0, oar.zeros_like(p + 0.0 * k), k * (-p).log1p())
        lp = q_term + p.log()
        return oar.where(k >= 0.0, lp, oar.full_like(lp, float("-inf")))

    def pmf(self, k):
        return self.log_pmf(k).exp()

    def log_prob(self, value):
        return self.log_pmf(value)

    def prob(self, value):
        return self.pmf(value)

    def cdf(self, k):
        k = self._value(k)
        return 1.0 - ((k + 1.0) * (-self.probs).log1p()).exp()

    def entropy(self):
        p = self.probs
        q = 1.0 - p
        q_log_q = oar.where(q == 0.0, oar.zeros_like(q), q * (-p).log1p())
        return -(p * p.log() + q_log_q) / p
