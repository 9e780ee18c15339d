"""Tensor creation: to_tensor, zeros/ones/full, ranges, random numbers."""
import math

import numpy as np

from . import _C, _trace_state
from ._dtype import convert_dtype

_ops = _C.ops


def to_tensor(data, dtype=None, place=None, stop_gradient=True):
    """Copies `data` (NumPy array, nested list, number or Tensor) into a new Tensor.
    Python floats become the default dtype (float32); NumPy arrays keep theirs. It lands on
    `place` (a Place or a device string), else on the current device (oar.set_device)."""
    if place is not None:
        from ._device import CUDAPinnedPlace, _pinned_device, parse_device
        if isinstance(place, CUDAPinnedPlace):  # a leaf in pinned memory of the current device
            device = _pinned_device(place, "to_tensor")
            t = _C.to_tensor(data, convert_dtype(dtype), _C.CPUPlace(), True)
            t = _C._pin_memory(t, device, True)
            t.stop_gradient = stop_gradient
            return t
        place = parse_device(place, "to_tensor")
    if dtype is None and isinstance(data, np.generic):
        dtype = data.dtype  # a NumPy scalar keeps its dtype, as a NumPy array does (Paddle)
    return _C.to_tensor(data, convert_dtype(dtype), place, stop_gradient)


def _shape(shape):
    if isinstance(shape, int):
        return [shape]
    if isinstance(shape, _C.Tensor):
        return [int(v) for v in shape.numpy().reshape(-1)]
    return [int(s) for s in shape]


def _float_dtype(dtype):
    return convert_dtype(dtype) if dtype is not None else convert_dtype(_C.get_default_dtype())


def _bool_or_complex(v):
    if isinstance(v, _C.Tensor):
        return v.dtype.name == "bool" or v.dtype.name.startswith("complex")
    return isinstance(v, (bool, np.bool_, complex, np.complexfloating))


def full(shape, fill_value, dtype=None, name=None):
    """A tensor of `shape` filled with `fill_value`. Without a dtype it is the default float
    dtype, whatever the fill's type (Paddle's documented rule), except bool (bool) and
    complex fills (complex)."""
    if dtype is None and not _bool_or_complex(fill_value):
        dtype = _float_dtype(None)
    return _ops.full(_shape(shape), fill_value, convert_dtype(dtype), None)


def zeros(shape, dtype=None, name=None):
    return _ops.full(_shape(shape), 0.0, _float_dtype(dtype), None)


def ones(shape, dtype=None, name=None):
    return _ops.full(_shape(shape), 1.0, _float_dtype(dtype), None)


def empty(shape, dtype=None, name=None):
    return zeros(shape, dtype)


# Constants beside a tensor: a composition's constants take its operand's place, not the
# current device's (an operand on a device met CPU constants, and the op raised).
def _full_on(place, shape, fill_value, dtype):
    return _ops.full(_shape(shape), fill_value, convert_dtype(dtype), place)


def _arange_on(place, end, dtype="int64", start=0):
    return _ops.arange(int(start), int(end), 1, convert_dtype(dtype), place)


def full_like(x, fill_value, dtype=None, name=None):
    return _ops.full_like(x, fill_value, convert_dtype(dtype))


def zeros_like(x, dtype=None, name=None):
    return _ops.full_like(x, 0, convert_dtype(dtype))


def ones_like(x, dtype=None, name=None):
    return _ops.full_like(x, 1, convert_dtype(dtype))


def empty_like(x, dtype=None, name=None):
    return zeros_like(x, dtype)


def clone(x, name=None):
    return _ops.assign(x)


def assign(x, output=None):
    if not isinstance(x, _C.Tensor):
        x = to_tensor(np.asarray(x))
    y = _ops.assign(x)
    if output is not None:
        if not isinstance(output, _C.Tensor):
            raise TypeError(f"assign: output must be a Tensor, got {type(output).__name__}")
        if list(output.shape) == list(y.shape) and output.dtype == y.dtype:
            output.copy_(y)
        else:  # as Paddle, output takes x's shape and dtype
            output._set_dense_from(y.detach())
        return output
    return y


