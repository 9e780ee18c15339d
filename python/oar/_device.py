"""Places and the current device."""
from . import _C

Place = _C.Place
CPUPlace = _C.CPUPlace
CUDAPlace = _C.CUDAPlace
CustomPlace = _C.CustomPlace


def set_device(device):
    """oar.set_device('cpu' | 'gpu:0' | '<custom>:N'); returns the Place."""
    place = _C.parse_place(device)
    if not place.is_cpu_place():
        raise ValueError(f"set_device: device '{device}' is not available in this build "
                         "(only 'cpu' is compiled in)")
    _C._set_current_place(place)
    return place


def get_device():
    return _C._get_current_place().device_str()


def is_compiled_with_cuda():
    return False
