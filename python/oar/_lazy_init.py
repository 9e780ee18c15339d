"""paddle.LazyGuard: layers built inside the guard get parameters whose initialization is
deferred until param.initialize() (Paddle's lazy init for building huge models, then
initializing, or loading, one shard at a time).

Oar's deferred parameter holds uninitialized memory from oar.empty: the initializer's
computation (and its random draws) is what is deferred; pages the OS maps on first touch,
so a parameter never initialized nor written costs no resident memory on CPU."""

__all__ = ["LazyGuard"]

_depth = [0]


def lazy_init_enabled():
    return _depth[0] > 0


class LazyGuard:
    """Inside `with LazyGuard():` new parameters are not initialized; call
    param.initialize() on each (or load a state dict) before use."""

    def __enter__(self):
        _depth[0] += 1

    def __exit__(self, exc_type, exc_val, exc_tb):
        _depth[0] -= 1
        return False


def initialize(param):
    """Runs the parameter's deferred initializer once (Paddle's EagerParamBase.initialize)."""
    init = getattr(param, "_lazy_initializer", None)
    if init is None:
        raise RuntimeError(f"initialize: parameter {param.name!r} was not created under "
                           f"paddle.LazyGuard, or is already initialized")
    param.set_value(init._make(list(param.shape), param.dtype, param.place))
    param._lazy_initializer = None
