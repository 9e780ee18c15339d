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
The package, by stage: `analysis` (which names a statement binds, whether a block can move
into a nested function), `loops` (for/break/continue rewritten into while loops and flags
before conversion), `transform` (if/while/expressions into calls of the runtime helpers),
`convert` (the driver: source -> AST -> the compiled converted function) and `runtime` (the
helpers the converted code calls, as `_oar_d2s.<name>`).
"""
import os

# The switches live here, in the package, so that `oar.jit.dy2static.enabled = False` (and
# set_code_level / set_verbosity) reach every module that reads them.

# Switched off by OAR_DY2STATIC=0 or `oar.jit.dy2static.enabled = False`: to_static then
# only traces (a Python if on a traced tensor is the line-naming error).
enabled = os.environ.get("OAR_DY2STATIC", "1").lower() not in ("0", "false", "off", "no")

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


# After the switches: the modules below read them from this package at call time.
from .runtime import (  # noqa: E402,F401  (the names converted code and oar.nn's layers use)
    UNDEFINED, augassign, convert_and, convert_call, convert_ifelse, convert_ifexp, convert_len,
    convert_not, convert_or, convert_print, convert_while_loop, flag, iter_rows, list_append, pick,
    python_bool, range_args, range_cond, shape_of, _user_function,
)
from .convert import convert_function  # noqa: E402,F401
from . import program_translator  # noqa: E402,F401  (paddle.jit.dy2static.program_translator)
