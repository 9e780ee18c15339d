"""oar.device: the current device (Paddle's paddle.device). Only the names Paddle's example
prelude and ordinary scripts call live here for now; the device issue builds the rest."""
from .._device import (  # noqa: F401
    get_all_device_type, get_device, is_compiled_with_cuda, set_device,
)
