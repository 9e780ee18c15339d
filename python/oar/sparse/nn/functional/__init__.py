"""paddle.sparse.nn.functional: activations, softmax and attention on sparse tensors, and
sparse convolution / pooling (conv.py)."""
from .activation import attention, leaky_relu, relu, relu6, softmax
from .conv import conv2d, conv3d, max_pool3d, subm_conv2d, subm_conv2d_igemm, subm_conv3d, \
    subm_conv3d_igemm

__all__ = ["conv2d", "conv3d", "subm_conv2d", "subm_conv2d_igemm", "subm_conv3d",
           "subm_conv3d_igemm", "max_pool3d", "relu", "relu6", "leaky_relu", "softmax",
           "attention"]
