"""paddle.device's queries beyond places and streams: device counts, random state, the
`device` context manager, the `Device` value (what `paddle.device(...)` returns), build
questions (`is_compiled_with_*`, `get_cudnn_version`) and bf16 support.

Oar has one random generator for every device (random numbers are drawn on the host), so
the random-state functions take a device only to check that it exists."""
from .. import _C
from .._device import (
    CPUPlace, Place, get_all_custom_device_type, get_device, parse_device, set_device,
)

# Device kinds Paddle names that this build has no backend for: counts of them are 0.
_ABSENT_KINDS = ("gpu", "cuda", "xpu", "ipu", "rocm")


def device_count(device_type=None):
    """The number of devices of `device_type` (a plugin's type, or 'gpu'/'xpu': 0 in this
    build); by default, of the first loaded plugin's type, and 0 when only the CPU is
    there (as Paddle's CPU build)."""
    if device_type is None:
        types = get_all_custom_device_type()
        return _C._device_count(types[0]) if types else 0
    if not isinstance(device_type, str):
        raise TypeError(f"device_count: device_type must be a str such as 'gpu' or a plugin's type, "
                        f"got {type(device_type).__name__}")
    kind = device_type.strip().lower().partition(":")[0]
    if kind == "cpu":
        raise ValueError("device_count: device_type 'cpu' is not an accelerator; device_count counts "
                         f"devices of a plugin's type {get_all_custom_device_type()} or 'gpu'")
    if kind in get_all_custom_device_type():
        return _C._device_count(kind)
    return 0


def is_available():
    """Whether at least one accelerator (a plugin's device) can be used."""
    return device_count() >= 1


def is_current_stream_capturing():
    """Whether the current stream is capturing a graph (Oar has no graph capture: False)."""
    return False


def _check_device(device, op):
    if device is None:
        return _C._get_current_place()
    if isinstance(device, bool):
        raise TypeError(f"{op}: device must be None, an int, a str or a Place, got bool")
    if isinstance(device, int):
        kind = get_device().partition(":")[0]
        if kind == "cpu":
            types = get_all_custom_device_type()
            if not types:
                if device != 0:
                    raise ValueError(f"{op}: device id {device} does not exist: this process has only the CPU")
                return CPUPlace()
            kind = types[0]
        return parse_device(f"{kind}:{device}", op)
    if isinstance(device, Device):
        return parse_device(str(device), op)
    return parse_device(device, op)


def get_rng_state(device=None):
    """The random generator's state (Oar draws every device's random numbers from one
    generator: the device is checked, then the state is that generator's)."""
    _check_device(device, "get_rng_state")
    from .._creation import get_rng_state as _get
    return _get()


def set_rng_state(new_state, device=None):
    """Restores a state from get_rng_state(); later random ops repeat the same draws."""
    _check_device(device, "set_rng_state")
    from .._creation import set_rng_state as _set
    _set(new_state)


def manual_seed(seed):
    """Seeds the random generator (the one every device draws from), as paddle.seed."""
    import math

    from .._creation import seed as _seed
    if isinstance(seed, float) and math.isfinite(seed) and seed.is_integer():
        seed = int(seed)
    if isinstance(seed, bool) or not hasattr(seed, "__index__"):
        raise TypeError(f"manual_seed: seed must be an int, got {seed!r} ({type(seed).__name__})")
    _seed(seed.__index__())


def manual_seed_all(seed):
    """Seeds every device's random generator (here: the one generator)."""
    manual_seed(seed)


class device:
    """with paddle.device.device('cpu'): makes a device current inside the block and the
    previous one current again after it (also on an exception). Accepts a device string,
    a Place or an int id of the current device type."""

    def __init__(self, device=None):
        self.place = None if device is None else _check_device(device, "device")
        self._prev = None

    def __enter__(self):
        self._prev = get_device()
        if self.place is not None:
            set_device(self.place)
        return self

    def __exit__(self, exc_type, exc, tb):
        set_device(self._prev)
        return False


