"""oar.jit: dynamic-to-static conversion and saved models (docs/notes/jit.md)."""
from .api import (  # noqa: F401
    to_static, not_to_static, ignore_module, enable_to_static, is_tracing, StaticFunction,
    Dy2StaticError,
)
from .dy2static import set_code_level, set_verbosity  # noqa: F401
from .save_load import save, load  # noqa: F401
from .translated_layer import TranslatedLayer  # noqa: F401
