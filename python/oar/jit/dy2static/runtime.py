"""The helpers converted code calls at run time (as `_oar_d2s.<name>`): with Python values
they do what the original statement did; with a tensor traced by to_static they emit the
control-flow dialect (oar.static.nn.cond / while_loop) or the logical ops instead."""
import os
import sys
import types

from ..api import Dy2StaticError
from .._dynamic_shape import TensorList, shape_of  # noqa: F401  (shape_of: called by converted code)

# The package: its switches (`enabled`) are read from there at call time.
_switches = sys.modules[__package__]


class _Undefined:
    """The value of a variable that is not bound (assigned in a branch that did not run)."""
    __slots__ = ()

    def __repr__(self):
        return "<undefined>"


UNDEFINED = _Undefined()


def _tracer():
    from .. import api
    return api._active[-1] if api._active else None


def _is_traced(x):
    from ... import _C
    t = _tracer()
    return t is not None and isinstance(x, _C.Tensor) and t.is_traced(x)


def pick(ns, names):
    """The values of `names` in the namespace `ns` (locals()), UNDEFINED for unbound ones."""
    return tuple(ns.get(n, UNDEFINED) for n in names)


def _err(where, msg):
    return Dy2StaticError(f"to_static: {where}\n  {msg}")


def _describe(v):
    from ... import _C
    if isinstance(v, _C.Tensor):
        return f"Tensor(shape={list(v.shape)}, dtype={v.dtype})"
    if v is UNDEFINED:
        return "unassigned"
    return f"{type(v).__name__} {v!r}"[:80]


def python_bool(test, where, reason):
    """The test of an if/while left as Python: fine for Python values, an error when traced."""
    if _is_traced(test):
        raise _err(where, f"the condition is a tensor computed from the inputs or parameters, and this "
                          f"statement cannot be converted to the control-flow dialect: {reason}. Rewrite "
                          f"it (e.g. with oar.where, oar.static.nn.cond / while_loop), or keep the condition "
                          f"a Python value.")
    return test


def convert_ifelse(pred, true_fn, false_fn, args, names, where, returns=False, effects=None):
    """`if pred:` over branch functions. Each takes `args` (the values of the variables the
    branches assign, UNDEFINED where unbound) and returns the values of `names` (or, with
    `returns`, the function's return value). A traced tensor pred becomes a cf.if."""
    if not _is_traced(pred):
        return true_fn(*args) if pred else false_fn(*args)
    from ...static import nn

    if effects:
        raise _err(where, f"the condition is a traced tensor, so both branches are converted, but a branch "
                          f"writes to {effects}: a Python object cannot depend on the run-time branch. "
                          f"Assign to a local variable instead and use it after the if.")
    if pred.size != 1:
        raise _err(where, f"the condition of the if is a tensor of shape {list(pred.shape)}; a converted if "
                          f"needs one element (use .all() / .any(), or oar.where for an elementwise choice)")
    outs = {}

    def branch(label, fn):
        def run():
            out = fn(*args)
            outs[label] = out
            if not returns:
                for n, v in zip(names, out):
                    if v is UNDEFINED:
                        raise _err(where, f"variable '{n}' is assigned only in the other branch of this if, "
                                          f"whose condition is a traced tensor: assign it before the if or in "
                                          f"both branches")
            return out
        return run
    try:
        return nn.cond(pred, branch("true", true_fn), branch("false", false_fn))
    except (ValueError, TypeError) as e:
        raise _err(where, _mismatch(e, outs, names, returns, "branches of this if")) from None


def _mismatch(e, outs, names, returns, what):
    detail = str(e)
    t, f = outs.get("true"), outs.get("false")
    if t is not None or f is not None:
        if returns:
            return (f"the {what} (whose condition is a traced tensor) must return the same structure of tensors "
                    f"with the same shapes and dtypes; they return {_describe_ret(t)} and {_describe_ret(f)} "
                    f"({detail})")
        for n, a, b in zip(names, t or (), f or ()):
            if _describe(a) != _describe(b):
                return (f"variable '{n}' is {_describe(a)} in one of the {what} and {_describe(b)} in the other: "
                        f"with a traced condition both must be tensors of the same shape and dtype (or the same "
                        f"Python value). Make it a tensor, e.g. oar.full([], value). ({detail})")
    return f"cannot convert the {what}: {detail}"


def _describe_ret(v):
    if isinstance(v, (list, tuple)):
        return "(" + ", ".join(_describe(x) for x in v) + ")"
    return _describe(v)




