"""Device plugins (issue 13; Note [Devices]): loading and discovery.

At `import oar`, every ``*.so`` in the folders of ``CUSTOM_DEVICE_ROOT`` (``:``-separated,
Paddle's variable) and in ``site-packages/oar_custom_device/`` is loaded as a device plugin
(backends/include/oar/device_ext.h). A library the runtime refuses (no entry point,
another ABI major version, short structs, a missing required slot, a failing
``initialize``, a refused C kernel) gives one warning naming the file, the device type and
both ABI versions, and registers nothing; the others still load.

The loader is reached through the core library's C entry ``oar_load_plugin`` with ctypes,
so it needs no binding of its own.
"""
import ctypes
import glob
import os
import site
import sys
import warnings

__all__ = ["load_plugin", "discover", "plugin_dirs", "loaded_plugins", "refused_plugins"]

_loaded = {}   # path -> device type
_refused = {}  # path -> message

# oar::ErrorKind names (the prefix of the loader's message) -> Python exceptions, as the
# bindings translate them (python/csrc/module.cc).
_EXCEPTIONS = {
    "InvalidArgument": ValueError, "InvalidType": TypeError, "OutOfRange": IndexError,
    "Unimplemented": NotImplementedError, "ResourceExhausted": MemoryError,
}


def _core():
    """The loaded liboar_core (the one _C links against), found through the process's maps."""
    from . import _C  # noqa: F401  (loads liboar_core)
    path = "liboar_core.so"
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                if "liboar_core" in line and "/" in line:
                    path = line[line.index("/"):].strip()
                    break
    except OSError:
        pass
    lib = ctypes.CDLL(path)
    lib.oar_load_plugin.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
    lib.oar_load_plugin.restype = ctypes.c_int
    return lib


_lib = None


def load_plugin(path):
    """Loads the device plugin at `path` and returns its device type. Raises (ValueError,
    RuntimeError, ...) with a message naming the file, the device type and both ABI
    versions when the runtime refuses it; nothing of a refused plugin stays registered."""
    global _lib
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"load_plugin: path must be a str or os.PathLike, got {type(path).__name__}")
    path = os.fspath(path)
    if _lib is None:
        _lib = _core()
    buf = ctypes.create_string_buffer(4096)
    if _lib.oar_load_plugin(path.encode(), buf, len(buf)) == 0:
        device_type = buf.value.decode()
        _loaded[path] = device_type
        return device_type
    text = buf.value.decode(errors="replace")
    kind, _, message = text.partition(": ")
    raise _EXCEPTIONS.get(kind, RuntimeError)(message or text)


def plugin_dirs():
    """The folders scanned at import: CUSTOM_DEVICE_ROOT's, then each site-packages'
    oar_custom_device/ (where plugin wheels install their libraries)."""
    dirs = [d for d in os.environ.get("CUSTOM_DEVICE_ROOT", "").split(":") if d]
    roots = list(site.getsitepackages()) if hasattr(site, "getsitepackages") else []
    if site.ENABLE_USER_SITE:
        roots.append(site.getusersitepackages())
    roots += [p for p in sys.path if p.endswith("site-packages")]
    for root in roots:
        d = os.path.join(root, "oar_custom_device")
        if d not in dirs:
            dirs.append(d)
    return dirs


def discover():
    """Loads every plugin library in plugin_dirs() not loaded yet; warns once per refused
    library. Returns the device types loaded by this call."""
    found = []
    for d in plugin_dirs():
        for path in sorted(glob.glob(os.path.join(d, "*.so"))):
            path = os.path.realpath(path)
            if path in _loaded or path in _refused:
                continue
            try:
                found.append(load_plugin(path))
            except Exception as e:  # noqa: BLE001 (every refusal becomes one warning)
                _refused[path] = str(e)
                warnings.warn(f"oar: device plugin refused: {e}", RuntimeWarning, stacklevel=2)
    return found


def loaded_plugins():
    """{path: device type} of the plugins loaded in this process."""
    return dict(_loaded)


def refused_plugins():
    """{path: reason} of the plugin libraries discovery refused."""
    return dict(_refused)


discover()
