"""oar.hapi: the high-level API (Model, callbacks, summary, flops)."""

from .model import Model, InputSpec  # noqa: F401
from .model_summary import summary  # noqa: F401
from .dynamic_flops import flops  # noqa: F401
from . import callbacks  # noqa: F401
