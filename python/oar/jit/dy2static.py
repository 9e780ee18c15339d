"""Converting Python control flow on tensors (Note [Converting control flow], docs/notes/jit.md).

`convert_function(fn)` parses the function's source and rewrites

    if test: A else: B        ->  the branches become nested functions taking (and returning)
                                  the variables they assign; `convert_ifelse` picks one with a
                                  Python `if`, or calls oar.static.nn.cond when the test is a
                                  tensor traced by to_static (a cf.if in the program)
    while test: body          ->  `convert_while_loop(cond_fn, body_fn, loop_vars)`: a Python loop,
                                  or oar.static.nn.while_loop (cf.while) for a traced test
    a and b / a or b / not a  ->  logical_and / logical_or / logical_not on traced tensors,
    x if c else y                 Python's short-circuit semantics otherwise

first `for i in range(...)` becomes a while loop over a counter, and break/continue in a
while loop (reached through ifs) become flags, so both convert too (`_LoopRewriter`); and
calls become `convert_call(f)(...)`, converting the user's functions they reach.

With Python values the converted code does exactly what the original did (variables
assigned in one branch only stay unbound when that branch is not taken). Constructs that
cannot move into a nested function (a return, or a break/continue inside a with/try, in a
while; returns inside a loop, global/nonlocal, yield, zero-argument super()) keep their Python statement, and its
test raises Dy2StaticError naming the file and line when it turns out to be a traced tensor.

The converted function is compiled with the original's file name and line numbers, runs in
the original's globals and closure cells and keeps its defaults, so tracebacks and the
tracer's errors point at the user's lines.
"""
import ast
import copy
import inspect
import linecache
import os
import textwrap
import types
import weakref

from .api import Dy2StaticError
from ._dynamic_shape import TensorList, shape_of  # noqa: F401  (shape_of: called by converted code)

# Switched off by OAR_DY2STATIC=0 or `oar.jit.dy2static.enabled = False`: to_static then
# only traces (a Python if on a traced tensor is the line-naming error).
enabled = os.environ.get("OAR_DY2STATIC", "1").lower() not in ("0", "false", "off", "no")

_HELPER = "_oar_d2s"   # the name this module has inside converted code (a closure cell)

# Debugging output (Paddle's paddle.jit.set_code_level / set_verbosity): the converted
# source of each function, and which functions convert; to stderr unless also_to_stdout.
code_level = int(os.environ.get("OAR_DY2STATIC_CODE_LEVEL", "0") or 0)
code_to_stdout = False
verbosity = int(os.environ.get("OAR_DY2STATIC_VERBOSITY", "0") or 0)
verbosity_to_stdout = False


def set_code_level(level=100, also_to_stdout=False):
    """Print the converted code of each function to_static converts from now on
    (level > 0; 0 stops). Functions convert once, so set it before the first call."""
    global code_level, code_to_stdout
    code_level, code_to_stdout = int(level), bool(also_to_stdout)


def set_verbosity(level=0, also_to_stdout=False):
    """Log conversions: 1 names each function converted, 2 also those left as written."""
    global verbosity, verbosity_to_stdout
    verbosity, verbosity_to_stdout = int(level), bool(also_to_stdout)


def _log(text, to_stdout):
    import sys
    print(text, file=sys.stderr)
    if to_stdout:
        print(text)
_PREFIX = "_oar_"      # generated names


class _Undefined:
    """The value of a variable that is not bound (assigned in a branch that did not run)."""
    __slots__ = ()

    def __repr__(self):
        return "<undefined>"


UNDEFINED = _Undefined()


# ======================================================================== runtime helpers
def _tracer():
    from . import api
    return api._active[-1] if api._active else None


def _is_traced(x):
    from .. import _C
    t = _tracer()
    return t is not None and isinstance(x, _C.Tensor) and t.is_traced(x)


def pick(ns, names):
    """The values of `names` in the namespace `ns` (locals()), UNDEFINED for unbound ones."""
    return tuple(ns.get(n, UNDEFINED) for n in names)


def _err(where, msg):
    return Dy2StaticError(f"to_static: {where}\n  {msg}")


def _describe(v):
    from .. import _C
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
    from ..static import nn

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


_AUG = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.MatMult: "matmul", ast.Div: "truediv",
        ast.FloorDiv: "floordiv", ast.Mod: "mod", ast.Pow: "pow", ast.LShift: "lshift", ast.RShift: "rshift",
        ast.BitAnd: "and_", ast.BitXor: "xor", ast.BitOr: "or_"}


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
    from ..static import nn
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
    from .api import _PKG_DIR
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
    from .api import _ignored_modules
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
    if enabled and isinstance(fn, (types.FunctionType, types.MethodType)) and _tracer() is not None \
            and _user_function(fn):
        return convert_function(fn)
    return fn


def _dynamic_rows(x):
    """Whether x is a traced tensor whose first dim is dynamic."""
    from .. import _C
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
    from .. import _C
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
    from .. import _C
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
    from ..static import nn

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
        res = nn.while_loop(cond2, body2, init, _carried_dims=dims)
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
    from ..static.nn import _paused

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