def arange(start=0, end=None, step=1, dtype=None, name=None):
    if end is None:
        start, end = 0, start
    vals = [v.item() if isinstance(v, _C.Tensor) else v for v in (start, end, step)]
    if dtype is None:
        dtype = "int64" if all(isinstance(v, int) for v in vals) else _C.get_default_dtype()
    dtype = convert_dtype(dtype)
    if any(isinstance(v, float) for v in vals) and vals[2] != 0:
        # Paddle counts the elements in double: ceil((end - start) / step). Counting in a
        # float32 dtype gives arange(0, 0.6, 0.1) a 7th element (0.6f / 0.1f > 6), so pass an
        # end half a step past the last element, where no rounding can move the count.
        n = math.ceil((vals[1] - vals[0]) / vals[2])
        if n > 0:
            vals[1] = vals[0] + (n - 0.5) * vals[2]
    return _ops.arange(vals[0], vals[1], vals[2], dtype, None)


def linspace(start, stop, num, dtype=None, name=None, *, out=None, device=None,
             requires_grad=False):
    """num evenly spaced values from start to stop (both included); out/device/requires_grad
    as Paddle 3.3."""
    vals = [v.item() if isinstance(v, _C.Tensor) else v for v in (start, stop, num)]
    t = _ops.linspace(float(vals[0]), float(vals[1]), int(vals[2]), _float_dtype(dtype), None)
    if device is not None:
        t = t.to(device)
    if requires_grad:
        t.stop_gradient = False
    if out is not None:
        return assign(t, out)
    return t


def eye(num_rows, num_columns=None, dtype=None, name=None):
    return _ops.eye(int(num_rows), -1 if num_columns is None else int(num_columns),
                    _float_dtype(dtype), None)


# ---- random numbers (one global generator; oar.seed makes runs reproducible)
def seed(s):
    """Seed the random generator (and NumPy's, for the data pipeline helpers); returns the
    Generator, as paddle.seed does."""
    from ._random import Generator
    g = Generator().manual_seed(int(s))
    np.random.seed(int(s) % (2 ** 32))
    return g


def get_rng_state():
    return _ops._get_rng_state()


def set_rng_state(state):
    _ops._set_rng_state(state)


def _uniform(shape, dtype, lo, hi, seed, place):
    """uniform(shape) on `place` (None: the current device), or dyn_uniform when a traced
    program reads the sizes at run time."""
    r = _trace_state.random_shape(shape)
    if r is not None:
        return _ops._dyn_uniform(r[0], r[1], dtype, float(lo), float(hi), int(seed), place)
    return _ops.uniform(_shape(shape), dtype, float(lo), float(hi), int(seed), place)


def uniform(shape, dtype=None, min=-1.0, max=1.0, seed=0, name=None):  # noqa: A002
    return _uniform(shape, _float_dtype(dtype), min, max, seed, None)


def _gaussian(shape, mean, std, dtype, op, place=None):
    """gaussian(shape) on `place` (None: the current device), or dyn_gaussian when a traced
    program reads the sizes at run time."""
    r = _trace_state.random_shape(shape)
    if r is not None:
        return _ops._dyn_gaussian(r[0], r[1], float(mean), float(std), 0, dtype, place)
    return _ops.gaussian(_check_sizes(shape, op), float(mean), float(std), 0, dtype, place)


def rand(shape, dtype=None, name=None):
    return uniform(shape, dtype, 0.0, 1.0)


# Draws beside a tensor: the samplers and the *_like functions draw on their operand's
# place, not the current device's (an operand on a device met CPU draws, and the op raised).
def _rand_on(place, shape, dtype=None):
    return _uniform(shape, _float_dtype(dtype), 0.0, 1.0, 0, place)


def _randn_on(place, shape, dtype=None):
    return _gaussian(shape, 0.0, 1.0, _float_dtype(dtype), "randn", place)


