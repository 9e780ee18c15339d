"""paddle.decomposition: Python rules that lower an op into other ops (register), applied
to IR programs by decompose (Note [Decomposition rules] in docs/notes/pir.md)."""
from . import register  # noqa: F401
from .decomp import decompose  # noqa: F401

__all__ = ["decompose"]
