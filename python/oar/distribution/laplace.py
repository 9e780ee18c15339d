"""Laplace distribution."""
import math

import numpy as np

from .distribution import Distribution, _dtype_name, check, sample_shape, to_params


class Laplace(Distribution):
    """Laplace(loc, scale): density exp(-|x - loc| / scale) / (2 scale); scale > 0."""

    def __init__(self, loc, scale):
        self.loc, self.scale = to_params("Laplace", loc=loc, scale=scale)
        check("Laplace", "scale", self.scale, lambda a: a > 0, "positive")
        self._dtype = _dtype_name(self.loc.dtype)
        super().__init__(self.loc.shape)

    @property
    def mean(self):
        return self.loc

    @property
    def variance(self):
        return 2.0 * self.scale * self.scale

    @property
    def stddev(self):
        return math.sqrt(2.0) * self.scale

    def rsample(self, shape=()):
        """Inverse-CDF of u ~ U(-1, 1) (open): differentiable in loc and scale."""
        shape = self._extend_shape(sample_shape("Laplace", shape))
        eps = float(np.finfo(self._dtype).eps)
        u = self._uniform(shape, float(np.nextafter(-1.0, 1.0)) + eps / 2, 1.0 - eps / 2)
        return self.loc - self.scale * u.sign() * (-u.abs()).log1p()

    def log_prob(self, value):
        value = self._value(value)
        return -(2.0 * self.scale).log() - (value - self.loc).abs() / self.scale

    def cdf(self, value):
        d = self._value(value) - self.loc
        return 0.5 - 0.5 * d.sign() * (-d.abs() / self.scale).expm1()

    def icdf(self, value):
        d = self._value(value) - 0.5
        return self.loc - self.scale * d.sign() * (-2.0 * d.abs()).log1p()

    def entropy(self):
        return 1.0 + (2.0 * self.scale).log()
