"""paddle.vision.ops: detection and vision layers (ConvNormActivation, the block the model zoo
builds on)."""
from .. import nn

__all__ = ["ConvNormActivation"]


class ConvNormActivation(nn.Sequential):
    """Conv2D, then norm_layer (default BatchNorm2D), then activation_layer (default ReLU), as
    Paddle's paddle.vision.ops.ConvNormActivation. padding=None keeps the spatial size at
    stride 1 ((kernel_size - 1) // 2 * dilation); bias defaults to True only without a norm."""

    def __init__(self, in_channels, out_channels, kernel_size=3, stride=1, padding=None,
                 groups=1, norm_layer=nn.BatchNorm2D, activation_layer=nn.ReLU, dilation=1,
                 bias=None):
        if padding is None:
            padding = (kernel_size - 1) // 2 * dilation
        if bias is None:
            bias = norm_layer is None
        layers = [nn.Conv2D(in_channels, out_channels, kernel_size, stride, padding,
                            dilation=dilation, groups=groups, bias_attr=None if bias else False)]
        if norm_layer is not None:
            layers.append(norm_layer(out_channels))
        if activation_layer is not None:
            layers.append(activation_layer())
        super().__init__(*layers)
