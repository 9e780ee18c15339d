"""TransformedDistribution: the distribution of f(X) for X ~ base and f a chain of
transforms."""
import oar
from .distribution import Distribution, sum_rightmost
from .transform import ChainTransform, Transform


class TransformedDistribution(Distribution):
    """The distribution of transforms[-1](...transforms[0](X)), X ~ base. log_prob(y) is
    base.log_prob(x) - log|det J|, x the inverse image of y (the transforms must be
    injective for log_prob)."""

    def __init__(self, base, transforms):
        if not isinstance(base, Distribution):
            raise TypeError(f"TransformedDistribution: argument 'base' must be a Distribution, "
                            f"got {type(base).__name__}")
        if not isinstance(transforms, (list, tuple)) or not all(
                isinstance(t, Transform) for t in transforms):
            raise TypeError("TransformedDistribution: argument 'transforms' must be a sequence "
                            "of Transform objects")
        self._base = base
        self._transforms = list(transforms)
        chain = ChainTransform(self._transforms)
        base_shape = tuple(base.batch_shape) + tuple(base.event_shape)
        base_rank = len(base.event_shape)
        if base_rank < chain._domain_rank:
            raise ValueError(f"TransformedDistribution: the base's event rank ({base_rank}) is "
                             f"less than the transforms' domain rank ({chain._domain_rank})")
        shape = chain.forward_shape(base_shape)
        event_rank = max(chain._codomain_rank + base_rank - chain._domain_rank, 0)
        cut = len(shape) - event_rank
        self._dtype = getattr(base, "_dtype", None)
        super().__init__(shape[:cut], shape[cut:])

    @property
    def transforms(self):
        return self._transforms

    def sample(self, shape=()):
        with oar.no_grad():
            x = self._base.sample(shape)
            for t in self._transforms:
                x = t.forward(x)
            return x

    def rsample(self, shape=()):
        x = self._base.rsample(shape)
        for t in self._transforms:
            x = t.forward(x)
        return x

    def log_prob(self, value):
        y = self._value(value) if self._dtype else value
        log_prob = 0.0
        event_rank = len(self._event_shape)
        for t in reversed(self._transforms):
            x = t.inverse(y)
            event_rank += t._domain_rank - t._codomain_rank
            log_prob = log_prob - sum_rightmost(t.forward_log_det_jacobian(x),
                                                event_rank - t._domain_rank)
            y = x
        return log_prob + sum_rightmost(self._base.log_prob(y),
                                        event_rank - len(self._base.event_shape))