def augassign(target, value, op):
    """`target op= value` inside a converted if/while: in place as Python does, but a new
    tensor when `target` is traced (a loop variable or a branch's variable is a new value of
    the region, not a write into a tensor from outside it)."""
    import operator
    if _is_traced(target):
        return getattr(operator, op)(target, value)
    return getattr(operator, "i" + op.rstrip("_"))(target, value)


def convert_ifexp(pred, true_fn, false_fn, where):
    """`a if pred else b` (the operands as thunks)."""
    if not _is_traced(pred):
        return true_fn() if pred else false_fn()
    from ...static import nn
    try:
        return nn.cond(pred, true_fn, false_fn)
    except (ValueError, TypeError) as e:
        raise _err(where, f"the two values of this conditional expression (whose condition is a traced tensor) "
                          f"must be tensors of the same shape and dtype: {e}") from None


def _to_bool_tensor(v, like):
    import oar
    if isinstance(v, oar.Tensor):
        return v if v.dtype == oar.bool else v.astype("bool")
    return oar.full(list(like.shape), bool(v), "bool")


def _convert_bool_op(first, rest, is_and):
    """`first and/or rest[0]() ...` with Python's short-circuit semantics, switching to
    logical_and/logical_or once an operand is traced."""
    import oar
    v = first
    for thunk in rest:
        if _is_traced(v):
            w = thunk()
            op = oar.logical_and if is_and else oar.logical_or
            v = op(_to_bool_tensor(v, v), _to_bool_tensor(w, v))
        elif bool(v) != is_and:  # `and` stops at a falsy value, `or` at a truthy one
            return v
        else:
            v = thunk()
    return v


def convert_and(first, *rest):
    return _convert_bool_op(first, rest, True)


def convert_or(first, *rest):
    return _convert_bool_op(first, rest, False)


def convert_not(v):
    import oar
    if _is_traced(v):
        return oar.logical_not(_to_bool_tensor(v, v))
    return not v


def _as_loop_tensor(v, name, where, dtype=None):
    import oar
    if isinstance(v, oar.Tensor):
        return v
    if isinstance(v, (bool, int, float)):
        if dtype is None:
            dtype = "bool" if isinstance(v, bool) else "int64" if isinstance(v, int) else oar.get_default_dtype()
        return oar.full([], v, dtype)
    raise _err(where, f"loop variable '{name}' is {_describe(v)}; in a while loop whose condition is a traced "
                      f"tensor every variable the loop assigns must be a tensor (or a Python number, made a "
                      f"tensor)")


def _library_dirs():
    import sysconfig
    from ..api import _PKG_DIR
    dirs = {_PKG_DIR}
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        p = sysconfig.get_paths().get(key)
        if p:
            dirs.add(os.path.abspath(p))
    return tuple(d + os.sep for d in dirs)


_LIBRARY_DIRS = None


def _user_function(fn):
    """A Python function of the user's (not of oar, the standard library or an installed
    package): what convert_call converts."""
    global _LIBRARY_DIRS
    from ..api import _ignored_modules
    f = getattr(fn, "__func__", fn)
    if not isinstance(f, types.FunctionType) or getattr(f, "__oar_not_to_static__", False):
        return False
    mod = f.__module__ or ""
    if any(mod == m or mod.startswith(m + ".") for m in _ignored_modules):
        return False
    if _LIBRARY_DIRS is None:
        _LIBRARY_DIRS = _library_dirs()
    name = f.__code__.co_filename
    if name.startswith("<"):  # frozen modules, exec'd or interactive code: no source to convert
        return False
    return not os.path.abspath(name).startswith(_LIBRARY_DIRS)


def convert_call(fn):
    """A function called from converted code, converted too while to_static traces (as
    Paddle's convert_call): the user's functions and methods; builtins, classes, oar's and
    other libraries' functions are called as they are. Layers convert their forward in
    Layer.__call__."""
    if _switches.enabled and isinstance(fn, (types.FunctionType, types.MethodType)) and _tracer() is not None \
            and _user_function(fn):
        from .convert import convert_function  # the driver imports this module: deferred
        return convert_function(fn)
    return fn


def _dynamic_rows(x):
    """Whether x is a traced tensor whose first dim is dynamic."""
    from ... import _C
    t = _tracer()
    return t is not None and isinstance(x, _C.Tensor) and x.ndim > 0 and t.is_traced(x) and t.dims_of(x)[0] == -1


