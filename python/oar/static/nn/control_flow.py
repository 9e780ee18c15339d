"""paddle.static.nn.control_flow: Assert, While, and the control flow of oar.static.nn (cond,
while_loop, case-free forms) under the module path model code imports them from."""
import contextlib

from . import while_loop  # noqa: F401
from . import cond as cond  # noqa: F401,E402


class While:
    """Paddle's legacy static loop: the ops called in `with loop.block():` run while
    `cond` (a one-element bool tensor) holds; the block writes the next condition into
    cond (paddle.assign(..., output=cond)). Every tensor of the program the block writes
    in place (assign(output=), increment, copy_) is a loop variable: read in the next
    iteration and holding the last value after the loop (Note [Static While] in
    docs/notes/static.md). A Python name rebound in the block is not one. Static mode
    only, as in Paddle."""

    def __init__(self, cond, is_test=False, name=None):
        from ... import _C

        if not isinstance(cond, _C.Tensor) or cond.dtype != _bool() or cond.size != 1:
            what = f"a tensor of shape {list(cond.shape)} and dtype {cond.dtype}" \
                if isinstance(cond, _C.Tensor) else type(cond).__name__
            raise TypeError(f"While: cond must be a one-element bool tensor, got {what}")
        self.cond_var, self.is_test, self.name = cond, is_test, name

    @contextlib.contextmanager
    def block(self):
        from ... import _trace_state
        from ...base import framework

        tracer = _trace_state.tracer()
        if not framework.in_static_mode() or tracer is None:
            raise RuntimeError("While: a loop of a static program; call paddle.enable_static() first "
                               "(in dynamic mode use a Python while loop)")
        tracer.begin_open_loop()
        try:
            yield
        except BaseException:
            tracer.abandon_open_loop()
            raise
        tracer.end_open_loop(self.cond_var, self.name or "While")


def Assert(cond, data=None, summarize=20, name=None):  # noqa: N802 - Paddle's name
    """Raises ValueError (after printing `data`, at most `summarize` values of each) when
    `cond`, a one-element bool tensor, is False. Eagerly it checks at once; in a static
    program it checks each time Executor.run runs the program."""
    from ... import _C
    from .. import _program
    from ...base import framework

    if not isinstance(cond, _C.Tensor) or cond.size != 1 or cond.dtype != _bool():
        what = f"a tensor of shape {list(cond.shape)} and dtype {cond.dtype}" if isinstance(cond, _C.Tensor) \
            else type(cond).__name__
        raise TypeError(f"Assert: cond must be a one-element bool tensor, got {what}")
    data = list(data or [])
    for i, d in enumerate(data):
        if not isinstance(d, _C.Tensor):
            raise TypeError(f"Assert: data[{i}] must be a tensor, got {type(d).__name__}")
    if isinstance(summarize, bool) or not isinstance(summarize, int):
        raise TypeError(f"Assert: summarize must be an int (-1: every value), got {summarize!r}")
    if framework.in_static_mode() and _program._is_static_var(cond):
        _program.default_main_program()._base()._asserts.append((cond, data, summarize, name))
        return None
    check(bool(_program.numpy_of(cond).reshape(())), [_program.numpy_of(d) for d in data], data, summarize, name)
    return None


def check(ok, values, tensors, summarize, name):
    """Assert's check on computed values."""
    if ok:
        return
    import numpy as np

    for t, v in zip(tensors, values):
        flat = np.asarray(v).reshape(-1)
        shown = flat if summarize < 0 else flat[:summarize]
        print(f"Variable: {t.name}\n  - shape: {list(np.shape(v))}\n  - dtype: {np.asarray(v).dtype}\n"
              f"  - data: {shown}")
    raise ValueError(f"Assert{f' {name!r}' if name else ''} failed: the condition is False")


def _bool():
    import oar

    return oar.bool
