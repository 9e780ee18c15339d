"""oar.device (Paddle's paddle.device): device selection, plugins, streams, events and
memory stats. Note [Devices] (docs/notes/devices.md)."""
import contextlib
import importlib
import sys
import threading
import types

from .. import _C
from .._device import (  # noqa: F401
    CPUPlace, CustomPlace, Place, get_all_custom_device_type, get_all_device_type,
    get_available_custom_device, get_available_device, get_device, is_compiled_with_cinn,
    is_compiled_with_cuda, is_compiled_with_custom_device, set_device, _place_or_current,
)
from . import _queries
from ._queries import (  # noqa: F401
    Device, current_device, device_count, get_cudnn_version, get_default_device,
    get_rng_state, is_available, is_bf16_supported, is_compiled_with_distribute,
    is_compiled_with_ipu, is_compiled_with_rocm, is_compiled_with_xpu,
    is_current_stream_capturing, manual_seed, manual_seed_all, set_default_device,
    set_rng_state,
)

_loaded = {}  # path -> device type, so loading a plugin twice is harmless


def load_plugin(path):
    """Loads a device plugin (a shared library exporting oar_init_plugin) and returns its
    device type. Loading the same path again returns the type it registered."""
    import os
    key = os.path.realpath(path)
    if key not in _loaded:
        _loaded[key] = _C._load_plugin(key)
    return _loaded[key]


def synchronize(device=None):
    """Waits for all work queued on the device (default: the current one)."""
    _C._synchronize(_place_or_current(device, "synchronize"))


class Event:
    """A marker in a stream's work (paddle.device.Event): record() places it, synchronize()
    waits for the stream to reach it, a Stream may wait_event() it without blocking the host."""

    def __init__(self, device=None, enable_timing=False, blocking=False, interprocess=False):
        self._event = _C._Event(_place_or_current(device, "Event"))
        self.device = self._event.place

    def record(self, stream=None):
        self._event.record((stream or current_stream(self.device))._stream)

    def synchronize(self):
        self._event.synchronize()

    def query(self):
        """Whether the work before the record has run (True when never recorded)."""
        return self._event.query()

    def __repr__(self):
        return f"<oar.device.Event on {self.device.device_str()}>"


class Stream:
    """A queue of device work that runs in order (paddle.device.Stream). Work on different
    streams may overlap; order them with events (record_event / wait_event / wait_stream)."""

    def __init__(self, device=None, priority=2, stream_base=None):
        if stream_base is not None:  # wraps an existing stream (current_stream)
            self._stream = stream_base
        else:
            self._stream = _C._Stream(_place_or_current(device, "Stream"))
        self.device = self._stream.place

    @property
    def stream_base(self):
        return self._stream

    def synchronize(self):
        """Waits for all work queued on this stream."""
        self._stream.synchronize()

    def query(self):
        """Whether all work queued on this stream has run."""
        return self._stream.query()

    def wait_event(self, event):
        """Work queued here after this call waits for `event`."""
        self._stream.wait_event(event._event)

    def record_event(self, event=None):
        """Records `event` (a new one when None) on this stream and returns it."""
        event = event if event is not None else Event(self.device)
        event._event.record(self._stream)
        return event

    def wait_stream(self, stream):
        """Work queued here after this call waits for the work queued on `stream` so far."""
        self.wait_event(stream.record_event())

    def __eq__(self, other):
        return (isinstance(other, Stream) and self.device == other.device
                and self._stream.handle == other._stream.handle)

    def __hash__(self):
        return hash((self.device.device_str(), self._stream.handle))

    def __repr__(self):
        return f"<oar.device.Stream on {self.device.device_str()} at {self._stream.handle:#x}>"


def current_stream(device=None):
    """The calling thread's current stream of the device (default: the current device)."""
    return Stream(stream_base=_C._current_stream(_place_or_current(device, "current_stream")))


_keep = {}  # (thread, device) -> the stream made current there, kept alive while it is


def set_stream(stream):
    """Makes `stream` current for its device on the calling thread; returns the previous one."""
    prev = Stream(stream_base=_C._set_current_stream(stream._stream))
    _keep[(threading.get_ident(), stream.device.device_str())] = stream
    return prev


@contextlib.contextmanager
def stream_guard(stream):
    """with stream_guard(s): work on s's device goes to s; the previous stream after."""
    if stream is None:
        yield
        return
    prev = set_stream(stream)
    try:
        yield
    finally:
        set_stream(prev)