class Device(str):
    """A device value, what `paddle.device(...)` returns: a str such as 'cpu' or
    'sample:0' with `.type` and `.index` (None for the CPU). `paddle.device('cuda', 1)`,
    `paddle.device(place)` and `paddle.device(other_device)` build one; an int is a GPU
    index, as in Paddle. Usable where a device string is, and as a context manager that makes
    it the current device inside the block."""

    def __new__(cls, type=None, index=None):  # noqa: A002 (Paddle's argument name)
        if isinstance(type, Place):
            type = type.device_str()
        if isinstance(type, bool) or type is None:
            if type is None and index is not None:
                raise ValueError("device: a device type must be given with an index")
            raise TypeError(f"device: expected a device string, a Place or an int, got {type!r}")
        if isinstance(type, int):
            type, index = "cuda", type
        if not isinstance(type, str):
            raise TypeError(f"device: expected a device string, a Place or an int, got {type.__class__.__name__}")
        kind, sep, idx = type.strip().lower().partition(":")
        if kind.startswith("custom"):
            raise ValueError(f"device: write the plugin's type directly ('{idx}'), got '{type}'")
        if not kind or (sep and not idx.isdigit()):
            raise ValueError(f"device: bad device string '{type}' (expected 'cpu', '<type>' or '<type>:<id>')")
        known = ("cpu",) + _ABSENT_KINDS + tuple(get_all_custom_device_type())
        if kind not in known:
            raise ValueError(f"device: unknown device type '{kind}' (known: {list(known)})")
        if index is not None:
            if sep:
                raise ValueError(f"device: index {index} given twice ('{type}' has one)")
            if isinstance(index, bool) or not isinstance(index, int) or index < 0:
                raise ValueError(f"device: index must be an int >= 0, got {index!r}")
        elif sep:
            index = int(idx)
        if kind == "cpu":
            index = None
        elif index is None:
            index = 0
        obj = str.__new__(cls, "cpu" if kind == "cpu" else f"{kind}:{index}")
        obj._type, obj._index = kind, index
        return obj

    @property
    def type(self):  # noqa: A003
        return self._type

    @property
    def index(self):
        return self._index

    def __enter__(self):
        self._prev = getattr(self, "_prev", [])
        self._prev.append(get_device())
        set_device(str(self).replace("cuda", "gpu"))
        return self

    def __exit__(self, exc_type, exc, tb):
        set_device(self._prev.pop())
        return False


def get_default_device():
    """The current device as a Device ('gpu' spelled 'cuda', as Paddle)."""
    return Device(get_device().replace("gpu", "cuda"))


def set_default_device(device):
    """Same as set_device."""
    set_device(device)


def is_compiled_with_rocm():
    return False


def is_compiled_with_xpu():
    return False


def is_compiled_with_ipu():
    return False


def is_compiled_with_distribute():
    """True: Oar's distributed package (Gloo on CPU) is always built."""
    return True


def get_cudnn_version():
    """None: this build has no CUDA backend, hence no cuDNN."""
    return None


def is_bf16_supported(including_emulation=True):
    """Whether the current device computes in bfloat16. On the CPU every bf16 op runs (through
    float32 where the CPU has no bf16 instructions): True, or with
    including_emulation=False, whether the CPU has bf16 units (AVX-512 BF16 or AMX; where
    they are slower than its float32 FMAs, Oar's bf16 products still go through float32:
    docs/notes/gemm_backends.md). On a plugin device: what its properties say."""
    place = _C._get_current_place()
    if place.is_cpu_place():
        return True if including_emulation else bool(_C._bf16_units())
    from . import get_device_properties
    return bool(get_device_properties(place).supports_bf16)


def current_device():
    """The index of the current device (0 on the CPU, as Paddle)."""
    kind, _, idx = get_device().partition(":")
    return int(idx) if idx else 0
