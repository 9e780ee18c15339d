"""Loss layers over oar.nn.functional's losses, and Bilinear (Paddle 3.x signatures)."""
from . import functional as F
from .layer import Layer

__all__ = ["NLLLoss", "SmoothL1Loss", "BCELoss", "BCEWithLogitsLoss", "KLDivLoss",
           "MarginRankingLoss", "Bilinear"]


class NLLLoss(Layer):
    def __init__(self, weight=None, ignore_index=-100, reduction="mean", name=None):
        super().__init__()
        F._functional_loss._check_reduction("NLLLoss", reduction)
        self.weight, self.ignore_index, self.reduction = weight, ignore_index, reduction

    def forward(self, input, label):  # noqa: A002
        return F.nll_loss(input, label, self.weight, self.ignore_index, self.reduction)


class SmoothL1Loss(Layer):
    def __init__(self, reduction="mean", delta=1.0, name=None):
        super().__init__()
        F._functional_loss._check_reduction("SmoothL1Loss", reduction)
        self.reduction, self.delta = reduction, delta

    def forward(self, input, label):  # noqa: A002
        return F.smooth_l1_loss(input, label, self.reduction, self.delta)


class BCELoss(Layer):
    def __init__(self, weight=None, reduction="mean", name=None):
        super().__init__()
        F._functional_loss._check_reduction("BCELoss", reduction)
        self.weight, self.reduction = weight, reduction

    def forward(self, input, label):  # noqa: A002
        return F.binary_cross_entropy(input, label, self.weight, self.reduction)


class BCEWithLogitsLoss(Layer):
    def __init__(self, weight=None, reduction="mean", pos_weight=None, name=None):
        super().__init__()
        F._functional_loss._check_reduction("BCEWithLogitsLoss", reduction)
        self.weight, self.reduction, self.pos_weight = weight, reduction, pos_weight

    def forward(self, logit, label):
        return F.binary_cross_entropy_with_logits(logit, label, self.weight, self.reduction,
                                                  self.pos_weight)


class KLDivLoss(Layer):
    def __init__(self, reduction="mean", log_target=False):
        super().__init__()
        F._functional_loss._check_reduction("KLDivLoss", reduction,
                                            ("mean", "batchmean", "sum", "none"))
        self.reduction, self.log_target = reduction, log_target

    def forward(self, input, label):  # noqa: A002
        return F.kl_div(input, label, self.reduction, self.log_target)


class MarginRankingLoss(Layer):
    def __init__(self, margin=0.0, reduction="mean", name=None):
        super().__init__()
        F._functional_loss._check_reduction("MarginRankingLoss", reduction)
        self.margin, self.reduction = margin, reduction

    def forward(self, input, other, label):  # noqa: A002
        return F.margin_ranking_loss(input, other, label, self.margin, self.reduction)


class Bilinear(Layer):
    """weight [out_features, in1_features, in2_features], bias [1, out_features]; by default
    the weight gets the default parameter initializer (Xavier-uniform) and the bias zeros, as
    Paddle (bias_attr=False: no bias)."""

    def __init__(self, in1_features, in2_features, out_features, weight_attr=None,
                 bias_attr=None, name=None):
        super().__init__()
        for n, v in (("in1_features", in1_features), ("in2_features", in2_features),
                     ("out_features", out_features)):
            if int(v) <= 0:
                raise ValueError(f"Bilinear: {n} must be positive, got {v}")
        self.weight = self.create_parameter([out_features, in1_features, in2_features],
                                            attr=weight_attr)
        self.bias = self.create_parameter([1, out_features], attr=bias_attr, is_bias=True)

    def forward(self, x1, x2):
        return F.bilinear(x1, x2, self.weight, self.bias)