# ======================================================================== the source transformation
class _NotConverted(Exception):
    pass


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def _walk_scope(node):
    """The nodes of `node` in its own scope: not inside nested functions, lambdas or classes
    (their names are visited, not their bodies)."""
    todo = [node]
    while todo:
        n = todo.pop()
        yield n
        for c in ast.iter_child_nodes(n):
            if isinstance(c, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                yield c
                todo.extend(c.decorator_list)
                if not isinstance(c, ast.ClassDef):
                    todo.extend(d for d in c.args.defaults + c.args.kw_defaults if d is not None)
                continue
            if isinstance(c, ast.Lambda):
                yield c
                todo.extend(d for d in c.args.defaults + c.args.kw_defaults if d is not None)
                continue
            if isinstance(c, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
                yield c  # its loop variables are its own; only walrus targets leak (found below)
                for sub in ast.walk(c):
                    if isinstance(sub, ast.NamedExpr):
                        yield sub
                        yield sub.target
                continue
            todo.append(c)


def _assigned(stmts):
    """Names bound (or deleted) by the statements in their own scope, in first-seen order."""
    out = []

    def add(n):
        if n not in out:
            out.append(n)
    for s in stmts:
        for n in _walk_scope(s):
            if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
                add(n.id)
            elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                add(n.name)
            elif isinstance(n, (ast.Import, ast.ImportFrom)):
                for a in n.names:
                    if a.name != "*":
                        add(a.asname or a.name.split(".")[0])
            elif isinstance(n, ast.ExceptHandler) and n.name:
                add(n.name)
            elif isinstance(n, (ast.MatchAs, ast.MatchStar)) and n.name:
                add(n.name)
            elif isinstance(n, ast.MatchMapping) and n.rest:
                add(n.rest)
    return out


# Methods that mutate a Python container in place (none of them is a Tensor method).
_MUTATORS = frozenset({"append", "extend", "insert", "pop", "remove", "clear", "update", "setdefault",
                       "popitem", "appendleft", "extendleft", "discard"})


def _effects(stmts, local_names):
    """A description of writes to objects from outside (attributes, items of outer objects,
    list.append and other in-place container methods on them)."""
    for s in stmts:
        for n in _walk_scope(s):
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in _MUTATORS:
                base = n.func.value
                while isinstance(base, (ast.Subscript, ast.Attribute)):
                    base = base.value
                if not (isinstance(base, ast.Name) and base.id in local_names):
                    return ast.unparse(n.func) + "(...)"
            targets = []
            if isinstance(n, (ast.Assign,)):
                targets = n.targets
            elif isinstance(n, (ast.AugAssign, ast.AnnAssign)):
                targets = [n.target]
            elif isinstance(n, ast.Delete):
                targets = n.targets
            todo = list(targets)
            while todo:
                t = todo.pop()
                if isinstance(t, (ast.Tuple, ast.List)):
                    todo.extend(t.elts)
                elif isinstance(t, ast.Starred):
                    todo.append(t.value)
                elif isinstance(t, ast.Attribute):
                    return ast.unparse(t)
                elif isinstance(t, ast.Subscript):
                    base = t.value
                    while isinstance(base, (ast.Subscript, ast.Attribute)):
                        base = base.value
                    if not (isinstance(base, ast.Name) and base.id in local_names):
                        return ast.unparse(t)
    return None


def _blocker(stmts, in_while_body=False):
    """Why these statements cannot move into a nested function (None if they can).
    `depth` counts the loops inside the statements (a break there is fine)."""

    def check(n, depth):
        if isinstance(n, (ast.Global, ast.Nonlocal)):
            return f"a {type(n).__name__.lower()} declaration"
        if isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await)):
            return "yield/await"
        if isinstance(n, (ast.Break, ast.Continue)) and depth == 0:
            return f"{type(n).__name__.lower()} inside it" if in_while_body else \
                f"{type(n).__name__.lower()} of an enclosing loop"
        if isinstance(n, ast.Return) and in_while_body:
            return "a return inside the loop"
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and not n.args and \
                n.func.id in ("super", "locals", "vars"):
            return f"{n.func.id}() without arguments"
        for c in ast.iter_child_nodes(n):
            if isinstance(c, _SCOPES):
                continue
            inner = depth + 1 if isinstance(n, (ast.For, ast.AsyncFor, ast.While)) and c in n.body else depth
            r = check(c, inner)
            if r:
                return r
        return None

    for s in stmts:
        r = check(s, 0)
        if r:
            return r
    return None


def _has_return(stmts):
    return any(isinstance(n, ast.Return) for s in stmts for n in _walk_scope(s))


def _falls_through(stmts):
    if not stmts:
        return True
    last = stmts[-1]
    if isinstance(last, (ast.Return, ast.Raise)):
        return False
    if isinstance(last, ast.If):
        return _falls_through(last.body) or not last.orelse or _falls_through(last.orelse)
    return True


class _AugToAssign(ast.NodeTransformer):
    """`x op= v` -> `x = _oar_d2s.augassign(x, v, "op")` (this scope only)."""

    def visit_FunctionDef(self, node):
        return node

    visit_AsyncFunctionDef = visit_ClassDef = visit_Lambda = visit_FunctionDef

    def visit_AugAssign(self, node):
        self.generic_visit(node)
        if not isinstance(node.target, ast.Name) or type(node.op) not in _AUG:
            return node
        call = ast.Call(func=ast.Attribute(value=ast.Name(id=_HELPER, ctx=ast.Load()), attr="augassign",
                                           ctx=ast.Load()),
                        args=[ast.copy_location(ast.Name(id=node.target.id, ctx=ast.Load()), node.target), node.value,
                              ast.Constant(_AUG[type(node.op)])], keywords=[])
        new = ast.Assign(targets=[ast.copy_location(ast.Name(id=node.target.id, ctx=ast.Store()), node.target)],
                         value=call)
        return _stamp(ast.copy_location(new, node), node)


