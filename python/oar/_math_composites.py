"""Paddle's elementwise math and comparison functions that are compositions of ops
(frac, hypot, logaddexp, copysign, heaviside, sinc, gcd/lcm, ldexp, frexp, isin,
allclose, add_n, trapezoid, tensordot, baddbmm, cdist, vander...). Each is written over
differentiable ops, so gradients, tracing and every backend come from those ops; no
kernel of their own.
(Note [Compositions of Paddle functions] in docs/notes/training_api.md.)"""
import math
import numpy as np

import oar
from . import _C, _trace_state
from ._C import Tensor
from ._dtype import convert_dtype

_ops = _C.ops


def _check(x, op, arg="x"):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: argument '{arg}' must be a Tensor, got {type(x).__name__}")


def _float_of(x):
    """x, or x cast to the default float dtype when it is an integer or bool tensor."""
    if x.dtype.is_floating_point:
        return x
    return x.astype(oar.get_default_dtype())


def _named(op, fn, *args):
    """fn(*args) of a private op, whose errors keep a shared check's tag ("elementwise op:
    shapes ... cannot be broadcast"): re-raised under the public op's name."""
    try:
        return fn(*args)
    except ValueError as e:
        tag, sep, rest = str(e).partition(": ")
        raise ValueError(f"{op}: {rest if sep else tag}") from None


def _like(x, value):
    return oar.full_like(x, value)


def _as_tensor_like(v, x, op, arg):
    if isinstance(v, Tensor):
        return v
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return _ops.full([], v, x.dtype, x.place)
    raise TypeError(f"{op}: argument '{arg}' must be a Tensor or a number, got {type(v).__name__}")


# ---- aliases Paddle 3.x exports beside the long names
def ge(x, y, name=None):
    """x >= y (Paddle's alias of greater_equal)."""
    return oar.greater_equal(x, y)


def gt(x, y, name=None):
    """x > y (alias of greater_than)."""
    return oar.greater_than(x, y)


def le(x, y, name=None):
    """x <= y (alias of less_equal)."""
    return oar.less_equal(x, y)


def lt(x, y, name=None):
    """x < y (alias of less_than)."""
    return oar.less_than(x, y)


def ne(x, y, name=None):
    """x != y (alias of not_equal)."""
    return oar.not_equal(x, y)


def eq(x, y, name=None):
    """x == y (alias of equal)."""
    return oar.equal(x, y)


def gammaln(x, name=None):
    """log|Gamma(x)| (alias of lgamma)."""
    return oar.lgamma(x)


def sgn(x, name=None):
    """The sign of a real x (x / |x| for complex x, which Oar has not yet)."""
    _check(x, "sgn")
    return oar.sign(x)


# ---- elementwise compositions
def frac(x, name=None):
    """The fractional part x - trunc(x), sign kept (one kernel for floats; integers give 0)."""
    _check(x, "frac")
    if x.dtype.is_floating_point:
        return _ops._frac(x)
    return x - oar.trunc(x)


def deg2rad(x, name=None):
    """Degrees to radians; integer inputs give the default float dtype."""
    _check(x, "deg2rad")
    return _float_of(x) * (math.pi / 180.0)


def rad2deg(x, name=None):
    """Radians to degrees; integer inputs give the default float dtype."""
    _check(x, "rad2deg")
    return _float_of(x) * (180.0 / math.pi)


def hypot(x, y, name=None):
    """sqrt(x**2 + y**2), broadcast."""
    _check(x, "hypot")
    _check(y, "hypot", "y")
    x, y = _float_of(x), _float_of(y)
    return oar.sqrt(x * x + y * y)


def logaddexp(x, y, name=None):
    """log(exp(x) + exp(y)) without overflow: max(x, y) + log1p(exp(-|x - y|))."""
    _check(x, "logaddexp")
    _check(y, "logaddexp", "y")
    x, y = _float_of(x), _float_of(y)
    return oar.maximum(x, y) + oar.log1p(oar.exp(-oar.abs(x - y)))


