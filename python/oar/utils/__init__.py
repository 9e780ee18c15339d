from . import dlpack  # noqa: F401
from ..version import require_version  # noqa: E402,F401  (paddle.utils.require_version)
from .install_check import run_check  # noqa: E402,F401  (paddle.utils.run_check)


def __getattr__(name):
    # Submodules loaded on first use (import oar stays fast).
    if name in ("unique_name", "cpp_extension"):
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'oar.utils' has no attribute '{name}'")
