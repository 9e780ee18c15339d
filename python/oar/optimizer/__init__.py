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
# NAdam, RAdam, Rprop, ASGD and LBFGS load on first use (import oar stays as fast).
_LAZY = {"NAdam": ".optimizer_more", "RAdam": ".optimizer_more", "Rprop": ".optimizer_more",
         "ASGD": ".optimizer_more", "LBFGS": ".lbfgs"}


def __getattr__(name):
    if name in _LAZY:
        import importlib
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module 'oar.optimizer' has no attribute '{name}'")
from . import lr  # noqa: F401
