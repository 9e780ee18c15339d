"""Weight-decay regularizers (Paddle's oar.regularizer): added to a parameter's gradient
before the optimizer update. Give one as an optimizer's weight_decay, in a parameter
group, or in ParamAttr(regularizer=...), which takes precedence over the optimizer's."""


class WeightDecayRegularizer:
    kind = None

    def __init__(self, coeff=0.0):
        coeff = float(coeff)
        if coeff < 0:
            raise ValueError(f"{type(self).__name__}: coeff must be >= 0, got {coeff}")
        self._coeff = coeff

    @property
    def coeff(self):
        return self._coeff

    def __repr__(self):
        return f"{type(self).__name__}(coeff={self._coeff})"


class L2Decay(WeightDecayRegularizer):
    """grad += coeff * param"""

    kind = "l2"


class L1Decay(WeightDecayRegularizer):
    """grad += coeff * sign(param)"""

    kind = "l1"
