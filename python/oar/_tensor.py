"""Python-level pieces of oar.Tensor: operators, repr, conversions.

The op methods themselves (x.sum(), x.matmul(y), ...) are generated C++ bindings;
operators are bound to those same functions, so `a + b` calls C++ directly.
"""
import numpy as np

from . import _C, _lazy, _trace_state
from ._C import Tensor
from ._dtype import convert_dtype

_ops = _C.ops

# type(x) prints <class 'paddle.Tensor'> as in Paddle (as oar.Size prints paddle.Size): the
# class's module is the name Paddle code imports Oar under
Tensor.__module__ = "paddle"
# Paddle's Tensor.persistable: False on a tensor (a Layer's Parameter sets True); settable
Tensor.persistable = False


def _swap(fn):
    """Reflected operator: other (op) self."""
    def r(self, other):
        return fn(other, self)
    return r


# Operators are the generated methods themselves (C++ calls, no Python frame);
# only reflected non-commutative ones need a small shim.

Tensor.__add__ = Tensor.add
Tensor.__radd__ = Tensor.add
Tensor.__sub__ = Tensor.subtract
Tensor.__rsub__ = _swap(_ops.subtract)
Tensor.__mul__ = Tensor.multiply
Tensor.__rmul__ = Tensor.multiply
Tensor.__truediv__ = Tensor.divide
Tensor.__rtruediv__ = _swap(_ops.divide)
Tensor.__floordiv__ = Tensor.floor_divide
Tensor.__rfloordiv__ = _swap(_ops.floor_divide)
Tensor.__mod__ = Tensor.remainder
Tensor.__rmod__ = _swap(_ops.remainder)
Tensor.__matmul__ = Tensor.matmul
Tensor.__rmatmul__ = _swap(_ops.matmul)
Tensor.__neg__ = Tensor.neg
Tensor.__abs__ = Tensor.abs


def _none_compare(fn, result):
    """x == None is False and x != None True (Paddle), not a TypeError from the op."""
    def op(self, other):
        if other is None:
            return result
        return fn(self, other)
    op.__name__ = fn.__name__
    return op


Tensor.__eq__ = _none_compare(_ops.equal, False)
Tensor.__ne__ = _none_compare(_ops.not_equal, True)
Tensor.__lt__ = Tensor.less_than
Tensor.__le__ = Tensor.less_equal
Tensor.__gt__ = Tensor.greater_than
Tensor.__ge__ = Tensor.greater_equal

# x & y, |, ^, <<, >> and ~x as Paddle's: the bitwise functions, loaded on first use (they
# take the logical ops on bool tensors; an int operand takes x's dtype). & | ^ commute, so they
# serve as their reflected forms too.
_lazy.bind_method(Tensor, ("__and__", "__rand__"), "._bitwise", "bitwise_and")
_lazy.bind_method(Tensor, ("__or__", "__ror__"), "._bitwise", "bitwise_or")
_lazy.bind_method(Tensor, ("__xor__", "__rxor__"), "._bitwise", "bitwise_xor")
_lazy.bind_method(Tensor, ("__lshift__",), "._bitwise", "bitwise_left_shift")
_lazy.bind_method(Tensor, ("__rshift__",), "._bitwise", "bitwise_right_shift")
_lazy.bind_method(Tensor, ("__invert__",), "._bitwise", "bitwise_not")
Tensor.__hash__ = object.__hash__
# NumPy defers to the Tensor's reflected operators (np.float64(2) * x, ndarray + x give a
# Tensor, as in Paddle) instead of converting x to an ndarray
Tensor.__array_ufunc__ = None
# No __iadd__/__isub__/__imul__/__itruediv__: as in Paddle, `x += y` is `x = x + y`, a new
# tensor (so the result promotes, int /= 2 gives a float, other names of the old x keep its
# value, and a leaf that requires grad may take it); x.add_(y) is the in-place form.


