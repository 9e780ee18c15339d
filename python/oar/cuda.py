"""paddle.cuda: the CUDA device queries. This build has no CUDA backend (oar.is_compiled_with_cuda()
is False), so no CUDA device is available; the random-state functions act on the
generator of the current device, as Paddle's do when no GPU is present."""


def is_available():
    """Whether a CUDA device can be used (never, in a build without the CUDA backend)."""
    return False


def device_count():
    return 0


def is_initialized():
    return False


def is_current_stream_capturing():
    """Whether a CUDA graph is being captured (never without CUDA)."""
    return False


def synchronize(device=None):
    """Waits for the device's work: without CUDA devices, CPU ops have already finished."""
    if device is not None:
        _no_cuda_device(device, "synchronize")


def _no_cuda_device(device, who):
    name = device if isinstance(device, str) else f"gpu:{device}" if isinstance(device, int) else str(device)
    if name != "cpu":
        raise ValueError(f"paddle.cuda.{who}: device {name!r} is not available: this build of Oar has no CUDA "
                         f"backend (available devices: {__import__('oar').device.get_available_device()})")


def get_rng_state(device=None):
    """The random generator state (of the current device)."""
    if device is not None:
        _no_cuda_device(device, "get_rng_state")
    import oar

    return oar.get_rng_state()


def set_rng_state(new_state, device=None):
    if device is not None:
        _no_cuda_device(device, "set_rng_state")
    import oar

    oar.set_rng_state(new_state)


def manual_seed_all(seed):
    """Seeds every device's generator (here: the CPU's)."""
    import oar

    oar.seed(seed)


def manual_seed(seed):
    import oar

    oar.seed(seed)


def current_device():
    """The index of the current device (0 on the CPU)."""
    from .device import current_device as _cur
    return _cur()


def device(device=None):
    """paddle.cuda.device: an alias of paddle.device.device (the context manager)."""
    from .device import device as _dev
    return _dev(device)


def is_bf16_supported(including_emulation=True):
    """paddle.cuda.is_bf16_supported: an alias of paddle.device.is_bf16_supported."""
    from .device import is_bf16_supported as _bf16
    return _bf16(including_emulation)
