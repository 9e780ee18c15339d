"""oar.base: Paddle's `paddle.base` names that model code and examples import (the
framework mode switch lives in oar.base.framework, the dygraph guard in
oar.base.dygraph; the static-graph names come from oar.static on first use)."""
from . import dygraph, framework  # noqa: F401
from .framework import in_dygraph_mode, in_dynamic_mode, in_pir_mode  # noqa: F401

_FROM_STATIC = ("Program", "program_guard", "default_main_program", "default_startup_program", "Executor",
                "global_scope", "scope_guard", "Scope", "data", "save_inference_model", "load_inference_model")
_SUBMODULES = ("dataset", "data_feed_desc", "data_feeder", "executor", "log_helper", "io", "core", "lod_tensor")
_FROM_SUBMODULE = {  # name -> the submodule (of oar.base) that defines it
    "DatasetFactory": "dataset", "InMemoryDataset": "dataset", "QueueDataset": "dataset",
    "DataFeedDesc": "data_feed_desc", "DataFeeder": "data_feeder", "create_lod_tensor": "lod_tensor",
    "create_random_int_lodtensor": "lod_tensor", "is_compiled_with_cuda": "core",
    "is_compiled_with_xpu": "core", "is_compiled_with_rocm": "core",
}


def enable_dygraph(place=None):
    """Dynamic (eager) mode: paddle.disable_static."""
    from .. import static

    static.disable_static(place)


def disable_dygraph():
    """Static-graph mode: paddle.enable_static."""
    from .. import static

    static.enable_static()


def __getattr__(name):
    import importlib

    if name in _FROM_STATIC:
        from .. import static

        return getattr(static, name)
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    if name in _FROM_SUBMODULE:
        return getattr(importlib.import_module(f"{__name__}.{_FROM_SUBMODULE[name]}"), name)
    if name in ("set_flags", "get_flags"):  # paddle.base.set_flags is paddle.set_flags
        from .. import _flags

        return getattr(_flags, name)
    if name in ("CPUPlace", "CUDAPlace"):
        from .. import _device

        return getattr(_device, name)
    raise AttributeError(f"module 'oar.base' has no attribute '{name}'")
