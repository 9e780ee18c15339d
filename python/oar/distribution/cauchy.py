"""Cauchy distribution."""
import math

import oar
from .distribution import Distribution, _dtype_name, check, sample_shape, to_params


class Cauchy(Distribution):
    """Cauchy(loc, scale): density 1 / (pi scale (1 + ((x - loc) / scale)^2)); scale > 0.
    It has no mean or variance (accessing them raises ValueError, as in Paddle)."""

    def __init__(self, loc, scale, name=None):
        self.name = name or "Cauchy"
        self.loc, self.scale = to_params("Cauchy", loc=loc, scale=scale)
        check("Cauchy", "scale", self.scale, lambda a: a > 0, "positive")
        self._dtype = _dtype_name(self.loc.dtype)
        super().__init__(self.loc.shape)

    @property
    def mean(self):
        raise ValueError("Cauchy: the distribution has no mean")

    @property
    def variance(self):
        raise ValueError("Cauchy: the distribution has no variance")

    @property
    def stddev(self):
        raise ValueError("Cauchy: the distribution has no standard deviation")

    def sample(self, shape=(), name=None):
        with oar.no_grad():
            return self.rsample(shape)

    def rsample(self, shape=(), name=None):
        """loc + scale * tan(pi (u - 1/2)), u ~ U[0, 1): differentiable in loc and scale."""
        shape = self._extend_shape(sample_shape("Cauchy", shape))
        u = self._uniform(shape)
        return self.loc + self.scale * oar.tan(math.pi * (u - 0.5))

    def log_prob(self, value):
        z = (self._value(value) - self.loc) / self.scale
        return -math.log(math.pi) - self.scale.log() - (z * z).log1p()

    def cdf(self, value):
        z = (self._value(value) - self.loc) / self.scale
        return oar.atan(z) / math.pi + 0.5

    def entropy(self):
        return math.log(4.0 * math.pi) + self.scale.log()