def _pow(x, y):
    if isinstance(y, (int, float)) and not isinstance(y, bool):
        if isinstance(y, float) and not (x.dtype.is_floating_point or x.dtype.name.startswith("complex")):
            x = _ops.cast(x, convert_dtype(_C.get_default_dtype()))  # int ** 0.5 is float (Paddle)
        return _ops.pow(x, float(y))
    return _ops.elementwise_pow(x, y)


def _rpow(x, y):
    return _ops.elementwise_pow(y, x)


Tensor.__pow__ = _pow
Tensor.__rpow__ = _rpow
Tensor.pow = _pow


class _PrintOptions:
    precision = 8
    threshold = 1000
    edgeitems = 3
    linewidth = 80
    sci_mode = False


def set_printoptions(precision=None, threshold=None, edgeitems=None, sci_mode=None,
                     linewidth=None):
    """Sets how tensors print (paddle.set_printoptions): digits after the point of
    non-integer floats, the element count above which a tensor prints summarized,
    the items kept at each edge then, scientific notation, and the line width."""
    for name, v, typ in (("precision", precision, int), ("threshold", threshold, int),
                         ("edgeitems", edgeitems, int), ("sci_mode", sci_mode, bool),
                         ("linewidth", linewidth, int)):
        if v is None:
            continue
        if not isinstance(v, typ) or (typ is int and isinstance(v, bool)):
            raise TypeError(f"set_printoptions: {name} must be {typ.__name__}, got {v!r}")
        setattr(_PrintOptions, name, v)


# Tensors print as Paddle prints them (python/paddle/tensor/to_string.py there): a float
# that is an integer prints as "2.", any other with `precision` fixed digits
# ("0.50000000"); every item is padded to the widest one, with a leading space for the
# non-negative ones when some item is negative; summarized tensors keep `edgeitems` per
# edge around "...", and their widest item is taken from what is shown.
def _format_scalar(v, is_float):
    if is_float == "c":  # complex: "(re+imj)" with the float format of each part
        p = _PrintOptions.precision
        spec = f".{p}e" if _PrintOptions.sci_mode else f".{p}f"
        return f"({v.real:{spec}}{'+' if v.imag >= 0 else ''}{v.imag:{spec}}j)"
    if not is_float:
        return str(v)
    if _PrintOptions.sci_mode:
        return f"{v:.{_PrintOptions.precision}e}"
    if np.ceil(v) == v:
        return f"{v:.0f}."
    return f"{v:.{_PrintOptions.precision}f}"


def _summarized(arr, summary):
    """The part of arr that is printed (edge items along each axis when summarizing)."""
    e = _PrintOptions.edgeitems
    if not summary or arr.ndim == 0:
        return arr
    if arr.shape[0] > 2 * e:
        arr = np.concatenate([arr[:e], arr[-e:]])
    return np.stack([_summarized(a, summary) for a in arr]) if arr.ndim > 1 else arr


