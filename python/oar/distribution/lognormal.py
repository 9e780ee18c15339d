"""Log-normal distribution."""
from .distribution import LOG_2PI, _dtype_name
from .normal import Normal
from .transform import ExpTransform
from .transformed_distribution import TransformedDistribution


class LogNormal(TransformedDistribution):
    """LogNormal(loc, scale): the distribution of exp(X), X ~ Normal(loc, scale)."""

    def __init__(self, loc, scale):
        self._base = Normal(loc=loc, scale=scale)
        self.loc, self.scale = self._base.loc, self._base.scale
        super().__init__(self._base, [ExpTransform()])
        self._dtype = _dtype_name(self.loc.dtype)

    @property
    def mean(self):
        return (self.loc + 0.5 * self.scale * self.scale).exp()

    @property
    def variance(self):
        s2 = self.scale * self.scale
        return s2.expm1() * (2.0 * self.loc + s2).exp()

    def entropy(self):
        return self._base.entropy() + self.loc

    def log_prob(self, value):
        value = self._value(value)
        logv = value.log()
        z = (logv - self.loc) / self.scale
        return -0.5 * z * z - self.scale.log() - 0.5 * LOG_2PI - logv

    def cdf(self, value):
        return self._base.cdf(self._value(value).log())

    def icdf(self, value):
        return self._base.icdf(value).exp()


