"""oar.compat: PyTorch-signature versions of Paddle functions (Paddle 3.3's paddle.compat).

Each takes torch's argument names and return types (named tuples of values and indices,
`out=` buffers); passing Paddle's names instead (x, axis...) is a TypeError that names the
Paddle function. The torch import proxy (`enable_torch_proxy`, behind oar.enable_compat)
lives in oar.compat.proxy."""
import builtins
from typing import NamedTuple

from .._C import Tensor
from ._utils import check_out, torch_keywords, write_out
from . import nn  # noqa: F401
from .proxy import (  # noqa: F401
    disable_torch_proxy, enable_torch_proxy, extend_torch_proxy_blocked_modules,
    use_torch_proxy_guard,
)

__all__ = ["equal", "slogdet", "sort", "split", "min", "max", "unique", "median", "nanmedian",
           "seed"]


class MedianRetType(NamedTuple):
    values: Tensor
    indices: Tensor


class MinMaxRetType(NamedTuple):
    values: Tensor
    indices: Tensor


class SortRetType(NamedTuple):
    values: Tensor
    indices: Tensor


class SlogdetResult(NamedTuple):
    sign: Tensor
    logabsdet: Tensor


def _oar():
    import oar
    return oar


def _check_tensor(op, name, x):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: {name} must be a Tensor, got {type(x).__name__}")


@torch_keywords("paddle.compat.equal", "paddle.equal", {"x", "y"})
def equal(input, other):
    """True when both tensors have the same shape and elements (NaN never equals), after
    promoting both to a common dtype."""
    oar = _oar()
    _check_tensor("compat.equal", "input", input)
    _check_tensor("compat.equal", "other", other)
    if list(input.shape) != list(other.shape):
        return False
    if input.dtype != other.dtype:
        # Compared at a width that holds both exactly: int64 for integers and bools,
        # complex128 if either is complex, float64 otherwise.
        kinds = {input.dtype.name, other.dtype.name}
        common = ("complex128" if any(k.startswith("complex") for k in kinds) else
                  "int64" if all(k == "bool" or "int" in k for k in kinds) else "float64")
        input, other = input.astype(common), other.astype(common)
    return bool(oar.equal_all(input, other).item())


def _median(op, fn, input, dim, keepdim, out):
    _check_tensor(op, "input", input)
    if dim is None:
        check_out(op, out)
        return write_out(fn(input, axis=None, keepdim=keepdim, mode="min"), out)
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise TypeError(f"{op}: dim must be an int or None, got {dim!r}")
    check_out(op, out, pair=True)
    values, indices = fn(input, axis=dim, keepdim=keepdim, mode="min")
    return MedianRetType(*write_out((values, indices), out))


@torch_keywords("paddle.compat.median", "paddle.median", {"x", "axis"})
def median(input, dim=None, keepdim=False, *, out=None):
    """The lower median of all elements (dim=None), or (values, indices) along dim."""
    return _median("compat.median", _oar().median, input, dim, keepdim, out)


@torch_keywords("paddle.compat.nanmedian", "paddle.nanmedian", {"x", "axis"})
def nanmedian(input, dim=None, keepdim=False, *, out=None):
    """median ignoring NaNs; an all-NaN row gives NaN with index 0 (as torch; Paddle's own
    nanmedian says -1)."""
    oar = _oar()

    def fn(x, axis, keepdim, mode):
        r = oar.nanmedian(x, axis=axis, keepdim=keepdim, mode=mode)
        if axis is None:
            return r
        return r[0], oar.maximum(r[1], oar.zeros_like(r[1]))
    return _median("compat.nanmedian", fn, input, dim, keepdim, out)


def seed():
    """Seeds the generator from the OS's entropy and returns the seed (a non-negative int
    below 2**63)."""
    import os
    s = int.from_bytes(os.urandom(8), "little") >> 1
    _oar().seed(s)
    return s


