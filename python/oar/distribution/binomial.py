"""Binomial distribution."""
import numbers

import numpy as np

import oar
from .._creation import _arange_on
from .distribution import (Distribution, _dtype_name, _is_tensor, check, sample_shape,
                           to_params)


class Binomial(Distribution):
    """Binomial(total_count, probs): the number of successes in total_count independent
    trials of success probability probs; total_count a non-negative int (or int tensor),
    probs in [0, 1]."""

    def __init__(self, total_count, probs):
        if _is_tensor(total_count):
            if total_count.dtype.is_floating_point and total_count.size and not bool(
                    (total_count == total_count.floor()).all()):
                raise ValueError("Binomial: argument 'total_count' must hold integers")
            count = total_count.astype("float64")
        elif isinstance(total_count, numbers.Integral) and not isinstance(total_count, bool):
            count = int(total_count)
        else:
            raise TypeError(f"Binomial: argument 'total_count' must be an int or an integer "
                            f"Tensor, got {type(total_count).__name__}")
        (probs,) = to_params("Binomial", probs=probs)
        self._dtype = _dtype_name(probs.dtype)
        count = oar.to_tensor(np.asarray(count, dtype=self._dtype), place=probs.place) if not _is_tensor(count) \
            else count.astype(self._dtype)
        self.total_count, self.probs = to_params("Binomial", total_count=count, probs=probs)
        check("Binomial", "total_count", self.total_count, lambda a: a >= 0, "non-negative")
        check("Binomial", "probs", self.probs, lambda a: (a >= 0) & (a <= 1), "in [0, 1]")
        super().__init__(self.probs.shape)

    @property
    def mean(self):
        return self.total_count * self.probs

    @property
    def variance(self):
        return self.total_count * self.probs * (1.0 - self.probs)

    def sample(self, shape=()):
        shape = list(self._extend_shape(sample_shape("Binomial", shape)))
        with oar.no_grad():
            n = self.total_count.detach().broadcast_to(shape).astype("int64")
            return oar.binomial(n, self.probs.detach().broadcast_to(shape)).astype(self._dtype)

    def log_prob(self, value):
        value = self._value(value)
        n, p = self.total_count, self.probs
        zero = oar.zeros_like(p + 0.0 * value)
        k_log_p = oar.where(value == 0.0, zero, value * p.log())
        rest = n - value
        rest_log_q = oar.where(rest == 0.0, zero, rest * (-p).log1p())
        inside = (value >= 0.0).logical_and(rest >= 0.0)
        safe_k = oar.where(inside, value, zero)  # keeps lgamma off the poles outside
        safe_rest = oar.where(inside, rest, zero)
        log_comb = (n + 1.0).lgamma() - (safe_k + 1.0).lgamma() - (safe_rest + 1.0).lgamma()
        lp = log_comb + k_log_p + rest_log_q
        return oar.where(inside, lp, oar.full_like(lp, float("-inf")))

    def entropy(self):
        """-sum_k p(k) log p(k) over the support 0 .. total_count."""
        if self.probs.size == 0:
            return self.probs + 0.0
        n = int(float(self.total_count.detach().max()))
        k = _arange_on(self.probs.place, n + 1, self._dtype).reshape([n + 1] + [1] * self.probs.ndim)
        lp = self.log_prob(k)
        inside = (k <= self.total_count).astype(self._dtype)
        return -(inside * lp.exp() * oar.where(inside > 0, lp, oar.zeros_like(lp))).sum(0)
