"""paddle.incubate.nn.functional: names that live in oar.nn.functional."""
from ...nn.functional import swiglu  # noqa: F401

__all__ = ["swiglu"]
