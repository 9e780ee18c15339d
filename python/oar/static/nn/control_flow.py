"""paddle.static.nn.control_flow: Assert, and the control flow of oar.static.nn (cond,
while_loop, case-free forms) under the module path model code imports them from."""
from . import while_loop  # noqa: F401
from . import cond as cond  # noqa: F401,E402


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
