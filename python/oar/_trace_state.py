"""The to_static tracing state, owned below nn and jit: oar.jit registers its list of
active tracers, its call converter and its traced while loop here when it is imported;
nn, indexing and random read them, so they need not import jit or oar.static (both
import nn). Read the attributes through the module (`_trace_state.active`) at call time:
register() rebinds them."""

active = []             # the tracers of the conversions in progress, innermost last
convert_forward = None  # a Layer's forward -> the same with its Python control flow converted
while_loop = None       # oar.static.nn.while_loop: a cf.while when its condition is traced
traced_shape = None     # jit/_dynamic_shape.traced_shape: (shape tensor, hint) or None
shape_of = None         # jit/_dynamic_shape.shape_of: x's sizes, dynamic ones as SymInts


def register(tracers, convert, traced_while_loop, dynamic_shape=None):
    """Called once by oar.jit: its live list of active tracers, dy2static.convert_call,
    oar.static.nn.while_loop and its module of run-time sizes (jit/_dynamic_shape.py)."""
    global active, convert_forward, while_loop, traced_shape, shape_of
    active, convert_forward, while_loop = tracers, convert, traced_while_loop
    if dynamic_shape is not None:
        traced_shape, shape_of = dynamic_shape.traced_shape, dynamic_shape.shape_of


def random_shape(shape):
    """(shape tensor, hint) when a random op's `shape` holds sizes a traced program
    computes at run time (Note [Run-time random shapes] in docs/notes/static.md); None
    otherwise (outside tracing: always), where the op takes the sizes as ints."""
    if not active or traced_shape is None:
        return None
    return traced_shape(shape)


def sizes_of(x):
    """x's sizes for a random op drawn like x: while a program is traced, a SymInt for
    each dynamic size (read when the program runs); else x.shape."""
    if not active or shape_of is None:
        return list(x.shape)
    return list(shape_of(x))


def tracer():
    """The innermost active tracer (None outside to_static)."""
    return active[-1] if active else None
