"""paddle.quantization: quantization-aware training (QAT) and post-training quantization
(PTQ) by layer swapping (Note [Quantization] below).

Note [Quantization]: a QuantConfig maps each sublayer of a model to the quanter or observer
factories for its activations and weights (global, by layer type, by name prefix, or by
layer object). quantize() copies the model (unless inplace) and replaces each Linear /
Conv2D with QuantedLinear / QuantedConv2D, which pass the input through the activation
quanter and the weight through the weight quanter before the layer's own op; other leaf
layers with an activation quanter are wrapped in ObserveWrapper, which quantizes their
input. Observers (PTQ) record value ranges and pass values through; fake quanters (QAT)
quantize and dequantize in the forward pass with a straight-through gradient. convert()
turns every quanter or observer into a fixed quantize-dequantize with its learned scale."""
from .base_quanter import BaseObserver, BaseQuanter  # noqa: F401
from .config import QuantConfig  # noqa: F401
from .factory import ObserverFactory, QuanterFactory, quanter  # noqa: F401
from .quantize import PTQ, QAT  # noqa: F401
from .wrapper import ObserveWrapper  # noqa: F401
from . import observers, quanters  # noqa: F401

__all__ = ["QuantConfig", "BaseQuanter", "BaseObserver", "quanter", "QAT", "PTQ"]
