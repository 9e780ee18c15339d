"""Python shims for ops of math_functions.yaml whose Paddle signature one generated binding
cannot express (None defaults that depend on the dtype, float-or-Tensor weights,
in-place by default). The ops themselves are the generated C++ functions."""
import numpy as np

from . import _C
from ._C import Tensor
from ._dtype import convert_dtype

_ops = _C.ops

_FLOAT_MAX = {"float16": 65504.0, "bfloat16": 3.3895313892515355e38,
              "float32": float(np.finfo(np.float32).max), "float64": float(np.finfo(np.float64).max)}


def _check_tensor(x, op, arg="x"):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: argument '{arg}' must be a Tensor, got {type(x).__name__}")


def nan_to_num(x, nan=0.0, posinf=None, neginf=None, name=None):
    """Replaces NaN by `nan` and +/-inf by `posinf`/`neginf` (default: the dtype's limits)."""
    _check_tensor(x, "nan_to_num")
    if not x.dtype.is_floating_point:
        return _ops.assign(x)  # integers hold no NaN or inf
    big = _FLOAT_MAX[x.dtype.name]
    return _ops._nan_to_num(x, float(nan), big if posinf is None else float(posinf),
                            -big if neginf is None else float(neginf))


def _weight(x, weight):
    if isinstance(weight, Tensor):
        return weight
    if isinstance(weight, (int, float)) and not isinstance(weight, bool):
        dt = x.dtype if x.dtype.is_floating_point else convert_dtype(_C.get_default_dtype())
        return _ops.full([], float(weight), dt, x.place)
    raise TypeError(f"lerp: argument 'weight' must be a float or a Tensor, got "
                    f"{type(weight).__name__}")


def lerp(x, y, weight, name=None):
    """x + weight * (y - x); weight is a float or a Tensor broadcast with x and y."""
    _check_tensor(x, "lerp")
    return _ops._lerp(x, y, _weight(x, weight))


def _lerp_(x, y, weight, name=None):
    return _ops.lerp_(x, y, _weight(x, weight))


def increment(x, value=1.0, name=None):
    """Adds `value` to the one-element tensor x in place (Paddle's dynamic mode) and returns x."""
    _check_tensor(x, "increment")
    return _ops.increment_(x, float(value))


_clip_op = _ops.clip
_atan2_op = _ops.atan2
_FLOAT32 = convert_dtype("float32")
_FLOAT64 = convert_dtype("float64")


def _is_float_bound(v):
    return isinstance(v, float) or (isinstance(v, Tensor) and v.dtype.is_floating_point)


def clip(x, min=None, max=None, name=None):
    """Clamps x to [min, max]. As Paddle documents, an integer x with a float bound (a
    float or a float Tensor) is clipped in float32, so the bound is not truncated."""
    if isinstance(x, Tensor) and not x.dtype.is_floating_point and (
            _is_float_bound(min) or _is_float_bound(max)) and not x.dtype.name.startswith("complex"):
        x = _ops.cast(x, _FLOAT32)
    if min is None and max is None:
        return _clip_op(x)
    if min is None:
        return _clip_op(x, max=max)
    if max is None:
        return _clip_op(x, min)
    return _clip_op(x, min, max)


def atan2(x, y, name=None):
    """Elementwise atan2(x, y); integer inputs give float64, as Paddle documents."""
    if (isinstance(x, Tensor) and isinstance(y, Tensor) and not x.dtype.is_floating_point
            and not y.dtype.is_floating_point):
        x, y = _ops.cast(x, _FLOAT64), _ops.cast(y, _FLOAT64)
    return _atan2_op(x, y)


Tensor.clip = clip
Tensor.atan2 = atan2
Tensor.nan_to_num = nan_to_num
Tensor.lerp = lerp
Tensor.lerp_ = _lerp_
Tensor.increment = increment
Tensor.mod = Tensor.remainder  # Paddle's aliases of remainder (oar.mod/floor_mod are in _ops)
Tensor.floor_mod = Tensor.remainder

__all__ = ["nan_to_num", "lerp", "increment", "clip", "atan2"]
