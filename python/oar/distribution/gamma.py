"""Gamma distribution."""
import oar
from .distribution import ExponentialFamily, _dtype_name, check, sample_shape, to_params


class Gamma(ExponentialFamily):
    """Gamma(concentration, rate): density rate^a x^(a-1) exp(-rate x) / Gamma(a) on x > 0;
    concentration > 0 and rate > 0."""
    _owner = "Gamma"

    def __init__(self, concentration, rate):
        self.concentration, self.rate = to_params(self._owner, concentration=concentration,
                                                  rate=rate)
        check(self._owner, "concentration", self.concentration, lambda a: a > 0, "positive")
        check(self._owner, "rate", self.rate, lambda a: a > 0, "positive")
        self._dtype = _dtype_name(self.rate.dtype)
        super().__init__(self.rate.shape)

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def variance(self):
        return self.concentration / (self.rate * self.rate)

    def rsample(self, shape=()):
        """standard_gamma(concentration) / rate: differentiable in rate (the gamma draw
        itself carries no gradient to concentration, as in Paddle)."""
        shape = self._extend_shape(sample_shape(self._owner, shape))
        g = oar.standard_gamma(self.concentration.detach().broadcast_to(list(shape)))
        return g / self.rate

    def log_prob(self, value):
        value = self._value(value)
        a, b = self.concentration, self.rate
        return a * b.log() + (a - 1.0) * value.log() - b * value - a.lgamma()

    def entropy(self):
        a = self.concentration
        return a - self.rate.log() + a.lgamma() + (1.0 - a) * a.digamma()

    @property
    def _natural_parameters(self):
        return (self.concentration - 1.0, -self.rate)

    def _log_normalizer(self, x, y):
        return (x + 1.0).lgamma() - (x + 1.0) * (-y).log()

    @property
    def _mean_carrier_measure(self):
        return 0.0
