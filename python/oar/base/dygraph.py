"""paddle.base.dygraph: the dygraph guard older examples wrap eager code in."""
import contextlib

from . import framework


@contextlib.contextmanager
def guard(place=None):
    """Runs its body in dynamic mode, then restores the mode it found."""
    was_static = framework.in_static_mode()
    if was_static:
        framework._static.disable_static()
    try:
        yield
    finally:
        if was_static:
            framework._static.enable_static()


def enabled():
    return framework.in_dynamic_mode()


def to_variable(value, name=None, zero_copy=None, dtype=None):
    from .._creation import to_tensor

    return to_tensor(value, dtype=dtype)


def __getattr__(name):
    # paddle.base.dygraph.base (the module of guard/enabled/no_grad) and no_grad itself
    if name == "base":
        import sys

        return sys.modules[__name__]
    if name == "no_grad":
        from ..autograd import no_grad

        return no_grad
    raise AttributeError(f"module 'oar.base.dygraph' has no attribute '{name}'")
