"""The conversion driver: a function's source -> AST -> loops rewritten (loops.py) ->
statements converted (transform.py) -> the new function, compiled with the original's file
name and line numbers, globals, closure cells and defaults, and cached per function."""
import ast
import copy
import inspect
import linecache
import sys
import textwrap
import types
import weakref

from . import runtime
from .analysis import _walk_scope_body
from .loops import _LoopRewriter
from .nodes import _HELPER, _PREFIX
from .transform import _Converter

# The package: its switches (code_level, verbosity) are read from there at call time.
_switches = sys.modules[__package__]


class _NotConverted(Exception):
    pass


def _log(text, to_stdout):
    print(text, file=sys.stderr)
    if to_stdout:
        print(text)


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
        if _switches.verbosity > 0:
            _log(f"to_static: converted {fn.__qualname__} ({fn.__code__.co_filename}:{fn.__code__.co_firstlineno})",
                 _switches.verbosity_to_stdout)
    except _NotConverted:
        conv = fn
        if _switches.verbosity > 1:
            _log(f"to_static: {fn.__qualname__} has nothing to convert (or no source): traced as written",
                 _switches.verbosity_to_stdout)
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
    # (and the runtime helpers), so the new code reads the same closure cells; inside a class body
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
    if _switches.code_level > 0:
        _log(f"to_static: the converted code of {fn.__qualname__} ({filename}:{first}):\n{ast.unparse(func)}",
             _switches.code_to_stdout)
    try:
        mod_code = compile(module, filename, "exec", flags=code.co_flags & _FUTURE_FLAGS, dont_inherit=True)
    except SyntaxError:
        raise _NotConverted from None
    new_code = _find_code(mod_code, func.name, func.lineno)
    if new_code is None:
        raise _NotConverted
    cells = dict(zip(code.co_freevars, fn.__closure__ or ()))
    closure = []
    for v in new_code.co_freevars:
        if v in cells:
            closure.append(cells[v])
        elif v == _HELPER:
            closure.append(types.CellType(runtime))
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



def _find_code(code, name, lineno):
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            if c.co_name == name and c.co_firstlineno == lineno:
                return c
            r = _find_code(c, name, lineno)
            if r is not None:
                return r
    return None
