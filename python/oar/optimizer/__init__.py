"""oar.optimizer: SGD, Momentum, Adam, AdamW, Adamax, Adagrad, Adadelta, RMSProp, Lamb
(fused multi-tensor updates), NAdam, RAdam, Rprop, ASGD, LBFGS (op compositions) and the lr
schedulers."""

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
from .optimizer_more import NAdam, RAdam, Rprop, ASGD  # noqa: F401
from .lbfgs import LBFGS  # noqa: F401
from . import lr  # noqa: F401
