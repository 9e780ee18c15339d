"""The framework's mode switch: dynamic (eager) by default, static after
oar.enable_static() (Note [Static mode] in docs/notes/static.md).

This module is imported with oar and stays tiny: the static machinery (oar.static's
programs, executor, scope) loads on the first enable_static()."""
import contextlib

_static_mode = False


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


def enable_static():
    """Switches to static-graph mode: op calls record into the current main program."""
    global _static_mode
    if _static_mode:
        return
    from ..static import _program

    _static_mode = True
    _program._enter_static()


def disable_static(place=None):
    """Back to dynamic (eager) mode."""
    global _static_mode
    if not _static_mode:
        return
    from ..static import _program

    _static_mode = False
    _program._exit_static()


@contextlib.contextmanager
def outside_program():
    """Runs its body eagerly without recording into the current program (a parameter's
    initial value, computed once and recorded in the startup program instead)."""
    if not _static_mode:
        yield
        return
    from ..static import _program

    with _program._paused():
        yield


def register_parameter(p):
    """Declares a parameter made in static mode in the current main and startup programs;
    returns the parameter to use (an existing one of the same name: Paddle shares them)."""
    if not _static_mode:
        return p
    from ..static import _program

    return _program._register_parameter(p)
