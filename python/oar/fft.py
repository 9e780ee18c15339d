"""oar.fft: Paddle's discrete Fourier transforms.

Every transform lowers to one of three ops (paddle_core/ops/fft.yaml, FFTW kernels):
fft_c2c (complex to complex), fft_r2c (real to complex, the half spectrum when
onesided) and fft_c2r (half spectrum to real). This module does what Paddle's
python/paddle/fft.py does around them: checks the arguments, casts integer and real
inputs, picks the axes, and crops or zero-pads the input to the requested lengths
(`n`, `s`) with differentiable slicing and concatenation, so gradients flow through.
"""
from collections.abc import Sequence as _Sequence

import numpy as _np

from . import _C
from ._C import Tensor as _Tensor

_ops = _C.ops

__all__ = [
    "fft", "ifft", "rfft", "irfft", "hfft", "ihfft",
    "fft2", "ifft2", "rfft2", "irfft2", "hfft2", "ihfft2",
    "fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn",
    "fftfreq", "rfftfreq", "fftshift", "ifftshift",
]

_NORMS = ("backward", "forward", "ortho")
_COMPLEX_OF = {"float32": "complex64", "float64": "complex128", "float16": "complex64",
               "bfloat16": "complex64"}


def _dtype_name(x):
    return x.dtype.name


def _check_tensor(x, op):
    if not isinstance(x, _Tensor):
        raise TypeError(f"{op}: argument 'x' must be a Tensor, got {type(x).__name__}")


def _check_norm(norm, op):
    if norm not in _NORMS:
        raise ValueError(f"{op}: argument 'norm' must be 'backward', 'forward' or 'ortho', got {norm!r}")


def _check_n(n, op, arg="n"):
    if isinstance(n, bool) or not isinstance(n, (int, _np.integer)):
        raise TypeError(f"{op}: argument '{arg}' must be an integer, got {n!r}")
    if n <= 0:
        raise ValueError(f"{op}: argument '{arg}' must be positive, got {n}")


def _norm_axis(x, axis, op):
    if isinstance(axis, bool) or not isinstance(axis, (int, _np.integer)):
        raise TypeError(f"{op}: argument 'axis' must be an integer, got {axis!r}")
    r = x.ndim
    if not -r <= axis < r:
        raise ValueError(f"{op}: axis {axis} is out of range for a tensor of rank {r} "
                         f"(expected [{-r}, {r}))")
    return int(axis) % r


def _as_complex_input(x, op):
    """Integer -> complex of the default float; real -> its complex dtype; complex stays."""
    name = _dtype_name(x)
    if name in ("complex64", "complex128"):
        return x
    if name == "bool" or name.startswith(("int", "uint")):
        return _ops.cast(x, _COMPLEX_OF[_C.get_default_dtype()])
    if name in _COMPLEX_OF:
        return _ops.cast(x, _COMPLEX_OF[name])
    raise TypeError(f"{op}: argument 'x' has unsupported dtype {name}")


def _as_real_input(x, op):
    """Integer -> the default float; float16/bfloat16 -> float32; a complex x is an error."""
    name = _dtype_name(x)
    if name in ("complex64", "complex128"):
        raise TypeError(f"{op}: argument 'x' must be a real tensor, got {name}")
    if name == "bool" or name.startswith(("int", "uint")):
        return _ops.cast(x, _C.get_default_dtype())
    if name in ("float16", "bfloat16"):
        return _ops.cast(x, "float32")
    return x


def _check_points(x, axes, op):
    for ax in axes:
        if x.shape[ax] == 0:
            raise ValueError(f"{op}: axis {ax} of x has length 0; a transform needs at least one point")


def _resize(x, sizes, axes):
    """Crops or zero-pads x at the end of each axis to the given sizes (differentiably)."""
    for size, ax in zip(sizes, axes):
        cur = x.shape[ax]
        if cur > size:
            idx = [slice(None)] * x.ndim
            idx[ax] = slice(0, size)
            x = x[tuple(idx)]
        elif cur < size:
            shape = list(x.shape)
            shape[ax] = size - cur
            x = _ops.concat([x, _ops.full(shape, 0, x.dtype, x.place)], ax)
    return x


