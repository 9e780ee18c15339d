"""Data types: oar.float32 and friends are members of the C++ DataType enum."""
import numpy as _np

from . import _C

DataType = _C.DataType
dtype = DataType
bool_ = DataType.bool
int8 = DataType.int8
uint8 = DataType.uint8
int16 = DataType.int16
int32 = DataType.int32
int64 = DataType.int64
float16 = DataType.float16
bfloat16 = DataType.bfloat16
float32 = DataType.float32
float64 = DataType.float64
complex64 = DataType.complex64
complex128 = DataType.complex128


def convert_dtype(d):
    """Anything a user may pass as a dtype (oar.float32, 'float32', np.float32) -> DataType."""
    if d is None or isinstance(d, DataType):
        return d
    if isinstance(d, str):
        return DataType.__members__[_C_name(d)]
    return DataType.__members__[_np.dtype(d).name]


_ALIASES = {"float": "float32", "double": "float64", "half": "float16", "int": "int64",
            "long": "int64", "bf16": "bfloat16", "fp16": "float16", "fp32": "float32",
            "fp64": "float64", "cfloat": "complex64", "cdouble": "complex128"}


def _C_name(s):
    s = s.replace("paddle.", "").replace("oar.", "")
    s = _ALIASES.get(s, s)
    if s not in DataType.__members__:
        raise TypeError(f"unknown dtype '{s}'")
    return s


def get_default_dtype():
    return _C.get_default_dtype()


def set_default_dtype(d):
    _C.set_default_dtype(convert_dtype(d) if not isinstance(d, str) else d)


def is_floating_point(x):
    return x.dtype.is_floating_point


def is_complex(x):
    """Whether x is a complex64 or complex128 tensor (paddle.is_complex)."""
    if not isinstance(x, _C.Tensor):
        raise TypeError(f"is_complex: argument 'x' must be a Tensor, got {type(x).__name__}")
    return x.dtype in (complex64, complex128)


class finfo:
    """Machine limits of a float dtype (as numpy.finfo)."""

    def __init__(self, d):
        d = convert_dtype(d)
        if d == bfloat16:
            self.bits, self.eps, self.max, self.min = 16, 2.0 ** -7, 3.3895313892515355e38, -3.3895313892515355e38
            self.tiny = self.smallest_normal = 1.1754943508222875e-38
            self.resolution = 0.01
        else:
            f = _np.finfo(d.name)
            self.bits, self.eps, self.max, self.min = f.bits, float(f.eps), float(f.max), float(f.min)
            self.tiny = self.smallest_normal = float(f.tiny)
            self.resolution = float(f.resolution)
        self.dtype = d.name


class iinfo:
    """Machine limits of an integer dtype (as numpy.iinfo)."""

    def __init__(self, d):
        d = convert_dtype(d)
        i = _np.iinfo(d.name)
        self.bits, self.max, self.min, self.dtype = i.bits, int(i.max), int(i.min), d.name

    def __repr__(self):
        return f"paddle.iinfo(min={self.min}, max={self.max}, bits={self.bits}, dtype={self.dtype})"
