"""Poisson distribution."""
import math

import oar
from .._creation import _arange_on
from .distribution import ExponentialFamily, _dtype_name, check, sample_shape, to_params


class Poisson(ExponentialFamily):
    """Poisson(rate): P(X = k) = rate^k exp(-rate) / k!; rate >= 0."""

    def __init__(self, rate):
        (self.rate,) = to_params("Poisson", rate=rate)
        check("Poisson", "rate", self.rate, lambda a: a >= 0, "non-negative")
        self._dtype = _dtype_name(self.rate.dtype)
        super().__init__(self.rate.shape)

    @property
    def mean(self):
        return self.rate

    @property
    def variance(self):
        return self.rate

    def sample(self, shape=()):
        shape = self._extend_shape(sample_shape("Poisson", shape))
        with oar.no_grad():
            return oar.poisson(self.rate.detach().broadcast_to(list(shape)))

    def log_prob(self, value):
        value = self._value(value)
        r = self.rate
        zero = oar.zeros_like(r + 0.0 * value)
        k_log_r = oar.where(value == 0.0, zero, value * r.log())
        inside = value >= 0.0
        lp = k_log_r - r - (oar.where(inside, value, zero) + 1.0).lgamma()
        return oar.where(inside, lp, oar.full_like(lp, float("-inf")))

    def entropy(self):
        """-sum_k p(k) log p(k), summed over k = 0 .. max(rate) + 30 sqrt(max(rate)) + 30
        (the tail beyond holds less than 1e-40 of the mass)."""
        if self.rate.size == 0:
            return self.rate + 0.0
        hi = float(self.rate.detach().max())
        n = int(math.ceil(hi + 30.0 * math.sqrt(hi) + 30.0))
        k = _arange_on(self.rate.place, n + 1, self._dtype).reshape([n + 1] + [1] * self.rate.ndim)
        lp = self.log_prob(k)
        return -(lp.exp() * lp).sum(0)

    @property
    def _natural_parameters(self):
        return (self.rate.log(),)

    def _log_normalizer(self, x):
        return x.exp()

    @property
    def _mean_carrier_measure(self):
        raise NotImplementedError("Poisson: the mean carrier measure has no closed form")
