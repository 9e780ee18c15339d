"""Normal (Gaussian) distribution."""
import math

import oar
from .distribution import LOG_2PI, Distribution, _dtype_name, check, sample_shape, to_params


class Normal(Distribution):
    """Normal(loc, scale): density exp(-(x - loc)^2 / (2 scale^2)) / (scale sqrt(2 pi)).

    loc, scale: floats, lists, numpy arrays or Tensors, broadcast to the batch shape;
    scale must be positive."""

    def __init__(self, loc, scale, name=None):
        self.name = name or "Normal"
        self.loc, self.scale = to_params("Normal", loc=loc, scale=scale)
        check("Normal", "scale", self.scale, lambda a: a > 0, "positive")
        self._dtype = _dtype_name(self.loc.dtype)
        super().__init__(self.loc.shape)

    @property
    def mean(self):
        return self.loc

    @property
    def variance(self):
        return self.scale * self.scale

    @property
    def stddev(self):
        return self.scale

    def sample(self, shape=(), seed=0):
        with oar.no_grad():
            return self.rsample(shape)

    def rsample(self, shape=()):
        """loc + scale * eps with eps ~ N(0, 1): differentiable in loc and scale."""
        shape = self._extend_shape(sample_shape("Normal", shape))
        return self.loc + self._normal(shape) * self.scale

    def log_prob(self, value):
        value = self._value(value)
        z = (value - self.loc) / self.scale
        return -0.5 * z * z - self.scale.log() - 0.5 * LOG_2PI

    def cdf(self, value):
        value = self._value(value)
        return 0.5 * (1.0 + oar.erf((value - self.loc) / (self.scale * math.sqrt(2.0))))

    def icdf(self, value):
        value = self._value(value)
        return self.loc + self.scale * math.sqrt(2.0) * oar.erfinv(2.0 * value - 1.0)

    def entropy(self):
        return 0.5 + 0.5 * LOG_2PI + self.scale.log()

    def kl_divergence(self, other):
        from .kl import kl_divergence
        return kl_divergence(self, other)