def signbit(x, name=None):
    """True where the sign bit is set (negative numbers and -0.0)."""
    _check(x, "signbit")
    if x.dtype.name == "bool":
        return oar.zeros_like(x, "bool")
    if not x.dtype.is_floating_point:
        return x < 0
    neg_zero = oar.logical_and(x == 0, (1.0 / x) < 0)
    return oar.logical_or(x < 0, neg_zero)


def copysign(x, y, name=None):
    """|x| with the sign bit of y (y a Tensor or a number; -0.0 counts as negative)."""
    _check(x, "copysign")
    y = _as_tensor_like(y, x, "copysign", "y")
    x = _float_of(x)
    if y.dtype != x.dtype:  # the result keeps x's dtype; a cast keeps y's sign bit
        y = y.astype(x.dtype)
    return _named("copysign", _ops._copysign, x, y)


def heaviside(x, y, name=None):
    """0 where x < 0, y where x == 0, 1 where x > 0."""
    _check(x, "heaviside")
    _check(y, "heaviside", "y")
    pos = (x > 0).astype(x.dtype)
    return oar.where(x == 0, y.astype(x.dtype) + x * 0, pos + y.astype(x.dtype) * 0)


def sinc(x, name=None):
    """sin(pi x) / (pi x), 1 at 0."""
    _check(x, "sinc")
    x = _float_of(x)
    zero = x == 0
    safe = oar.where(zero, _like(x, 1.0), x) * math.pi
    return oar.where(zero, _like(x, 1.0), oar.sin(safe) / safe)


def stanh(x, scale_a=0.67, scale_b=1.7159, name=None):
    """scale_b * tanh(scale_a * x)."""
    _check(x, "stanh")
    return oar.tanh(_float_of(x) * float(scale_a)) * float(scale_b)


def isposinf(x, name=None):
    """True where x is +inf."""
    _check(x, "isposinf")
    return oar.logical_and(oar.isinf(x), x > 0)


def isneginf(x, name=None):
    """True where x is -inf."""
    _check(x, "isneginf")
    return oar.logical_and(oar.isinf(x), x < 0)


def isreal(x, name=None):
    """Elementwise: whether x's imaginary part is zero (everywhere, for a real tensor)."""
    _check(x, "isreal")
    if oar.is_complex(x):
        return oar.imag(x) == 0
    return oar.ones_like(x, "bool")


def is_integer(x):
    """Whether x's dtype is an integer type (bool is not)."""
    _check(x, "is_integer")
    return x.dtype.name in ("uint8", "int8", "int16", "int32", "int64")


def is_empty(x, name=None):
    """A bool 0-D tensor: whether x has no elements."""
    _check(x, "is_empty")
    return oar.to_tensor(x.size == 0)


def ldexp(x, y, name=None):
    """x * 2**y (y an integer tensor), in a float dtype."""
    _check(x, "ldexp")
    _check(y, "ldexp", "y")
    if y.dtype.is_floating_point:
        raise TypeError(f"ldexp: argument 'y' must be an integer tensor, got {y.dtype.name}")
    x = _float_of(x)
    return x * oar.pow(_ops.full([], 2.0, x.dtype, x.place), y.astype(x.dtype))


def frexp(x, name=None):
    """(mantissa, exponent) with x = mantissa * 2**exponent and 0.5 <= |mantissa| < 1
    (both 0 for x == 0); exponent has x's dtype, as in Paddle."""
    _check(x, "frexp")
    if not x.dtype.is_floating_point:
        raise TypeError(f"frexp: argument 'x' must be a floating-point tensor, got {x.dtype.name}")
    ax = oar.abs(x)
    nz = ax > 0
    e = oar.floor(oar.log2(oar.where(nz, ax, _like(x, 1.0)))) + 1.0
    m = x / oar.pow(_like(x, 2.0), e)
    # log2 rounding may leave |m| at 1 or just under 0.5: move one step
    big = oar.abs(m) >= 1.0
    e = oar.where(big, e + 1.0, e)
    m = oar.where(big, m * 0.5, m)
    small = oar.logical_and(nz, oar.abs(m) < 0.5)
    e = oar.where(small, e - 1.0, e)
    m = oar.where(small, m * 2.0, m)
    zero = _like(x, 0.0)
    return oar.where(nz, m, x), oar.where(nz, e, zero)


