"""SpectralNorm (a weight divided by its largest singular value, estimated by power
iteration) and SyncBatchNorm (BatchNorm whose batch statistics are summed over the ranks of
oar.distributed)."""
import numbers

from .layer import Layer, ParamAttr
from .layer_cnn import _BatchNormBase

__all__ = ["SpectralNorm", "SyncBatchNorm"]


def _matrix(weight, dim):
    """weight with dimension `dim` moved first, as a [h, w] matrix."""
    if dim:
        weight = weight.transpose([dim] + [d for d in range(weight.ndim) if d != dim])
    return weight.reshape([weight.shape[0], -1])


def power_iteration(mat, u, v, iters, eps):
    """`iters` rounds of v = normalize(mat^T u), u = normalize(mat v), without gradient."""
    import oar
    with oar.no_grad():
        mat = mat.detach()
        for _ in range(iters):
            v = mat.t().matmul(u)
            v = v / (oar.linalg.vector_norm(v) + eps)
            u = mat.matmul(v)
            u = u / (oar.linalg.vector_norm(u) + eps)
    return u, v


class SpectralNorm(Layer):
    """forward(weight) = weight / sigma, sigma = u^T W v with W the weight as a [h, w] matrix
    (dimension `dim` first) and u [h], v [w] after `power_iters` power iterations from the
    layer's weight_u / weight_v (drawn from N(0, 1); as Paddle, they are parameters with
    stop_gradient=True that forward does not update). The gradient treats u and v as
    constants: dW = (dOut - sum(dOut * W) / sigma * u v^T) / sigma. (Paddle 3.3.1's CPU
    kernel returns another weight gradient, which matches neither this formula nor finite
    differences; Oar returns this one.)"""

    def __init__(self, weight_shape, dim=0, power_iters=1, eps=1e-12, dtype="float32"):
        super().__init__()
        from . import initializer
        op = "SpectralNorm"
        shape = list(weight_shape)
        if len(shape) < 2 or any(isinstance(s, bool) or not isinstance(s, numbers.Integral) or
                                 s <= 0 for s in shape):
            raise ValueError(f"{op}: weight_shape must have >= 2 dimensions, all > 0, got {shape}")
        if isinstance(dim, bool) or not isinstance(dim, numbers.Integral) or \
                not 0 <= dim < len(shape):
            raise ValueError(f"{op}: dim must be in [0, {len(shape) - 1}], got {dim!r}")
        if isinstance(power_iters, bool) or not isinstance(power_iters, numbers.Integral) or \
                not 0 <= power_iters <= 10**4:
            raise ValueError(f"{op}: power_iters must be an int in [0, 10000], got {power_iters!r}")
        if isinstance(eps, bool) or not isinstance(eps, numbers.Real) or not eps >= 0:
            raise ValueError(f"{op}: eps must be a number >= 0, got {eps!r}")
        self._weight_shape, self._dim = shape, int(dim)
        self._power_iters, self._eps, self._dtype = int(power_iters), float(eps), dtype
        h = shape[self._dim]
        w = 1
        for s in shape:
            w *= s
        w //= h
        for name, n in (("weight_u", h), ("weight_v", w)):
            p = self.create_parameter([n], ParamAttr(), dtype,
                                      default_initializer=initializer.Normal(0.0, 1.0))
            p.stop_gradient = True
            setattr(self, name, p)

    def forward(self, x):
        from .._C import Tensor
        if not isinstance(x, Tensor) or not x.dtype.is_floating_point:
            raise TypeError(f"SpectralNorm: the weight must be a float Tensor, got "
                            f"{getattr(x, 'dtype', type(x).__name__)}")
        if list(x.shape) != self._weight_shape:
            raise ValueError(f"SpectralNorm: the weight must have shape {self._weight_shape} "
                             f"(weight_shape), got {list(x.shape)}")
        mat = _matrix(x, self._dim)
        u, v = power_iteration(mat, self.weight_u.detach(), self.weight_v.detach(),
                               self._power_iters, self._eps)
        sigma = u.matmul(mat.matmul(v))
        return x / sigma

    def extra_repr(self):
        return (f"weight_shape={self._weight_shape}, dim={self._dim}, "
                f"power_iters={self._power_iters}, eps={self._eps}")


class _AllReduceSum:
    """A sum over the ranks whose gradient is again the sum over the ranks of the output
    gradients (every rank's output depends on every rank's input)."""

    _fn = None

    @classmethod
    def apply(cls, x, group):
        if cls._fn is None:
            from ..autograd import PyLayer

            class AllReduceSum(PyLayer):
                @staticmethod
                def forward(ctx, t, group):
                    from .. import distributed as dist
                    ctx.group = group
                    out = t.clone()
                    dist.all_reduce(out, group=ctx.group)
                    return out

                @staticmethod
                def backward(ctx, g):
                    from .. import distributed as dist
                    g = g.clone()
                    dist.all_reduce(g, group=ctx.group)
                    return g
            cls._fn = AllReduceSum
        return cls._fn.apply(x, group)


