"""Paddle 3.3's PyTorch-style names: aliases of Paddle functions (clamp = clip, div = divide,
...), the creation functions from_numpy / asarray / as_tensor / range, and view (a shape or a
bit-cast to another dtype).
install() binds them on oar and, where Paddle has the method, on Tensor."""
import math
import numbers

import numpy as np

# name: (the oar function it aliases, also a Tensor method)
ALIASES = {
    "clamp": ("clip", True), "ger": ("outer", False), "div": ("divide", True),
    "div_": ("divide_", True), "less": ("less_than", True), "greater": ("gt", True),
    "manual_seed": ("seed", False), "sub": ("subtract", True), "sub_": ("subtract_", True),
    "mul": ("multiply", True), "concatenate": ("concat", False),
    "take_along_dim": ("take_along_axis", True),
}
CONSTANTS = {"newaxis": None, "inf": math.inf, "nan": math.nan, "pi": math.pi, "e": math.e}


def _oar():
    import oar
    return oar


def _finish(t, device, requires_grad):
    if device is not None:
        t = t.to(device)
    t.stop_gradient = not requires_grad
    return t


def as_tensor(data, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """A new Tensor holding a copy of `data` (paddle.tensor / paddle.as_tensor)."""
    oar = _oar()
    if isinstance(data, oar.Tensor):
        t = data.detach().clone() if dtype is None else data.detach().astype(dtype)
    else:
        t = oar.to_tensor(data, dtype=dtype)
    t = _finish(t, device, requires_grad)
    if pin_memory:  # PyTorch's flag: the copy in pinned host memory (Tensor.pin_memory)
        t = t.pin_memory()
        t.stop_gradient = not requires_grad
    return t


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False):
    """as_tensor with keyword-only options; `copy` is accepted and ignored (Paddle always
    copies)."""
    return as_tensor(obj, dtype=dtype, device=device, requires_grad=requires_grad)


def from_numpy(ndarray):
    """A Tensor with ndarray's values and dtype (a copy: Oar tensors own their memory)."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"from_numpy: ndarray must be a numpy.ndarray, got "
                        f"{type(ndarray).__name__}; use oar.to_tensor for other data")
    return _oar().to_tensor(ndarray)


def range(start=0, end=None, step=1, dtype=None, *, out=None, device=None, requires_grad=False,
          name=None):
    """start, start + step, ... up to and including `end`: floor((end - start) / step) + 1
    values (torch.range), int64 when every bound is an int, else the default float dtype."""
    oar = _oar()
    if end is None:
        start, end = 0, start
    vals = []
    for arg, v in (("start", start), ("end", end), ("step", step)):
        if isinstance(v, oar.Tensor):
            if v.size != 1:
                raise ValueError(f"range: {arg} must be a number or a 1-element Tensor, got "
                                 f"shape {list(v.shape)}")
            v = v.item()
        if isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(v):
            raise ValueError(f"range: {arg} must be a finite number, got {v!r}")
        vals.append(v)
    start, end, step = vals
    if step == 0:
        raise ValueError("range: step must be nonzero, got 0")
    n = math.floor((end - start) / step) + 1
    if n < 0:
        raise ValueError(f"range: end {end} is on the wrong side of start {start} for step "
                         f"{step}")
    if dtype is None:
        dtype = "int64" if all(isinstance(v, numbers.Integral) for v in vals) else \
            oar.get_default_dtype()
    idx = oar.arange(0, n, 1, dtype="int64" if isinstance(step, numbers.Integral) and
                     isinstance(start, numbers.Integral) else "float64")
    result = (idx * step + start).astype(dtype)
    if out is not None:
        oar.assign(result, out)
        result = out
    return _finish(result, device, requires_grad)


def _is_dtype(v):
    oar = _oar()
    return isinstance(v, (str, np.dtype, oar.dtype)) or (
        isinstance(v, type) and (v in (bool, int, float, complex) or issubclass(v, np.generic)))


def view(x, *args, name=None, size=None, dtype=None, shape_or_dtype=None):
    """x seen through a new shape (one size may be -1; shares x's memory where the strides
    allow, as reshape) or x's bytes read as another dtype (a bit-cast view sharing x's
    memory: the last dim is multiplied or divided by the ratio of the element sizes, Note
    [Bit-cast views]). The shape may be a list/tuple or the sizes as separate arguments;
    size= and dtype= are Paddle's aliases of shape_or_dtype."""
    oar = _oar()
    if not isinstance(x, oar.Tensor):
        raise TypeError(f"view: x must be a Tensor, got {type(x).__name__}")
    given = [v for v in (size, dtype, shape_or_dtype) if v is not None]
    if args and given or len(given) > 1:
        raise TypeError("view: give the shape or dtype once (positionally, or as one of "
                        "shape_or_dtype / size / dtype)")
    if len(args) > 1:
        target = list(args)
    elif args:
        target = args[0]
    elif given:
        target = given[0]
    else:
        raise TypeError("view: missing the shape or dtype to view x as")
    if _is_dtype(target):
        from ._dtype import convert_dtype
        try:
            dt = convert_dtype(target)
        except (KeyError, TypeError) as e:
            raise TypeError(f"view: dtype {target!r} is not a dtype Oar has") from e
        if dt == x.dtype:
            return x
        return oar._C.ops._view_dtype(x, dt)
    if dtype is not None:
        raise TypeError(f"view: dtype must be a dtype, got {dtype!r}")
    if isinstance(target, oar.Tensor):
        target = target.tolist()
    if isinstance(target, numbers.Integral) and not isinstance(target, bool):
        target = [target]
    if not isinstance(target, (list, tuple)) or not all(
            isinstance(d, numbers.Integral) and not isinstance(d, bool) for d in target):
        raise TypeError(f"view: shape_or_dtype must be a shape (ints) or a dtype, got "
                        f"{target!r}")
    return oar.reshape(x, [int(d) for d in target])


def _deferred(module, name, target):
    """An alias of a name that module serves lazily (oar._lazy): resolving it now would
    import the composite modules at `import oar`."""
    def alias(*args, **kwargs):
        return getattr(module, target)(*args, **kwargs)
    alias.__name__ = alias.__qualname__ = name
    alias.__doc__ = f"oar.{target} under its PyTorch name."
    return alias


class TensorFunctionOrModule:
    """oar.tensor as Paddle 3.3 has it: calling it is as_tensor (paddle.tensor(data, ...)),
    its attributes are those of the oar.tensor namespace module."""

    def __init__(self, module):
        self._module = module

    def __call__(self, *args, **kwargs):
        return as_tensor(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._module, name)

    def __repr__(self):
        return repr(as_tensor)

    def __dir__(self):
        return dir(self._module)


def install(module, tensor_cls):
    from ._lazy import LazyFunction
    for name, (target, method) in ALIASES.items():
        value = module.__dict__.get(target)
        setattr(module, name, value if value is not None and not isinstance(value, LazyFunction) else
                _deferred(module, name, target))
        if method and not hasattr(tensor_cls, name):
            setattr(tensor_cls, name, getattr(tensor_cls, target))
    for name, value in CONSTANTS.items():
        setattr(module, name, value)
    for fn in (as_tensor, asarray, from_numpy, range, view):
        setattr(module, fn.__name__, fn)
    if not hasattr(tensor_cls, "view"):
        tensor_cls.view = view
    module.tensor = TensorFunctionOrModule(module.tensor)