def _check_int_pair(x, y, op):
    _check(x, op)
    _check(y, op, "y")
    for arg, t in (("x", x), ("y", y)):
        if t.dtype.name not in ("uint8", "int8", "int16", "int32", "int64"):
            raise TypeError(f"{op}: argument '{arg}' must be an integer tensor, got {t.dtype.name}")


def _int_pair(x, y, op):
    _check_int_pair(x, y, op)
    shape = oar.broadcast_shape(x.shape, y.shape)
    return oar.abs(oar.broadcast_to(x, shape)), oar.abs(oar.broadcast_to(y, shape))


def gcd(x, y, name=None):
    """Greatest common divisor of |x| and |y| (elementwise, one kernel); gcd(0, 0) = 0."""
    _check_int_pair(x, y, "gcd")
    return _named("gcd", _ops._gcd, x, y)


def lcm(x, y, name=None):
    """Least common multiple of |x| and |y|; 0 when either is 0."""
    a, b = _int_pair(x, y, "lcm")
    g = gcd(a, b)
    safe = oar.where(g == 0, oar.ones_like(g), g)
    return oar.where(g == 0, g, a // safe * b)


def isin(x, test_x, assume_unique=False, invert=False, name=None):
    """Whether each element of x is in test_x (bool, x's shape); `invert` negates.

    A small test_x is compared against every element; otherwise the sorted test_x is
    binary-searched. With assume_unique (Paddle's fast path, exact only when x and test_x
    each hold distinct values) an element is found when the next element of the stable-sorted
    concatenation [x, test_x] equals it, as Paddle does: with repeated values that answer
    differs from the exact one, in the same places as Paddle's."""
    _check(x, "isin")
    _check(test_x, "isin", "test_x")
    if x.dtype != test_x.dtype:
        test_x = test_x.astype(x.dtype)
    zero_dim = x.ndim == 0
    if zero_dim:
        x = x.reshape([1])
    n, m = x.size, test_x.size
    if m == 0 or n == 0:
        hit = oar.zeros_like(x, "bool")
    elif m < (n ** 0.145) * 10.0:  # Paddle's switch to brute force for a small test_x
        hit = oar.any(oar.unsqueeze(x, -1) == oar.reshape(test_x, [-1]), axis=-1)
    elif assume_unique:
        both = oar.concat([oar.reshape(x, [-1]), oar.reshape(test_x, [-1])])
        order = oar.argsort(both, stable=True)
        ranked = both[order]
        last = _ops.full([1], False, _C.DataType.bool, x.place)
        dup = oar.concat([ranked[1:] == ranked[:-1], last])
        mask = _ops.full([n + m], False, _C.DataType.bool, x.place)
        mask = oar.scatter(mask, order, dup)
        hit = mask[:n].reshape(x.shape)
    else:
        ranked = oar.sort(oar.reshape(test_x, [-1]))
        flat = oar.reshape(x, [-1])
        pos = oar.searchsorted(ranked, flat).clip(max=m - 1)
        hit = (ranked[pos] == flat).reshape(x.shape)
    hit = oar.logical_not(hit) if invert else hit
    return hit.reshape([]) if zero_dim else hit


def allclose(x, y, rtol=1e-05, atol=1e-08, equal_nan=False, name=None):
    """A bool 0-D tensor: |x - y| <= atol + rtol * |y| everywhere (NaNs equal if equal_nan)."""
    return oar.all(isclose(x, y, rtol, atol, equal_nan))


def isclose(x, y, rtol=1e-05, atol=1e-08, equal_nan=False, name=None):
    """Elementwise |x - y| <= atol + rtol * |y|, inf equal to itself, NaNs equal if equal_nan."""
    _check(x, "isclose")
    _check(y, "isclose", "y")
    if x.dtype != y.dtype:
        raise TypeError(f"isclose: x and y must have the same dtype, got {x.dtype.name} and "
                        f"{y.dtype.name}")
    if rtol < 0 or atol < 0:
        raise ValueError(f"isclose: rtol and atol must be non-negative, got rtol={rtol}, atol={atol}")
    if not x.dtype.is_floating_point:
        x, y = x.astype("float64"), y.astype("float64")
    close = oar.abs(x - y) <= atol + rtol * oar.abs(y)
    close = oar.logical_or(close, x == y)
    if equal_nan:
        close = oar.logical_or(close, oar.logical_and(oar.isnan(x), oar.isnan(y)))
    return close


def equal_all(x, y, name=None):
    """A bool 0-D tensor: x and y have the same shape and equal elements."""
    _check(x, "equal_all")
    _check(y, "equal_all", "y")
    if list(x.shape) != list(y.shape):
        return oar.to_tensor(False, place=x.place)
    return oar.all(x == y)


def add_n(inputs, name=None):
    """The sum of a list of same-shaped tensors (a single tensor is returned as a copy)."""
    if isinstance(inputs, Tensor):
        inputs = [inputs]
    inputs = list(inputs)
    if not inputs:
        raise ValueError("add_n: inputs must hold at least one Tensor")
    for i, t in enumerate(inputs):
        _check(t, "add_n", f"inputs[{i}]")
        if list(t.shape) != list(inputs[0].shape):
            raise ValueError(f"add_n: inputs[{i}] has shape {list(t.shape)}, inputs[0] has "
                             f"{list(inputs[0].shape)}: all shapes must be equal")
    out = inputs[0]
    for t in inputs[1:]:
        out = out + t
    return out if len(inputs) > 1 else oar.assign(out)


_MULTIGAMMALN_MAX_P = 1 << 16


def multigammaln(x, p, name=None):
    """log of the multivariate gamma function of dimension p (1 <= p <= 65536: one lgamma per
    dimension, so the limit bounds the work; the dimensions of real models are far smaller)."""
    _check(x, "multigammaln")
    if isinstance(p, bool) or not isinstance(p, (int, np.integer)):
        raise TypeError(f"multigammaln: p must be an int, got {type(p).__name__}")
    p = int(p)
    if not 1 <= p <= _MULTIGAMMALN_MAX_P:
        raise ValueError(f"multigammaln: p must be in [1, {_MULTIGAMMALN_MAX_P}], got {p}")
    out = oar.lgamma(x) + p * (p - 1) / 4.0 * math.log(math.pi)
    for j in range(1, p):
        out = out + oar.lgamma(x - j / 2.0)
    return out


def logspace(start, stop, num, base=10.0, dtype=None, name=None):
    """base ** linspace(start, stop, num)."""
    dtype = convert_dtype(dtype) if dtype is not None else oar.get_default_dtype()
    vals = [float(v.item()) if isinstance(v, Tensor) else float(v) for v in (start, stop, base)]
    num = int(num.item()) if isinstance(num, Tensor) else int(num)
    if num < 0:
        raise ValueError(f"logspace: num must be non-negative, got {num}")
    e = oar.linspace(vals[0], vals[1], num, dtype="float64")
    out = oar.pow(oar.full([], vals[2], "float64"), e)
    if str(dtype).startswith("int") or "int" in str(dtype):
        out = oar.floor(out + 1e-9)  # exact powers computed through exp/log round down otherwise
    return out.astype(dtype)


def _trapezoid_parts(y, x, dx, axis, op):
    _check(y, op, "y")
    if x is not None and dx is not None:
        raise ValueError(f"{op}: give x or dx, not both")
    n = y.shape[axis]
    lo = oar.slice(y, [axis], [0], [max(n - 1, 0)])
    hi = oar.slice(y, [axis], [1], [n]) if n > 0 else lo
    avg = (lo + hi) * 0.5
    if x is None:
        return avg * (1.0 if dx is None else float(dx))
    _check(x, op, "x")
    if x.ndim == 1:
        d = oar.diff(x)
        shape = [1] * y.ndim
        shape[axis] = d.shape[0]
        d = oar.reshape(d, shape)
    else:
        d = oar.diff(x, axis=axis)
    return avg * d


def trapezoid(y, x=None, dx=None, axis=-1, name=None):
    """The integral of y along axis by the trapezoidal rule (sample points x or spacing dx)."""
    axis = axis % max(y.ndim, 1) if isinstance(y, Tensor) else axis
    return oar.sum(_trapezoid_parts(_float_of(y), x, dx, axis, "trapezoid"), axis=axis)


def cumulative_trapezoid(y, x=None, dx=None, axis=-1, name=None):
    """The running trapezoidal integral of y along axis (one element shorter)."""
    axis = axis % max(y.ndim, 1) if isinstance(y, Tensor) else axis
    return oar.cumsum(_trapezoid_parts(_float_of(y), x, dx, axis, "cumulative_trapezoid"),
                      axis=axis)


def tensordot(x, y, axes=2, name=None):
    """Contracts axes of x with axes of y: an int n (x's last n with y's first n), a pair of
    axis lists, or one list used for both."""
    _check(x, "tensordot")
    _check(y, "tensordot", "y")
    if isinstance(axes, Tensor):
        axes = axes.tolist()
    if isinstance(axes, int):
        if axes < 0:
            raise ValueError(f"tensordot: axes must be non-negative, got {axes}")
        ax, ay = list(range(x.ndim - axes, x.ndim)), list(range(axes))
    else:
        axes = list(axes)
        if len(axes) == 1 or not isinstance(axes[0], (list, tuple)):
            first = axes[0] if axes and isinstance(axes[0], (list, tuple)) else axes
            ax = ay = list(first)
        else:
            ax, ay = list(axes[0]), list(axes[1])
            if len(ax) != len(ay):  # Paddle pads the shorter list with the longer one's tail
                if len(ax) < len(ay):
                    ax = ax + ay[len(ax):]
                else:
                    ay = ay + ax[len(ay):]
    ax = [a % x.ndim for a in ax]
    ay = [a % y.ndim for a in ay]
    for a, b in zip(ax, ay):
        if x.shape[a] != y.shape[b]:
            raise ValueError(f"tensordot: x's axis {a} (size {x.shape[a]}) and y's axis {b} "
                             f"(size {y.shape[b]}) must have the same size")
    fx = [a for a in range(x.ndim) if a not in ax]
    fy = [b for b in range(y.ndim) if b not in ay]
    k = 1
    for a in ax:
        k *= x.shape[a]
    xm = oar.reshape(oar.transpose(x, fx + ax), [-1, k])
    ym = oar.reshape(oar.transpose(y, ay + fy), [k, -1])
    out = oar.matmul(xm, ym)
    return oar.reshape(out, [x.shape[a] for a in fx] + [y.shape[b] for b in fy])


def baddbmm(input, x, y, beta=1.0, alpha=1.0, name=None):  # noqa: A002 (Paddle's name)
    """beta * input + alpha * bmm(x, y)."""
    _check(input, "baddbmm", "input")
    _check(x, "baddbmm")
    _check(y, "baddbmm", "y")
    if x.ndim != 3 or y.ndim != 3:
        raise ValueError(f"baddbmm: x and y must be 3-D, got shapes {list(x.shape)} and "
                         f"{list(y.shape)}")
    return input * float(beta) + oar.bmm(x, y) * float(alpha)


def renorm(x, p, axis, max_norm):
    """Rescales each slice along `axis` whose p-norm exceeds max_norm to norm max_norm."""
    _check(x, "renorm")
    axis = int(axis)
    if not -x.ndim <= axis < x.ndim:
        raise ValueError(f"renorm: axis {axis} is out of range for a tensor of rank {x.ndim}")
    axis %= x.ndim
    others = [a for a in range(x.ndim) if a != axis]
    norms = oar.pow(oar.sum(oar.pow(oar.abs(x), float(p)), axis=others, keepdim=True), 1.0 / p)
    scale = oar.where(norms > max_norm, max_norm / (norms + 1e-7), oar.ones_like(norms))
    return x * scale


def vander(x, n=None, increasing=False, name=None):
    """The Vandermonde matrix of the 1-D x: columns x**0 .. x**(n-1) (reversed unless increasing)."""
    _check(x, "vander")
    if x.ndim != 1:
        raise ValueError(f"vander: x must be 1-D, got shape {list(x.shape)}")
    n = x.shape[0] if n is None else int(n)
    if n < 0:
        raise ValueError(f"vander: n must be non-negative, got {n}")
    if oar.is_complex(x):
        # complex powers one column at a time (the exponent op is real-only); the output's
        # rows * n elements bound the loop (an empty x builds no column)
        if x.shape[0] == 0 or n == 0:
            return _ops.full([x.shape[0], n], 0, x.dtype, x.place)
        from .nn._errors import check_fits
        check_fits("vander", f"n={n} columns of {x.shape[0]} values", n * x.shape[0] * 16)
        cols = [oar.ones_like(x)]
        for _ in range(1, n):
            cols.append(cols[-1] * x)
        return oar.stack(cols if increasing else cols[::-1], axis=1)
    powers = _C.ops.arange(0, n, 1, x.dtype, x.place)
    if not increasing:
        powers = oar.flip(powers, [0])
    return oar.pow(oar.unsqueeze(x, 1), powers.astype(x.dtype)) if n else \
        _ops.full([x.shape[0], 0], 0, x.dtype, x.place)


def cdist(x, y, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary", name=None):
    """p-norm distances between the rows of x [.., P, M] and y [.., R, M]: [.., P, R]."""
    _check(x, "cdist")
    _check(y, "cdist", "y")
    if x.ndim < 2 or y.ndim < 2 or x.shape[-1] != y.shape[-1]:
        raise ValueError(f"cdist: x and y must be at least 2-D with the same last dimension, got "
                         f"shapes {list(x.shape)} and {list(y.shape)}")
    modes = ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist")
    if compute_mode not in modes:
        raise ValueError(f"cdist: compute_mode must be one of {modes}, got {compute_mode!r}")
    p = float(p)
    P, R = x.shape[-2], y.shape[-2]
    if p == 2.0 and (compute_mode == modes[1] or (compute_mode == modes[0] and (P > 25 or R > 25))):
        # |x|^2 + |y|^2 - 2 x y^T through matmul (as Paddle and torch do past 25 rows): the
        # [.., P, R, M] difference tensor took 131 ms for 256 x 256 rows of 1024 against 1.4.
        # Rounding can leave a small negative square for (nearly) equal rows: clamped to 0.
        # The -2 scales x (one of the small operands) before the product.
        xx = oar.sum(x * x, axis=-1, keepdim=True)
        yy = oar.unsqueeze(oar.sum(y * y, axis=-1), -2)
        s = oar.clip(oar.matmul(x * -2.0, y, transpose_y=True) + xx + yy, min=0.0)
        if not oar.is_grad_enabled() or (x.stop_gradient and y.stop_gradient):
            return oar.sqrt(s)
        pos = s > 0  # sqrt's gradient at 0 is inf: a zero distance takes gradient 0
        return oar.where(pos, oar.sqrt(oar.where(pos, s, oar.ones_like(s))), s)
    d = oar.abs(oar.unsqueeze(x, -2) - oar.unsqueeze(y, -3))
    return _pnorm_last(d, p)


def _pnorm_last(d, p):
    if p == 0:
        return oar.sum((d != 0).astype(d.dtype), axis=-1)
    if p == float("inf"):
        return oar.amax(d, axis=-1)
    if p == 2.0:  # sqrt's gradient at 0 is inf: identical rows give 0 distance, gradient 0
        s = oar.sum(d * d, axis=-1)
        pos = s > 0
        return oar.where(pos, oar.sqrt(oar.where(pos, s, oar.ones_like(s))), s)
    s = oar.sum(oar.pow(d, p), axis=-1)
    pos = s > 0
    return oar.where(pos, oar.pow(oar.where(pos, s, oar.ones_like(s)), 1.0 / p), s)


def pdist(x, p=2.0, name=None):
    """The p-norm distances between each pair of rows of the 2-D x (upper triangle, row-major)."""
    _check(x, "pdist")
    if x.ndim != 2:
        raise ValueError(f"pdist: x must be 2-D, got shape {list(x.shape)}")
    n = x.shape[0]
    idx = oar.triu_indices(n, n, 1).to(x.place)
    a = oar.index_select(x, idx[0], axis=0)
    b = oar.index_select(x, idx[1], axis=0)
    return _pnorm_last(oar.abs(a - b), float(p))


def vecdot(x, y, axis=-1, name=None):
    """sum(x * y) along axis, broadcast."""
    _check(x, "vecdot")
    _check(y, "vecdot", "y")
    return oar.sum(x * y, axis=axis)


def reduce_as(x, target, name=None):
    """Sums x down to target's shape (the reverse of broadcasting x from it)."""
    _check(x, "reduce_as")
    _check(target, "reduce_as", "target")
    t = list(target.shape)
    lead = x.ndim - len(t)
    if lead < 0 or any(d not in (1, s) for d, s in zip(t, x.shape[lead:])):
        raise ValueError(f"reduce_as: x of shape {list(x.shape)} cannot be reduced to target's "
                         f"shape {t}")
    return _ops.sum_to(x, t)


def multiplex(inputs, index, name=None):
    """Row i of the output is row i of inputs[index[i]] (inputs: same-shaped tensors, index
    [N, 1] int)."""
    if len(inputs) < 2:
        raise ValueError(f"multiplex: inputs must hold at least 2 tensors, got {len(inputs)}")
    _check(index, "multiplex", "index")
    stacked = oar.stack(list(inputs), axis=0)  # [K, N, ...]
    idx = oar.reshape(index, [-1]).astype("int64")
    if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= len(inputs)):
        raise ValueError(f"multiplex: index values must be in [0, {len(inputs) - 1}], got "
                         f"{idx.tolist()}")
    rows = _C.ops.arange(0, idx.shape[0], 1, convert_dtype("int64"), idx.place)
    return oar.gather_nd(stacked, oar.stack([idx, rows], axis=1))


def histogram_bin_edges(input, bins=100, min=0.0, max=0.0, name=None):  # noqa: A002
    """The bins + 1 edges histogram(input, bins, min, max) uses (min == max: the data's range)."""
    _check(input, "histogram_bin_edges", "input")
    lo, hi = float(min), float(max)
    if lo == hi and input.size:
        lo, hi = float(input.min()), float(input.max())
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5  # Paddle widens a degenerate range
    if lo > hi:
        raise ValueError(f"histogram_bin_edges: max ({max}) must not be less than min ({min})")
    dt = input.dtype if input.dtype.is_floating_point else oar.get_default_dtype()
    return oar.linspace(lo, hi, int(bins) + 1, dtype=dt)


def mm(input, mat2, name=None):  # noqa: A002 (Paddle's names)
    """input @ mat2 (alias of matmul)."""
    return oar.matmul(input, mat2)


def negative(x, name=None):
    """-x."""
    _check(x, "negative")
    return -x


def positive(x, name=None):
    """x itself (a bool tensor is refused, as Paddle does)."""
    _check(x, "positive")
    if x.dtype.name == "bool":
        raise TypeError("positive: argument 'x' must not be a bool tensor")
    return x


def logit(x, eps=None, name=None):
    """log(x / (1 - x)), x first clipped to [eps, 1 - eps]; without eps (or eps = 0), NaN
    outside [0, 1] (Paddle's op, one pass; its gradient is 0 outside the clip's range)."""
    _check(x, "logit")
    return _ops._logit(x, 0.0 if eps is None else float(eps))


def dist(x, y, p=2, name=None):
    """The p-norm of x - y (broadcast): p=0 counts non-zeros, inf/-inf take max/min |x - y|."""
    _check(x, "dist")
    _check(y, "dist", "y")
    d = oar.abs(x - y).reshape([-1])
    p = float(p)
    if p == 0:
        return oar.sum((d != 0).astype(d.dtype))
    if p == float("inf"):
        return oar.amax(d)
    if p == float("-inf"):
        return oar.amin(d)
    return _pnorm_last(d, p)


# ---- random tensors shaped like another
def _like_place(x, device, op):
    """Where a *_like draw lands: `device` when given, else x's place (as Paddle 3.3)."""
    if device is None:
        return x.place
    from ._device import parse_device
    return parse_device(device, op)


def rand_like(input, name=None, *, dtype=None, device=None, requires_grad=False):  # noqa: A002
    """Uniform [0, 1) numbers of input's shape (and dtype unless given), on `device`
    (default: input's place)."""
    from ._creation import _rand_on
    _check(input, "rand_like", "input")
    out = _rand_on(_like_place(input, device, "rand_like"), _trace_state.sizes_of(input), dtype or input.dtype)
    out.stop_gradient = not requires_grad
    return out


def randn_like(x, dtype=None, name=None, *, device=None, requires_grad=False):
    """Standard normal numbers of x's shape (and dtype unless given), on `device` (default:
    x's place)."""
    from ._creation import _randn_on
    _check(x, "randn_like")
    out = _randn_on(_like_place(x, device, "randn_like"), _trace_state.sizes_of(x), dtype or x.dtype)
    out.stop_gradient = not requires_grad
    return out


def randint_like(x, low=0, high=None, dtype=None, name=None):
    """Integers in [low, high) (or [0, low)) of x's shape, in dtype (default x's), on x's
    place."""
    from ._creation import _randint_on
    _check(x, "randint_like")
    if high is None:
        low, high = 0, low
    out = _randint_on(x.place, low, high, _trace_state.sizes_of(x), "int64")
    return out.astype(dtype or x.dtype)


def log_normal(mean=1.0, std=2.0, shape=None, name=None):
    """exp of normal(mean, std) numbers."""
    return oar.exp(oar.normal(mean, std, shape))


def polar(abs, angle, name=None):  # noqa: A002  (Paddle's argument name)
    """The complex tensor abs * (cos(angle) + i sin(angle)) from real float tensors."""
    for n, v in (("abs", abs), ("angle", angle)):
        if not isinstance(v, Tensor) or v.dtype.name not in ("float32", "float64"):
            raise TypeError(f"polar: {n} must be a float32/float64 Tensor, got "
                            f"{getattr(v, 'dtype', type(v).__name__)}")
    if abs.dtype != angle.dtype:
        raise TypeError(f"polar: abs and angle must have one dtype, got {abs.dtype.name} and "
                        f"{angle.dtype.name}")
    return oar.complex(abs * oar.cos(angle), abs * oar.sin(angle))


def log_normal_(x, mean=1.0, std=2.0, name=None):
    """Fills x in place with exp(normal(mean, std)) draws (Paddle's Tensor.log_normal_)."""
    if not isinstance(x, Tensor) or not x.dtype.is_floating_point:
        raise TypeError(f"log_normal_: x must be a float Tensor, got "
                        f"{getattr(x, 'dtype', type(x).__name__)}")
    return x.copy_(oar.exp(oar.normal(mean, std, list(x.shape))).astype(x.dtype))



_TENSOR_METHODS = ["frac", "deg2rad", "rad2deg", "hypot", "logaddexp", "signbit", "copysign",
                   "heaviside", "sinc", "stanh", "isposinf", "isneginf", "isreal",
                   "is_integer", "is_empty", "ldexp", "frexp", "gcd", "lcm", "isin", "allclose",
                   "isclose", "equal_all", "multigammaln", "trapezoid", "cumulative_trapezoid",
                   "tensordot", "baddbmm", "renorm", "vander", "cdist", "reduce_as",
                   "gammaln", "sgn", "ge", "gt", "le", "lt", "ne", "eq", "log_normal_"]
for _name in _TENSOR_METHODS:
    if not hasattr(Tensor, _name):
        setattr(Tensor, _name, globals()[_name])

__all__ = _TENSOR_METHODS + ["mm", "negative", "positive", "logit", "dist", "vecdot", "add_n", "logspace", "pdist", "multiplex", "histogram_bin_edges",
                             "rand_like", "randn_like", "randint_like", "log_normal", "polar"]