def _format_array(arr, summary, indent, fmt):
    e = _PrintOptions.edgeitems
    if arr.ndim == 0:
        return fmt(arr.item())
    cut = summary and arr.shape[0] > 2 * e
    if arr.ndim == 1:
        vals = arr.tolist()
        items = ([fmt(v) for v in vals[:e]] + ["..."] + [fmt(v) for v in vals[-e:]] if cut
                 else [fmt(v) for v in vals])
        per_line = max(1, (_PrintOptions.linewidth - indent) // (fmt.width + 2))
        lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
        return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"
    rows = list(arr[:e]) + [None] + list(arr[-e:]) if cut else list(arr)
    parts = ["..." if r is None else _format_array(r, summary, indent + 1, fmt) for r in rows]
    return "[" + ("," + "\n" * (arr.ndim - 1) + " " * (indent + 1)).join(parts) + "]"


class _ItemFormatter:
    def __init__(self, shown, is_float):
        self.is_float = is_float
        strs = [_format_scalar(v, is_float) for v in shown.reshape(-1).tolist()]
        self.width = max((len(s) for s in strs), default=0)
        if shown.dtype.kind == "c":  # Paddle orders complex items as NumPy does: real part first
            neg = (shown.real < 0) | ((shown.real == 0) & (shown.imag < 0))
            self.signed = bool(neg.any())
        else:
            self.signed = bool(shown.size) and shown.dtype != np.bool_ and bool((shown < 0).any())

    def __call__(self, v):
        s = _format_scalar(v, self.is_float)
        if self.width <= len(s):
            return s
        negative = (v.real, v.imag) < (0, 0) if isinstance(v, complex) else v < 0
        if self.signed and not negative:
            return " " + s.ljust(self.width - 1)
        return s.ljust(self.width)


def _repr(self):
    dt = self.dtype.name
    arr = (self.astype("float32") if dt == "bfloat16" else self).numpy()
    prefix = "Tensor"
    indent = len(prefix) + 1
    summary = self.ndim > 0 and self.size > _PrintOptions.threshold
    fmt = _ItemFormatter(_summarized(arr, summary), "c" if arr.dtype.kind == "c" else arr.dtype.kind == "f")
    body = _format_array(arr, summary, indent, fmt)
    return (f"{prefix}(shape={list(self.shape)}, dtype={dt}, place={self.place}, "
            f"stop_gradient={self.stop_gradient},\n{' ' * indent}{body})")


def _format(self, format_spec):
    """f"{t}" / format(t, spec): a 0-D tensor formats as its Python value (Paddle), so
    "{:.2f}".format(loss) works; other tensors format as str(t) with an empty spec only."""
    if self.ndim == 0:
        return format(self.item(), format_spec)
    return object.__format__(self, format_spec)


Tensor.__repr__ = _repr
Tensor.__str__ = _repr
Tensor.__format__ = _format


def _item(self, *idx):
    """The element as a Python scalar: the only one, item(flat_index) (row-major, as
    numpy.ndarray.item and Paddle) or item(i, j, ...) with one index per axis."""
    if len(idx) == 1 and isinstance(idx[0], (tuple, list)):
        idx = tuple(idx[0])
    if len(idx) == 1:
        n, i = self.size, int(idx[0])
        if not -n <= i < n:
            raise IndexError(f"item: flat index {i} is out of range for a tensor of {n} elements")
        return self.reshape([-1])[i].item()
    if idx:
        if len(idx) != self.ndim:
            raise IndexError(f"item: got {len(idx)} indices for a {self.ndim}-D tensor of shape "
                             f"{list(self.shape)}")
        return self[idx].item()
    if self.size != 1:
        raise ValueError(f"item: only a tensor with one element can be converted to a Python "
                         f"scalar, got shape {list(self.shape)}")
    v = self.numpy() if self.dtype.name != "bfloat16" else self.astype("float32").numpy()
    return v.reshape(()).item()


Tensor.item = _item
Tensor.tolist = lambda self: (self.numpy() if self.dtype.name != "bfloat16"
                              else self.astype("float32").numpy()).tolist()
Tensor.__float__ = lambda self: float(self.item())
Tensor.__complex__ = lambda self: complex(self.item())
Tensor.is_complex = lambda self: self.dtype.name in ("complex64", "complex128")
Tensor.__int__ = lambda self: int(self.item())
Tensor.__index__ = lambda self: (int(self.item()) if not self.dtype.is_floating_point else
                                 (_ for _ in ()).throw(TypeError("only integer tensors can be used as an index")))


def _bool(self):
    if self.size != 1:
        raise ValueError(f"The truth value of a Tensor with {self.size} elements is ambiguous; "
                         "use .any() or .all()")
    return bool(self.item())


Tensor.__bool__ = _bool


def _len(self):
    if self.ndim == 0:
        raise TypeError("len() of a 0-D tensor")
    return self.shape[0]


Tensor.__len__ = _len


def _iter(self):
    if self.ndim == 0:
        raise TypeError("iteration over a 0-D tensor")
    for i in range(self.shape[0]):
        yield self[i]


Tensor.__iter__ = _iter


def _astype(self, dtype):
    return _ops.cast(self, convert_dtype(dtype))


Tensor.astype = _astype
Tensor.clone = lambda self: _ops.assign(self)
Tensor.cpu = lambda self: _copy_to(self, "cpu")
Tensor.ndimension = lambda self: self.ndim
Tensor.element_size = lambda self: self.dtype.itemsize
Tensor.clear_grad = lambda self, set_to_zero=True: self.clear_gradient(set_to_zero)
Tensor.gradient = lambda self: None if self.grad is None else self.grad.numpy()
Tensor.T = property(lambda self: _ops.transpose(self, list(range(self.ndim))[::-1]))
Tensor.mT = property(lambda self: _ops.transpose(
    self, list(range(self.ndim - 2)) + [self.ndim - 1, self.ndim - 2]))


def _t(self):
    if self.ndim > 2:
        raise ValueError(f"t: expected a tensor of rank <= 2, got {self.ndim}")
    return self.T


Tensor.t = _t


def _cuda(self, *a, **k):
    raise RuntimeError("cuda: this build of Oar has no CUDA backend")


Tensor.cuda = _cuda


def _pin_memory(self, blocking=True, device=None):
    """Tensor.pin_memory(blocking=True): a copy of self in pinned (page-locked) host memory
    of `device` (default: a device tensor's own device, else the current device), itself
    when it is pinned already. The copy is a CPU tensor; copies from it to the device with
    blocking=False are asynchronous, and from a device tensor with blocking=False this copy
    itself is (reads wait for it). As PyTorch's pin_memory(device), a device string or
    Place may come first.
    Note [Pinned memory] (docs/notes/devices.md)."""
    from ._device import _pinned_device
    if isinstance(blocking, (str, _C.Place)):
        device, blocking = blocking, True
    if _C._is_pinned(self):
        return self
    if device is None and not self.place.is_cpu_place():
        device = self.place  # a device tensor: pinned memory of its own device
    return _C._pin_memory(self, _pinned_device(device, "pin_memory"), bool(blocking))


Tensor.pin_memory = _pin_memory
Tensor.is_pinned = lambda self: _C._is_pinned(self)


def _copy_to(self, place, blocking=True):
    """A copy of self on `place` (a Place, a device string or CUDAPinnedPlace()), through
    the copy op: the gradient flows back to self's place, and to_static records it.
    blocking=False may return before the data has arrived (reads synchronize: numpy(),
    item())."""
    from ._device import CUDAPinnedPlace, parse_device
    if isinstance(place, CUDAPinnedPlace):
        return _pin_memory(self, blocking)
    place = parse_device(place, "to")
    if place == self.place:
        return self
    return _ops.copy_to(self, place, bool(blocking))


def _to(self, *args, **kwargs):
    """x.to('sample:0'), x.to('float32'), x.to(place, dtype), x.to(other_tensor),
    x.to(device=..., dtype=..., blocking=...) (Paddle's Tensor.to)."""
    from ._device import CUDAPinnedPlace, parse_device
    device, dtype = kwargs.get("device"), kwargs.get("dtype")
    blocking = kwargs.get("blocking")
    for a in args:
        if isinstance(a, Tensor):
            device, dtype = a.place, a.dtype
        elif isinstance(a, (_C.Place, CUDAPinnedPlace)):
            device = a
        elif isinstance(a, bool):
            blocking = a
        elif isinstance(a, str):
            try:
                convert_dtype(a)
                dtype = a
            except (TypeError, ValueError):
                device = parse_device(a, "to")
        elif a is not None:
            dtype = a
    out = self if dtype is None else self.astype(dtype)
    if device is not None:
        out = _copy_to(out, device, True if blocking is None else blocking)
    return out


Tensor.to = _to
Tensor._copy_to = _copy_to


def _records_write(self, src):
    """Whether writing src over all of self must be recorded for autograd: self is part of
    a graph (a non-leaf, e.g. a view of one) or src requires grad. Leaves that require
    grad keep the raw write (parameters initialized or updated in place)."""
    if not _C.is_grad_enabled() or (self.is_leaf and not self.stop_gradient):
        return False
    return not self.stop_gradient or (isinstance(src, Tensor) and not src.stop_gradient)


def _write_whole(self, src):
    """self[...] = src, through the in-place op slice_scatter_ over no axes, so autograd
    sees the write (a view's base gets the new history: Note [Views and in-place ops])."""
    if list(src.shape) != list(self.shape):
        src = _ops.reshape(src, self.shape)
    _ops.slice_scatter_(self, src, [], [], [], [])


def _filler(t, value):
    """A tensor of t's shape and dtype holding `value`, for t._copy_from: one value broadcast
    (stride 0, so the copy is a fill: seq[:, 10:100] = 1.0 on [16, 128, 256] 53 -> 24 us, as
    it wrote a full tensor and copied it), or below 4096 elements a full one (one op call, not
    two: small writes are all call overhead)."""
    if t.size < 4096:
        return _ops.full_like(t, value, t.dtype)
    return _ops.expand(_ops.full([], value, t.dtype, t.place), t.shape)


def _fill_(self, value):
    if _records_write(self, None):
        _write_whole(self, _ops.full_like(self, value, self.dtype))
        return self
    from .autograd import no_grad
    with no_grad():
        self._copy_from(_filler(self, value))
    return self


def _zero_(self):
    return _fill_(self, 0)


def _copy_(self, src, blocking=True):
    if not isinstance(src, Tensor):
        src = _C.to_tensor(src, self.dtype)
    src = src if src.dtype == self.dtype else _ops.cast(src, self.dtype)
    if _records_write(self, src):
        if src.size != self.size:
            raise ValueError(f"copy_: source has {src.size} elements, destination {self.size}")
        _write_whole(self, src)
    else:
        self._copy_from(src)
    return self


def _set_value(self, value):
    if isinstance(value, np.ndarray) or not isinstance(value, Tensor):
        value = _C.to_tensor(np.asarray(value), self.dtype)
    if list(value.shape) != list(self.shape):
        raise ValueError(f"set_value: shape {list(value.shape)} does not match the tensor's "
                         f"shape {list(self.shape)}")
    return _copy_(self, value)


def _random_fill_(self, draw, op):
    if not self.dtype.is_floating_point:
        raise TypeError(f"{op}: the tensor must have a floating-point dtype, got {self.dtype}")
    return _copy_(self, draw(_trace_state.sizes_of(self), self.dtype))


def _uniform_(self, min=-1.0, max=1.0, seed=0, name=None):  # noqa: A002 (Paddle's names)
    """Fills self with U(min, max) samples in place (Paddle's Tensor.uniform_)."""
    if not float(min) < float(max):
        raise ValueError(f"uniform_: min ({min}) must be less than max ({max})")
    from ._creation import uniform
    return _random_fill_(self, lambda shape, dtype: uniform(shape, dtype, min, max, seed), "uniform_")


def _normal_(self, mean=0.0, std=1.0, name=None):
    """Fills self with N(mean, std^2) samples in place (Paddle's Tensor.normal_)."""
    if float(std) < 0:
        raise ValueError(f"normal_: std must be >= 0, got {std}")
    from ._creation import _gaussian
    return _random_fill_(self, lambda shape, dtype: _gaussian(shape, mean, std, dtype, "normal_"), "normal_")


Tensor.fill_ = _fill_
Tensor.zero_ = _zero_
Tensor.uniform_ = _uniform_
Tensor.normal_ = _normal_
Tensor.copy_ = _copy_
Tensor.set_value = _set_value


def argmax(x, axis=None, keepdim=False, dtype="int64", name=None):
    """Index of the largest value (over the flattened tensor when axis is None)."""
    return _ops._argmax(x, 0 if axis is None else axis, keepdim, axis is None, convert_dtype(dtype))


def argmin(x, axis=None, keepdim=False, dtype="int64", name=None):
    """Index of the smallest value (over the flattened tensor when axis is None)."""
    return _ops._argmin(x, 0 if axis is None else axis, keepdim, axis is None, convert_dtype(dtype))


Tensor.argmax = argmax
Tensor.argmin = argmin
