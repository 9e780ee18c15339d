"""Places and the current device."""
from . import _C

Place = _C.Place
CPUPlace = _C.CPUPlace
CUDAPlace = _C.CUDAPlace
CustomPlace = _C.CustomPlace


def is_compiled_with_cuda():
    return False


def is_compiled_with_cinn():
    """True when the fusion compiler's LLVM code generator was built (OAR_WITH_CINN)."""
    from . import _C
    return _C.cinn.compiled_with_cinn()


def get_all_device_type():
    """Device types this process can run on (Paddle's paddle.device.get_all_device_type).
    Only the built-in CPU for now: plugin device types are not exposed to Python yet."""
    return ["cpu"] + (["gpu"] if is_compiled_with_cuda() else [])


def set_device(device):
    """oar.set_device('cpu' | 'gpu:0' | '<custom>:N'): makes it the current device and returns
    its Place. Like Paddle, the name is case-insensitive; a device type that is not registered
    raises ValueError naming the registered ones."""
    if not isinstance(device, str):
        raise TypeError(f"set_device: device must be a str such as 'cpu', got {type(device).__name__}")
    place = _C.parse_place(device.strip().lower())
    registered = get_all_device_type()
    if not place.is_cpu_place():
        raise ValueError(f"set_device: device '{device}' is not available; registered device types: "
                         f"{registered} (use e.g. set_device('cpu'))")
    _C._set_current_place(place)
    return place


def get_device():
    """The current device as a string ('cpu', 'gpu:0', ...), as Paddle's get_device."""
    return _C._get_current_place().device_str()
