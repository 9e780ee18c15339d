"""Parameter initializers (Paddle's oar.nn.initializer), drawing from oar's generator."""

import math

import numpy as np

from .. import _C
from .._creation import _float_dtype, _gaussian as _gaussian_on, _uniform as _uniform_on, to_tensor


# Each initializer makes its values on `place`, the parameter's (None: the current device),
# as Paddle initializes on the parameter's place: drawn on the current device and copied in
# by set_value, a parameter on another device was filled from that device's generator.
def _gaussian(shape, dtype, mean, std, place=None):
    """N(mean, std^2) drawn by the gaussian op itself, as Paddle's initializers draw (the op
    rounds mean and std to float like Paddle's attributes, so seeded values match Paddle's)."""
    return _C.ops.gaussian(list(shape), float(mean), float(std), 0, dtype, place)


def _uniform(shape, dtype, low, high, place=None):
    return _uniform_on(shape, _float_dtype(dtype), low, high, 0, place)


def _normal(shape, dtype, place=None):
    return _gaussian_on(shape, 0.0, 1.0, _float_dtype(dtype), "standard_normal", place)


def _place_of(param):
    """The place of an eager parameter; None (the current device) for a static variable."""
    return param.place if isinstance(param, _C.Tensor) else None


def _fans(shape):
    if len(shape) < 2:
        return (shape[0] if shape else 1), (shape[0] if shape else 1)
    receptive = int(np.prod(shape[2:])) if len(shape) > 2 else 1
    if len(shape) == 2:  # Linear weight [in, out]
        return shape[0], shape[1]
    return shape[1] * receptive, shape[0] * receptive  # conv [out, in, k...]


class Initializer:
    def _make(self, shape, dtype, place=None):
        raise NotImplementedError

    def __call__(self, param, block=None):
        param.set_value(self._make(list(param.shape), param.dtype, _place_of(param)))
        return param


class Constant(Initializer):
    def __init__(self, value=0.0):
        self.value = value

    def _make(self, shape, dtype, place=None):
        return _C.ops.full(shape, float(self.value), dtype, place)


class Uniform(Initializer):
    def __init__(self, low=-1.0, high=1.0, name=None):
        self.low, self.high = low, high

    def _make(self, shape, dtype, place=None):
        return _uniform(shape, dtype, self.low, self.high, place)


class Normal(Initializer):
    def __init__(self, mean=0.0, std=1.0, name=None):
        self.mean, self.std = mean, std

    def _make(self, shape, dtype, place=None):
        return _gaussian(shape, dtype, self.mean, self.std, place)


class XavierUniform(Initializer):
    def __init__(self, fan_in=None, fan_out=None, gain=1.0, name=None):
        self.fan_in, self.fan_out, self.gain = fan_in, fan_out, gain

    def _make(self, shape, dtype, place=None):
        fi, fo = _fans(shape)
        fi, fo = self.fan_in or fi, self.fan_out or fo
        limit = self.gain * math.sqrt(6.0 / (fi + fo))
        return _uniform(shape, dtype, -limit, limit, place)


class XavierNormal(Initializer):
    def __init__(self, fan_in=None, fan_out=None, gain=1.0, name=None):
        self.fan_in, self.fan_out, self.gain = fan_in, fan_out, gain

    def _make(self, shape, dtype, place=None):
        fi, fo = _fans(shape)
        fi, fo = self.fan_in or fi, self.fan_out or fo
        return _gaussian(shape, dtype, 0.0, self.gain * math.sqrt(2.0 / (fi + fo)), place)


class KaimingUniform(Initializer):
    def __init__(self, fan_in=None, negative_slope=0.0, nonlinearity="relu", name=None):
        self.fan_in, self.a = fan_in, negative_slope

    def _make(self, shape, dtype, place=None):
        fi = self.fan_in or _fans(shape)[0]
        limit = math.sqrt(6.0 / ((1 + self.a**2) * fi))
        return _uniform(shape, dtype, -limit, limit, place)


class KaimingNormal(Initializer):
    def __init__(self, fan_in=None, negative_slope=0.0, nonlinearity="relu", name=None):
        self.fan_in, self.a = fan_in, negative_slope

    def _make(self, shape, dtype, place=None):
        fi = self.fan_in or _fans(shape)[0]
        return _gaussian(shape, dtype, 0.0, math.sqrt(2.0 / ((1 + self.a**2) * fi)), place)


class Assign(Initializer):
    """The parameter becomes `value` (a NumPy array, list, tuple or Tensor) cast to its dtype.
    As Paddle's dynamic mode, the value's shape wins: a parameter created with this
    initializer has the value's shape, whatever shape was asked for."""

    def __init__(self, value, name=None):
        if not isinstance(value, (np.ndarray, list, tuple, _C.Tensor)):
            raise TypeError(f"Assign: value must be a numpy.ndarray, list, tuple or Tensor, got "
                            f"{type(value).__name__}")
        self.value = value

    def _make(self, shape, dtype, place=None):
        arr = np.asarray(self.value.numpy() if isinstance(self.value, _C.Tensor) else self.value)
        if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
            raise TypeError(f"Assign: value must hold numbers, got dtype {arr.dtype}")
        if arr.size > 1024**3:
            raise ValueError(f"Assign: value has {arr.size} elements, more than 2**30")
        return to_tensor(arr, dtype, place)

    def __call__(self, param, block=None):
        t = self._make(list(param.shape), param.dtype, _place_of(param))
        if list(t.shape) != list(param.shape):
            raise ValueError(f"Assign: value shape {list(t.shape)} != shape {list(param.shape)} of "
                             f"the existing tensor (a new parameter takes the value's shape)")
        param.set_value(t)
        return param


