"""paddle.base.executor: the Executor and as_numpy."""
import numpy as np


def as_numpy(tensor, copy=False):
    """A tensor's (or a scope tensor's, or a list of them) values as NumPy arrays."""
    if isinstance(tensor, (list, tuple)):
        return [as_numpy(t, copy) for t in tensor]
    from .. import _C

    if isinstance(tensor, _C.Tensor):
        from ..static import _program

        a = _program.numpy_of(tensor)
        return np.array(a) if copy else a
    if not hasattr(tensor, "__array__"):
        raise TypeError(f"as_numpy: expected a Tensor, got {type(tensor).__name__}")
    return np.array(tensor)


def __getattr__(name):
    if name in ("Executor", "global_scope", "scope_guard", "Scope"):
        from .. import static

        return getattr(static, name)
    raise AttributeError(f"module 'oar.base.executor' has no attribute '{name}'")
