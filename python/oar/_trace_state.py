"""The to_static tracing state, owned below nn and jit: oar.jit registers its list of
active tracers, its call converter and its traced while loop here when it is imported;
nn, indexing and random read them, so they need not import jit or oar.static (both
import nn). Read the attributes through the module (`_trace_state.active`) at call time:
register() rebinds them."""

active = []             # the tracers of the conversions in progress, innermost last
convert_forward = None  # a Layer's forward -> the same with its Python control flow converted
while_loop = None       # oar.static.nn.while_loop: a cf.while when its condition is traced


def register(tracers, convert, traced_while_loop):
    """Called once by oar.jit: its live list of active tracers, dy2static.convert_call and
    oar.static.nn.while_loop."""
    global active, convert_forward, while_loop
    active, convert_forward, while_loop = tracers, convert, traced_while_loop


def tracer():
    """The innermost active tracer (None outside to_static)."""
    return active[-1] if active else None
