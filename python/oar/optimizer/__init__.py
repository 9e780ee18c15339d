"""oar.optimizer: SGD, Momentum, Adam, AdamW (fused multi-tensor updates)."""
from .optimizer import Optimizer, SGD, Momentum, Adam, AdamW  # noqa: F401
