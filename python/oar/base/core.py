"""paddle.base.core: the names of Paddle's C++ core that Python code uses directly."""
from .._device import CPUPlace, CUDAPlace  # noqa: F401


class EOFException(Exception):
    """Raised by Executor.run when a non-iterable reader (PyReader started with start())
    has no more batches; reset() the reader to read again."""


def is_compiled_with_cuda():
    return False


def is_compiled_with_xpu():
    return False


def is_compiled_with_rocm():
    return False


def is_compiled_with_ipu():
    return False
