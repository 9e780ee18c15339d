"""Uniform distribution on [low, high)."""
import oar
from .distribution import Distribution, _dtype_name, check, sample_shape, to_params


class Uniform(Distribution):
    """Uniform(low, high): density 1 / (high - low) on [low, high); high must exceed low."""

    def __init__(self, low, high, name=None):
        self.name = name or "Uniform"
        self.low, self.high = to_params("Uniform", low=low, high=high)
        check("Uniform", "high", self.high - self.low, lambda a: a > 0,
              "greater than low (the value shown is high - low)")
        self._dtype = _dtype_name(self.low.dtype)
        super().__init__(self.low.shape)

    @property
    def mean(self):
        return (self.low + self.high) / 2.0

    @property
    def variance(self):
        w = self.high - self.low
        return w * w / 12.0

    def sample(self, shape=(), seed=0):
        with oar.no_grad():
            return self.rsample(shape)

    def rsample(self, shape=()):
        """low + (high - low) * u with u ~ U[0, 1): differentiable in low and high."""
        shape = self._extend_shape(sample_shape("Uniform", shape))
        return self.low + self._uniform(shape) * (self.high - self.low)

    def _inside(self, value):
        return ((value >= self.low).logical_and(value < self.high)).astype(self._dtype)

    def log_prob(self, value):
        value = self._value(value)
        return self._inside(value).log() - (self.high - self.low).log()

    def prob(self, value):
        value = self._value(value)
        return self._inside(value) / (self.high - self.low)

    def cdf(self, value):
        value = self._value(value)
        return ((value - self.low) / (self.high - self.low)).clip(0.0, 1.0)

    def icdf(self, value):
        value = self._value(value)
        return self.low + value * (self.high - self.low)

    def entropy(self):
        return (self.high - self.low).log()
