"""Exponential distribution."""
import numpy as np

import oar
from .distribution import ExponentialFamily, _dtype_name, check, sample_shape, to_params


class Exponential(ExponentialFamily):
    """Exponential(rate): density rate * exp(-rate x) on x >= 0; rate > 0."""

    def __init__(self, rate):
        (self.rate,) = to_params("Exponential", rate=rate)
        check("Exponential", "rate", self.rate, lambda a: a > 0, "positive")
        self._dtype = _dtype_name(self.rate.dtype)
        super().__init__(self.rate.shape)

    @property
    def mean(self):
        return 1.0 / self.rate

    @property
    def variance(self):
        return 1.0 / (self.rate * self.rate)

    def rsample(self, shape=()):
        """-log(u) / rate, u ~ U(0, 1]: differentiable in rate."""
        shape = self._extend_shape(sample_shape("Exponential", shape))
        u = self._uniform(shape, float(np.finfo("float32").tiny), 1.0)
        return -u.log() / self.rate

    def log_prob(self, value):
        value = self._value(value)
        lp = self.rate.log() - self.rate * value
        return oar.where(value >= 0, lp, oar.full_like(lp, float("-inf")))

    def cdf(self, value):
        value = self._value(value)
        return -(-self.rate * value.clip(min=0.0)).expm1()

    def icdf(self, value):
        return -(-self._value(value)).log1p() / self.rate

    def entropy(self):
        return 1.0 - self.rate.log()

    @property
    def _natural_parameters(self):
        return (-self.rate,)

    def _log_normalizer(self, x):
        return -(-x).log()

    @property
    def _mean_carrier_measure(self):
        return 0.0
