"""Multinomial distribution."""
import math
import numbers

import oar
import oar.nn.functional as F
from .._creation import _arange_on
from .distribution import Distribution, _dtype_name, check, sample_shape, to_params


class Multinomial(Distribution):
    """Multinomial(total_count, probs): counts of each of K categories (the last axis of
    probs, non-negative weights normalized to sum 1) in total_count independent draws."""

    def __init__(self, total_count, probs):
        if isinstance(total_count, bool) or not isinstance(total_count, numbers.Integral) \
                or total_count < 1:
            raise ValueError(f"Multinomial: argument 'total_count' must be a positive int, got "
                             f"{total_count!r}")
        (probs,) = to_params("Multinomial", probs=probs)
        if probs.ndim < 1:
            raise ValueError("Multinomial: argument 'probs' must be at least 1-D, got a 0-D "
                             "tensor")
        check("Multinomial", "probs", probs, lambda a: a >= 0, "non-negative")
        self.total_count = int(total_count)
        self.probs = probs / probs.sum(-1, keepdim=True)
        self._dtype = _dtype_name(probs.dtype)
        shape = tuple(probs.shape)
        super().__init__(shape[:-1], shape[-1:])

    @property
    def mean(self):
        return self.probs * self.total_count

    @property
    def variance(self):
        return self.total_count * self.probs * (1.0 - self.probs)

    def sample(self, shape=()):
        """Counts of shape `shape + batch_shape + [K]`, in probs' dtype: total_count
        category draws per sample, one-hot encoded and summed."""
        from .categorical import Categorical
        shape = sample_shape("Multinomial", shape)
        k = self.probs.shape[-1]
        with oar.no_grad():
            cat = Categorical(self.probs.detach().log())
            draws = cat.sample([self.total_count] + list(shape))
            return F.one_hot(draws, k).astype(self._dtype).sum(0)

    def log_prob(self, value):
        value = self._value(value)
        p = self.probs + 0.0 * value
        terms = oar.where(value == 0.0, oar.zeros_like(p), value * p.log())
        return (value.sum(-1) + 1.0).lgamma() - (value + 1.0).lgamma().sum(-1) + terms.sum(-1)

    def entropy(self):
        """H = -log n! + sum_i E[log X_i!] - n sum_i p_i log p_i, with X_i ~ Binomial(n, p_i)
        (E[log X_i!] summed over the support 0 .. n)."""
        n = self.total_count
        p = self.probs
        k = _arange_on(p.place, n + 1, self._dtype).reshape([n + 1] + [1] * p.ndim)
        safe = p.clip(1e-30, 1.0)
        zero = oar.zeros_like(p + 0.0 * k)
        lp = ((n + 1.0) - 0.0 * k).lgamma() - (k + 1.0).lgamma() - (n - k + 1.0).lgamma() \
            + oar.where(k == 0.0, zero, k * safe.log()) \
            + oar.where(n - k == 0.0, zero, (n - k) * (1.0 - p).clip(1e-30, 1.0).log())
        pk = oar.where(p + 0.0 * k > 0.0, lp.exp(), oar.where(k == 0.0, zero + 1.0, zero))
        e_log_fact = (pk * (k + 1.0).lgamma()).sum(0)
        p_log_p = oar.where(p > 0.0, p * safe.log(), oar.zeros_like(p))
        return -math.lgamma(n + 1.0) + e_log_fact.sum(-1) - n * p_log_p.sum(-1)
