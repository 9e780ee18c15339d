"""Bernoulli distribution."""
import numbers

import oar
from .distribution import ExponentialFamily, _dtype_name, check, sample_shape, to_params


class Bernoulli(ExponentialFamily):
    """Bernoulli(probs): 1 with probability probs, else 0; probs in [0, 1]."""

    def __init__(self, probs, name=None):
        self.name = name or "Bernoulli"
        (self.probs,) = to_params("Bernoulli", probs=probs)
        check("Bernoulli", "probs", self.probs, lambda a: (a >= 0) & (a <= 1), "in [0, 1]")
        self._dtype = _dtype_name(self.probs.dtype)
        self.logits = self.probs.log() - (-self.probs).log1p()
        super().__init__(self.probs.shape)

    @property
    def mean(self):
        return self.probs

    @property
    def variance(self):
        return self.probs * (1.0 - self.probs)

    def sample(self, shape=()):
        """0/1 draws in the parameters' dtype (no gradient)."""
        shape = self._extend_shape(sample_shape("Bernoulli", shape))
        with oar.no_grad():
            return oar.bernoulli(self.probs.detach().broadcast_to(list(shape)))

    def rsample(self, shape=(), temperature=1.0):
        """The relaxed (Concrete / Gumbel-softmax) sample: the logit
        (logit(u) + logit(probs)) / temperature, u ~ U[0, 1); its sigmoid is a
        differentiable stand-in for a 0/1 draw."""
        if isinstance(temperature, bool) or not isinstance(temperature, numbers.Real) \
                or not temperature > 0:
            raise ValueError(f"Bernoulli.rsample: argument 'temperature' must be a positive "
                             f"float, got {temperature!r}")
        shape = self._extend_shape(sample_shape("Bernoulli", shape))
        p = self.probs.broadcast_to(list(shape))
        u = self._uniform(shape)
        return (u.log() - (-u).log1p() + p.log() - (-p).log1p()) / float(temperature)

    def log_prob(self, value):
        value = self._value(value)
        p = self.probs
        return _xlogy(value, p) + _xlogy(1.0 - value, 1.0 - p)

    def cdf(self, value):
        value = self._value(value)
        p = self.probs + 0.0 * value
        zero, one = oar.zeros_like(p), oar.ones_like(p)
        return oar.where(value < 0.0, zero, oar.where(value < 1.0, 1.0 - p, one))

    def entropy(self):
        p = self.probs
        return -(_xlogy(p, p) + _xlogy(1.0 - p, 1.0 - p))

    @property
    def _natural_parameters(self):
        return (self.logits,)

    def _log_normalizer(self, x):
        return oar.nn.functional.softplus(x)

    @property
    def _mean_carrier_measure(self):
        return 0.0


def _xlogy(x, y):
    """x * log(y), with 0 where x == 0 (so p = 0 or 1 give finite log-probabilities)."""
    safe = oar.where(x == 0.0, oar.ones_like(y + 0.0 * x), y + 0.0 * x)
    return oar.where(x == 0.0, oar.zeros_like(safe), x * safe.log())
