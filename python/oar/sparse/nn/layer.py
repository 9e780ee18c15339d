"""paddle.sparse.nn's layers: activations, batch norm over the stored values, sparse
convolutions (weights [*kernel, C_in / groups, C_out], as Paddle's) and max pooling."""
import numpy as np

from oar.nn import Layer
from oar.nn import initializer as I
from oar.nn.layer_cnn import BatchNorm1D

from .._tensor import _fail
from ..unary import check_sparse
from . import functional as SF

__all__ = ["ReLU", "ReLU6", "LeakyReLU", "Softmax", "BatchNorm", "SyncBatchNorm", "Conv2D",
           "Conv3D", "SubmConv2D", "SubmConv3D", "MaxPool3D"]


class ReLU(Layer):
    """max(x, 0) on a sparse tensor's values."""

    def __init__(self, name=None):
        super().__init__()

    def forward(self, x):
        return SF.relu(x)


class ReLU6(Layer):
    """min(max(x, 0), 6) on a sparse tensor's values."""

    def __init__(self, name=None):
        super().__init__()

    def forward(self, x):
        return SF.relu6(x)


class LeakyReLU(Layer):
    """Leaky ReLU on a sparse tensor's values."""

    def __init__(self, negative_slope=0.01, name=None):
        super().__init__()
        self._negative_slope = negative_slope

    def forward(self, x):
        return SF.leaky_relu(x, self._negative_slope)


class Softmax(Layer):
    """Softmax over the stored elements of each row (sparse.nn.functional.softmax)."""

    def __init__(self, axis=-1, name=None):
        super().__init__()
        self._axis = axis

    def forward(self, x):
        return SF.softmax(x, self._axis)


class BatchNorm(BatchNorm1D):
    """Batch normalization of a sparse tensor's values [nnz, C] (channels last): the
    statistics are over the stored sites only."""

    def __init__(self, num_features, momentum=0.9, epsilon=1e-05, weight_attr=None,
                 bias_attr=None, data_format="NDHWC", use_global_stats=None, name=None):
        if data_format not in ("NDHWC", "NHWC"):
            _fail(type(self).__name__, f"data_format must be 'NDHWC' or 'NHWC', got {data_format!r}")
        super().__init__(num_features, momentum=momentum, epsilon=epsilon,
                         weight_attr=weight_attr, bias_attr=bias_attr, data_format="NCL",
                         use_global_stats=use_global_stats)
        self._sparse_format = data_format

    def forward(self, x):
        check_sparse(type(self).__name__, x)
        if not x.is_sparse_coo() or x.dense_dim() != 1:
            _fail(type(self).__name__, f"x must be a COO tensor with one dense dim (the "
                  f"channels), got shape {list(x.shape)}")
        return x._with_values(super().forward(x.values()))


class SyncBatchNorm(BatchNorm):
    """BatchNorm whose statistics would be synchronized across devices; on one process it is
    BatchNorm."""

    @classmethod
    def convert_sync_batchnorm(cls, layer):
        """layer with every sparse BatchNorm (itself or a sublayer) replaced by a
        SyncBatchNorm sharing its parameters and statistics."""
        out = layer
        if isinstance(layer, BatchNorm) and not isinstance(layer, SyncBatchNorm):
            out = cls(layer._num_features, layer._momentum, layer._epsilon,
                      data_format=layer._sparse_format)
            for name in ("weight", "bias", "_mean", "_variance"):
                if getattr(layer, name, None) is not None:
                    setattr(out, name, getattr(layer, name))
        for name, sub in list(layer.named_children()):
            setattr(out, name, cls.convert_sync_batchnorm(sub))
        return out


class _Conv(Layer):
    def __init__(self, nsp, subm, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 dilation=1, groups=1, padding_mode="zeros", key=None, weight_attr=None,
                 bias_attr=None, data_format=None):
        super().__init__()
        name = type(self).__name__
        for arg, v in (("in_channels", in_channels), ("out_channels", out_channels),
                       ("groups", groups)):
            if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
                _fail(name, f"{arg} must be a positive int, got {v!r}")
        if in_channels % groups or out_channels % groups:
            _fail(name, f"in_channels ({in_channels}) and out_channels ({out_channels}) must be "
                  f"divisible by groups ({groups})")
        if padding_mode != "zeros":
            _fail(name, f"padding_mode must be 'zeros', got {padding_mode!r}")
        self._kernel = SF.conv._tuple(name, "kernel_size", kernel_size, nsp, 1)
        self._nsp, self._subm = nsp, subm
        self._stride, self._padding, self._dilation, self._groups = stride, padding, dilation, groups
        self._data_format = data_format or SF.conv._LAYOUT[nsp]
        fan_in = int(np.prod(self._kernel)) * in_channels
        self.weight = self.create_parameter(
            self._kernel + [in_channels // groups, out_channels], attr=weight_attr,
            default_initializer=I.Normal(0.0, (2.0 / fan_in) ** 0.5))
        self.bias = None if bias_attr is False else self.create_parameter(
            [out_channels], attr=bias_attr, is_bias=True)

    def forward(self, x):
        fn = {(2, False): SF.conv2d, (3, False): SF.conv3d, (2, True): SF.subm_conv2d,
              (3, True): SF.subm_conv3d}[(self._nsp, self._subm)]
        return fn(x, self.weight, self.bias, self._stride, self._padding, self._dilation,
                  self._groups, self._data_format)


class Conv3D(_Conv):
    """Sparse 3-D convolution (sparse.nn.functional.conv3d) with its weight and bias."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, padding_mode="zeros", weight_attr=None, bias_attr=None,
                 data_format="NDHWC"):
        super().__init__(3, False, in_channels, out_channels, kernel_size, stride, padding,
                         dilation, groups, padding_mode, None, weight_attr, bias_attr, data_format)


class SubmConv3D(_Conv):
    """Submanifold 3-D convolution (outputs at the input's sites)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, padding_mode="zeros", key=None, weight_attr=None, bias_attr=None,
                 data_format="NDHWC", backend=None):
        super().__init__(3, True, in_channels, out_channels, kernel_size, stride, padding,
                         dilation, groups, padding_mode, key, weight_attr, bias_attr, data_format)


class Conv2D(_Conv):
    """Sparse 2-D convolution (sparse.nn.functional.conv2d) with its weight and bias."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, padding_mode="zeros", weight_attr=None, bias_attr=None,
                 data_format="NHWC"):
        super().__init__(2, False, in_channels, out_channels, kernel_size, stride, padding,
                         dilation, groups, padding_mode, None, weight_attr, bias_attr, data_format)


class SubmConv2D(_Conv):
    """Submanifold 2-D convolution (outputs at the input's sites)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, padding_mode="zeros", key=None, weight_attr=None, bias_attr=None,
                 data_format="NHWC", backend=None):
        super().__init__(2, True, in_channels, out_channels, kernel_size, stride, padding,
                         dilation, groups, padding_mode, key, weight_attr, bias_attr, data_format)


class MaxPool3D(Layer):
    """Sparse 3-D max pooling (sparse.nn.functional.max_pool3d)."""

    def __init__(self, kernel_size, stride=None, padding=0, return_mask=False, ceil_mode=False,
                 data_format="NDHWC", name=None):
        super().__init__()
        if return_mask:
            _fail("MaxPool3D", "return_mask is not supported for sparse pooling (Paddle's "
                  "neither)", NotImplementedError)
        self._args = (kernel_size, stride, padding, ceil_mode, data_format)

    def forward(self, x):
        k, s, p, c, f = self._args
        return SF.max_pool3d(x, k, stride=s, padding=p, ceil_mode=c, data_format=f)


