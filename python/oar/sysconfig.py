"""paddle.sysconfig: where Oar's C headers and libraries are, for code built against it."""
import os

_HERE = os.path.dirname(os.path.abspath(__file__))


def get_include():
    """The folder of Oar's public C headers (the device plugin ABI, the inference C API)."""
    packaged = os.path.join(_HERE, "include")
    if os.path.isdir(packaged):
        return packaged
    # a source checkout: the headers stay in the tree
    return os.path.join(os.path.dirname(os.path.dirname(_HERE)), "backends", "include")


def get_lib():
    """The folder holding Oar's compiled extension (_C) and its libraries."""
    from . import _C

    return os.path.dirname(os.path.abspath(_C.__file__))
