"""Beta distribution."""
import oar
from .distribution import ExponentialFamily, _dtype_name, check, sample_shape, to_params


def _lbeta(a, b):
    return a.lgamma() + b.lgamma() - (a + b).lgamma()


class Beta(ExponentialFamily):
    """Beta(alpha, beta): density x^(alpha-1) (1-x)^(beta-1) / B(alpha, beta) on (0, 1);
    alpha > 0 and beta > 0."""

    def __init__(self, alpha, beta):
        self.alpha, self.beta = to_params("Beta", alpha=alpha, beta=beta)
        check("Beta", "alpha", self.alpha, lambda a: a > 0, "positive")
        check("Beta", "beta", self.beta, lambda a: a > 0, "positive")
        self._dtype = _dtype_name(self.alpha.dtype)
        super().__init__(self.alpha.shape)

    @property
    def mean(self):
        return self.alpha / (self.alpha + self.beta)

    @property
    def variance(self):
        s = self.alpha + self.beta
        return self.alpha * self.beta / (s * s * (s + 1.0))

    def sample(self, shape=()):
        """X / (X + Y) with X ~ Gamma(alpha), Y ~ Gamma(beta)."""
        shape = list(self._extend_shape(sample_shape("Beta", shape)))
        with oar.no_grad():
            x = oar.standard_gamma(self.alpha.detach().broadcast_to(shape))
            y = oar.standard_gamma(self.beta.detach().broadcast_to(shape))
            return x / (x + y)

    def log_prob(self, value):
        value = self._value(value)
        a, b = self.alpha, self.beta
        return (a - 1.0) * value.log() + (b - 1.0) * (-value).log1p() - _lbeta(a, b)

    def entropy(self):
        a, b = self.alpha, self.beta
        return (_lbeta(a, b) - (a - 1.0) * a.digamma() - (b - 1.0) * b.digamma()
                + (a + b - 2.0) * (a + b).digamma())

    @property
    def _natural_parameters(self):
        return (self.alpha - 1.0, self.beta - 1.0)  # T(x) = (log x, log(1 - x)), h(x) = 1

    def _log_normalizer(self, x, y):
        return _lbeta(x + 1.0, y + 1.0)

    @property
    def _mean_carrier_measure(self):
        return 0.0
