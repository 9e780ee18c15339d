"""oar.base: Paddle's `paddle.base` names that model code and examples import (the
framework mode switch lives in oar.base.framework)."""
from . import framework  # noqa: F401
from .framework import in_dygraph_mode, in_dynamic_mode, in_pir_mode  # noqa: F401