def _np_to(arr, dtype, place=None):
    from .._dtype import convert_dtype

    dtype = convert_dtype(dtype)
    t = to_tensor(
        np.ascontiguousarray(arr, dtype=np.float64 if dtype.name == "float64" else np.float32),
        place=place,
    )
    return t if t.dtype == dtype else t.astype(dtype)


class TruncatedNormal(Initializer):
    """Normal(mean, std) restricted to [a, b] (values outside are redrawn)."""

    def __init__(self, mean=0.0, std=1.0, a=-2.0, b=2.0, name=None):
        if std < 0:
            raise ValueError(f"TruncatedNormal: std must be >= 0, got {std}")
        if a >= b:
            raise ValueError(f"TruncatedNormal: a ({a}) must be less than b ({b})")
        self.mean, self.std, self.a, self.b = float(mean), float(std), float(a), float(b)

    def _make(self, shape, dtype, place=None):
        n = int(np.prod(shape)) if shape else 1
        out = np.empty(n, np.float64)
        todo = np.arange(n)
        for _ in range(1000):
            if todo.size == 0:
                break
            draw = _normal([todo.size], "float64", place).numpy() * self.std + self.mean
            ok = (draw >= self.a) & (draw <= self.b)
            out[todo[ok]] = draw[ok]
            todo = todo[~ok]
        if todo.size:
            out[todo] = np.clip(self.mean, self.a, self.b)
        return _np_to(out.reshape(shape), dtype, place)


class Orthogonal(Initializer):
    """A (semi-)orthogonal matrix over [shape[0], prod(shape[1:])], times gain."""

    def __init__(self, gain=1.0, name=None):
        self.gain = float(gain)

    def _make(self, shape, dtype, place=None):
        if len(shape) < 2:
            raise ValueError(
                f"Orthogonal: the parameter must have at least 2 dimensions, got {shape}"
            )
        rows = shape[0]
        cols = int(np.prod(shape[1:]))
        flat = _normal([max(rows, cols), min(rows, cols)], "float64", place).numpy()
        q, r = np.linalg.qr(flat)
        d = np.sign(np.diag(r))
        d[d == 0] = 1
        q = q * d
        if rows < cols:
            q = q.T
        return _np_to((q * self.gain).reshape(shape), dtype, place)


class Dirac(Initializer):
    """Identity-preserving conv weights [out, in, k...]: 1 at the kernel centre of channel i
    of output i within each of `groups` groups, 0 elsewhere."""

    def __init__(self, groups=1, name=None):
        if groups <= 0:
            raise ValueError(f"Dirac: groups must be positive, got {groups}")
        self.groups = int(groups)

    def _make(self, shape, dtype, place=None):
        if not 3 <= len(shape) <= 5:
            raise ValueError(f"Dirac: expects a 3-D, 4-D or 5-D conv weight, got shape {shape}")
        if shape[0] % self.groups:
            raise ValueError(
                f"Dirac: out channels {shape[0]} not divisible by groups {self.groups}"
            )
        w = np.zeros(shape, np.float64)
        per = shape[0] // self.groups
        centre = tuple(k // 2 for k in shape[2:])
        for g in range(self.groups):
            for i in range(min(per, shape[1])):
                w[(g * per + i, i) + centre] = 1.0
        return _np_to(w, dtype, place)


class Bilinear(Initializer):
    """Bilinear-upsampling weights for a transposed conv [C_out, C_in, K, K]."""

    def __init__(self, name=None):
        pass

    def _make(self, shape, dtype, place=None):
        if len(shape) != 4 or shape[2] != shape[3]:
            raise ValueError(f"Bilinear: expects a 4-D weight with square kernels, got {shape}")
        size = shape[3]
        f = np.ceil(size / 2.0)
        c = (2 * f - 1 - f % 2) / (2.0 * f)
        x = np.arange(size)
        k = 1 - np.abs(x / f - c)
        w = np.broadcast_to(np.outer(k, k), shape)
        return _np_to(w, dtype, place)


_global = {"weight": None, "bias": None}


def set_global_initializer(weight_init, bias_init=None):
    """Initializers used by create_parameter when neither ParamAttr nor the layer gives one."""
    _global["weight"], _global["bias"] = weight_init, bias_init


def _global_initializer(is_bias):
    return _global["bias" if is_bias else "weight"]


def calculate_gain(nonlinearity, param=None):
    """Paddle's recommended gain for a nonlinearity."""
    gains = {
        "sigmoid": 1.0,
        "linear": 1.0,
        "conv1d": 1.0,
        "conv2d": 1.0,
        "conv3d": 1.0,
        "conv1d_transpose": 1.0,
        "conv2d_transpose": 1.0,
        "conv3d_transpose": 1.0,
        "tanh": 5.0 / 3,
        "relu": math.sqrt(2.0),
        "selu": 3.0 / 4,
    }
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else float(param)
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity not in gains:
        raise ValueError(f"calculate_gain: unknown nonlinearity '{nonlinearity}'")
    return gains[nonlinearity]
