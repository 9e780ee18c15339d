"""Paddle's bitwise functions (bitwise_and/or/xor/not/invert and the shifts) on integer and
bool tensors: the argument checks and Python ints, over the bitwise ops of
paddle_core/ops/logic.yaml (bool tensors take the logical ops, which the compiler fuses). A shift count outside [0, bits) gives 0 (the sign's fill for an
arithmetic right shift)."""
from ._C import DataType, Tensor, ops as _ops
from ._creation import _full_on

__all__ = ["bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "bitwise_invert",
           "bitwise_left_shift", "bitwise_right_shift", "bitwise_and_", "bitwise_or_",
           "bitwise_xor_", "bitwise_not_", "bitwise_invert_", "bitwise_left_shift_",
           "bitwise_right_shift_"]
_TENSOR_METHODS = list(__all__)
_BITS = {"int8": 8, "uint8": 8, "int16": 16, "int32": 32, "int64": 64}
_INT_IDS = frozenset(id(getattr(DataType, k)) for k in _BITS)
_BOOL = DataType.bool
_KERNELS = {op: getattr(_ops, "_" + op) for op in ("bitwise_and", "bitwise_or", "bitwise_xor")}
_RANGE = {k: (0, 255) if k == "uint8" else (-(1 << (b - 1)), (1 << (b - 1)) - 1)
          for k, b in _BITS.items()}


def _check(x, op, arg, allow_bool):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: {arg} must be a Tensor, got {type(x).__name__}")
    name = x.dtype.name
    if name not in _BITS and not (allow_bool and name == "bool"):
        kinds = "an integer or bool" if allow_bool else "an integer"
        raise TypeError(f"{op}: {arg} must be {kinds} tensor, got {name}")
    return name


def _pair(x, y, op, allow_bool=True):
    """x and y (a Python int made a tensor of x's dtype), checked; whether they are bool."""
    if isinstance(x, Tensor) and isinstance(y, Tensor):
        # The common call, checked on the dtype objects themselves (one per dtype, Note [One
        # Python object per dtype]): the names and the range check cost as much as the op.
        d = x.dtype
        if d is y.dtype and (id(d) in _INT_IDS or (allow_bool and d is _BOOL)):
            return x, y, d is _BOOL
    name = _check(x, op, "x", allow_bool)
    if isinstance(y, int) and not isinstance(y, bool):
        lo, hi = _RANGE[name] if name in _RANGE else (y, y)
        if not lo <= y <= hi:
            raise ValueError(f"{op}: y={y} is not a value of x's dtype {name} [{lo}, {hi}]")
        y = _full_on(x.place, [], y, x.dtype)
    if _check(y, op, "y", allow_bool) != name:
        raise TypeError(f"{op}: x and y must have one dtype, got {name} and {y.dtype.name}")
    return x, y, name == "bool"


def _run(op, fn, x, y, *attrs):
    """fn(x, y, *attrs), its broadcast error naming op (checked by the op, not here first: the
    check cost as much as a small op)."""
    try:
        return fn(x, y, *attrs)
    except ValueError:
        raise ValueError(f"{op}: x of shape {list(x.shape)} and y of shape {list(y.shape)} "
                         f"cannot be broadcast together") from None


def _binary(op, logical, x, y, out):
    x, y, is_bool = _pair(x, y, op)
    return _finish(_run(op, logical if is_bool else _KERNELS[op], x, y), out)


def bitwise_and(x, y, out=None, name=None):
    """x & y elementwise (integer or bool tensors of one dtype, broadcast)."""
    return _binary("bitwise_and", _ops.logical_and, x, y, out)


def bitwise_or(x, y, out=None, name=None):
    """x | y elementwise."""
    return _binary("bitwise_or", _ops.logical_or, x, y, out)


def bitwise_xor(x, y, out=None, name=None):
    """x ^ y elementwise."""
    return _binary("bitwise_xor", _ops.logical_xor, x, y, out)


def bitwise_not(x, out=None, name=None):
    """~x elementwise (logical not for bool)."""
    d = x.dtype if isinstance(x, Tensor) else None
    if d is _BOOL:
        return _finish(_ops.logical_not(x), out)
    if id(d) not in _INT_IDS:
        _check(x, "bitwise_not", "x", True)
    return _finish(_ops._bitwise_not(x), out)


def bitwise_invert(x, out=None, name=None):
    """Paddle 3.3's name for bitwise_not."""
    return bitwise_not(x, out)


def bitwise_left_shift(x, y, is_arithmetic=True, out=None, name=None):
    """x << y (the same bits for the arithmetic and the logical shift); 0 for a count
    outside [0, bits)."""
    x, y, _ = _pair(x, y, "bitwise_left_shift", allow_bool=False)
    return _finish(_run("bitwise_left_shift", _ops._bitwise_left_shift, x, y, bool(is_arithmetic)), out)


def bitwise_right_shift(x, y, is_arithmetic=True, out=None, name=None):
    """x >> y: arithmetic (the sign bit fills; a count outside [0, bits) gives -1 or 0) or
    logical (x's bits as unsigned; such a count gives 0)."""
    x, y, _ = _pair(x, y, "bitwise_right_shift", allow_bool=False)
    return _finish(_run("bitwise_right_shift", _ops._bitwise_right_shift, x, y, bool(is_arithmetic)), out)


def _finish(result, out):
    if out is not None:
        if not isinstance(out, Tensor):
            raise TypeError(f"bitwise op: out must be a Tensor, got {type(out).__name__}")
        out.copy_(result)
        return out
    return result


def _inplace(fn):
    def method(x, *args, **kwargs):
        return x.copy_(fn(x, *args, **kwargs))
    method.__name__ = fn.__name__ + "_"
    method.__doc__ = f"In-place {fn.__name__} (x takes the result; x's shape must hold it)."
    return method


bitwise_and_ = _inplace(bitwise_and)
bitwise_or_ = _inplace(bitwise_or)
bitwise_xor_ = _inplace(bitwise_xor)
bitwise_not_ = _inplace(bitwise_not)
bitwise_invert_ = _inplace(bitwise_invert)
bitwise_left_shift_ = _inplace(bitwise_left_shift)
bitwise_right_shift_ = _inplace(bitwise_right_shift)