def _min_max(name, input, args, kwargs, out):
    oar = _oar()
    op = f"compat.{name}"
    _check_tensor(op, "input", input)
    usage = (f"{op}: takes (input), (input, other: Tensor) or (input, dim: int, keepdim: bool "
             f"= False), got {len(args)} positional and keywords {sorted(kwargs)}")
    if set(kwargs) - {"dim", "keepdim", "other"} or len(args) + len(kwargs) > 2:
        raise TypeError(usage)
    if "other" in kwargs:
        if args or "dim" in kwargs or "keepdim" in kwargs:
            raise TypeError(usage)
        dim_or_other, keepdim = kwargs["other"], False
        if not isinstance(dim_or_other, Tensor):
            raise TypeError(usage)
    else:
        rest = list(args)
        dim_or_other = rest.pop(0) if rest else kwargs.get("dim")
        if "dim" in kwargs and args:
            raise TypeError(usage)
        keepdim = rest.pop(0) if rest else kwargs.get("keepdim", False)
        if "keepdim" in kwargs and dim_or_other is None:
            raise TypeError(usage)
        if "dim" in kwargs and kwargs["dim"] is None:
            raise TypeError(usage)
    if dim_or_other is not None and not isinstance(dim_or_other, Tensor) and \
            type(dim_or_other) is not int:
        raise TypeError(f"{op}: the second argument must be an int dim or a Tensor, got "
                        f"{type(dim_or_other).__name__}")
    if input.dtype.name in ("int32", "int64", "uint8", "int16") and not input.stop_gradient:
        raise TypeError(f"{op}: tensors of integral type '{input.dtype.name}' should stop "
                        "gradient")
    if dim_or_other is None:
        check_out(op, out)
        return write_out(getattr(oar, name)(input), out)
    if isinstance(dim_or_other, Tensor):
        check_out(op, out)
        return write_out(getattr(oar, name + "imum")(input, dim_or_other), out)
    check_out(op, out, pair=True)
    dim = dim_or_other
    if input.ndim == 0:
        if dim not in (0, -1):
            raise IndexError(f"{op}: dim {dim} is out of range for a 0-D input")
        res = (input, oar.zeros([], dtype="int64"))
    else:
        if not -input.ndim <= dim < input.ndim:
            raise IndexError(f"{op}: dim {dim} is out of range for an input of "
                             f"{input.ndim} dimensions")
        # The gradient goes to the one element the index names (torch's rule), not shared
        # among ties: take_along_axis of the arg-index.
        indices = getattr(oar, "arg" + name)(input, axis=dim, keepdim=True)
        values = oar.take_along_axis(input, indices, axis=dim)
        if not keepdim:
            values, indices = values.squeeze(dim), indices.squeeze(dim)
        res = (values, indices)
    return MinMaxRetType(*write_out(res, out))


@torch_keywords("paddle.compat.min", "paddle.min", {"x", "axis"})
def min(input, *args, out=None, **kwargs):
    """min(input): the minimum; min(input, dim, keepdim=False): (values, indices) along dim,
    the gradient going to the indexed element; min(input, other): oar.minimum."""
    return _min_max("min", input, args, kwargs, out)


@torch_keywords("paddle.compat.max", "paddle.max", {"x", "axis"})
def max(input, *args, out=None, **kwargs):
    """max(input), max(input, dim, keepdim=False) -> (values, indices), max(input, other)."""
    return _min_max("max", input, args, kwargs, out)


def slogdet(input, *, out=None):
    """(sign, logabsdet) of a square matrix or a batch of them, as a named tuple."""
    oar = _oar()
    _check_tensor("compat.slogdet", "input", input)
    check_out("compat.slogdet", out, pair=True)
    r = oar.linalg.slogdet(input)
    return SlogdetResult(*write_out((r[0], r[1]), out))


@torch_keywords("paddle.compat.sort", "paddle.sort", {"x", "axis"})
def sort(input, dim=-1, descending=False, stable=False, out=None):
    """(values, indices) of input sorted along dim."""
    oar = _oar()
    _check_tensor("compat.sort", "input", input)
    check_out("compat.sort", out, pair=True)
    indices = oar.argsort(input, axis=dim, descending=descending, stable=stable)
    values = oar.take_along_axis(input, indices, axis=dim) if input.ndim else input
    return SortRetType(*write_out((values, indices), out))


@torch_keywords("paddle.compat.unique", "paddle.unique", {"x", "axis"})
def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """Sorted unique elements (of the flattened input, or slices along dim), with the
    inverse indices and counts when asked."""
    return _oar().unique(input, return_inverse=return_inverse, return_counts=return_counts,
                         axis=dim)


@torch_keywords("paddle.compat.split", "paddle.split", {"x", "num_or_sections", "axis", "name"})
def split(tensor, split_size_or_sections, dim=0):
    """Chunks of split_size along dim (the last one smaller), or chunks of the listed sizes."""
    oar = _oar()
    op = "compat.split"
    _check_tensor(op, "tensor", tensor)
    if isinstance(dim, Tensor):
        dim = int(dim.item())
    if isinstance(dim, bool) or not isinstance(dim, int) or not -tensor.ndim <= dim < builtins.max(tensor.ndim, 1):
        raise ValueError(f"{op}: dim must be an int in [-{tensor.ndim}, {tensor.ndim}), got {dim!r}")
    dim = dim + tensor.ndim if dim < 0 else dim
    n = tensor.shape[dim]
    if isinstance(split_size_or_sections, (list, tuple)):
        sizes = [int(s.item()) if isinstance(s, Tensor) else s for s in split_size_or_sections]
        for i, s in enumerate(sizes):
            if isinstance(s, bool) or not isinstance(s, int) or s < 0:
                raise ValueError(f"{op}: split sizes must be non-negative ints, got {s!r} at {i}")
        if sum(sizes) != n:
            raise ValueError(f"{op}: split sizes {sizes} sum to {sum(sizes)}, not the size {n} "
                             f"of dim {dim}")
    elif isinstance(split_size_or_sections, int) and not isinstance(split_size_or_sections, bool):
        size = split_size_or_sections
        if size <= 0:
            raise ValueError(f"{op}: split_size_or_sections must be positive, got {size}")
        sizes = [size] * (n // size) + ([n % size] if n % size else [])
        if not sizes:
            sizes = [0]
    else:
        raise TypeError(f"{op}: split_size_or_sections must be an int, list or tuple, got "
                        f"{type(split_size_or_sections).__name__}")
    return tuple(oar.split(tensor, sizes, axis=dim))
