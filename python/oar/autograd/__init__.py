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
    def __init__(self, mode):
        super().__init__(bool(mode))


def is_grad_enabled():
    return _C.is_grad_enabled()


def _seed_grads(roots, seeds):
    """Paddle's seeds: a missing (None) initial gradient is a tensor of ones shaped like its
    root, whatever its size (the core only infers ones for one-element roots). Lists whose
    length does not match pass through unchanged, so the core's check names the mismatch."""
    roots = [roots] if isinstance(roots, _C.Tensor) else list(roots)
    if seeds is None:
        seeds = [None] * len(roots)
    elif isinstance(seeds, _C.Tensor):
        seeds = [seeds]
    else:
        seeds = list(seeds)
    if len(seeds) == len(roots):
        seeds = [_C.ops.full_like(r, 1, r.dtype) if s is None and isinstance(r, _C.Tensor) else s
                 for r, s in zip(roots, seeds)]
    return roots, seeds


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=False, no_grad_vars=None):
    """Gradients of outputs w.r.t. inputs, without touching .grad (Paddle's oar.grad).
    A None entry of grad_outputs seeds ones, for outputs of any shape."""
    outputs, grad_outputs = _seed_grads(outputs, grad_outputs)
    return _C.grad(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused)


def backward(tensors, grad_tensors=None, retain_graph=False):
    """Accumulates into .grad of the leaves; a None entry of grad_tensors seeds ones (Paddle)."""
    tensors, grad_tensors = _seed_grads(tensors, grad_tensors)
    _C.backward(tensors, grad_tensors, retain_graph)


def _tensor_backward(self, grad_tensor=None, retain_graph=False):
    """Tensor.backward: with no grad_tensor, a tensor of any shape back-propagates ones (Paddle)."""
    backward([self], [grad_tensor], retain_graph)


_C.Tensor.backward = _tensor_backward


from .py_layer import LegacyPyLayer, PyLayer, PyLayerContext, once_differentiable  # noqa: E402,F401
