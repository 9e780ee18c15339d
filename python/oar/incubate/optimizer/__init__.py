"""paddle.incubate.optimizer: LBFGS (now oar.optimizer.LBFGS) and LookAhead."""
from ...optimizer import LBFGS  # noqa: F401
from ..lookahead import LookAhead  # noqa: F401

__all__ = ["LBFGS", "LookAhead"]
