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


# ---- weight normalization (Paddle's nn.utils.weight_norm): weight = g * v / ||v||
def _norm_except_dim(p, dim):
    """||p|| over every dim but `dim` (shape [p.shape[dim]]), or over all of p (dim -1)."""
    if dim == -1:
        return p.square().sum().sqrt().reshape([1])
    axes = [a for a in range(p.ndim) if a != dim]
    return p.square().sum(axes).sqrt() if axes else p.abs()


def _weight_norm_weight(layer, name, dim):
    g, v = getattr(layer, name + "_g"), getattr(layer, name + "_v")
    shape = [1] * v.ndim
    if dim != -1:
        shape[dim] = v.shape[dim]
    return v * (g / _norm_except_dim(v, dim)).reshape(shape if dim != -1 else [1] * v.ndim)


class _WeightNormHook:
    def __init__(self, name, dim):
        self.name, self.dim = name, dim

    def __call__(self, layer, inputs):
        object.__setattr__(layer, self.name, _weight_norm_weight(layer, self.name, self.dim))


def weight_norm(layer, name="weight", dim=0):
    """Reparameterizes layer.<name> as <name>_g * <name>_v / ||<name>_v||, the norm taken over
    every dim but `dim` (over the whole tensor when dim is None or -1); <name> is recomputed
    before each forward. Returns layer."""
    op = "weight_norm"
    if any(isinstance(h, _WeightNormHook) and h.name == name
           for h in getattr(layer, "_forward_pre_hooks", {}).values()):
        raise RuntimeError(f"{op}: '{name}' of {type(layer).__name__} is already weight-normed")
    w = getattr(layer, "_parameters", {}).get(name)
    if w is None:
        raise ValueError(f"{op}: layer {type(layer).__name__} has no parameter '{name}'")
    if dim is None:
        dim = -1
    if isinstance(dim, bool) or not isinstance(dim, int) or not -1 <= dim < w.ndim:
        raise ValueError(f"{op}: dim must be None, -1 or in [0, {w.ndim}), got {dim!r}")
    with no_grad():
        g_value = _norm_except_dim(w, dim)
    del layer._parameters[name]
    v = layer.create_parameter(list(w.shape), dtype=w.dtype)
    g = layer.create_parameter(list(g_value.shape), dtype=w.dtype)
    with no_grad():
        v.set_value(w)
        g.set_value(g_value)
    layer.add_parameter(name + "_v", v)
    layer.add_parameter(name + "_g", g)
    hook = _WeightNormHook(name, dim)
    hook(layer, None)
    layer.register_forward_pre_hook(hook)
    return layer


def remove_weight_norm(layer, name="weight"):
    """Undoes weight_norm: <name> becomes a parameter again holding g * v / ||v||."""
    for key, h in list(layer._forward_pre_hooks.items()):
        if isinstance(h, _WeightNormHook) and h.name == name:
            with no_grad():
                w = _weight_norm_weight(layer, name, h.dim)
            del layer._forward_pre_hooks[key]
            del layer._parameters[name + "_g"]
            del layer._parameters[name + "_v"]
            layer.__dict__.pop(name, None)
            p = layer.create_parameter(list(w.shape), dtype=w.dtype)
            with no_grad():
                p.set_value(w)
            layer.add_parameter(name, p)
            return layer
    raise ValueError(f"remove_weight_norm: '{name}' of {type(layer).__name__} is not "
                     "weight-normed")


def spectral_norm(layer, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Spectral normalization of layer.<name> by a forward pre-hook (oar.nn._spectral_norm_hook,
    loaded on the first call); returns layer."""
    from ._spectral_norm_hook import spectral_norm as apply
    return apply(layer, name, n_power_iterations, eps, dim)
