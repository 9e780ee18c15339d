"""Dirichlet distribution."""
import oar
from .distribution import ExponentialFamily, _dtype_name, check, sample_shape, to_params


class Dirichlet(ExponentialFamily):
    """Dirichlet(concentration): density prod x_i^(a_i - 1) / B(a) on the simplex; the last
    axis of concentration (at least 1-D, all > 0) is the event."""

    def __init__(self, concentration):
        (self.concentration,) = to_params("Dirichlet", concentration=concentration)
        if self.concentration.ndim < 1:
            raise ValueError("Dirichlet: argument 'concentration' must be at least 1-D, got a "
                             "0-D tensor")
        check("Dirichlet", "concentration", self.concentration, lambda a: a > 0, "positive")
        self._dtype = _dtype_name(self.concentration.dtype)
        shape = tuple(self.concentration.shape)
        super().__init__(shape[:-1], shape[-1:])

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, keepdim=True)

    @property
    def variance(self):
        a = self.concentration
        a0 = a.sum(-1, keepdim=True)
        return a * (a0 - a) / (a0 * a0 * (a0 + 1.0))

    def sample(self, shape=()):
        """Normalized independent Gamma(a_i, 1) draws."""
        shape = self._extend_shape(sample_shape("Dirichlet", shape))
        with oar.no_grad():
            g = oar.standard_gamma(self.concentration.detach().broadcast_to(list(shape)))
            return g / g.sum(-1, keepdim=True)

    def log_prob(self, value):
        value = self._value(value)
        a = self.concentration
        return ((a - 1.0) * value.log()).sum(-1) + a.sum(-1).lgamma() - a.lgamma().sum(-1)

    def entropy(self):
        a = self.concentration
        k = a.shape[-1]
        a0 = a.sum(-1)
        log_b = a.lgamma().sum(-1) - a0.lgamma()
        return log_b + (a0 - k) * a0.digamma() - ((a - 1.0) * a.digamma()).sum(-1)

    @property
    def _natural_parameters(self):
        return (self.concentration - 1.0,)  # T(x) = log x, h(x) = 1

    def _log_normalizer(self, x):
        return (x + 1.0).lgamma().sum(-1) - (x + 1.0).sum(-1).lgamma()

    @property
    def _mean_carrier_measure(self):
        return 0.0
