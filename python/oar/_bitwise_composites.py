"""Paddle's bitwise functions (bitwise_and/or/xor/not/invert and the shifts) on integer and
bool tensors, composed of integer ops, whose +, -, * wrap as two's complement does:
- and: the bits of both operands as floor(x / 2^k) mod 2 over one broadcast axis of the
  dtype's value bits (and the sign bit from x < 0), recombined with their weights;
- or = x + y - (x & y), xor = x + y - 2 (x & y), not = -x - 1 (exact in two's complement);
- x << y = x * 2^y (wrapping), arithmetic x >> y = floor(x / 2^y), and the logical shift
  of a negative x adds the sign bit's weight 2^(bits - y) back.
A count outside [0, bits) gives 0 (a sign fill for the arithmetic right shift). The loops
run over a dtype's bits only; the kernels these should become are Note [Compositions of
Paddle functions]'s exception for bit-level access."""
from ._C import Tensor
from ._creation import _full_on

__all__ = ["bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "bitwise_invert",
           "bitwise_left_shift", "bitwise_right_shift", "bitwise_and_", "bitwise_or_",
           "bitwise_xor_", "bitwise_not_", "bitwise_invert_", "bitwise_left_shift_",
           "bitwise_right_shift_"]
_TENSOR_METHODS = list(__all__)
_BITS = {"int8": 8, "uint8": 8, "int16": 16, "int32": 32, "int64": 64}
_RANGE = {k: (0, 255) if k == "uint8" else (-(1 << (b - 1)), (1 << (b - 1)) - 1)
          for k, b in _BITS.items()}


def _check(x, op, arg, allow_bool):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: {arg} must be a Tensor, got {type(x).__name__}")
    name = x.dtype.name
    if name not in _BITS and not (allow_bool and name == "bool"):
        kinds = "an integer or bool" if allow_bool else "an integer"
        raise TypeError(f"{op}: {arg} must be {kinds} tensor, got {name}")


def _pair(x, y, op, allow_bool=True):
    import oar
    _check(x, op, "x", allow_bool)
    if isinstance(y, int) and not isinstance(y, bool):
        lo, hi = _RANGE[x.dtype.name] if x.dtype.name in _RANGE else (y, y)
        if not lo <= y <= hi:
            raise ValueError(f"{op}: y={y} is not a value of x's dtype {x.dtype.name} "
                             f"[{lo}, {hi}]")
        y = _full_on(x.place, [], y, x.dtype)
    _check(y, op, "y", allow_bool)
    if x.dtype != y.dtype:
        raise TypeError(f"{op}: x and y must have one dtype, got {x.dtype.name} and "
                        f"{y.dtype.name}")
    try:
        return oar.broadcast_tensors([x, y])
    except ValueError:
        raise ValueError(f"{op}: x of shape {list(x.shape)} and y of shape {list(y.shape)} "
                         f"cannot be broadcast together") from None


def _weights(dtype, count, place):
    """[1, 2, 4, ... 2^(count - 1)] in dtype on place, wrapping (2^(bits-1) is the minimum)."""
    import oar
    bits = _BITS[dtype.name]
    vals = [(1 << k) - (1 << bits) if dtype.name != "uint8" and k == bits - 1 else 1 << k
            for k in range(count)]
    return oar.to_tensor(vals, dtype=dtype, place=place)


