"""oar.vision: transforms, datasets and model zoo (Paddle's paddle.vision)."""

from . import transforms, datasets, models  # noqa: F401
from .models import (  # noqa: F401
    LeNet,
    ResNet,
    resnet18,
    resnet34,
    resnet50,
    VGG,
    vgg11,
    vgg13,
    vgg16,
    vgg19,
    MobileNetV2,
    mobilenet_v2,
)


def get_image_backend():
    return "cv2"


def set_image_backend(backend):
    if backend != "cv2":
        raise ValueError(
            f"set_image_backend: only 'cv2' (NumPy arrays) is available, got '{backend}'"
        )
