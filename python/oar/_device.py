"""Places and the current device (Paddle's paddle.set_device / paddle.device.*).

Device types are the CPU and every plugin the DeviceManager registered
(oar.device.load_plugin(path)); a place string is 'cpu', '<type>' or '<type>:<id>', and
Paddle's 'custom:<type>:<id>' is accepted as an alias. Note [Devices] (docs/notes/devices.md)."""
from . import _C

Place = _C.Place
CPUPlace = _C.CPUPlace
CUDAPlace = _C.CUDAPlace


def CustomPlace(device_type, device_id=0):
    """paddle.CustomPlace('my_dev', 0): the place of a plugin device (checked to exist)."""
    return parse_device(f"{device_type}:{device_id}", "CustomPlace")


class CUDAPinnedPlace:
    """paddle.CUDAPinnedPlace(): page-locked host memory, from which copies to a device run
    asynchronously. Oar has no CUDA: it names the pinned memory of the current device (the
    current place when it is a device, else device 0 of the first loaded plugin). Tensors in
    it are CPU tensors (Tensor.is_pinned()); Note [Pinned memory] (docs/notes/devices.md)."""

    def __repr__(self):
        return "Place(gpu_pinned)"

    __str__ = __repr__

    def __eq__(self, other):
        return isinstance(other, CUDAPinnedPlace)

    def __hash__(self):
        return hash("gpu_pinned")

    def is_cuda_pinned_place(self):
        return True

    def is_cpu_place(self):
        return False

    def is_gpu_place(self):
        return False

    def is_custom_place(self):
        return False


def _pinned_device(device, op):
    """The device place whose pinned memory `device` (None, a CUDAPinnedPlace, a device
    string or Place) asks for; RuntimeError when the process has only the CPU."""
    if device is None or isinstance(device, CUDAPinnedPlace):
        current = _C._get_current_place()
        if not current.is_cpu_place():
            return current
        types = get_all_custom_device_type()
        if not types:
            raise RuntimeError(f"{op}: pinned memory belongs to a device, and this process has only "
                               f"the CPU (Oar is not compiled with CUDA and no device plugin is "
                               f"loaded; load one with oar.device.load_plugin(path))")
        return parse_device(f"{types[0]}:0", op)
    place = parse_device(device, op)
    if place.is_cpu_place():
        raise ValueError(f"{op}: pinned memory belongs to a device such as "
                         f"{get_available_custom_device() or ['<plugin>:0']}, got device 'cpu'")
    return place


def is_compiled_with_cuda():
    return False


def is_compiled_with_cinn():
    """True when the fusion compiler's LLVM code generator was built (OAR_WITH_CINN)."""
    from . import _C
    return _C.cinn.compiled_with_cinn()


def get_all_device_type():
    """Device types this process can run on: 'cpu' and each loaded plugin's type."""
    return ["cpu"] + get_all_custom_device_type()


def get_all_custom_device_type():
    """The device types of the loaded plugins (Paddle's get_all_custom_device_type)."""
    return [t for t in _C._device_types() if t not in ("cpu", "gpu")]


def get_available_custom_device():
    """Every plugin device as 'type:id' (Paddle's get_available_custom_device)."""
    return [f"{t}:{i}" for t in get_all_custom_device_type() for i in range(_C._device_count(t))]


def get_available_device():
    """Every device this process can run on: 'cpu' first, then each plugin device."""
    return ["cpu"] + get_available_custom_device()


def is_compiled_with_custom_device(device_type):
    """Whether a plugin of `device_type` is loaded."""
    return device_type in get_all_custom_device_type()


def parse_device(device, op="set_device"):
    """The Place of a device string ('cpu', 'sample', 'sample:1', 'custom:sample:1') or of a
    Place; an unknown type or id raises ValueError naming the available devices."""
    if isinstance(device, Place):
        device = device.device_str()
    if not isinstance(device, str):
        raise TypeError(f"{op}: device must be a str such as 'cpu', got {type(device).__name__}")
    name = device.strip().lower()
    if name.startswith("custom:"):
        name = name[len("custom:"):]
    if not name:
        raise ValueError(f"{op}: empty device string")
    kind, _, idx = name.partition(":")
    if kind == "cuda":
        kind = "gpu"
    if kind not in get_all_device_type():
        raise ValueError(f"{op}: device '{device}' is not available; registered device types: "
                         f"{get_all_device_type()}, available devices: {get_available_device()} "
                         f"(load a plugin with oar.device.load_plugin(path))")
    if kind == "cpu":
        if idx not in ("", "0"):
            raise ValueError(f"{op}: bad device id in '{device}' (the CPU is 'cpu')")
        return CPUPlace()
    place = _C.parse_place(f"{kind}:{idx or 0}")
    if place.get_device_id() >= _C._device_count(kind):
        raise ValueError(f"{op}: device '{device}' is not available: '{kind}' has "
                         f"{_C._device_count(kind)} device(s); available devices: "
                         f"{get_available_device()}")
    return place


def set_device(device):
    """oar.set_device('cpu' | 'sample:0' | 'custom:sample:0'): makes it the current device
    (where creation ops and to_tensor put tensors) and returns its Place. Case-insensitive,
    like Paddle; an unknown device raises ValueError naming the available ones."""
    place = parse_device(device)
    _C._set_current_place(place)
    return place


def get_device(input=None):  # noqa: A002 (Paddle's argument name)
    """The current device as a string ('cpu', 'sample:0', ...), as Paddle's get_device;
    given a Tensor, its device id instead (-1 for a tensor on the CPU)."""
    if input is None:
        return _C._get_current_place().device_str()
    place = getattr(input, "place", None)
    if not isinstance(place, Place):
        raise TypeError(f"get_device: input must be a Tensor or None, got {type(input).__name__}")
    return -1 if place.is_cpu_place() else place.get_device_id()


def _place_or_current(device, op):
    return _C._get_current_place() if device is None else parse_device(device, op)