def _randint_on(place, low, high, shape, dtype="int64"):
    r = _trace_state.random_shape(shape)
    if r is not None:
        return _ops._dyn_randint(r[0], r[1], int(low), int(high), convert_dtype(dtype), place)
    return _ops.randint(int(low), int(high), _shape(shape), convert_dtype(dtype), place)


def _check_sizes(shape, op):
    shape = _shape(shape)
    if any(d < 0 for d in shape):
        raise ValueError(f"{op}: shape {shape} has a negative size")
    return shape


def _complex_gaussian(shape, mean, std, dtype, op):
    """Complex normal samples: real and imaginary parts independent N(., std^2 / 2), so that
    E|z - mean|^2 = std^2, drawn interleaved (re, im per element) as Paddle's complex
    gaussian, so seeded draws equal Paddle's."""
    real = _C.DataType.float64 if dtype == _C.DataType.complex128 else _C.DataType.float32
    shape = _check_sizes(shape, op)
    s = float(std) / math.sqrt(2.0)
    z = _ops.as_complex(_ops.gaussian(shape + [2], 0.0, s, 0, real, None))
    return z + mean if isinstance(mean, _C.Tensor) or mean != 0 else z


def _is_complex_dtype(dtype):
    return dtype is not None and convert_dtype(dtype) in (_C.DataType.complex64,
                                                          _C.DataType.complex128)


def normal(mean=0.0, std=1.0, shape=None, name=None):
    """Samples of N(mean, std^2). As in Paddle, mean and std may be Tensors: the output then
    has their broadcast shape (and their dtype) and each element its own mean / std. A complex
    mean (a number or a Tensor) gives complex samples (real and imaginary parts each of
    variance std^2 / 2)."""
    if isinstance(mean, complex) or (isinstance(mean, _C.Tensor) and _is_complex_dtype(mean.dtype)):
        if isinstance(std, _C.Tensor):
            raise TypeError("normal: a complex mean takes a float std, not a Tensor")
        if float(std) < 0:
            raise ValueError(f"normal: std must be >= 0, got {std}")
        if isinstance(mean, _C.Tensor):
            return _complex_gaussian(list(mean.shape), mean.detach(), std, mean.dtype, "normal")
        cdtype = _C.DataType.complex128 if _float_dtype(None) == _C.DataType.float64 \
            else _C.DataType.complex64
        return _complex_gaussian(shape if shape is not None else [1], mean, std, cdtype, "normal")
    if isinstance(mean, _C.Tensor) or isinstance(std, _C.Tensor):
        ref = mean if isinstance(mean, _C.Tensor) else std
        m = mean if isinstance(mean, _C.Tensor) else _ops.full_like(ref, float(mean), ref.dtype)
        sd = std if isinstance(std, _C.Tensor) else _ops.full_like(ref, float(std), ref.dtype)
        if sd.size and float(sd.min()) < 0:
            raise ValueError(f"normal: std must be >= 0, got a minimum of {float(sd.min())}")
        try:
            out_shape = list(np.broadcast_shapes(tuple(m.shape), tuple(sd.shape)))
        except ValueError:
            raise ValueError(f"normal: mean of shape {list(m.shape)} and std of shape {list(sd.shape)} "
                             f"cannot be broadcast together") from None
        z = _ops.gaussian(out_shape, 0.0, 1.0, 0, m.dtype, m.place)
        return (z * sd.detach() + m.detach())
    if float(std) < 0:
        raise ValueError(f"normal: std must be >= 0, got {std}")
    return _gaussian(shape if shape is not None else [1], mean, std, _float_dtype(None), "normal")


def standard_normal(shape, dtype=None, name=None):
    if _is_complex_dtype(dtype):
        return _complex_gaussian(shape, 0.0, 1.0, convert_dtype(dtype), "standard_normal")
    return _gaussian(shape, 0.0, 1.0, _float_dtype(dtype), "standard_normal")


def randn(shape, dtype=None, name=None):
    return standard_normal(shape, dtype)


def randint(low=0, high=None, shape=[1], dtype=None, name=None):  # noqa: B006 (Paddle's default)
    if high is None:
        low, high = 0, low
    return _randint_on(None, low, high, shape, dtype or "int64")
