"""oar.base: Paddle's `paddle.base` names that model code and examples import (the
framework mode switch lives in oar.base.framework, the dygraph guard in
oar.base.dygraph; the static-graph names come from oar.static on first use)."""
from . import dygraph, framework  # noqa: F401
from .framework import in_dygraph_mode, in_dynamic_mode, in_pir_mode  # noqa: F401

_FROM_STATIC = ("Program", "program_guard", "default_main_program", "default_startup_program", "Executor",
                "global_scope", "scope_guard", "Scope", "data", "save_inference_model", "load_inference_model")


def __getattr__(name):
    if name in _FROM_STATIC:
        from .. import static

        return getattr(static, name)
    if name in ("set_flags", "get_flags"):  # paddle.base.set_flags is paddle.set_flags
        from .. import _flags

        return getattr(_flags, name)
    if name in ("CPUPlace", "CUDAPlace"):
        from .. import _device

        return getattr(_device, name)
    raise AttributeError(f"module 'oar.base' has no attribute '{name}'")
