"""Layers over _functional_loss_more's losses and activations (CosineEmbeddingLoss,
TripletMarginLoss, PoissonNLLLoss, Maxout, ChannelShuffle...), the named padding layers
(ConstantPad1D, ReflectionPad2D, ZeroPad3D...), SiLU, Softmax2D and Unflatten."""
from .. import _C
from . import functional as F
from .layer import Layer
from .layer_cnn import _act_layer, _bind_args
from .layer_manip import Pad1D, Pad2D, Pad3D

__all__ = ["CosineEmbeddingLoss", "HingeEmbeddingLoss", "SoftMarginLoss",
           "MultiLabelSoftMarginLoss", "MultiMarginLoss", "TripletMarginLoss",
           "TripletMarginWithDistanceLoss", "PoissonNLLLoss", "GaussianNLLLoss", "Maxout",
           "ChannelShuffle", "SiLU", "Softmax2D", "Unflatten"]


def _loss_layer(name, fn, params):
    """A loss layer: constructor arguments `params` [(name, default)], forward(*tensors)."""
    def __init__(self, *args, **kwargs):
        Layer.__init__(self)
        values = _bind_args(name, params, args, kwargs)
        if values.get("reduction", "mean") not in ("mean", "sum", "none"):
            raise ValueError(f"{name}: reduction must be 'mean', 'sum' or 'none', got "
                             f"'{values['reduction']}'")
        self._loss_args = values

    def forward(self, *tensors):
        return fn(*tensors, **self._loss_args)

    def extra_repr(self):
        return ", ".join(f"{k}={v}" for k, v in self._loss_args.items())
    return type(name, (Layer,), {"__init__": __init__, "forward": forward,
                                 "extra_repr": extra_repr})


CosineEmbeddingLoss = _loss_layer("CosineEmbeddingLoss", F.cosine_embedding_loss,
                                  [("margin", 0), ("reduction", "mean")])
HingeEmbeddingLoss = _loss_layer("HingeEmbeddingLoss", F.hinge_embedding_loss,
                                 [("margin", 1.0), ("reduction", "mean")])
SoftMarginLoss = _loss_layer("SoftMarginLoss", F.soft_margin_loss, [("reduction", "mean")])
MultiLabelSoftMarginLoss = _loss_layer("MultiLabelSoftMarginLoss", F.multi_label_soft_margin_loss,
                                       [("weight", None), ("reduction", "mean")])
MultiMarginLoss = _loss_layer("MultiMarginLoss", F.multi_margin_loss,
                              [("p", 1), ("margin", 1.0), ("weight", None), ("reduction", "mean")])
TripletMarginLoss = _loss_layer("TripletMarginLoss", F.triplet_margin_loss,
                                [("margin", 1.0), ("p", 2.0), ("epsilon", 1e-6), ("swap", False),
                                 ("reduction", "mean")])
TripletMarginWithDistanceLoss = _loss_layer(
    "TripletMarginWithDistanceLoss", F.triplet_margin_with_distance_loss,
    [("distance_function", None), ("margin", 1.0), ("swap", False), ("reduction", "mean")])
PoissonNLLLoss = _loss_layer("PoissonNLLLoss", F.poisson_nll_loss,
                             [("log_input", True), ("full", False), ("epsilon", 1e-8),
                              ("reduction", "mean")])
GaussianNLLLoss = _loss_layer("GaussianNLLLoss", F.gaussian_nll_loss,
                              [("full", False), ("epsilon", 1e-6), ("reduction", "mean")])

Maxout = _act_layer("Maxout", F.maxout, [("groups", 2), ("axis", 1)])
ChannelShuffle = _act_layer("ChannelShuffle", F.channel_shuffle,
                            [("groups", 1), ("data_format", "NCHW")])
SiLU = _act_layer("SiLU", F.silu)


class Softmax2D(Layer):
    """Softmax over the channels of a [N, C, H, W] or [C, H, W] input."""

    def forward(self, x):
        if x.ndim not in (3, 4):
            raise ValueError(f"Softmax2D: x must be 3-D or 4-D, got shape {list(x.shape)}")
        return _C.ops.softmax(x, -3)


class Unflatten(Layer):
    """Splits dim `axis` into `shape`."""

    def __init__(self, axis, shape, name=None):
        super().__init__()
        self.axis, self.shape = axis, shape

    def forward(self, x):
        from .. import unflatten
        return unflatten(x, self.axis, self.shape)

    def extra_repr(self):
        return f"axis={self.axis}, shape={self.shape}"


def _named_pad(name, base, mode, fmt):
    """ConstantPad2D, ReflectionPad1D...: base (Pad1D/2D/3D) with the mode fixed."""
    if mode == "constant":
        def __init__(self, padding, value=0.0, data_format=fmt, name=None):
            base.__init__(self, padding, "constant", value, data_format)
    else:
        def __init__(self, padding, data_format=fmt, name=None):
            base.__init__(self, padding, mode, 0.0, data_format)
    return type(name, (base,), {"__init__": __init__})


for _nd, _base, _fmt in ((1, Pad1D, "NCL"), (2, Pad2D, "NCHW"), (3, Pad3D, "NCDHW")):
    for _prefix, _mode in (("Constant", "constant"), ("Reflection", "reflect"),
                           ("Replication", "replicate"), ("Circular", "circular")):
        _n = f"{_prefix}Pad{_nd}D"
        globals()[_n] = _named_pad(_n, _base, _mode, _fmt)
        __all__.append(_n)
ZeroPad1D = type("ZeroPad1D", (Pad1D,), {
    "__init__": lambda self, padding, data_format="NCL", name=None:
    Pad1D.__init__(self, padding, "constant", 0.0, data_format)})
ZeroPad3D = type("ZeroPad3D", (Pad3D,), {
    "__init__": lambda self, padding, data_format="NCDHW", name=None:
    Pad3D.__init__(self, padding, "constant", 0.0, data_format)})
__all__ += ["ZeroPad1D", "ZeroPad3D"]
