"""Autograd: no_grad, grad, backward."""
import functools

from .. import _C


class _GradMode:
    def __init__(self, enabled):
        self._enabled = enabled

    def __enter__(self):
        self._prev = _C.is_grad_enabled()
        _C.set_grad_enabled(self._enabled)
        return self

    def __exit__(self, *exc):
        _C.set_grad_enabled(self._prev)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with type(self)():
                return fn(*args, **kwargs)
        return wrapper


class no_grad(_GradMode):  # noqa: N801 (Paddle's name)
    """Context manager / decorator (`@no_grad()` or `@no_grad`) that disables gradient recording."""

    def __new__(cls, func=None):
        if callable(func):  # bare @no_grad: decorate right away
            return cls()(func)
        return super().__new__(cls)

    def __init__(self, func=None):
        super().__init__(False)


class enable_grad(_GradMode):  # noqa: N801
    def __init__(self):
        super().__init__(True)


class set_grad_enabled(_GradMode):  # noqa: N801
    """Sets gradient recording on or off now; as a context manager, the previous mode comes
    back on exit (paddle.set_grad_enabled / torch.set_grad_enabled)."""

    def __init__(self, mode):
        super().__init__(bool(mode))
        self._prev = _C.is_grad_enabled()
        _C.set_grad_enabled(self._enabled)

    def __enter__(self):
        return self

    def __call__(self, fn):
        mode = self._enabled
        _C.set_grad_enabled(self._prev)  # as a decorator: the mode applies inside fn only

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            prev = _C.is_grad_enabled()
            _C.set_grad_enabled(mode)
            try:
                return fn(*args, **kwargs)
            finally:
                _C.set_grad_enabled(prev)
        return wrapper


def is_grad_enabled():
    return _C.is_grad_enabled()


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=False, no_grad_vars=None):
    """Gradients of outputs w.r.t. inputs, without touching .grad (Paddle's oar.grad).
    A None entry of grad_outputs seeds ones shaped like its output (the core's rule)."""
    return _C.grad(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused)


def backward(tensors, grad_tensors=None, retain_graph=False):
    """Accumulates into .grad of the leaves; a None entry of grad_tensors seeds ones."""
    if isinstance(tensors, _C.Tensor):
        tensors = [tensors]
    if isinstance(grad_tensors, _C.Tensor):
        grad_tensors = [grad_tensors]
    _C.backward(list(tensors), grad_tensors, retain_graph)


from .py_layer import LegacyPyLayer, PyLayer, PyLayerContext, once_differentiable  # noqa: E402,F401
from .saved_tensors_hooks import saved_tensors_hooks  # noqa: E402,F401


# jacobian / hessian load on first use (oar._lazy)
from .. import _lazy  # noqa: E402
_lazy.install(globals(), "oar.autograd", {".functional": "jacobian hessian"},
              namespaces={"functional": "oar.autograd.functional"})
