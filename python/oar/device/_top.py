"""The device questions Paddle also has at the top level (paddle.get_default_device,
paddle.is_compiled_with_xpu, ...): oar.<name> loads them from here on first use."""
from ._queries import (  # noqa: F401
    get_default_device, is_compiled_with_distribute, is_compiled_with_ipu, is_compiled_with_rocm,
    is_compiled_with_xpu, set_default_device,
)

__all__ = ["get_default_device", "set_default_device", "is_compiled_with_distribute", "is_compiled_with_ipu",
           "is_compiled_with_rocm", "is_compiled_with_xpu"]
