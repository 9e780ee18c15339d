"""paddle.incubate.optimizer: LBFGS (now oar.optimizer.LBFGS), LookAhead and ModelAverage."""
from ...optimizer import LBFGS  # noqa: F401
from ..lookahead import LookAhead  # noqa: F401
from ..modelaverage import ModelAverage  # noqa: F401

__all__ = ["LBFGS", "LookAhead", "ModelAverage"]


def __getattr__(name):
    if name == "functional":  # loaded on first use
        import importlib

        return importlib.import_module(f"{__name__}.functional")
    raise AttributeError(f"module 'oar.incubate.optimizer' has no attribute '{name}'")
