"""paddle.utils.cpp_extension: where custom-op builds go. Oar's custom ops are device
plugins built against backends/include (see docs/notes/devices.md); building Paddle C++
extensions from Python is not supported, and load/setup say so."""
import os


def get_build_directory(verbose=False):
    """The root folder of custom-op builds: $PADDLE_EXTENSION_DIR, or
    ~/.cache/paddle_extensions (made if missing)."""
    root = os.environ.get("PADDLE_EXTENSION_DIR")
    if root is None:
        root = os.path.join(os.path.expanduser("~"), ".cache", "paddle_extensions")
    root = os.path.abspath(root)
    os.makedirs(root, exist_ok=True)
    if verbose:
        print(f"custom-op build directory: {root}")
    return root


def _unsupported(name):
    def fn(*args, **kwargs):
        raise NotImplementedError(f"paddle.utils.cpp_extension.{name}: Oar does not build Paddle C++ extensions; "
                                  f"custom kernels enter through the device plugin ABI "
                                  f"(oar.device.load_plugin, backends/include/oar/device_ext.h)")
    fn.__name__ = name
    return fn


load = _unsupported("load")
setup = _unsupported("setup")
CppExtension = _unsupported("CppExtension")
CUDAExtension = _unsupported("CUDAExtension")
BuildExtension = _unsupported("BuildExtension")
