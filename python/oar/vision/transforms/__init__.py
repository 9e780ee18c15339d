"""paddle.vision.transforms: image transforms on PIL images, NumPy HWC arrays and CHW Tensors."""
from . import functional  # noqa: F401
from .functional import (  # noqa: F401
    to_tensor, resize, pad, crop, center_crop, hflip, vflip, adjust_brightness, adjust_contrast,
    adjust_saturation, adjust_hue, affine, rotate, perspective, to_grayscale, normalize, erase,
)
from .transforms import (  # noqa: F401
    BaseTransform, Compose, ToTensor, Normalize, Resize, RandomResizedCrop, CenterCrop,
    RandomHorizontalFlip, RandomVerticalFlip, Transpose, BrightnessTransform, ContrastTransform,
    SaturationTransform, HueTransform, ColorJitter, RandomCrop, Pad, RandomAffine,
    RandomRotation, RandomPerspective, Grayscale, RandomErasing,
)
