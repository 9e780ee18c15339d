"""nn.utils.spectral_norm: a forward pre-hook that sets layer.<name> to <name>_orig / sigma
before each call, sigma estimated by power iteration on buffers <name>_u and <name>_v (updated
in place while the layer trains, as Paddle and the paper do)."""
import numbers

__all__ = ["spectral_norm"]


class _SpectralNormHook:
    def __init__(self, name, n_power_iterations, dim, eps):
        self.name, self.n_power_iterations, self.dim, self.eps = name, n_power_iterations, dim, eps

    def matrix(self, weight):
        if self.dim != 0:
            weight = weight.transpose([self.dim] + [d for d in range(weight.ndim) if d != self.dim])
        return weight.reshape([weight.shape[0], -1])

    def compute_weight(self, layer, do_power_iteration):
        import oar
        from . import functional as F
        weight = getattr(layer, self.name + "_orig")
        u, v = getattr(layer, self.name + "_u"), getattr(layer, self.name + "_v")
        mat = self.matrix(weight)
        if do_power_iteration:
            with oar.no_grad():
                m = mat.detach()
                for _ in range(self.n_power_iterations):
                    v.set_value(F.normalize(m.t().matmul(u), axis=0, epsilon=self.eps))
                    u.set_value(F.normalize(m.matmul(v), axis=0, epsilon=self.eps))
            u, v = u.clone(), v.clone()
        sigma = oar.dot(u, mat.matmul(v))
        return weight / sigma

    def __call__(self, layer, inputs):
        setattr(layer, self.name, self.compute_weight(layer, layer.training))


def spectral_norm(layer, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Spectral normalization of layer.<name>: the parameter moves to <name>_orig, buffers
    <name>_u [h] and <name>_v [w] (normalized N(0, 1) draws) hold the power iteration's
    vectors, and before each forward layer.<name> = <name>_orig / (u^T W v) with W the weight
    as a matrix with dimension `dim` first (default 1 for Linear and the transposed
    convolutions, whose output features are there, else 0). In training mode each forward
    first runs n_power_iterations rounds of v = normalize(W^T u), u = normalize(W v).
    Returns layer."""
    import oar
    from . import functional as F
    from .layer import Layer
    op = "spectral_norm"
    if not isinstance(layer, Layer):
        raise TypeError(f"{op}: layer must be an oar.nn.Layer, got {type(layer).__name__}")
    if not isinstance(name, str) or layer._parameters.get(name) is None:
        raise ValueError(f"{op}: layer {type(layer).__name__} has no parameter {name!r}")
    if isinstance(n_power_iterations, bool) or not isinstance(n_power_iterations, numbers.Integral) \
            or not 0 < n_power_iterations <= 10**4:
        raise ValueError(f"{op}: n_power_iterations must be an int in [1, 10000], got "
                         f"{n_power_iterations!r}")
    if isinstance(eps, bool) or not isinstance(eps, numbers.Real) or not eps >= 0:
        raise ValueError(f"{op}: eps must be a number >= 0, got {eps!r}")
    weight = layer._parameters[name]
    if dim is None:
        dim = 1 if isinstance(layer, (oar.nn.Linear, oar.nn.Conv1DTranspose,
                                      oar.nn.Conv2DTranspose, oar.nn.Conv3DTranspose)) else 0
    if isinstance(dim, bool) or not isinstance(dim, numbers.Integral) or \
            not -weight.ndim <= dim < max(weight.ndim, 1):
        raise ValueError(f"{op}: dim must be in [{-weight.ndim}, {weight.ndim - 1}] for "
                         f"{name} of shape {list(weight.shape)}, got {dim!r}")
    dim = int(dim) % max(weight.ndim, 1)
    for hook in layer._forward_pre_hooks.values():
        if isinstance(hook, _SpectralNormHook) and hook.name == name:
            raise RuntimeError(f"{op}: parameter {name!r} of {type(layer).__name__} already "
                               f"has a spectral_norm hook")
    fn = _SpectralNormHook(name, int(n_power_iterations), dim, float(eps))
    with oar.no_grad():
        h, w = fn.matrix(weight).shape
        # Paddle's order of draws: a parameter made for each vector, then N(0, 1) values
        vecs = []
        for n in (h, w):
            layer.create_parameter([n])
            vecs.append(F.normalize(oar.normal(0.0, 1.0, [n]).astype(weight.dtype), axis=0,
                                    epsilon=fn.eps))
    del layer._parameters[name]
    layer.add_parameter(name + "_orig", weight)
    setattr(layer, name, weight * 1.0)  # a (non-persistable) buffer until the first forward
    layer.register_buffer(name + "_u", vecs[0])
    layer.register_buffer(name + "_v", vecs[1])
    layer.register_forward_pre_hook(fn)
    return layer