# ---- one axis
def _c2c(x, n, axis, norm, forward, op):
    _check_tensor(x, op)
    _check_norm(norm, op)
    x = _as_complex_input(x, op)
    ax = _norm_axis(x, -1 if axis is None else axis, op)
    if n is not None:
        _check_n(n, op)
        x = _resize(x, [n], [ax])
    _check_points(x, [ax], op)
    return _ops._fft_c2c(x, [ax], norm, forward)


def _r2c(x, n, axis, norm, forward, onesided, op):
    _check_tensor(x, op)
    _check_norm(norm, op)
    x = _as_real_input(x, op)
    ax = _norm_axis(x, -1 if axis is None else axis, op)
    if n is not None:
        _check_n(n, op)
        x = _resize(x, [n], [ax])
    _check_points(x, [ax], op)
    return _ops._fft_r2c(x, [ax], norm, forward, onesided)


def _c2r(x, n, axis, norm, forward, op):
    _check_tensor(x, op)
    _check_norm(norm, op)
    x = _as_complex_input(x, op)
    ax = _norm_axis(x, -1 if axis is None else axis, op)
    if n is not None:
        _check_n(n, op)
        x = _resize(x, [n // 2 + 1], [ax])
    elif x.shape[ax] < 2:
        raise ValueError(f"{op}: the output length 2 * (x.shape[{ax}] - 1) = "
                         f"{2 * (x.shape[ax] - 1)} is not positive; pass n")
    _check_points(x, [ax], op)
    return _ops._fft_c2r(x, [ax], norm, forward, 0 if n is None else int(n))


def _real_or_complex(x, n, axis, norm, forward, op):
    _check_tensor(x, op)
    if _dtype_name(x) in ("complex64", "complex128"):
        return _c2c(x, n, axis, norm, forward, op)
    return _r2c(x, n, axis, norm, forward, False, op)


def fft(x, n=None, axis=-1, norm="backward", name=None):
    """The 1-D discrete Fourier transform along `axis` (numpy.fft.fft)."""
    return _real_or_complex(x, n, axis, norm, True, "fft")


def ifft(x, n=None, axis=-1, norm="backward", name=None):
    """The 1-D inverse discrete Fourier transform (numpy.fft.ifft)."""
    return _real_or_complex(x, n, axis, norm, False, "ifft")


def rfft(x, n=None, axis=-1, norm="backward", name=None):
    """The 1-D transform of a real signal: the n // 2 + 1 non-negative frequencies."""
    return _r2c(x, n, axis, norm, True, True, "rfft")


def irfft(x, n=None, axis=-1, norm="backward", name=None):
    """The inverse of rfft: a real signal of length n (default 2 * (m - 1))."""
    return _c2r(x, n, axis, norm, False, "irfft")


def hfft(x, n=None, axis=-1, norm="backward", name=None):
    """The transform of a signal with Hermitian symmetry given by its half spectrum: real."""
    return _c2r(x, n, axis, norm, True, "hfft")


def ihfft(x, n=None, axis=-1, norm="backward", name=None):
    """The inverse of hfft: the half spectrum of the inverse transform of a real signal."""
    return _r2c(x, n, axis, norm, False, True, "ihfft")


# ---- several axes
def _nd_axes(x, s, axes, op, sort_all):
    """Paddle's axis and length choice for the n-D transforms: axes default to the last
    len(s) (or all); explicit axes are normalized and sorted (all but the last one for the
    real transforms, whose last axis is the half-spectrum one), s following them."""
    if s is not None:
        if not isinstance(s, _Sequence) or isinstance(s, str):
            raise TypeError(f"{op}: argument 's' must be a sequence of integers, got {s!r}")
        for v in s:
            _check_n(v, op, "s")
        s = [int(v) for v in s]
    r = x.ndim
    if axes is None:
        if s is None:
            axes = list(range(r))
        else:
            if len(s) > r:
                raise ValueError(f"{op}: argument 's' has {len(s)} lengths for a tensor of rank {r}")
            axes = list(range(r - len(s), r))
    else:
        if isinstance(axes, (int, _np.integer)):
            axes = [axes]
        axes = [_norm_axis(x, a, op) for a in axes]
        if len(set(axes)) != len(axes):
            raise ValueError(f"{op}: argument 'axes' repeats an axis: {axes}")
        if s is not None and len(s) != len(axes):
            raise ValueError(f"{op}: arguments 's' ({len(s)} lengths) and 'axes' ({len(axes)} axes) "
                             f"must have the same length")
        order = _np.argsort(axes if sort_all else axes[:-1], kind="stable").tolist()
        if not sort_all:
            order.append(len(axes) - 1)
        axes = [axes[i] for i in order]
        if s is not None:
            s = [s[i] for i in order]
    if not axes:
        raise ValueError(f"{op}: no axes to transform (x has rank {r})")
    return s, axes


def _c2c_n(x, s, axes, norm, forward, op):
    _check_tensor(x, op)
    _check_norm(norm, op)
    x = _as_complex_input(x, op)
    s, axes = _nd_axes(x, s, axes, op, True)
    if s is not None:
        x = _resize(x, s, axes)
    _check_points(x, axes, op)
    return _ops._fft_c2c(x, axes, norm, forward)


def _r2c_n(x, s, axes, norm, forward, onesided, op):
    _check_tensor(x, op)
    _check_norm(norm, op)
    x = _as_real_input(x, op)
    s, axes = _nd_axes(x, s, axes, op, False)
    if s is not None:
        x = _resize(x, s, axes)
    _check_points(x, axes, op)
    return _ops._fft_r2c(x, axes, norm, forward, onesided)


def _c2r_n(x, s, axes, norm, forward, op):
    _check_tensor(x, op)
    _check_norm(norm, op)
    x = _as_complex_input(x, op)
    s, axes = _nd_axes(x, s, axes, op, False)
    if s is not None:
        x = _resize(x, s[:-1] + [s[-1] // 2 + 1], axes)
    elif x.shape[axes[-1]] < 2:
        raise ValueError(f"{op}: the output length 2 * (x.shape[{axes[-1]}] - 1) = "
                         f"{2 * (x.shape[axes[-1]] - 1)} is not positive; pass s")
    _check_points(x, axes, op)
    return _ops._fft_c2r(x, axes, norm, forward, 0 if s is None else s[-1])


def _real_or_complex_n(x, s, axes, norm, forward, op):
    _check_tensor(x, op)
    if _dtype_name(x) in ("complex64", "complex128"):
        return _c2c_n(x, s, axes, norm, forward, op)
    return _r2c_n(x, s, axes, norm, forward, False, op)


def fftn(x, s=None, axes=None, norm="backward", name=None):
    """The N-D discrete Fourier transform over `axes` (default: all, or the last len(s))."""
    return _real_or_complex_n(x, s, axes, norm, True, "fftn")


def ifftn(x, s=None, axes=None, norm="backward", name=None):
    """The N-D inverse discrete Fourier transform."""
    return _real_or_complex_n(x, s, axes, norm, False, "ifftn")


def rfftn(x, s=None, axes=None, norm="backward", name=None):
    """The N-D transform of a real signal; the last axis keeps n // 2 + 1 frequencies."""
    return _r2c_n(x, s, axes, norm, True, True, "rfftn")


def irfftn(x, s=None, axes=None, norm="backward", name=None):
    """The inverse of rfftn: a real signal (last length s[-1], default 2 * (m - 1))."""
    return _c2r_n(x, s, axes, norm, False, "irfftn")


def hfftn(x, s=None, axes=None, norm="backward", name=None):
    """The N-D transform of a Hermitian-symmetric signal given by its half spectrum."""
    return _c2r_n(x, s, axes, norm, True, "hfftn")


def ihfftn(x, s=None, axes=None, norm="backward", name=None):
    """The inverse of hfftn."""
    return _r2c_n(x, s, axes, norm, False, True, "ihfftn")


def _two_axes(x, s, axes, op):
    _check_tensor(x, op)
    if s is not None and (not isinstance(s, _Sequence) or len(s) != 2):
        raise ValueError(f"{op}: argument 's' must be a sequence of 2 integers, got {s!r}")
    if not isinstance(axes, _Sequence) or len(axes) != 2:
        raise ValueError(f"{op}: argument 'axes' must be a sequence of 2 integers, got {axes!r}")
    if x.ndim < 2:
        raise ValueError(f"{op}: argument 'x' must have at least 2 dimensions, got {x.ndim}")
    return list(axes)


def fft2(x, s=None, axes=(-2, -1), norm="backward", name=None):
    """The 2-D discrete Fourier transform (fftn over two axes)."""
    return _real_or_complex_n(x, s, _two_axes(x, s, axes, "fft2"), norm, True, "fft2")


def ifft2(x, s=None, axes=(-2, -1), norm="backward", name=None):
    """The 2-D inverse discrete Fourier transform."""
    return _real_or_complex_n(x, s, _two_axes(x, s, axes, "ifft2"), norm, False, "ifft2")


def rfft2(x, s=None, axes=(-2, -1), norm="backward", name=None):
    """The 2-D transform of a real signal."""
    return _r2c_n(x, s, _two_axes(x, s, axes, "rfft2"), norm, True, True, "rfft2")


def irfft2(x, s=None, axes=(-2, -1), norm="backward", name=None):
    """The inverse of rfft2."""
    return _c2r_n(x, s, _two_axes(x, s, axes, "irfft2"), norm, False, "irfft2")


def hfft2(x, s=None, axes=(-2, -1), norm="backward", name=None):
    """The 2-D transform of a Hermitian-symmetric signal given by its half spectrum."""
    return _c2r_n(x, s, _two_axes(x, s, axes, "hfft2"), norm, True, "hfft2")


def ihfft2(x, s=None, axes=(-2, -1), norm="backward", name=None):
    """The inverse of hfft2."""
    return _r2c_n(x, s, _two_axes(x, s, axes, "ihfft2"), norm, False, True, "ihfft2")


# ---- frequencies and shifts
def _freq(n, d, dtype, op, values):
    if isinstance(n, bool) or not isinstance(n, (int, _np.integer)):
        raise TypeError(f"{op}: argument 'n' must be an integer, got {n!r}")
    if n <= 0:
        raise ValueError(f"{op}: argument 'n' must be positive, got {n}")
    if d == 0:
        raise ValueError(f"{op}: argument 'd' must not be 0")
    from ._dtype import convert_dtype
    dt = convert_dtype(dtype if dtype is not None else _C.get_default_dtype())
    # As Paddle: the integer indices in the target dtype times 1 / (n d) in that dtype.
    npdt = _np.float32 if dt.name in ("float16", "bfloat16") else _np.dtype(dt.name)
    v = values.astype(npdt) * _np.asarray(1.0 / (n * d), dtype=npdt)
    return _C.to_tensor(v, dt)


def fftfreq(n, d=1.0, dtype=None, name=None):
    """The sample frequencies of fft: [0, 1, ..., -(n // 2), ..., -1] / (d n)."""
    idx = _np.concatenate([_np.arange(0, (n + 1) // 2), _np.arange(-(n // 2), 0)]) \
        if isinstance(n, (int, _np.integer)) and not isinstance(n, bool) and n > 0 else _np.zeros(0)
    return _freq(n, d, dtype, "fftfreq", idx)


def rfftfreq(n, d=1.0, dtype=None, name=None):
    """The sample frequencies of rfft: [0, 1, ..., n // 2] / (d n)."""
    idx = _np.arange(0, n // 2 + 1) if isinstance(n, (int, _np.integer)) and n > 0 else _np.zeros(0)
    return _freq(n, d, dtype, "rfftfreq", idx)


def _shift(x, axes, sign, op):
    _check_tensor(x, op)
    if axes is None:
        axes = list(range(x.ndim))
    elif isinstance(axes, (int, _np.integer)):
        axes = [axes]
    axes = [_norm_axis(x, a, op) for a in axes]
    if not axes:
        return _ops.assign(x)
    shifts = [sign * (x.shape[a] // 2) for a in axes]
    return _ops.roll(x, shifts, axes)


def fftshift(x, axes=None, name=None):
    """Moves the zero frequency to the centre (rolls each axis by n // 2)."""
    return _shift(x, axes, 1, "fftshift")


def ifftshift(x, axes=None, name=None):
    """The inverse of fftshift."""
    return _shift(x, axes, -1, "ifftshift")
