"""Independent: reinterpret batch dims of a distribution as event dims."""
import numbers

from .distribution import Distribution, sum_rightmost


class Independent(Distribution):
    """Treats the reinterpreted_batch_rank rightmost batch dims of base as event dims:
    log_prob and entropy are summed over them."""

    def __init__(self, base, reinterpreted_batch_rank):
        if not isinstance(base, Distribution):
            raise TypeError(f"Independent: argument 'base' must be a Distribution, got "
                            f"{type(base).__name__}")
        n = len(base.batch_shape)
        if isinstance(reinterpreted_batch_rank, bool) or not isinstance(
                reinterpreted_batch_rank, numbers.Integral) \
                or not 0 < reinterpreted_batch_rank <= n:
            raise ValueError(f"Independent: argument 'reinterpreted_batch_rank' must be an int "
                             f"in [1, {n}] (the base's batch rank), got "
                             f"{reinterpreted_batch_rank!r}")
        self._base = base
        self._reinterpreted_batch_rank = r = int(reinterpreted_batch_rank)
        shape = tuple(base.batch_shape) + tuple(base.event_shape)
        cut = n - r
        self._dtype = getattr(base, "_dtype", None)
        super().__init__(shape[:cut], shape[cut:])

    @property
    def mean(self):
        return self._base.mean

    @property
    def variance(self):
        return self._base.variance

    def sample(self, shape=()):
        return self._base.sample(shape)

    def rsample(self, shape=()):
        return self._base.rsample(shape)

    def log_prob(self, value):
        return sum_rightmost(self._base.log_prob(value), self._reinterpreted_batch_rank)

    def prob(self, value):
        return self.log_prob(value).exp()

    def entropy(self):
        return sum_rightmost(self._base.entropy(), self._reinterpreted_batch_rank)