def _stamp(new, src):
    """Gives the generated nodes under `new` that have no position the first line of `src`
    (so a traceback through generated code names the statement it came from)."""
    for n in ast.walk(new):
        if "lineno" in n._attributes and not hasattr(n, "lineno") or getattr(n, "lineno", None) is None and \
                "lineno" in n._attributes:
            n.lineno, n.end_lineno = src.lineno, src.lineno
            n.col_offset, n.end_col_offset = src.col_offset, src.col_offset
    return new


def _at(new, src):
    """`new` (generated for the statement `src`) placed on the first line of `src`."""
    new.lineno, new.col_offset = src.lineno, src.col_offset
    new.end_lineno, new.end_col_offset = src.lineno, src.col_offset
    return _stamp(new, src)


def _augs(stmts):
    t = _AugToAssign()
    return [t.visit(s) for s in stmts]


# Calls left as they are: builtins whose arguments or frame matter (zero-argument super()
# reads the frame; the others are common and never user functions).
_PLAIN_CALLS = frozenset({"super", "locals", "vars", "globals", "isinstance", "len", "range", "print",
                          "getattr", "setattr", "hasattr", "type", "int", "float", "bool", "str", "list",
                          "tuple", "dict", "zip", "enumerate", "min", "max", "abs", "sum", "any", "all"})


class _ExprConverter(ast.NodeTransformer):
    """and/or/not and `a if c else b` -> runtime helpers (not inside nested scopes)."""

    def __init__(self, where):
        self.where = where
        self.changed = False

    def _helper(self, name):
        return ast.Attribute(value=ast.Name(id=_HELPER, ctx=ast.Load()), attr=name, ctx=ast.Load())

    @staticmethod
    def _thunk(e):
        return ast.Lambda(args=ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[],
                                             kwarg=None, defaults=[]), body=e)

    @staticmethod
    def _plain(e):
        """Can move into a lambda: no walrus, yield or zero-argument super()."""
        return not any(isinstance(n, (ast.NamedExpr, ast.Yield, ast.YieldFrom, ast.Await)) or (
            isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "super" and not n.args)
            for n in ast.walk(e))

    def visit_FunctionDef(self, node):
        return node

    visit_AsyncFunctionDef = visit_ClassDef = visit_Lambda = visit_FunctionDef

    def _comp(self, node):
        return node  # comprehension scopes stay as they are
    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _comp

    def visit_Call(self, node):
        self.generic_visit(node)
        f = node.func
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == _HELPER:
            return node  # a helper call made by the conversion
        if isinstance(f, ast.Name) and f.id == "print":
            self.changed = True  # print of traced tensors: printed when the program runs
            return ast.copy_location(ast.Call(func=self._helper("convert_print"), args=node.args,
                                              keywords=node.keywords), node)
        if isinstance(f, ast.Name) and f.id == "len" and len(node.args) == 1 and not node.keywords \
                and not isinstance(node.args[0], ast.Starred):
            self.changed = True  # len(x) of a dynamic first dim: a run-time size
            return ast.copy_location(ast.Call(func=self._helper("convert_len"), args=node.args, keywords=[]), node)
        if isinstance(f, ast.Name) and f.id in _PLAIN_CALLS:
            return node
        self.changed = True
        node.func = ast.copy_location(ast.Call(func=self._helper("convert_call"), args=[f], keywords=[]), f)
        return node

    def visit_BoolOp(self, node):
        self.generic_visit(node)
        if not all(self._plain(v) for v in node.values[1:]):
            return node
        fn = "convert_and" if isinstance(node.op, ast.And) else "convert_or"
        self.changed = True
        call = ast.Call(func=self._helper(fn), args=[node.values[0]] + [self._thunk(v) for v in node.values[1:]],
                        keywords=[])
        return ast.copy_location(call, node)

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if not isinstance(node.op, ast.Not):
            return node
        self.changed = True
        return ast.copy_location(ast.Call(func=self._helper("convert_not"), args=[node.operand], keywords=[]), node)

    def visit_Attribute(self, node):
        # x.shape -> shape_of(x): SymInts for the dynamic dims of a traced tensor
        # (_dynamic_shape.py); the value itself for anything else.
        self.generic_visit(node)
        if node.attr != "shape" or not isinstance(node.ctx, ast.Load):
            return node
        self.changed = True
        return ast.copy_location(ast.Call(func=self._helper("shape_of"), args=[node.value], keywords=[]), node)

    def visit_IfExp(self, node):
        self.generic_visit(node)
        if not (self._plain(node.body) and self._plain(node.orelse)):
            return node
        self.changed = True
        call = ast.Call(func=self._helper("convert_ifexp"),
                        args=[node.test, self._thunk(node.body), self._thunk(node.orelse),
                              ast.Constant(self.where(node))], keywords=[])
        return ast.copy_location(call, node)


def _pos(n):
    return (n.lineno, n.col_offset, n.end_lineno, n.end_col_offset)


