"""The to_static tracing state, owned below nn and jit: oar.jit registers its list of
active tracers, its call converter and its traced while loop here when it is imported;
nn, indexing and random read them, so they need not import jit or oar.static (both
import nn). Read the attributes through the module (`_trace_state.active`) at call time:
register() rebinds them."""
import functools

active = []             # the tracers of the conversions in progress, innermost last
convert_forward = None  # a Layer's forward -> the same with its Python control flow converted
while_loop = None       # oar.static.nn.while_loop: a cf.while when its condition is traced
traced_shape = None     # jit/_dynamic_shape.traced_shape: (shape tensor, hint) or None
shape_of = None         # jit/_dynamic_shape.shape_of: x's sizes, dynamic ones as SymInts


defer_side_effect = None  # jit/_train_step.defer_side_effect (Note [Training steps])
note_pylayer = None  # static/_program._note_pylayer: a PyLayer applied while a program records


def replayed_in_converted_steps(method):
    """For a method with Python side effects a program cannot hold (LRScheduler.step,
    LookAhead's slow-weight sync, ModelAverage's sums): called inside a to_static training
    step, the trace records it without running it and every call of the program replays
    it eagerly, before the update or after the run as the code orders it; elsewhere in a
    conversion the function runs eagerly (Note [Training steps] in docs/notes/jit.md)."""
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        if active and defer_side_effect is not None and defer_side_effect(
                f"{type(self).__name__}.{method.__name__}()", functools.partial(method, self), args, kwargs):
            return None
        return method(self, *args, **kwargs)

    wrapper._replayed = True
    return wrapper


def eager_in_conversions(method):
    """For a method whose Python side effects depend on the state mid-step (LookAhead and
    ModelAverage read which parameters hold a gradient): called while to_static converts
    code, the function runs eagerly instead, with one warning."""
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        if active and defer_side_effect is not None:
            defer_side_effect(f"{type(self).__name__}.{method.__name__}()", None, args, kwargs)
        return method(self, *args, **kwargs)

    return wrapper


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
