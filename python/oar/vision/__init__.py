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


_BACKENDS = ("pil", "cv2", "tensor")
_image_backend = ["pil"]


def get_image_backend():
    """The backend dataset images load with: 'pil' (Paddle's default), 'cv2' or 'tensor'."""
    return _image_backend[0]


def set_image_backend(backend):
    if backend not in _BACKENDS:
        raise ValueError(f"set_image_backend: backend must be one of {list(_BACKENDS)}, got "
                         f"{backend!r}")
    _image_backend[0] = backend
