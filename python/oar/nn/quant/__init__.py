"""paddle.nn.quant: Stub (a placeholder that QAT/PTQ replace with an observer) and the
fake-quantized layers of quant_layers (imported on first use of oar.nn.quant)."""
from . import quant_layers  # noqa: F401
from .quant_layers import QuantStub  # noqa: F401
from .stub import Stub

__all__ = ["Stub"]
