"""Parameter initializers (Paddle's oar.nn.initializer), drawing from oar's generator."""
import math

import numpy as np

from .. import _C
from .._creation import uniform as _uniform, standard_normal as _normal, to_tensor


def _fans(shape):
    if len(shape) < 2:
        return (shape[0] if shape else 1), (shape[0] if shape else 1)
    receptive = int(np.prod(shape[2:])) if len(shape) > 2 else 1
    if len(shape) == 2:  # Linear weight [in, out]
        return shape[0], shape[1]
    return shape[1] * receptive, shape[0] * receptive  # conv [out, in, k...]


class Initializer:
    def _make(self, shape, dtype):
        raise NotImplementedError

    def __call__(self, param, block=None):
        param.set_value(self._make(list(param.shape), param.dtype))
        return param


class Constant(Initializer):
    def __init__(self, value=0.0):
        self.value = value

    def _make(self, shape, dtype):
        return _C.ops.full(shape, float(self.value), dtype, None)


class Uniform(Initializer):
    def __init__(self, low=-1.0, high=1.0, name=None):
        self.low, self.high = low, high

    def _make(self, shape, dtype):
        return _uniform(shape, dtype, self.low, self.high)


class Normal(Initializer):
    def __init__(self, mean=0.0, std=1.0, name=None):
        self.mean, self.std = mean, std

    def _make(self, shape, dtype):
        return _normal(shape, dtype) * self.std + self.mean


class XavierUniform(Initializer):
    def __init__(self, fan_in=None, fan_out=None, gain=1.0, name=None):
        self.fan_in, self.fan_out, self.gain = fan_in, fan_out, gain

    def _make(self, shape, dtype):
        fi, fo = _fans(shape)
        fi, fo = self.fan_in or fi, self.fan_out or fo
        limit = self.gain * math.sqrt(6.0 / (fi + fo))
        return _uniform(shape, dtype, -limit, limit)


class XavierNormal(Initializer):
    def __init__(self, fan_in=None, fan_out=None, gain=1.0, name=None):
        self.fan_in, self.fan_out, self.gain = fan_in, fan_out, gain

    def _make(self, shape, dtype):
        fi, fo = _fans(shape)
        fi, fo = self.fan_in or fi, self.fan_out or fo
        return _normal(shape, dtype) * (self.gain * math.sqrt(2.0 / (fi + fo)))


class KaimingUniform(Initializer):
    def __init__(self, fan_in=None, negative_slope=0.0, nonlinearity="relu", name=None):
        self.fan_in, self.a = fan_in, negative_slope

    def _make(self, shape, dtype):
        fi = self.fan_in or _fans(shape)[0]
        limit = math.sqrt(6.0 / ((1 + self.a ** 2) * fi))
        return _uniform(shape, dtype, -limit, limit)


class KaimingNormal(Initializer):
    def __init__(self, fan_in=None, negative_slope=0.0, nonlinearity="relu", name=None):
        self.fan_in, self.a = fan_in, negative_slope

    def _make(self, shape, dtype):
        fi = self.fan_in or _fans(shape)[0]
        return _normal(shape, dtype) * math.sqrt(2.0 / ((1 + self.a ** 2) * fi))


class Assign(Initializer):
    def __init__(self, value, name=None):
        self.value = value

    def _make(self, shape, dtype):
        t = to_tensor(np.asarray(self.value.numpy() if isinstance(self.value, _C.Tensor) else self.value), dtype)
        if list(t.shape) != list(shape):
            raise ValueError(f"Assign initializer: value shape {t.shape} != parameter shape {shape}")
        return t
