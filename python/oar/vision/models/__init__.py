"""Model zoo with Paddle's constructors (no pretrained weights: pretrained=True raises)."""

from .lenet import LeNet  # noqa: F401
from .resnet import (  # noqa: F401
    ResNet,
    BasicBlock,
    BottleneckBlock,
    resnet18,
    resnet34,
    resnet50,
    resnet101,
    resnet152,
)
from .vgg import VGG, vgg11, vgg13, vgg16, vgg19  # noqa: F401
from .mobilenetv2 import MobileNetV2, mobilenet_v2  # noqa: F401
