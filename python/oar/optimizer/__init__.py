"""oar.optimizer: SGD, Momentum, Adam, AdamW, Adamax, Adagrad, Adadelta, RMSProp, Lamb
(fused multi-tensor updates) and the lr schedulers."""

from .optimizer import (  # noqa: F401
    Optimizer,
    SGD,
    Momentum,
    Adam,
    AdamW,
    Adamax,
    Adagrad,
    Adadelta,
    RMSProp,
    Lamb,
)
from . import lr  # noqa: F401