class SyncBatchNorm(_BatchNormBase):
    """BatchNorm over [N, C, ...] whose training statistics (mean and variance over N and
    the spatial dimensions) are those of the whole global batch: each rank's sums are
    all-reduced over oar.distributed's default group, gradients included. In one process
    (or in eval mode) it is BatchNorm."""

    _formats = ("NC", "NCL", "NLC", "NCHW", "NHWC", "NCDHW", "NDHWC")

    def __init__(self, num_features, momentum=0.9, epsilon=1e-05, weight_attr=None,
                 bias_attr=None, data_format="NCHW", name=None):
        from ._errors import check_count, check_fits
        check_count(num_features, "SyncBatchNorm", "num_features")
        check_fits("SyncBatchNorm", f"num_features={num_features}", 4 * 8 * num_features)
        super().__init__(num_features, momentum, epsilon, weight_attr, bias_attr, data_format,
                         name=name)

    def forward(self, x):
        import oar
        from .. import distributed as dist
        world = dist.get_world_size() if dist.is_initialized() else 1
        if not self.training or world <= 1:
            return super().forward(x)
        if not isinstance(x, oar.Tensor) or not x.dtype.is_floating_point:
            raise TypeError(f"SyncBatchNorm: x must be a float Tensor, got "
                            f"{getattr(x, 'dtype', type(x).__name__)}")
        if x.ndim < 2:
            raise ValueError(f"SyncBatchNorm: x must have >= 2 dimensions, got {list(x.shape)}")
        last = self._data_format in ("NHWC", "NLC", "NDHWC") and x.ndim > 2
        c = x.shape[-1] if last else x.shape[1]
        if c != self._num_features:
            raise ValueError(f"SyncBatchNorm: x has {c} channels, num_features is "
                             f"{self._num_features}")
        axes = [a for a in range(x.ndim) if a != (x.ndim - 1 if last else 1)]
        count = float(x.size // max(c, 1))
        xf = x.astype("float32") if x.dtype.name in ("float16", "bfloat16") else x
        stats = oar.concat([xf.sum(axis=axes), (xf * xf).sum(axis=axes),
                            oar.full([1], count, xf.dtype)])
        stats = _AllReduceSum.apply(stats, None)
        n = stats[2 * c:]
        mean = stats[:c] / n
        var = stats[c:2 * c] / n - mean * mean
        shape = [1] * x.ndim
        shape[x.ndim - 1 if last else 1] = c
        y = (xf - mean.reshape(shape)) / (var.reshape(shape) + self._epsilon).sqrt()
        if self.weight is not None:
            y = y * self.weight.reshape(shape) + self.bias.reshape(shape)
        with oar.no_grad():  # running statistics, the batch variance biased (as BatchNorm)
            m = self._momentum
            self._mean.set_value(self._mean * m + mean.detach().astype(self._mean.dtype) * (1 - m))
            self._variance.set_value(self._variance * m +
                                     var.detach().astype(self._variance.dtype) * (1 - m))
        return y.astype(x.dtype)

    def extra_repr(self):
        return (f"num_features={self._num_features}, momentum={self._momentum}, "
                f"epsilon={self._epsilon}")

    @classmethod
    def convert_sync_batchnorm(cls, layer):
        """layer with every BatchNorm1D/2D/3D (itself or a sublayer) replaced by a
        SyncBatchNorm sharing its parameters and running statistics."""
        if not isinstance(layer, Layer):
            raise TypeError(f"SyncBatchNorm.convert_sync_batchnorm: layer must be an oar.nn.Layer, "
                            f"got {type(layer).__name__}")
        out = layer
        if isinstance(layer, _BatchNormBase) and not isinstance(layer, SyncBatchNorm):
            for attr in (layer._weight_attr, layer._bias_attr):
                if isinstance(attr, ParamAttr) and attr.name is not None:
                    attr.name = attr.name + "_sync"
            out = SyncBatchNorm(layer._num_features, layer._momentum, layer._epsilon,
                                layer._weight_attr, layer._bias_attr, layer._data_format)
            if layer._weight_attr is not False and layer._bias_attr is not False:
                out.weight, out.bias = layer.weight, layer.bias
            out._mean, out._variance = layer._mean, layer._variance
        for name, sub in layer.named_children():
            out._sub_layers[name] = cls.convert_sync_batchnorm(sub)
        return out