def convert_len(x):
    """len(x) in converted code: a run-time size (SymInt) for a traced tensor whose first
    dim is dynamic or a list a converted loop appended to, len(x) otherwise."""
    if isinstance(x, TensorList):
        x = x.buf
    return shape_of(x)[0] if _dynamic_rows(x) else len(x)


def list_append(lst, v):
    """`lst.append(v)` in a loop body, rewritten as `lst = list_append(lst, v)` so that a
    converted loop carries the list (as a TensorList's buffer); the same append otherwise."""
    lst.append(v)
    return lst


class _AppendProbe:
    """Stands for an empty list while its loop body runs once to show what it appends."""

    def __init__(self):
        self.first = None

    def append(self, v):
        if self.first is None:
            self.first = v


def convert_print(*args, sep=" ", end="\n", file=None, flush=False):
    """print() in converted code (Paddle's convert_print): with traced tensors among the
    arguments, each becomes a print_tensor op, which prints the tensor every time the
    program runs, labelled with the text of the arguments before it; without, the
    builtin print (once, while converting)."""
    from ... import _C
    t = _tracer()
    if t is None or not any(isinstance(a, _C.Tensor) and t.is_traced(a) for a in args):
        return print(*args, sep=sep, end=end, file=file, flush=flush)
    text = []
    for a in args:
        if isinstance(a, _C.Tensor) and t.is_traced(a):
            _C.ops._print_tensor(a, sep.join(text), -1 if a.size <= 100 else 20)
            text = []
        else:
            text.append(str(a))
    if text:
        print(*text, sep=sep, end=end, file=file, flush=flush)
    return None


def iter_rows(x):
    """The test of a converted `for v in x`: True when x is a traced tensor with a dynamic
    first dim, whose rows the converted loop then indexes at run time (as Paddle's
    dy2static); the loop runs as written otherwise."""
    return _dynamic_rows(x)


def range_args(*args):
    """(start, stop, step) of `range(*args)` in a converted for loop: Python ints (checked
    by range itself) unless an argument is a tensor, which must hold one integer."""
    from ... import _C
    if not any(isinstance(a, _C.Tensor) for a in args):
        r = range(*args)
        return r.start, r.stop, r.step
    if not 1 <= len(args) <= 3:
        raise TypeError(f"range expected 1 to 3 arguments, got {len(args)}")
    out = []
    for a in args:
        if isinstance(a, _C.Tensor):
            if a.size != 1 or a.dtype.is_floating_point or a.dtype.name == "bool":
                raise TypeError(f"range: a tensor argument must hold one integer, got shape {list(a.shape)} "
                                f"{a.dtype}")
            a = a.reshape([])
        elif not isinstance(a, int):
            raise TypeError(f"range: '{type(a).__name__}' object cannot be interpreted as an integer")
        out.append(a)
    start, stop, step = (0, out[0], 1) if len(out) == 1 else (out[0], out[1], out[2] if len(out) == 3 else 1)
    if isinstance(step, int) and step == 0:
        raise ValueError("range() arg 3 must not be zero")
    return start, stop, step


def range_cond(k, r):
    """The test of a for-range loop rewritten as a while: k < stop (k > stop for a negative step)."""
    import oar
    _, stop, step = r
    if isinstance(step, int):
        return k < stop if step > 0 else k > stop
    return oar.where(step > 0, k < stop, k > stop)


def flag(value):
    """A break/continue flag: a bool tensor, so a converted if may set it (both branches
    then hand back a tensor of the same type)."""
    import oar
    return oar.full([], bool(value), "bool")


def convert_while_loop(cond_fn, body_fn, values, names, carried, live, where, effects=None):
    """`while cond_fn(*vars): vars = body_fn(*vars)` over the variables the body assigns.
    A Python loop while the condition is a Python value; once it is a traced tensor, the rest
    of the loop becomes oar.static.nn.while_loop (cf.while)."""
    vals = list(values)
    while True:
        c = cond_fn(*vals)
        if _is_traced(c):
            return _traced_while(cond_fn, body_fn, vals, names, carried, live, where, effects, c)
        if not c:
            return tuple(vals)
        vals = list(body_fn(*vals))


