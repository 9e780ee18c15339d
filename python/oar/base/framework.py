"""The framework's mode switch: dynamic (eager) by default, static after
oar.enable_static() (Note [Static mode] in docs/notes/static.md).

nn reads the mode here; oar.static (which sits above nn and jit) turns it on and
registers itself in `_static`, so this module imports nothing of oar."""
import contextlib

_static_mode = False
_static = None  # oar.static._program, registered when it is imported


def in_dynamic_mode():
    """True unless oar.enable_static() switched to static-graph mode."""
    return not _static_mode


in_dygraph_mode = in_dynamic_mode


def in_static_mode():
    return _static_mode


def in_pir_mode():
    """Static mode builds PIR programs (Paddle 3's default), so this equals static mode."""
    return _static_mode


def in_dynamic_or_pir_mode():
    return True


def outside_program():
    """A context in which ops run eagerly without recording into the current program (a
    parameter's initial value, computed once and kept by the startup program instead)."""
    return _static._paused() if _static_mode else contextlib.nullcontext()


def register_parameter(p):
    """Declares a parameter made in static mode in the current main and startup programs;
    returns the parameter to use (an existing one of the same name: Paddle shares them)."""
    return _static._register_parameter(p) if _static_mode else p


def __getattr__(name):
    # paddle.framework.ParamAttr (resolved on use: nn imports this module)
    if name == "ParamAttr":
        from ..nn.layer import ParamAttr
        return ParamAttr
    raise AttributeError(f"module 'oar.base.framework' has no attribute '{name}'")
