"""paddle.nn.quant: Stub (a placeholder that QAT/PTQ replace with an observer), the
fake-quantized layers of quant_layers (imported on first use of oar.nn.quant), and weight-only
int8 (weight_quantize, weight_dequantize, weight_only_linear)."""
from . import quant_layers  # noqa: F401
from .quant_layers import QuantStub  # noqa: F401
from .quantized_linear import weight_dequantize, weight_only_linear, weight_quantize
from .stub import Stub

__all__ = ["Stub", "weight_quantize", "weight_dequantize", "weight_only_linear"]