def _and(x, y):
    import oar
    if x.dtype.name == "bool":
        return oar.logical_and(x, y)
    bits, signed = _BITS[x.dtype.name], x.dtype.name != "uint8"
    value_bits = bits - 1 if signed else bits
    w = _weights(x.dtype, value_bits, x.place)
    bx = (x.unsqueeze(-1) // w) % 2
    by = (y.unsqueeze(-1) // w) % 2
    out = (bx * by * w).sum(-1).astype(x.dtype)
    if signed:
        both_neg = oar.logical_and(x < 0, y < 0)
        out = out + oar.where(both_neg, _weights(x.dtype, bits, x.place)[bits - 1],
                              _full_on(x.place, [], 0, x.dtype))
    return out


def bitwise_and(x, y, out=None, name=None):
    """x & y elementwise (integer or bool tensors of one dtype, broadcast)."""
    return _finish(_and(*_pair(x, y, "bitwise_and")), out)


def bitwise_or(x, y, out=None, name=None):
    """x | y elementwise."""
    import oar
    x, y = _pair(x, y, "bitwise_or")
    if x.dtype.name == "bool":
        return _finish(oar.logical_or(x, y), out)
    return _finish(x + y - _and(x, y), out)


def bitwise_xor(x, y, out=None, name=None):
    """x ^ y elementwise."""
    import oar
    x, y = _pair(x, y, "bitwise_xor")
    if x.dtype.name == "bool":
        return _finish(oar.logical_xor(x, y), out)
    return _finish(x + y - _and(x, y) * 2, out)


def bitwise_not(x, out=None, name=None):
    """~x elementwise (-x - 1 in two's complement; logical not for bool)."""
    import oar
    _check(x, "bitwise_not", "x", True)
    if x.dtype.name == "bool":
        return _finish(oar.logical_not(x), out)
    return _finish(_full_on(x.place, [], 0, x.dtype) - x - 1, out)


def bitwise_invert(x, out=None, name=None):
    """Paddle 3.3's name for bitwise_not."""
    return bitwise_not(x, out)


def _counts(x, y, op):
    import oar
    x, y = _pair(x, y, op, allow_bool=False)
    bits = _BITS[x.dtype.name]
    table = _weights(x.dtype, bits, x.place)
    inside = oar.logical_and(y >= 0, y < bits)
    safe = oar.where(inside, y, _full_on(y.place, [], 0, y.dtype)).astype("int64")
    return x, y, bits, table, inside, safe


def bitwise_left_shift(x, y, is_arithmetic=True, out=None, name=None):
    """x << y (the same bits for the arithmetic and the logical shift); 0 for a count
    outside [0, bits)."""
    import oar
    x, y, bits, table, inside, safe = _counts(x, y, "bitwise_left_shift")
    p = oar.gather(table, safe.reshape([-1])).reshape(list(x.shape))
    return _finish(oar.where(inside, x * p, _full_on(x.place, [], 0, x.dtype)), out)


def bitwise_right_shift(x, y, is_arithmetic=True, out=None, name=None):
    """x >> y: arithmetic (the sign bit fills; a count outside [0, bits) gives -1 or 0) or
    logical (x's bits as unsigned; such a count gives 0)."""
    import oar
    x, y, bits, table, inside, safe = _counts(x, y, "bitwise_right_shift")
    signed = x.dtype.name != "uint8"
    zero = _full_on(x.place, [], 0, x.dtype)
    fill = oar.where(x < 0, _full_on(x.place, [], -1, x.dtype), zero) if signed else zero
    # floor division by 2^y for y < bits - 1 (2^(bits-1) is negative in a signed dtype)
    divisible = oar.logical_and(inside, y < bits - 1) if signed else inside
    p = oar.gather(table, oar.where(divisible, safe, _full_on(x.place, [], 0, safe.dtype))
                   .reshape([-1])).reshape(list(x.shape))
    arith = oar.where(divisible, x // p, fill)
    if is_arithmetic or not signed:
        return _finish(oar.where(inside, arith, fill) if is_arithmetic else
                       oar.where(inside, arith, zero), out)
    # logical: a negative x's shifted-in ones become zeros: add 2^(bits - y) (wrapping)
    back = oar.gather(table, oar.where(oar.logical_and(inside, y > 0), bits - safe,
                                       _full_on(x.place, [], 0, safe.dtype)).clip(0, bits - 1)
                      .reshape([-1])).reshape(list(x.shape))
    fix = oar.logical_and(oar.logical_and(inside, y > 0), x < 0)
    return _finish(oar.where(inside, oar.where(fix, arith + back, arith), zero), out)


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
