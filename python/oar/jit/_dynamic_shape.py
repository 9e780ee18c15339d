"""Sizes known only at run time in converted code (Note [Dynamic sizes] in docs/notes/jit.md).

Under to_static with an InputSpec's None/-1 dims, converted user code reads `x.shape`
through shape_of() (dy2static rewrites the attribute): a dynamic dim comes back as a
SymInt, a 0-D int64 tensor that the program computes at run time (shape64(x)[i]), a
static dim as an int. Arithmetic on SymInts gives SymInts. A shape list holding traced
tensors, given to reshape / expand / broadcast_to / full / zeros / ones / empty while a
program is traced, becomes a 1-D int64 tensor and the call records dyn_reshape or
dyn_expand, which read it when the program runs; outside tracing, such a list is read
into ints as before.

Each SymInt also carries `sym`: its size with every dynamic size standing as the IR's
sentinel (SENTINEL, a prime near 1e9). The list of those is the ops' `hint`, from which
the IR infers the result type as it does for every op with dynamic inputs, so the sizes
that are static stay static: reshape([x.shape[0], -1]) of [?, 16, 5, 5] is [?, 400] and
the Linear after it still type-checks.
"""
from .. import _C

_ops = _C.ops
_Tensor = _C.Tensor
_INT64 = _C.DataType.int64

SENTINEL = 1000000007   # pir/dialect/op/op_support.h kDynamicSentinel
_SYM_MAX = 1 << 62      # a product of more dynamic sizes than int64 holds: just "dynamic"


def _tracer():
    from . import api
    return api._active[-1] if api._active else None


def _sym_of(v):
    """The sentinel-valued size of an int or SymInt; None for other values."""
    if isinstance(v, SymInt):
        return v.sym
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    return None


def _binary(op, sym_op):
    def method(self, other):
        result = getattr(_Tensor, op)(self, other)
        o = _sym_of(other)
        if o is None or not isinstance(result, _Tensor) or result.dtype != _INT64:
            return result
        try:
            s = sym_op(self.sym, o)
        except ZeroDivisionError:
            return result
        return SymInt(result, s if 0 <= s < _SYM_MAX else SENTINEL)
    method.__name__ = op
    return method


