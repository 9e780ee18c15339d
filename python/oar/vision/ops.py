"""paddle.vision.ops: detection and vision layers. ConvNormActivation (the block the model zoo
builds on) is here; the detection ops live in _roi (RoI pooling), _boxes (box coding, priors,
NMS, FPN levels), _yolo (yolo_box, yolo_loss) and _deform (deformable convolution)."""
from .. import nn
from ._boxes import (box_coder, distribute_fpn_proposals, generate_proposals, matrix_nms, nms,
                     prior_box)
from ._deform import DeformConv2D, deform_conv2d
from ._roi import PSRoIPool, RoIAlign, RoIPool, psroi_pool, roi_align, roi_pool
from ._yolo import yolo_box, yolo_loss

__all__ = [
    "ConvNormActivation", "yolo_loss", "yolo_box", "prior_box", "box_coder", "deform_conv2d",
    "DeformConv2D", "distribute_fpn_proposals", "generate_proposals", "read_file", "roi_pool", "RoIPool",
    "psroi_pool", "PSRoIPool", "roi_align", "RoIAlign", "nms", "matrix_nms",
]


def read_file(filename, name=None):
    """The bytes of a file as a 1-D uint8 Tensor (Paddle's paddle.vision.ops.read_file)."""
    import numpy as np

    import oar

    if not isinstance(filename, (str, bytes)) and not hasattr(filename, "__fspath__"):
        raise TypeError(f"read_file: filename must be a path, got {type(filename).__name__}")
    with open(filename, "rb") as f:
        data = np.frombuffer(f.read(), np.uint8)
    return oar.to_tensor(data.copy())


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
