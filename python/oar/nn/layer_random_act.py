"""Layers of the randomized activations: RReLU and FeatureAlphaDropout."""
from .layer import Layer

__all__ = ["RReLU", "FeatureAlphaDropout"]


class RReLU(Layer):
    """Randomized leaky ReLU: slopes ~ U(lower, upper) per negative element in training,
    (lower + upper) / 2 in eval."""

    def __init__(self, lower=1.0 / 8.0, upper=1.0 / 3.0, name=None):
        super().__init__()
        self.lower, self.upper, self._name = lower, upper, name

    def forward(self, x):
        from ._functional_random_act import rrelu
        return rrelu(x, self.lower, self.upper, self.training)

    def extra_repr(self):
        name = f", name={self._name}" if self._name else ""
        return f"lower={self.lower}, upper={self.upper}, training={self.training}{name}"


class FeatureAlphaDropout(Layer):
    """Alpha dropout of whole channels (F.feature_alpha_dropout); identity in eval."""

    def __init__(self, p=0.5, name=None):
        super().__init__()
        self.p, self._name = p, name

    def forward(self, x):
        from ._functional_random_act import feature_alpha_dropout
        return feature_alpha_dropout(x, self.p, self.training)

    def extra_repr(self):
        name = f", name={self._name}" if self._name else ""
        return f"p={self.p}{name}"