def _traced_while(cond_fn, body_fn, vals, names, carried, live, where, effects, c):
    from ...static import nn

    if effects:
        raise _err(where, f"the condition is a traced tensor, so the loop is converted, but its body writes to "
                          f"{effects}: a Python object cannot follow the run-time iterations. Use a loop variable.")
    if c.size != 1:
        raise _err(where, f"the condition of the while is a tensor of shape {list(c.shape)}; a converted loop "
                          f"needs one element (use .all() / .any())")
    kept = []
    for i, (n, v) in enumerate(zip(names, vals)):
        if v is UNDEFINED:
            if live[i]:
                raise _err(where, f"variable '{n}' is first assigned inside this while loop, whose condition is a "
                                  f"traced tensor, and is used after it: assign it before the loop")
            continue
        if carried[i]:
            kept.append(i)
    if not kept:
        raise _err(where, "the while loop's condition is a traced tensor but the loop assigns no variable "
                          "the condition reads: it would never end")
    # Lists the body appends to travel as TensorLists: a buffer of rows, every dim dynamic.
    lists = _loop_lists(body_fn, vals, names, kept, where)
    vals = [lists[i] if i in lists else v for i, v in enumerate(vals)]
    init = [vals[i].buf if i in lists else _as_loop_tensor(vals[i], names[i], where) for i in kept]
    dtypes = [t.dtype for t in init]
    elem_dims = {i: lists[i].elem_dims for i in lists}

    def full(kv):
        out = [UNDEFINED] * len(names)
        for i, v in zip(kept, kv):
            out[i] = TensorList(v, elem_dims[i]) if i in lists else v
        return out

    def cond2(*kv):
        return cond_fn(*full(kv))

    def body2(*kv):
        out = body_fn(*full(kv))
        nxt = []
        for j, i in enumerate(kept):
            if out[i] is UNDEFINED:
                raise _err(where, f"loop variable '{names[i]}' is deleted in the body of this converted loop")
            if i in lists:
                if not isinstance(out[i], TensorList):
                    raise _err(where, f"list '{names[i]}' is appended to in this converted loop and also "
                                      f"reassigned; a converted loop can only append to it")
                elem_dims[i] = elem_dims[i] or out[i].elem_dims
                nxt.append(out[i].buf)
                continue
            nxt.append(_as_loop_tensor(out[i], names[i], where, dtypes[j]))
        return nxt
    dims = [[-1] * init[j].ndim if i in lists else [] for j, i in enumerate(kept)]
    try:
        res = nn.while_loop(cond2, body2, init, name=where, _carried_dims=dims)
    except (ValueError, TypeError) as e:
        raise _err(where, f"cannot convert this while loop (its condition is a traced tensor): {e}. Loop variables: "
                          f"{', '.join(names[i] for i in kept)}") from None
    out = [UNDEFINED] * len(names)
    for i, v in zip(kept, res):
        out[i] = TensorList(TensorList(v, elem_dims[i]).typed(), elem_dims[i]) if i in lists else v
    return tuple(out)


def _loop_lists(body_fn, vals, names, kept, where):
    """{index: TensorList} for the loop variables that are lists (the body appends to them):
    the elements so far stacked into a buffer; for an empty list, the element's rank and
    dtype come from running the body once eagerly on the initial values (tracing paused,
    the random state restored), as the buffer must exist before the loop."""
    import oar
    from ...static.nn import _paused

    out = {}
    empty = []
    for i in kept:
        v = vals[i]
        if isinstance(v, TensorList):
            out[i] = TensorList(v.buf, v.elem_dims)
        elif isinstance(v, list):
            if not all(isinstance(e, oar.Tensor) for e in v):
                raise _err(where, f"list '{names[i]}' is appended to in a loop whose condition is a traced tensor, "
                                  f"so its items must be tensors")
            if v:
                t = _tracer()
                try:
                    buf = oar.stack(v)
                except ValueError as e:
                    raise _err(where, f"list '{names[i]}': its tensors must have one shape to be carried by a "
                                      f"converted loop ({e})") from None
                out[i] = TensorList(buf, list(t.dims_of(v[0])) if t.is_traced(v[0]) else list(v[0].shape))
            else:
                empty.append(i)
    if empty:
        t = _tracer()
        probes = {i: _AppendProbe() for i in empty}
        args = [probes.get(i, v) for i, v in enumerate(vals)]
        rng = oar.get_rng_state()
        try:
            _paused(t, lambda: body_fn(*args))
        finally:
            oar.set_rng_state(rng)
        for i in empty:
            first = probes[i].first
            if first is None:
                raise _err(where, f"list '{names[i]}' is empty before a loop whose condition is a traced tensor, "
                                  f"and the loop's first iteration appends nothing to it: its items' shape is unknown")
            # no rows, and sizes of 1 that the first append replaces (append_row): sizes
            # taken from the probe would bake this call's dynamic sizes into the program
            out[i] = TensorList(oar.zeros([0] + [1] * first.ndim, first.dtype), None)
    return out


