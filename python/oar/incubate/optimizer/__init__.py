"""paddle.incubate.optimizer: LBFGS (now oar.optimizer.LBFGS) and LookAhead."""
from ...optimizer import LBFGS  # noqa: F401
from ..lookahead import LookAhead  # noqa: F401

__all__ = ["LBFGS", "LookAhead"]


def __getattr__(name):
    if name == "functional":  # loaded on first use
        import importlib

        return importlib.import_module(f"{__name__}.functional")
    raise AttributeError(f"module 'oar.incubate.optimizer' has no attribute '{name}'")
