"""Gumbel (type-I extreme value) distribution."""
import math

import numpy as np

from .distribution import Distribution, _dtype_name, check, sample_shape, to_params

_EULER = 0.57721566490153286061


class Gumbel(Distribution):
    """Gumbel(loc, scale): cdf exp(-exp(-(x - loc) / scale)); scale > 0."""

    def __init__(self, loc, scale):
        self.loc, self.scale = to_params("Gumbel", loc=loc, scale=scale)
        check("Gumbel", "scale", self.scale, lambda a: a > 0, "positive")
        self._dtype = _dtype_name(self.loc.dtype)
        super().__init__(self.loc.shape)

    @property
    def mean(self):
        return self.loc + self.scale * _EULER

    @property
    def variance(self):
        return self.scale * self.scale * (math.pi ** 2 / 6.0)

    @property
    def stddev(self):
        return self.scale * (math.pi / math.sqrt(6.0))

    def rsample(self, shape=()):
        """loc - scale * log(-log(u)), u ~ U(0, 1): differentiable in loc and scale."""
        shape = self._extend_shape(sample_shape("Gumbel", shape))
        finfo = np.finfo(self._dtype)
        u = self._uniform(shape, float(finfo.tiny), 1.0 - float(finfo.eps))
        return self.loc - self.scale * (-u.log()).log()

    def log_prob(self, value):
        z = (self._value(value) - self.loc) / self.scale
        return -(z + (-z).exp()) - self.scale.log()

    def cdf(self, value):
        z = (self._value(value) - self.loc) / self.scale
        return (-(-z).exp()).exp()

    def entropy(self):
        return self.scale.log() + (1.0 + _EULER)