def _device_arg(device, op):
    """A device argument as Paddle's device queries take it: None (the current device), an
    int (that id of the current device's type), a string or a Place."""
    if isinstance(device, bool):
        raise TypeError(f"{op}: device must be None, an int, a str or a Place, got bool")
    if isinstance(device, int):
        kind = get_device().split(":")[0]
        if device < 0 or (kind == "cpu" and device != 0):
            raise ValueError(f"{op}: device id {device} of the current device type '{kind}' does not "
                             f"exist (available devices: {get_available_device()})")
        return CPUPlace() if kind == "cpu" else _place_or_current(f"{kind}:{device}", op)
    return _place_or_current(device, op)


class _customDeviceProperties:
    """What paddle.device.get_device_properties returns: name, major, minor (the vendor's
    architecture version), total_memory (bytes), multi_processor_count, and the rest of
    the plugin's OAR_DeviceProperties."""

    __slots__ = ("name", "major", "minor", "total_memory", "multi_processor_count", "max_threads_per_block",
                 "runtime_version", "driver_version", "supports_fp16", "supports_bf16")

    def __init__(self, d):
        self.name = d["name"]
        self.major = d["major"]
        self.minor = d["minor"]
        self.total_memory = d["total_memory"]
        self.multi_processor_count = d["compute_units"]
        self.max_threads_per_block = d["max_threads_per_block"]
        self.runtime_version = d["runtime_version"]
        self.driver_version = d["driver_version"]
        self.supports_fp16 = d["supports_fp16"]
        self.supports_bf16 = d["supports_bf16"]

    def __repr__(self):
        return (f"_customDeviceProperties(name='{self.name}', major={self.major}, minor={self.minor}, "
                f"total_memory={self.total_memory // (1 << 20)}MB, "
                f"multi_processor_count={self.multi_processor_count})")


def get_device_properties(device=None):
    """The properties of a device (Paddle's paddle.device.get_device_properties), from the
    plugin's get_device_properties slot; a plugin without it reports its type as name and
    its memory total, the rest 0."""
    return _customDeviceProperties(_C._device_properties(_device_arg(device, "get_device_properties")))


def get_device_name(device=None):
    """The device's name, as its plugin reports it."""
    return get_device_properties(device).name


def get_device_capability(device=None):
    """(major, minor): the vendor's architecture version of the device."""
    p = get_device_properties(device)
    return (p.major, p.minor)


def _stats(device, key):
    return _C._memory_stats(_place_or_current(device, "memory stats"))[key]


def memory_allocated(device=None):
    """Bytes of device memory held by tensors now (allocator blocks)."""
    return _stats(device, "allocated")


def max_memory_allocated(device=None):
    """The most memory_allocated() since start or reset_max_memory_allocated()."""
    return _stats(device, "max_allocated")


def memory_reserved(device=None):
    """Bytes the allocator holds from the device: in use plus cached."""
    return _stats(device, "reserved")


def max_memory_reserved(device=None):
    """The most memory_reserved() since start or reset_max_memory_allocated()."""
    return _stats(device, "max_reserved")


def reset_max_memory_allocated(device=None):
    """Restarts max_memory_allocated() and max_memory_reserved() from the current values."""
    _C._reset_peak_memory(_place_or_current(device, "reset_max_memory_allocated"))


def reset_max_memory_reserved(device=None):
    """Restarts max_memory_reserved() and max_memory_allocated() from the current values
    (the allocator keeps one peak point for both)."""
    _C._reset_peak_memory(_place_or_current(device, "reset_max_memory_reserved"))


def reset_peak_memory_stats(device=None):
    """Restarts the peak memory statistics of the device (default: the current one)."""
    _C._reset_peak_memory(_place_or_current(device, "reset_peak_memory_stats"))


def empty_cache(device=None):
    """Gives the allocator's cached blocks back to the device (default: the current one)."""
    _C._empty_cache(_place_or_current(device, "empty_cache"))

class _DeviceModule(types.ModuleType):
    """oar.device is callable, as paddle.device: oar.device('cpu') is a Device. Its
    submodules cuda and xpu are imported on first use. (A method of the module's class, not
    a module-level __getattr__; only reads of names this module lacks reach it.)"""

    # paddle.device.device, the context manager: a class attribute, because this module's
    # functions take an argument of that name.
    device = _queries.device

    def __call__(self, *args, **kwargs):
        return Device(*args, **kwargs)

    def __getattr__(self, name):
        if name in ("cuda", "xpu"):
            return importlib.import_module(f"{self.__name__}.{name}")
        raise AttributeError(f"module '{self.__name__}' has no attribute '{name}'")


sys.modules[__name__].__class__ = _DeviceModule
