"""paddle.device.xpu: this build has no XPU backend, so no XPU device exists; the random
state functions act on the one generator (an 'xpu:N' device argument is an error naming
the available devices)."""
from ._queries import get_rng_state, manual_seed, manual_seed_all, set_rng_state  # noqa: F401


def device_count():
    """The number of XPUs: 0 in this build."""
    return 0


def is_available():
    return False


def synchronize(device=None):
    """Waits for the XPU's work: there is none without an XPU backend."""
    if device is not None:
        from ._queries import _check_device
        _check_device(device, "xpu.synchronize")
