"""oar.nn.utils: gradient clipping helpers and parameter <-> vector conversion (Paddle's
paddle.nn.utils)."""

import numpy as np

from .. import _C
from ..autograd import no_grad
from .clip import clip_grad_norm_  # noqa: F401


def _param_list(parameters, op):
    params = [parameters] if isinstance(parameters, _C.Tensor) else list(parameters)
    for p in params:
        if not isinstance(p, _C.Tensor):
            raise TypeError(f"{op}: parameters must be Tensors, got {type(p).__name__}")
    return params


def clip_grad_value_(parameters, clip_value):
    """Clamps every gradient element of `parameters` into [-clip_value, clip_value] in place."""
    clip_value = float(clip_value)
    if clip_value < 0:
        raise ValueError(f"clip_grad_value_: clip_value must be >= 0, got {clip_value}")
    with no_grad():
        for p in _param_list(parameters, "clip_grad_value_"):
            if p.grad is not None:
                p.grad.copy_(_C.ops.clip(p.grad, -clip_value, clip_value))


def parameters_to_vector(parameters, name=None):
    """All parameters flattened and concatenated into one 1-D Tensor."""
    params = _param_list(parameters, "parameters_to_vector")
    if not params:
        raise ValueError("parameters_to_vector: got no parameters")
    return _C.ops.concat([p.reshape([-1]) for p in params], 0)


def vector_to_parameters(vec, parameters, name=None):
    """Copies consecutive slices of the 1-D `vec` into `parameters` (in place)."""
    params = _param_list(parameters, "vector_to_parameters")
    if not isinstance(vec, _C.Tensor) or vec.ndim != 1:
        raise ValueError("vector_to_parameters: vec must be a 1-D Tensor")
    total = sum(int(np.prod(p.shape)) if p.shape else 1 for p in params)
    if vec.shape[0] != total:
        raise ValueError(
            f"vector_to_parameters: vec has {vec.shape[0]} elements, the parameters {total}"
        )
    with no_grad():
        offset = 0
        for p in params:
            n = int(np.prod(p.shape)) if p.shape else 1
            p.set_value(vec[offset : offset + n].reshape(list(p.shape)))
            offset += n
