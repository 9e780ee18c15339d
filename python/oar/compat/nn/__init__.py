"""oar.compat.nn: layers with torch's constructor signatures (Paddle 3.3's paddle.compat.nn):
weights laid out [out_features, in_features], count_include_pad instead of exclusive, dim
instead of axis."""
import math

from ... import nn as _nn
from .._utils import torch_keywords
from . import functional  # noqa: F401
from .transformer import MultiheadAttention

__all__ = ["Unfold", "Linear", "Softmax", "AvgPool1D", "AvgPool2D", "AvgPool3D", "AvgPool1d",
           "AvgPool2d", "AvgPool3d", "MultiheadAttention"]


class _AvgPool(_nn.Layer):
    _n = 0

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True, divisor_override=None):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = kernel_size if stride is None else stride
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    def forward(self, input):
        F = _nn.functional
        if self._n == 1:
            return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding,
                                exclusive=not self.count_include_pad, ceil_mode=self.ceil_mode)
        pool = F.avg_pool2d if self._n == 2 else F.avg_pool3d
        return pool(input, self.kernel_size, self.stride, self.padding, ceil_mode=self.ceil_mode,
                    exclusive=not self.count_include_pad,
                    divisor_override=self.divisor_override)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool1D(_AvgPool):
    """Average pooling over [N, C, L] (torch.nn.AvgPool1d's arguments)."""
    _n = 1

    @torch_keywords("paddle.compat.nn.AvgPool1D", "paddle.nn.AvgPool1D", {"exclusive", "name"})
    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True):
        super().__init__(kernel_size, stride, padding, ceil_mode, count_include_pad)


class AvgPool2D(_AvgPool):
    """Average pooling over [N, C, H, W] (torch.nn.AvgPool2d's arguments)."""
    _n = 2

    @torch_keywords("paddle.compat.nn.AvgPool2D", "paddle.nn.AvgPool2D",
                    {"exclusive", "data_format", "name"})
    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True, divisor_override=None):
        super().__init__(kernel_size, stride, padding, ceil_mode, count_include_pad,
                         divisor_override)


class AvgPool3D(_AvgPool):
    """Average pooling over [N, C, D, H, W] (torch.nn.AvgPool3d's arguments)."""
    _n = 3

    @torch_keywords("paddle.compat.nn.AvgPool3D", "paddle.nn.AvgPool3D",
                    {"exclusive", "data_format", "name"})
    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True, divisor_override=None):
        super().__init__(kernel_size, stride, padding, ceil_mode, count_include_pad,
                         divisor_override)


AvgPool1d, AvgPool2d, AvgPool3d = AvgPool1D, AvgPool2D, AvgPool3D


class Unfold(_nn.Unfold):
    """im2col with torch's argument names (kernel_size, dilation, padding, stride)."""

    @torch_keywords("paddle.compat.nn.Unfold", "paddle.nn.Unfold",
                    {"kernel_sizes", "dilations", "paddings", "strides"})
    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__(kernel_size, dilation, padding, stride)

    def forward(self, input):
        return functional.unfold(input, self.kernel_sizes, self.dilations, self.paddings,
                                 self.strides)


class Linear(_nn.Layer):
    """y = x @ weight.T + bias with weight [out_features, in_features], initialized as torch:
    weight and bias uniform in +-1/sqrt(in_features)."""

    @torch_keywords("paddle.compat.nn.Linear", "paddle.nn.Linear",
                    {"weight_attr", "bias_attr", "name"})
    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        for name, v in (("in_features", in_features), ("out_features", out_features)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ValueError(f"compat.nn.Linear: {name} must be a non-negative int, got {v!r}")
        if dtype is not None:
            self._dtype = dtype
        self.in_features, self.out_features = in_features, out_features
        # Created with the default initializers and then re-drawn, as Paddle does: seeded
        # programs draw the same numbers in the same order.
        self.weight = self.create_parameter([out_features, in_features], dtype=self._dtype)
        self.bias = (self.create_parameter([out_features], dtype=self._dtype, is_bias=True)
                     if bias else None)
        self.reset_parameters()

    def reset_parameters(self):
        """kaiming_uniform_(a=sqrt(5)) for the weight, U(+-1/sqrt(fan_in)) for the bias."""
        from ...nn import initializer as I
        I.KaimingUniform(negative_slope=math.sqrt(5))(self.weight)
        if self.bias is not None:
            fan_in = self.weight.shape[1]
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0.0
            I.Uniform(-bound, bound)(self.bias)

    def forward(self, input):
        return functional.linear(input, self.weight, self.bias)

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class Softmax(_nn.Layer):
    """softmax along dim (torch's implicit dim when None)."""

    @torch_keywords("paddle.compat.nn.Softmax", "paddle.nn.Softmax", {"axis"})
    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return functional.softmax(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"
