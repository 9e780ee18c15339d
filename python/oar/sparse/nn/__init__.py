"""paddle.sparse.nn: layers on sparse tensors."""
from . import functional  # noqa: F401
from .layer import BatchNorm, Conv2D, Conv3D, LeakyReLU, MaxPool3D, ReLU, ReLU6, Softmax, \
    SubmConv2D, SubmConv3D, SyncBatchNorm

__all__ = ["ReLU", "ReLU6", "LeakyReLU", "Softmax", "BatchNorm", "SyncBatchNorm", "Conv2D",
           "Conv3D", "SubmConv2D", "SubmConv3D", "MaxPool3D"]