class _LoopRewriter:
    """Before conversion (Note [Converting Python control flow], docs/notes/jit.md):

    for i in range(a, b, c): body    ->  _r = range_args(a, b, c); _k = _r[0]
                                          while range_cond(_k, _r): i = _k; _k = _k + _r[2]; body
    break / continue in a while      ->  flags: `while not _brk and test:`, `_cnt = flag(False)` at
                                          the top of the body, `break` -> `_brk = flag(True)`, and
                                          the statements after one guarded by `if not (_brk or _cnt):`

    so a range over a tensor, or a break under a tensor condition, becomes cf.while / cf.if,
    while Python values run the same iterations as before. Only break/continue reached
    through if statements are rewritten (one inside a with or try stays, and keeps its error)."""

    def __init__(self, local_names=()):
        self.counter = 0
        self.local_names = set(local_names)

    def fresh(self, kind):
        self.counter += 1
        return f"{_PREFIX}loop{self.counter}_{kind}"

    def appends(self, stmts):
        """`name.append(v)` statements of a loop body (a local list) become `name =
        list_append(name, v)`: the list is then a variable the loop assigns, which a
        converted loop carries as a TensorList (the same append in a Python loop)."""
        rewriter = self

        class _Appends(ast.NodeTransformer):
            def visit_FunctionDef(self, node):
                return node

            visit_AsyncFunctionDef = visit_ClassDef = visit_Lambda = visit_FunctionDef

            def visit_Expr(self, node):
                c = node.value
                if (isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and c.func.attr == "append"
                        and isinstance(c.func.value, ast.Name) and c.func.value.id in rewriter.local_names
                        and len(c.args) == 1 and not c.keywords and not isinstance(c.args[0], ast.Starred)):
                    name = c.func.value.id
                    load = ast.copy_location(ast.Name(id=name, ctx=ast.Load()), c.func.value)
                    store = ast.Name(id=name, ctx=ast.Store())  # written after the call has read it
                    store.lineno, store.col_offset = node.end_lineno, node.end_col_offset
                    store.end_lineno, store.end_col_offset = node.end_lineno, node.end_col_offset
                    call = rewriter._helper_call("list_append", [load, c.args[0]])
                    return _stamp(ast.copy_location(ast.Assign(targets=[store], value=call), node), node)
                return node
        t = _Appends()
        return [t.visit(st) for st in stmts]

    def block(self, stmts):
        out = []
        for s in stmts:
            out.extend(self.stmt(s))
        return out

    def stmt(self, s):
        if isinstance(s, _SCOPES):
            return [s]
        for field in ("body", "orelse", "finalbody"):
            if isinstance(getattr(s, field, None), list):
                setattr(s, field, self.block(getattr(s, field)))
        for h in getattr(s, "handlers", []) or []:
            h.body = self.block(h.body)
        for c in getattr(s, "cases", []) or []:
            c.body = self.block(c.body)
        if isinstance(s, ast.For):
            return self.for_range(s)
        if isinstance(s, ast.While):
            s.body = self.appends(s.body)
            return self.flags(s)
        return [s]

    @staticmethod
    def _helper_call(name, args):
        return ast.Call(func=ast.Attribute(value=ast.Name(id=_HELPER, ctx=ast.Load()), attr=name, ctx=ast.Load()),
                        args=args, keywords=[])

    def for_rows(self, s):
        """`for v in x` / `for i, v in enumerate(x)`: when x is at run time a traced tensor
        with a dynamic first dim (iter_rows), a range loop over its rows, which becomes a
        cf.while; the loop as written otherwise (the body appears once per case)."""
        it, target = s.iter, s.target
        enum = (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "enumerate"
                and len(it.args) == 1 and not it.keywords and not isinstance(it.args[0], ast.Starred))
        if enum:
            if not (isinstance(target, ast.Tuple) and len(target.elts) == 2
                    and isinstance(target.elts[0], ast.Name)):
                return None
            index, target, it = target.elts[0].id, target.elts[1], it.args[0]
        elif isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id in ("range", "zip"):
            return None
        else:
            index = self.fresh("row")
        if s.orelse or isinstance(s, ast.AsyncFor):
            return None
        seq = self.fresh("seq")
        load = lambda n: ast.Name(id=n, ctx=ast.Load())  # noqa: E731
        store = lambda n: ast.Name(id=n, ctx=ast.Store())  # noqa: E731
        size = ast.Subscript(value=self._helper_call("shape_of", [load(seq)]), slice=ast.Constant(0), ctx=ast.Load())
        rows = ast.For(target=store(index), iter=ast.Call(func=load("range"), args=[size], keywords=[]),
                       body=[ast.Assign(targets=[target],
                                        value=ast.Subscript(value=load(seq), slice=load(index), ctx=ast.Load()))]
                       + copy.deepcopy(s.body), orelse=[])
        plain = copy.deepcopy(s)
        plain.iter = (ast.Call(func=load("enumerate"), args=[load(seq)], keywords=[]) if enum else load(seq))
        branch = ast.If(test=self._helper_call("iter_rows", [load(seq)]),
                        body=self.for_range(_at(rows, s)), orelse=[plain])
        return [_at(ast.Assign(targets=[store(seq)], value=it), s), _at(branch, s)]

    def for_range(self, s):
        it = s.iter
        if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"):
            rows = self.for_rows(s)
            if rows is not None:
                return rows
        if s.orelse or not isinstance(s.target, ast.Name) or not (
                isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"
                and 1 <= len(it.args) <= 3 and not it.keywords
                and not any(isinstance(a, ast.Starred) for a in it.args)):
            return [s]
        r, k = self.fresh("range"), self.fresh("k")
        load = lambda n: ast.Name(id=n, ctx=ast.Load())  # noqa: E731
        store = lambda n: ast.Name(id=n, ctx=ast.Store())  # noqa: E731
        item = lambda n, i: ast.Subscript(value=load(n), slice=ast.Constant(i), ctx=ast.Load())  # noqa: E731
        head = [ast.Assign(targets=[store(r)], value=self._helper_call("range_args", list(it.args))),
                ast.Assign(targets=[store(k)], value=item(r, 0))]
        body = [ast.Assign(targets=[store(s.target.id)], value=load(k)),
                ast.Assign(targets=[store(k)], value=ast.BinOp(left=load(k), op=ast.Add(), right=item(r, 2)))]
        loop = ast.While(test=self._helper_call("range_cond", [load(k), load(r)]), body=body + self.appends(s.body),
                         orelse=[])
        out = [_at(x, s) for x in head + [loop]]
        return out[:2] + self.flags(out[2])

    # ---- break / continue
    @staticmethod
    def _jumps(stmts):
        """(breaks, continues, all reached through ifs only) of this loop's own jumps."""
        found, ok = set(), True

        def visit(n, via_if):
            nonlocal ok
            if isinstance(n, (ast.Break, ast.Continue)):
                found.add(type(n))
                ok = ok and via_if
                return
            if isinstance(n, _SCOPES) or isinstance(n, (ast.For, ast.AsyncFor, ast.While)):
                # a nested loop's own jumps are its business; its else clause is ours
                for c in getattr(n, "orelse", []) if not isinstance(n, _SCOPES) else []:
                    visit(c, False)
                return
            for c in ast.iter_child_nodes(n):
                visit(c, via_if and isinstance(n, (ast.If, ast.stmt)) and not isinstance(
                    n, (ast.With, ast.AsyncWith, ast.Try, ast.Match) + ((ast.TryStar,) if hasattr(ast, "TryStar")
                                                                          else ())))
        for st in stmts:
            visit(st, True)
        return ast.Break in found, ast.Continue in found, ok

    def flags(self, s):
        if s.orelse:
            return [s]
        has_break, has_continue, ok = self._jumps(s.body)
        if not (has_break or has_continue) or not ok:
            return [s]
        brk = self.fresh("break") if has_break else None
        cnt = self.fresh("continue") if has_continue else None
        load = lambda n: ast.Name(id=n, ctx=ast.Load())  # noqa: E731

        def set_flag(n, node):
            return _at(ast.Assign(targets=[ast.Name(id=n, ctx=ast.Store())],
                                  value=self._helper_call("flag", [ast.Constant(True)])), node)

        def stop_test():
            names = [n for n in (brk, cnt) if n]
            e = load(names[0]) if len(names) == 1 else ast.BoolOp(op=ast.Or(), values=[load(n) for n in names])
            return ast.UnaryOp(op=ast.Not(), operand=e)

        def contains(st):
            return any(isinstance(n, (ast.Break, ast.Continue)) for n in self._own_nodes(st))

        def guard(stmts):
            out = []
            for i, st in enumerate(stmts):
                if isinstance(st, ast.Break):
                    out.append(set_flag(brk, st))
                    return out
                if isinstance(st, ast.Continue):
                    out.append(set_flag(cnt, st))
                    return out
                if isinstance(st, ast.If) and contains(st):
                    st.body = guard(st.body) or [ast.Pass()]
                    st.orelse = guard(st.orelse)
                    out.append(st)
                    rest = stmts[i + 1:]
                    if rest:
                        out.append(_at(ast.If(test=stop_test(), body=guard(rest), orelse=[]), rest[0]))
                    return out
                out.append(st)
            return out

        body = guard(s.body)
        pre = []
        if cnt:
            body = [_at(ast.Assign(targets=[ast.Name(id=cnt, ctx=ast.Store())],
                                   value=self._helper_call("flag", [ast.Constant(False)])), s)] + body
        if brk:
            pre = [_at(ast.Assign(targets=[ast.Name(id=brk, ctx=ast.Store())],
                                  value=self._helper_call("flag", [ast.Constant(False)])), s)]
            s.test = ast.copy_location(ast.BoolOp(op=ast.And(), values=[
                ast.UnaryOp(op=ast.Not(), operand=load(brk)), s.test]), s.test)
        s.body = body
        return pre + [_stamp(s, s)]

    @staticmethod
    def _own_nodes(st):
        """The nodes of `st` outside nested loops and scopes."""
        todo = [st]
        while todo:
            n = todo.pop()
            yield n
            for c in ast.iter_child_nodes(n):
                if isinstance(c, _SCOPES) or isinstance(c, (ast.For, ast.AsyncFor, ast.While)):
                    continue
                todo.append(c)


