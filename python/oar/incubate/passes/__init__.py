"""paddle.incubate.passes: graph passes written in Python (ir.RegisterPass)."""
from . import ir  # noqa: F401
