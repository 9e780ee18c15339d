"""Student's t distribution."""
import math

import oar
from .distribution import Distribution, _dtype_name, check, sample_shape, to_params
from .gamma import Gamma


class StudentT(Distribution):
    """StudentT(df, loc, scale): loc + scale * T with T a standard t variate of df degrees of
    freedom; df > 0 and scale > 0."""

    def __init__(self, df, loc, scale, name=None):
        self.name = name or "StudentT"
        self.df, self.loc, self.scale = to_params("StudentT", df=df, loc=loc, scale=scale)
        check("StudentT", "df", self.df, lambda a: a > 0, "positive")
        check("StudentT", "scale", self.scale, lambda a: a > 0, "positive")
        self._dtype = _dtype_name(self.df.dtype)
        self._chi2 = Gamma(0.5 * self.df, 0.5 + 0.0 * self.df)
        super().__init__(self.df.shape)

    @property
    def mean(self):
        nan = oar.full_like(self.loc, float("nan"))
        return oar.where(self.df > 1.0, self.loc, nan)

    @property
    def variance(self):
        df = self.df
        var = self.scale * self.scale * df / (df - 2.0).clip(min=1e-30)
        var = oar.where(df > 2.0, var, oar.full_like(var, float("inf")))
        return oar.where(df > 1.0, var, oar.full_like(var, float("nan")))

    def sample(self, shape=()):
        """loc + scale * Z / sqrt(V / df), Z ~ N(0, 1), V ~ Chi2(df)."""
        shape = sample_shape("StudentT", shape)
        with oar.no_grad():
            z = self._normal(self._extend_shape(shape))
            v = self._chi2.sample(shape)
            return self.loc + self.scale * z * (v / self.df).rsqrt()

    def log_prob(self, value):
        value = self._value(value)
        df = self.df
        z = (value - self.loc) / self.scale
        return ((0.5 * (df + 1.0)).lgamma() - (0.5 * df).lgamma() - 0.5 * (math.pi * df).log()
                - self.scale.log() - 0.5 * (df + 1.0) * (z * z / df).log1p())

    def entropy(self):
        df = self.df
        h = 0.5 * (df + 1.0)
        lbeta = (0.5 * df).lgamma() + math.lgamma(0.5) - h.lgamma()
        return (h * (h.digamma() - (0.5 * df).digamma()) + 0.5 * df.log() + lbeta
                + self.scale.log())