class _Converter:
    def __init__(self, func_node, filename, lines, first):
        self.func = func_node
        self.filename = filename
        self.lines = lines
        self.counter = 0
        self.changed = False
        # every read of a name in the function (with nested scopes), to decide which
        # variables an if/while must hand back: (name, node id)
        self.loads = []
        self.reads_all = False
        for n in ast.walk(func_node):
            if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Load, ast.Del)):
                self.loads.append((n.id, _pos(n)))
            elif isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name):
                self.loads.append((n.target.id, _pos(n.target)))
            elif isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in (
                    "locals", "vars", "eval", "exec", "dir"):
                self.reads_all = True
        self.exprs = _ExprConverter(self.where)
        # names declared global/nonlocal: an assignment to one cannot move into a nested function
        self.declared = {name for st in func_node.body for n in _walk_scope(st)
                         if isinstance(n, (ast.Global, ast.Nonlocal)) for name in n.names}

    # ---- helpers
    def where(self, node):
        line = node.lineno
        text = self.lines[line - 1].strip() if 0 < line <= len(self.lines) else ""
        return f"{self.filename}:{line}: {text}"

    def fresh(self, kind):
        self.counter += 1
        return f"{_PREFIX}{kind}_{self.counter}"

    def helper(self, name):
        return ast.Attribute(value=ast.Name(id=_HELPER, ctx=ast.Load()), attr=name, ctx=ast.Load())

    def read_outside(self, nodes, include_inside=False):
        """Names read outside the subtrees `nodes` (or anywhere, with include_inside)."""
        if include_inside:
            return {n for n, _ in self.loads}
        # by source position: the statements after an early return are copied into both
        # branches, and a copy is the same source as its original
        inside = {_pos(x) for node in nodes for x in ast.walk(node) if isinstance(x, ast.Name)}
        return {n for n, i in self.loads if i not in inside}

    def expr(self, e):
        return self.exprs.visit(e)

    def _undef_dels(self, names, node):
        out = []
        for n in names:
            test = ast.Compare(left=ast.Name(id=n, ctx=ast.Load()), ops=[ast.Is()],
                               comparators=[self.helper("UNDEFINED")])
            out.append(ast.If(test=test, body=[ast.Delete(targets=[ast.Name(id=n, ctx=ast.Del())])], orelse=[]))
        return [ast.copy_location(s, node) for s in out]

    def _pick(self, names):
        return ast.Call(func=self.helper("pick"),
                        args=[ast.Call(func=ast.Name(id="locals", ctx=ast.Load()), args=[], keywords=[]),
                              ast.Tuple(elts=[ast.Constant(n) for n in names], ctx=ast.Load())], keywords=[])

    def _def(self, name, params, body, node):
        args = ast.arguments(posonlyargs=[], args=[ast.arg(arg=p) for p in params], vararg=None, kwonlyargs=[],
                             kw_defaults=[], kwarg=None, defaults=[])
        fn = ast.FunctionDef(name=name, args=args, body=body or [ast.Pass()], decorator_list=[], returns=None,
                             type_comment=None)
        return ast.copy_location(fn, node)

    @staticmethod
    def _tuple(names):
        return ast.Tuple(elts=[ast.Constant(n) for n in names], ctx=ast.Load())

    # ---- statements
    def stmts(self, stmts, terminal, in_loop):
        out = []
        for i, s in enumerate(stmts):
            if isinstance(s, ast.If):
                res, consumed = self.if_stmt(s, stmts[i + 1:], terminal, in_loop)
                out.extend(res)
                if consumed:
                    break
            elif isinstance(s, ast.While):
                out.extend(self.while_stmt(s, in_loop))
            else:
                out.append(self.other(s, in_loop))
        return out

    def other(self, s, in_loop):
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return s
        loop = isinstance(s, (ast.For, ast.AsyncFor))
        for field in ("body", "orelse", "finalbody"):
            if hasattr(s, field) and isinstance(getattr(s, field), list):
                setattr(s, field, self.stmts(getattr(s, field), False, in_loop or (loop and field == "body")))
        if isinstance(s, ast.Try) or (hasattr(ast, "TryStar") and isinstance(s, getattr(ast, "TryStar"))):
            for h in s.handlers:
                h.body = self.stmts(h.body, False, in_loop)
        if isinstance(s, ast.Match):
            for c in s.cases:
                c.body = self.stmts(c.body, False, in_loop)
        # expressions of this statement (not of its nested blocks, handled above)
        for field, value in ast.iter_fields(s):
            if isinstance(value, ast.expr):
                setattr(s, field, self.expr(value))
            elif isinstance(value, list) and value and all(isinstance(v, ast.expr) for v in value):
                setattr(s, field, [self.expr(v) for v in value])
        if isinstance(s, ast.With):
            for item in s.items:
                item.context_expr = self.expr(item.context_expr)
        return s

    def _unconverted_if(self, s, reason, in_loop):
        where = self.where(s)
        s.test = ast.copy_location(ast.Call(func=self.helper("python_bool"),
                                            args=[self.expr(s.test), ast.Constant(where), ast.Constant(reason)],
                                            keywords=[]), s.test)
        s.body = self.stmts(s.body, False, in_loop)
        s.orelse = self.stmts(s.orelse, False, in_loop)
        self.changed = True
        return s

    def if_stmt(self, s, rest, terminal, in_loop):
        body, orelse = s.body, s.orelse
        reason = _blocker(body + orelse) or self._declared_in(body + orelse)
        returns = _has_return(body + orelse)
        if reason is None and returns and not terminal:
            reason = "a return inside an if that is inside a loop, with or try block"
        if reason is not None:
            return [self._unconverted_if(s, reason, in_loop)], False
        self.changed = True
        where = self.where(s)
        consumed = False
        if returns:
            # Early return: what follows the if runs in the branches that fall through, so the
            # if ends the function and both branches return.
            if rest:
                if _falls_through(body):
                    body = body + [copy.deepcopy(r) for r in rest]
                if _falls_through(orelse):
                    orelse = orelse + [copy.deepcopy(r) for r in rest]
            consumed = True
        params = _assigned(body + orelse)
        if returns:
            outs = []
        else:
            live = self.read_outside([s], include_inside=in_loop or self.reads_all)
            outs = [n for n in params if n in live]
        effects = _effects(body + orelse, set(params))
        test = self.expr(s.test)
        t_name, f_name = self.fresh("true"), self.fresh("false")
        tail = [] if returns else [ast.Return(value=self._pick(outs))]
        body, orelse = _augs(body), _augs(orelse)
        t_def = self._def(t_name, params, self._undef_dels(params, s) + self.stmts(body, returns, in_loop) + tail, s)
        f_def = self._def(f_name, params, self._undef_dels(params, s) + self.stmts(orelse, returns, in_loop) + tail,
                          s)
        call = ast.Call(func=self.helper("convert_ifelse"),
                        args=[test, ast.Name(id=t_name, ctx=ast.Load()), ast.Name(id=f_name, ctx=ast.Load()),
                              self._pick(params), self._tuple(outs), ast.Constant(where)],
                        keywords=[ast.keyword(arg="returns", value=ast.Constant(returns)),
                                  ast.keyword(arg="effects", value=ast.Constant(effects))])
        out = [t_def, f_def]
        if returns:
            out.append(ast.Return(value=call))
        elif outs:
            target = ast.Tuple(elts=[ast.Name(id=n, ctx=ast.Store()) for n in outs], ctx=ast.Store())
            out.append(ast.Assign(targets=[target], value=call))
            out.extend(self._undef_dels(outs, s))
        else:
            out.append(ast.Expr(value=call))
        return [_at(x, s) for x in out], consumed

    def while_stmt(self, s, in_loop):
        reason = _blocker(s.body, in_while_body=True) or self._declared_in(s.body)
        if reason is None and s.orelse:
            reason = "an else clause on the loop"
        if reason is None and _blocker([ast.Expr(value=s.test)]):
            reason = _blocker([ast.Expr(value=s.test)])
        if reason is not None:
            where = self.where(s)
            s.test = ast.copy_location(ast.Call(func=self.helper("python_bool"),
                                                args=[self.expr(s.test), ast.Constant(where), ast.Constant(reason)],
                                                keywords=[]), s.test)
            s.body = self.stmts(s.body, False, True)
            s.orelse = self.stmts(s.orelse, False, in_loop)
            self.changed = True
            return [s]
        self.changed = True
        where = self.where(s)
        names = _assigned(s.body)
        live_out = self.read_outside([s], include_inside=self.reads_all)
        test_reads = {n.id for n in ast.walk(s.test) if isinstance(n, ast.Name)}
        carried = [n in test_reads or n in live_out or not self._body_local(n, s.body) for n in names]
        live = [n in live_out for n in names]
        effects = _effects(s.body, set(names))
        c_name, b_name = self.fresh("cond"), self.fresh("body")
        c_def = self._def(c_name, names, self._undef_dels(names, s) + [ast.Return(value=self.expr(s.test))], s)
        b_def = self._def(b_name, names, self._undef_dels(names, s) + self.stmts(_augs(s.body), False, True)
                          + [ast.Return(value=self._pick(names))], s)
        call = ast.Call(func=self.helper("convert_while_loop"),
                        args=[ast.Name(id=c_name, ctx=ast.Load()), ast.Name(id=b_name, ctx=ast.Load()),
                              self._pick(names), self._tuple(names),
                              ast.Tuple(elts=[ast.Constant(c) for c in carried], ctx=ast.Load()),
                              ast.Tuple(elts=[ast.Constant(c) for c in live], ctx=ast.Load()),
                              ast.Constant(where)],
                        keywords=[ast.keyword(arg="effects", value=ast.Constant(effects))])
        out = [c_def, b_def]
        if names:
            target = ast.Tuple(elts=[ast.Name(id=n, ctx=ast.Store()) for n in names], ctx=ast.Store())
            out.append(ast.Assign(targets=[target], value=call))
            out.extend(self._undef_dels(names, s))
        else:
            out.append(ast.Expr(value=call))
        return [_at(x, s) for x in out]

    def _declared_in(self, stmts):
        hit = [n for n in _assigned(stmts) if n in self.declared]
        return f"it assigns the global/nonlocal variable '{hit[0]}'" if hit else None

    @staticmethod
    def _body_local(name, body):
        """True when the body's first top-level statement mentioning `name` is a plain
        assignment to it that does not read it (a fresh value every iteration)."""
        for st in body:
            mentions = [n for n in ast.walk(st) if isinstance(n, ast.Name) and n.id == name]
            if not mentions:
                continue
            if isinstance(st, (ast.Assign, ast.AnnAssign)) and st.value is not None:
                targets = st.targets if isinstance(st, ast.Assign) else [st.target]
                stores = [n for t in targets for n in ast.walk(t) if isinstance(n, ast.Name) and n.id == name]
                reads = [n for n in ast.walk(st.value) if isinstance(n, ast.Name) and n.id == name]
                plain = all(isinstance(t, (ast.Name, ast.Tuple, ast.List)) for t in targets)
                return bool(stores) and not reads and plain and len(stores) == len(mentions)
            return False
        return False