class SymInt(_Tensor):
    """A size computed at run time: a 0-D int64 tensor (traced) plus `sym`, the size the
    IR's shape inference sees (module docstring)."""

    def __init__(self, t, sym):
        super().__init__(t)
        self.sym = sym

    __add__ = _binary("__add__", lambda a, b: a + b)
    __radd__ = _binary("__radd__", lambda a, b: b + a)
    __sub__ = _binary("__sub__", lambda a, b: a - b)
    __rsub__ = _binary("__rsub__", lambda a, b: b - a)
    __mul__ = _binary("__mul__", lambda a, b: a * b)
    __rmul__ = _binary("__rmul__", lambda a, b: b * a)
    __floordiv__ = _binary("__floordiv__", lambda a, b: a // b)
    __rfloordiv__ = _binary("__rfloordiv__", lambda a, b: b // a)

    def __repr__(self):
        return f"SymInt(dynamic size, {_Tensor.__repr__(self)})"


class ShapeTensor(_Tensor):
    """oar.shape(x) of a traced tensor while a program is traced: indexing it with an int
    gives a SymInt, whose size the IR knows when that dim of x is static."""

    def __init__(self, t, syms):
        super().__init__(t)
        self.syms = syms

    def __getitem__(self, i):
        r = _Tensor.__getitem__(self, i)
        if isinstance(i, int) and not isinstance(i, bool) and -len(self.syms) <= i < len(self.syms):
            return SymInt(r, self.syms[i])
        return r


def _traced_shape_tensor(x, orig):
    s = orig(x)
    t = _tracer()
    if t is None or not isinstance(x, _Tensor) or not t.is_traced(x):
        return s
    return ShapeTensor(s, [SENTINEL if d == -1 else d for d in t.dims_of(x)])


def shape_of(x):
    """x.shape as converted code reads it: a SymInt for each dynamic dim of a traced
    tensor, ints elsewhere (and x.shape itself for anything else)."""
    shape = x.shape
    if not isinstance(x, _Tensor):
        return shape
    t = _tracer()
    if t is None or not t.is_traced(x):
        return shape
    dims = t.dims_of(x)
    if -1 not in dims:
        return shape
    full = _ops.shape(x)
    return [SymInt(full[i], SENTINEL) if d == -1 else shape[i] for i, d in enumerate(dims)]


def traced_shape(shape):
    """(shape tensor, hint) for a shape argument that holds a traced tensor while a
    program is traced (a SymInt, paddle.shape(x)[0], a whole 1-D tensor); None otherwise,
    where the caller reads the shape into ints as always."""
    t = _tracer()
    if t is None:
        return None
    if isinstance(shape, _Tensor):
        if not t.is_traced(shape):
            return None
        if shape.ndim != 1:
            raise ValueError(f"shape: a shape given as a tensor must be 1-D, got shape {list(shape.shape)}")
        if isinstance(shape, ShapeTensor):  # oar.shape(y): the IR knows y's static sizes
            return shape, list(shape.syms)
        return _ops.cast(shape, _INT64), []  # sizes unknown to the IR: all dynamic
    if not isinstance(shape, (list, tuple)):
        return None
    if not any(isinstance(s, _Tensor) and t.is_traced(s) for s in shape):
        return None
    # The parts are built where the traced sizes live (a program running on a device
    # computes its shapes there; dyn_reshape reads them on the host, Note [Host inputs]).
    place = next(s.place for s in shape if isinstance(s, _Tensor) and t.is_traced(s))
    parts, hint = [], []
    for s in shape:
        if isinstance(s, _Tensor):
            if s.size != 1:
                raise ValueError(f"shape: an element given as a tensor must hold one value, got shape "
                                 f"{list(s.shape)}")
            traced = t.is_traced(s)
            part = _ops.reshape(_ops.cast(s, _INT64), [1])
            parts.append(part if part.place == place else _ops.copy_to(part, place, True))
            hint.append(s.sym if isinstance(s, SymInt) else SENTINEL if traced else int(s))
        else:
            v = int(s)
            parts.append(_ops.full([1], v, _INT64, place))
            hint.append(v)
    return _ops.concat(parts, 0), hint


# ---- lists appended to in converted loops
class TensorList:
    """A Python list that a converted loop appended to (Paddle's TensorArray): its
    elements are the rows of `buf` [count, ...], the count known at run time. It serves
    what such lists are for after the loop: oar.stack / oar.concat, len() (a SymInt in
    converted code), indexing, and more appends."""

    def __init__(self, buf, elem_dims=None):
        self.buf = buf
        self.elem_dims = elem_dims  # the element's IR dims (-1: dynamic), once an append was traced

    def append(self, v):
        if not isinstance(v, _Tensor):
            raise TypeError(f"to_static: a list appended to in a converted loop holds tensors, got "
                            f"{type(v).__name__}")
        t = _tracer()
        if self.elem_dims is None and t is not None and t.is_traced(v):
            self.elem_dims = list(t.dims_of(v))
        self.buf = _ops._append_row(self.buf, v)

    def __getitem__(self, i):
        return self.buf[i]

    def __len__(self):
        raise TypeError("to_static: the length of a list appended to in a converted loop is known at run time "
                        "only; in converted code len() gives it as a tensor")

    def __iter__(self):
        raise TypeError("to_static: a list appended to in a converted loop cannot be iterated in Python (its "
                        "length is known at run time); use oar.stack / oar.concat or index it")

    def typed(self):
        """buf with the static dims of its elements restored in the IR type (a loop carries
        it with every dim dynamic)."""
        if self.elem_dims is None:
            return self.buf
        hint = [SENTINEL] + [SENTINEL if d == -1 else d for d in self.elem_dims]
        return _ops._dyn_reshape(self.buf, _ops.shape(self.buf), hint)

    def stack(self, axis=0):
        rank = self.buf.ndim
        a = axis + rank if axis < 0 else axis
        if not 0 <= a < rank:
            raise ValueError(f"stack: axis {axis} is out of range for elements of rank {rank - 1}")
        return _to_axis(self.buf, a)

    def concat(self, axis=0):
        rank = self.buf.ndim - 1
        a = axis + rank if axis < 0 else axis
        if not 0 <= a < rank:
            raise ValueError(f"concat: axis {axis} is out of range for elements of rank {rank}")
        moved = _to_axis(self.buf, a)   # [..., count, d_a, ...]
        sizes = shape_of(moved)
        merged = sizes[:a] + [sizes[a] * sizes[a + 1]] + sizes[a + 2:]
        r = traced_shape(merged)
        return _ops._dyn_reshape(moved, *r) if r is not None else _ops.reshape(moved, merged)


def _to_axis(buf, a):
    """buf with its dim 0 moved to position a."""
    if a == 0:
        return buf
    rank = buf.ndim
    return _ops.transpose(buf, list(range(1, a + 1)) + [0] + list(range(a + 1, rank)))


def _list_api(orig, method):
    def wrapper(x, *args, **kwargs):
        if isinstance(x, TensorList):
            return getattr(x, method)(*args, **kwargs)
        return orig(x, *args, **kwargs)
    wrapper.__name__ = method
    wrapper.__doc__ = getattr(orig, "__doc__", None)
    return wrapper


# ---- the shape-taking APIs, while a program is traced (api._Tracing installs these
# over the originals, so eager calls pay nothing)
def _shaped(orig, dyn, make_input=None):
    """A wrapper of orig(x, shape, ...) (or orig(shape, value, dtype) when make_input
    builds the tensor to expand) that records dyn(x, shape tensor, hint) for a traced shape."""
    if make_input is None:
        def wrapper(x, shape, *args, **kwargs):
            r = traced_shape(shape)
            return dyn(x, *r) if r is not None else orig(x, shape, *args, **kwargs)
    else:
        def wrapper(shape, *args, **kwargs):
            r = traced_shape(shape)
            if r is None:
                return orig(shape, *args, **kwargs)
            # the call on shape [] gives the value and dtype; expanding it gives the size
            return dyn(orig([], *args, **kwargs), *r)
    wrapper.__name__ = getattr(orig, "__name__", "shaped")
    wrapper.__doc__ = getattr(orig, "__doc__", None)
    return wrapper


_saved = []


def install():
    """Routes reshape / expand / broadcast_to (oar.X and Tensor.X) and oar.full / zeros /
    ones / empty through traced_shape, and oar.stack / concat of a TensorList to it."""
    import oar
    if not _saved:
        names = {"reshape": _ops._dyn_reshape, "expand": _ops._dyn_expand, "broadcast_to": _ops._dyn_expand}
        for owner in (_Tensor, oar):
            for name, dyn in names.items():
                orig = owner.__dict__[name]
                call = getattr(oar, name)  # the plain function (a Tensor attribute may be a method descriptor)
                _saved.append((owner, name, orig, _shaped(call, dyn)))
        for name in ("full", "zeros", "ones", "empty"):
            orig = getattr(oar, name)
            _saved.append((oar, name, orig, _shaped(orig, _ops._dyn_expand, make_input=True)))
        for name in ("stack", "concat"):
            _saved.append((oar, name, getattr(oar, name), _list_api(getattr(oar, name), name)))
        orig_shape = oar.shape
        _saved.append((oar, "shape", orig_shape, lambda x, name=None: _traced_shape_tensor(x, orig_shape)))
    for owner, name, _, wrapper in _saved:
        setattr(owner, name, wrapper)


def uninstall():
    for owner, name, orig, _ in _saved:
        setattr(owner, name, orig)
