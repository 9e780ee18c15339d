"""paddle.device.cuda: the CUDA queries of oar.cuda. This build has no CUDA backend:
device_count() is 0 and a CUDA device argument is an error naming the available devices."""
from ..cuda import (  # noqa: F401
    current_device, device, device_count, get_rng_state, is_available, is_bf16_supported,
    is_current_stream_capturing, is_initialized, manual_seed, manual_seed_all, set_rng_state,
    synchronize,
)