# ---- compiling the converted function
_converted = weakref.WeakKeyDictionary()
_FUTURE_FLAGS = 0
for _f in ("annotations", "generator_stop", "division", "absolute_import", "with_statement", "print_function",
           "unicode_literals", "barry_as_FLUFL", "generators", "nested_scopes"):
    _feat = getattr(__import__("__future__"), _f, None)
    if _feat is not None:
        _FUTURE_FLAGS |= _feat.compiler_flag


def convert_function(fn):
    """The function with its Python control flow on tensors converted (see the module doc),
    or `fn` itself when its source is unavailable or it has nothing to convert. Bound
    methods convert their function and are bound again."""
    if isinstance(fn, types.MethodType):
        conv = convert_function(fn.__func__)
        return fn if conv is fn.__func__ else types.MethodType(conv, fn.__self__)
    if not isinstance(fn, types.FunctionType):
        return fn
    try:
        hit = _converted.get(fn)
    except TypeError:
        hit = None
    if hit is not None:
        return hit
    try:
        conv = _convert(fn)
        if verbosity > 0:
            _log(f"to_static: converted {fn.__qualname__} ({fn.__code__.co_filename}:{fn.__code__.co_firstlineno})",
                 verbosity_to_stdout)
    except _NotConverted:
        conv = fn
        if verbosity > 1:
            _log(f"to_static: {fn.__qualname__} has nothing to convert (or no source): traced as written",
                 verbosity_to_stdout)
    try:
        _converted[fn] = conv
    except TypeError:
        pass
    return conv


