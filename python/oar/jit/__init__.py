"""oar.jit: dynamic-to-static conversion and saved models (docs/notes/jit.md)."""
from .api import (  # noqa: F401
    to_static, not_to_static, ignore_module, enable_to_static, is_tracing, StaticFunction,
    Dy2StaticError,
)
from .dy2static import set_code_level, set_verbosity  # noqa: F401
from .save_load import save, load  # noqa: F401
from .translated_layer import TranslatedLayer  # noqa: F401
from .. import _trace_state
from ..static import nn as _static_nn
from . import _dynamic_shape, api as _api, dy2static as _dy2static

# nn and the indexing/random functions reach the tracer through oar._trace_state.
_trace_state.register(_api._active, _dy2static.convert_call, _static_nn.while_loop, _dynamic_shape)
from . import _train_step  # noqa: E402
_trace_state.defer_side_effect = _train_step.defer_side_effect