def _convert(fn):
    code = fn.__code__
    if code.co_name == "<lambda>" or hasattr(fn, "__wrapped__") or \
            code.co_flags & (inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR):
        raise _NotConverted
    try:
        lines, first = inspect.getsourcelines(fn)
    except (OSError, TypeError):
        raise _NotConverted from None
    try:
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except SyntaxError:
        raise _NotConverted from None
    if not tree.body or not isinstance(tree.body[0], ast.FunctionDef) or tree.body[0].name != code.co_name:
        raise _NotConverted
    func = tree.body[0]
    ast.increment_lineno(tree, first - 1)
    if any(isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await)) for n in _walk_scope_body(func)):
        raise _NotConverted
    filename = code.co_filename
    file_lines = linecache.getlines(filename) or lines
    loops = _LoopRewriter(code.co_varnames + code.co_cellvars)
    func.body = loops.block(func.body)
    conv = _Converter(func, filename, file_lines, first)
    func.body = conv.stmts(func.body, True, False)
    if not conv.changed and not conv.exprs.changed and not loops.counter:
        raise _NotConverted
    func.decorator_list = []

    # Compile `def fn` inside a factory whose parameters are the original's free variables
    # (and this module), so the new code reads the same closure cells; inside a class body
    # of the same name when fn is a method, so private names are mangled as they were.
    freevars = list(code.co_freevars)
    factory = ast.FunctionDef(
        name=_PREFIX + "factory",
        args=ast.arguments(posonlyargs=[], args=[ast.arg(arg=v) for v in freevars + [_HELPER]], vararg=None,
                           kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[]),
        body=[func, ast.Return(value=ast.Name(id=func.name, ctx=ast.Load()))], decorator_list=[], returns=None,
        type_comment=None)
    ast.copy_location(factory, func)
    outer = factory
    parts = fn.__qualname__.split(".")
    if len(parts) >= 2 and parts[-2] != "<locals>":
        outer = ast.copy_location(ast.ClassDef(name=parts[-2], bases=[], keywords=[], body=[factory],
                                               decorator_list=[]), func)
    module = ast.Module(body=[outer], type_ignores=[])
    ast.fix_missing_locations(module)
    if code_level > 0:
        _log(f"to_static: the converted code of {fn.__qualname__} ({filename}:{first}):\n{ast.unparse(func)}",
             code_to_stdout)
    try:
        mod_code = compile(module, filename, "exec", flags=code.co_flags & _FUTURE_FLAGS, dont_inherit=True)
    except SyntaxError:
        raise _NotConverted from None
    new_code = _find_code(mod_code, func.name, func.lineno)
    if new_code is None:
        raise _NotConverted
    cells = dict(zip(code.co_freevars, fn.__closure__ or ()))
    closure = []
    import sys
    me = sys.modules[__name__]
    for v in new_code.co_freevars:
        if v in cells:
            closure.append(cells[v])
        elif v == _HELPER:
            closure.append(types.CellType(me))
        else:
            raise _NotConverted
    new = types.FunctionType(new_code, fn.__globals__, fn.__name__, fn.__defaults__, tuple(closure) or None)
    new.__kwdefaults__ = copy.copy(fn.__kwdefaults__)
    new.__qualname__ = fn.__qualname__
    new.__module__ = fn.__module__
    new.__doc__ = fn.__doc__
    new.__dict__.update(fn.__dict__)
    new.__annotations__ = fn.__annotations__
    new.__oar_converted_from__ = fn
    new.__oar_source__ = ast.unparse(func)
    return new


def _walk_scope_body(func):
    for s in func.body:
        yield from _walk_scope(s)


def _find_code(code, name, lineno):
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            if c.co_name == name and c.co_firstlineno == lineno:
                return c
            r = _find_code(c, name, lineno)
            if r is not None:
                return r
    return None
