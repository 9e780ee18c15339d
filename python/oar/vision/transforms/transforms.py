"""paddle.vision.transforms' classes. Each transform applies to one input or to a tuple whose
items `keys` names ('image', 'coords', 'boxes', 'mask'; default ('image',)); unnamed trailing
items (labels) pass through. Random transforms draw from NumPy's global generator, which
oar.seed seeds, so seeded pipelines repeat (Paddle draws from Python's `random`)."""
import math
import numbers
from collections.abc import Sequence

import numpy as np

from . import functional as F


class BaseTransform:
    """__call__(inputs) computes self.params = self._get_params(inputs) once, then applies
    _apply_<key> to each input named by keys."""

    def __init__(self, keys=None):
        if keys is None:
            keys = ("image",)
        elif not isinstance(keys, Sequence) or isinstance(keys, str):
            raise ValueError(f"{type(self).__name__}: keys must be a sequence, got {keys!r}")
        for k in keys:
            if self._get_apply(k) is None:
                raise NotImplementedError(f"{type(self).__name__}: no _apply_{k} for key '{k}'")
        self.keys = keys
        self.params = None

    def _get_params(self, inputs):
        return None

    def __call__(self, inputs):
        if not isinstance(inputs, tuple):
            inputs = (inputs,)
        self.params = self._get_params(inputs)
        outputs = [self._get_apply(k)(x) for k, x in zip(self.keys, inputs)]
        outputs.extend(inputs[len(self.keys):])
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def _get_apply(self, key):
        return getattr(self, f"_apply_{key}", None)

    def _apply_image(self, image):
        raise NotImplementedError(f"{type(self).__name__}._apply_image")

    def _apply_boxes(self, boxes):
        raise NotImplementedError(f"{type(self).__name__}._apply_boxes")

    def _apply_mask(self, mask):
        raise NotImplementedError(f"{type(self).__name__}._apply_mask")


class Compose:
    """Applies the transforms in order."""

    def __init__(self, transforms):
        self.transforms = list(transforms)
        for t in self.transforms:
            if not callable(t):
                raise TypeError(f"Compose: {t!r} is not callable")

    def __call__(self, data):
        for t in self.transforms:
            data = t(data)
        return data

    def __repr__(self):
        return "Compose(\n" + "".join(f"    {t}\n" for t in self.transforms) + ")"


class ToTensor(BaseTransform):
    def __init__(self, data_format="CHW", keys=None):
        super().__init__(keys)
        if data_format not in ("CHW", "HWC"):
            raise ValueError(f"ToTensor: data_format must be 'CHW' or 'HWC', got '{data_format}'")
        self.data_format = data_format

    def _apply_image(self, img):
        return F.to_tensor(img, self.data_format)


class Normalize(BaseTransform):
    def __init__(self, mean=0.0, std=1.0, data_format="CHW", to_rgb=False, keys=None):
        super().__init__(keys)
        self.mean, self.std, self.data_format, self.to_rgb = mean, std, data_format, to_rgb

    def _apply_image(self, img):
        return F.normalize(img, self.mean, self.std, self.data_format, self.to_rgb)


class Resize(BaseTransform):
    def __init__(self, size, interpolation="bilinear", keys=None):
        super().__init__(keys)
        self.size, self.interpolation = size, interpolation

    def _apply_image(self, img):
        return F.resize(img, self.size, self.interpolation)


def _range(op, name, value, center=1.0, bound=None):
    """A number v -> [center - v, center + v] (clipped at 0); a pair is taken as given."""
    if isinstance(value, numbers.Real):
        if value < 0:
            raise ValueError(f"{op}: {name} must be non-negative, got {value}")
        lo, hi = center - value, center + value
        if bound is None:
            lo = max(lo, 0.0)
    elif isinstance(value, (list, tuple)) and len(value) == 2:
        lo, hi = float(value[0]), float(value[1])
    else:
        raise ValueError(f"{op}: {name} must be a number or a (min, max) pair, got {value!r}")
    if lo > hi or (bound is not None and not bound[0] <= lo <= hi <= bound[1]):
        raise ValueError(f"{op}: {name} range ({lo}, {hi}) is invalid"
                         + (f" (must lie in {list(bound)})" if bound else ""))
    return lo, hi


class RandomResizedCrop(BaseTransform):
    """A crop of random area (scale of the image's) and aspect ratio, resized to size."""

    def __init__(self, size, scale=(0.08, 1.0), ratio=(3.0 / 4, 4.0 / 3),
                 interpolation="bilinear", keys=None):
        super().__init__(keys)
        self.size = size if isinstance(size, (list, tuple)) else (size, size)
        F._size2(tuple(self.size), "RandomResizedCrop")
        if not (0 < scale[0] <= scale[1]) or not (0 < ratio[0] <= ratio[1]):
            raise ValueError(f"RandomResizedCrop: scale and ratio must be increasing positive "
                             f"pairs, got scale={scale!r} ratio={ratio!r}")
        self.scale, self.ratio, self.interpolation = scale, ratio, interpolation

    def _get_param(self, image, attempts=10):
        h, w = F._hw(image, F._kind(image, "RandomResizedCrop"))
        area = h * w
        log_ratio = np.log(self.ratio)
        for _ in range(attempts):
            target = np.random.uniform(*self.scale) * area
            ar = math.exp(np.random.uniform(*log_ratio))
            cw, ch = int(round(math.sqrt(target * ar))), int(round(math.sqrt(target / ar)))
            if 0 < cw <= w and 0 < ch <= h:
                return np.random.randint(0, h - ch + 1), np.random.randint(0, w - cw + 1), ch, cw
        in_ratio = w / h
        if in_ratio < min(self.ratio):
            cw, ch = w, int(round(w / min(self.ratio)))
        elif in_ratio > max(self.ratio):
            ch, cw = h, int(round(h * max(self.ratio)))
        else:
            cw, ch = w, h
        return (h - ch) // 2, (w - cw) // 2, ch, cw

    def _apply_image(self, img):
        i, j, h, w = self._get_param(img)
        return F.resize(F.crop(img, i, j, h, w), tuple(self.size), self.interpolation)


class CenterCrop(BaseTransform):
    def __init__(self, size, keys=None):
        super().__init__(keys)
        self.size = F._size2(size, "CenterCrop")

    def _apply_image(self, img):
        return F.center_crop(img, self.size)


class RandomHorizontalFlip(BaseTransform):
    def __init__(self, prob=0.5, keys=None):
        super().__init__(keys)
        if not 0.0 <= prob <= 1.0:
            raise ValueError(f"RandomHorizontalFlip: prob must be in [0, 1], got {prob}")
        self.prob = prob

    def _apply_image(self, img):
        F._kind(img, "RandomHorizontalFlip")
        return F.hflip(img) if np.random.random() < self.prob else img


class RandomVerticalFlip(BaseTransform):
    def __init__(self, prob=0.5, keys=None):
        super().__init__(keys)
        if not 0.0 <= prob <= 1.0:
            raise ValueError(f"RandomVerticalFlip: prob must be in [0, 1], got {prob}")
        self.prob = prob

    def _apply_image(self, img):
        F._kind(img, "RandomVerticalFlip")
        return F.vflip(img) if np.random.random() < self.prob else img


class Transpose(BaseTransform):
    """Permutes the axes of an HWC image (default to CHW); a PIL image becomes an array and an
    HW image gets a channel axis first."""

    def __init__(self, order=(2, 0, 1), keys=None):
        super().__init__(keys)
        self.order = tuple(order)

    def _apply_image(self, img):
        kind = F._kind(img, "Transpose")
        if kind == "tensor":
            return img.transpose(list(self.order))
        img = np.asarray(img)
        if img.ndim == 2:
            img = img[:, :, None]
        if sorted(self.order) != list(range(img.ndim)):
            raise ValueError(f"Transpose: order {self.order} is not a permutation of {img.ndim} "
                             "axes")
        return np.ascontiguousarray(img.transpose(self.order))


class _ColorTransform(BaseTransform):
    _fn = None

    def __init__(self, value, keys=None):
        super().__init__(keys)
        self.value = _range(type(self).__name__, "value", value)

    def _apply_image(self, img):
        if self.value == (1.0, 1.0) or self.value[0] == self.value[1] == 1.0:
            return img
        return type(self)._fn(img, float(np.random.uniform(*self.value)))


class BrightnessTransform(_ColorTransform):
    """adjust_brightness by a factor drawn from [1 - value, 1 + value]."""
    _fn = staticmethod(F.adjust_brightness)


class ContrastTransform(_ColorTransform):
    """adjust_contrast by a factor drawn from [1 - value, 1 + value]."""
    _fn = staticmethod(F.adjust_contrast)


class SaturationTransform(_ColorTransform):
    """adjust_saturation by a factor drawn from [1 - value, 1 + value]."""
    _fn = staticmethod(F.adjust_saturation)


class HueTransform(BaseTransform):
    """adjust_hue by a factor drawn from [-value, value] (value <= 0.5)."""

    def __init__(self, value, keys=None):
        super().__init__(keys)
        self.value = _range("HueTransform", "value", value, center=0.0, bound=(-0.5, 0.5))

    def _apply_image(self, img):
        if self.value == (0.0, 0.0):
            return img
        return F.adjust_hue(img, float(np.random.uniform(*self.value)))


class ColorJitter(BaseTransform):
    """Brightness, contrast, saturation and hue jitter, applied in a random order."""

    def __init__(self, brightness=0, contrast=0, saturation=0, hue=0, keys=None):
        super().__init__(keys)
        self.brightness, self.contrast = brightness, contrast
        self.saturation, self.hue = saturation, hue
        self._parts = [BrightnessTransform(brightness), ContrastTransform(contrast),
                       SaturationTransform(saturation), HueTransform(hue)]

    def _apply_image(self, img):
        for k in np.random.permutation(len(self._parts)):
            img = self._parts[k](img)
        return img


class RandomCrop(BaseTransform):
    """A random size crop, after optional padding (pad_if_needed pads small images)."""

    def __init__(self, size, padding=None, pad_if_needed=False, fill=0, padding_mode="constant",
                 keys=None):
        super().__init__(keys)
        self.size = F._size2(size, "RandomCrop")
        self.padding, self.pad_if_needed = padding, pad_if_needed
        self.fill, self.padding_mode = fill, padding_mode

    def _apply_image(self, img):
        kind = F._kind(img, "RandomCrop")
        if self.padding is not None:
            img = F.pad(img, self.padding, self.fill, self.padding_mode)
        th, tw = self.size
        h, w = F._hw(img, kind)
        if self.pad_if_needed and w < tw:
            img = F.pad(img, (tw - w, 0), self.fill, self.padding_mode)
        if self.pad_if_needed and h < th:
            img = F.pad(img, (0, th - h), self.fill, self.padding_mode)
        h, w = F._hw(img, kind)
        if th > h or tw > w:
            raise ValueError(f"RandomCrop: crop size {(th, tw)} exceeds the image size {(h, w)}")
        top = np.random.randint(0, h - th + 1)
        left = np.random.randint(0, w - tw + 1)
        return F.crop(img, top, left, th, tw)


class Pad(BaseTransform):
    def __init__(self, padding, fill=0, padding_mode="constant", keys=None):
        super().__init__(keys)
        F._padding4(padding, "Pad")
        self.padding, self.fill, self.padding_mode = padding, fill, padding_mode

    def _apply_image(self, img):
        return F.pad(img, self.padding, self.fill, self.padding_mode)


def _degrees(op, degrees):
    if isinstance(degrees, numbers.Real):
        if degrees < 0:
            raise ValueError(f"{op}: degrees must be non-negative as a single number, got "
                             f"{degrees}")
        return -float(degrees), float(degrees)
    if isinstance(degrees, (list, tuple)) and len(degrees) == 2 and degrees[0] <= degrees[1]:
        return float(degrees[0]), float(degrees[1])
    raise ValueError(f"{op}: degrees must be a number or an increasing (min, max), got "
                     f"{degrees!r}")


class RandomAffine(BaseTransform):
    """affine with an angle from degrees, a translation up to translate=(fx, fy) of the size,
    a scale from scale=(lo, hi) and shear from shear (x range, or x and y ranges)."""

    def __init__(self, degrees, translate=None, scale=None, shear=None, interpolation="nearest",
                 fill=0, center=None, keys=None):
        super().__init__(keys)
        op = "RandomAffine"
        self.degrees = _degrees(op, degrees)
        if translate is not None and (len(translate) != 2
                                      or not all(0.0 <= t <= 1.0 for t in translate)):
            raise ValueError(f"{op}: translate must be two fractions in [0, 1], got {translate!r}")
        if scale is not None and (len(scale) != 2 or not 0 < scale[0] <= scale[1]):
            raise ValueError(f"{op}: scale must be an increasing positive pair, got {scale!r}")
        if shear is not None:
            if isinstance(shear, numbers.Real):
                shear = _degrees(op, shear)
            elif len(shear) not in (2, 4):
                raise ValueError(f"{op}: shear must be a number, or 2 or 4 values, got {shear!r}")
        self.translate, self.scale, self.shear = translate, scale, shear
        self.interpolation, self.fill, self.center = interpolation, fill, center

    def _get_param(self, h, w):
        angle = np.random.uniform(*self.degrees)
        tx = ty = 0
        if self.translate is not None:
            mx, my = self.translate[0] * w, self.translate[1] * h
            tx, ty = int(np.random.uniform(-mx, mx)), int(np.random.uniform(-my, my))
        scale = 1.0 if self.scale is None else np.random.uniform(*self.scale)
        sx = sy = 0.0
        if self.shear is not None:
            sx = np.random.uniform(self.shear[0], self.shear[1])
            if len(self.shear) == 4:
                sy = np.random.uniform(self.shear[2], self.shear[3])
        return float(angle), (tx, ty), float(scale), (float(sx), float(sy))

    def _apply_image(self, img):
        h, w = F._hw(img, F._kind(img, "RandomAffine"))
        angle, translate, scale, shear = self._get_param(h, w)
        return F.affine(img, angle, translate, scale, shear, self.interpolation, self.fill,
                        self.center)


class RandomRotation(BaseTransform):
    """rotate by an angle drawn from degrees ((-d, d) for a number d)."""

    def __init__(self, degrees, interpolation="nearest", expand=False, center=None, fill=0,
                 keys=None):
        super().__init__(keys)
        self.degrees = _degrees("RandomRotation", degrees)
        self.interpolation, self.expand, self.center, self.fill = interpolation, expand, center, fill

    def _apply_image(self, img):
        angle = float(np.random.uniform(*self.degrees))
        return F.rotate(img, angle, self.interpolation, self.expand, self.center, self.fill)


class RandomPerspective(BaseTransform):
    """With probability prob, perspective-warps the corners inward by up to distortion_scale of
    half the size."""

    def __init__(self, prob=0.5, distortion_scale=0.5, interpolation="nearest", fill=0,
                 keys=None):
        super().__init__(keys)
        if not 0.0 <= prob <= 1.0 or not 0.0 <= distortion_scale <= 1.0:
            raise ValueError(f"RandomPerspective: prob and distortion_scale must be in [0, 1], "
                             f"got {prob}, {distortion_scale}")
        self.prob, self.distortion_scale = prob, distortion_scale
        self.interpolation, self.fill = interpolation, fill

    def get_params(self, width, height, distortion_scale):
        hw, hh = width // 2, height // 2
        dx, dy = int(distortion_scale * hw) + 1, int(distortion_scale * hh) + 1

        def r(n):
            return int(np.random.randint(0, n))
        start = [[0, 0], [width - 1, 0], [width - 1, height - 1], [0, height - 1]]
        end = [[r(dx), r(dy)], [width - 1 - r(dx), r(dy)],
               [width - 1 - r(dx), height - 1 - r(dy)], [r(dx), height - 1 - r(dy)]]
        return start, end

    def _apply_image(self, img):
        h, w = F._hw(img, F._kind(img, "RandomPerspective"))
        if np.random.random() >= self.prob:
            return img
        start, end = self.get_params(w, h, self.distortion_scale)
        return F.perspective(img, start, end, self.interpolation, self.fill)


class Grayscale(BaseTransform):
    def __init__(self, num_output_channels=1, keys=None):
        super().__init__(keys)
        if num_output_channels not in (1, 3):
            raise ValueError(f"Grayscale: num_output_channels must be 1 or 3, got "
                             f"{num_output_channels!r}")
        self.num_output_channels = num_output_channels

    def _apply_image(self, img):
        return F.to_grayscale(img, self.num_output_channels)


class RandomErasing(BaseTransform):
    """With probability prob, erases a random rectangle of area scale (of the image) and aspect
    ratio; value: a number, per-channel values, or 'random' (standard normal noise)."""

    def __init__(self, prob=0.5, scale=(0.02, 0.33), ratio=(0.3, 3.3), value=0, inplace=False,
                 keys=None):
        super().__init__(keys)
        op = "RandomErasing"
        if not 0.0 <= prob <= 1.0:
            raise ValueError(f"{op}: prob must be in [0, 1], got {prob}")
        if not (0 <= scale[0] <= scale[1] <= 1) or not 0 < ratio[0] <= ratio[1]:
            raise ValueError(f"{op}: scale must be an increasing pair in [0, 1] and ratio an "
                             f"increasing positive pair, got {scale!r}, {ratio!r}")
        if not (isinstance(value, (numbers.Number, list, tuple)) or value == "random"):
            raise ValueError(f"{op}: value must be a number, a sequence or 'random', got "
                             f"{value!r}")
        self.prob, self.scale, self.ratio, self.value, self.inplace = (
            prob, scale, ratio, value, inplace)

    def _apply_image(self, img):
        kind = F._kind(img, "RandomErasing")
        if np.random.random() >= self.prob:
            return img
        arr = F._to_hwc(img, kind)
        h, w = arr.shape[:2]
        c = arr.shape[2] if arr.ndim == 3 else 1
        log_ratio = np.log(self.ratio)
        for _ in range(10):
            area = h * w * np.random.uniform(*self.scale)
            ar = math.exp(np.random.uniform(*log_ratio))
            eh, ew = int(round(math.sqrt(area * ar))), int(round(math.sqrt(area / ar)))
            if 0 < eh < h and 0 < ew < w:
                break
        else:
            return img
        if self.value == "random":
            v = np.random.standard_normal((eh, ew, c)).astype(arr.dtype)
        else:
            v = np.broadcast_to(np.asarray(self.value, dtype=arr.dtype).reshape(-1), [c])
        v = v.reshape(eh, ew, c) if v.ndim == 3 else v
        if kind == "tensor":
            v = np.ascontiguousarray(np.broadcast_to(v, (eh, ew, c)).transpose(2, 0, 1))
        elif arr.ndim == 2:
            v = np.broadcast_to(v, (eh, ew, c))[..., 0]
        i, j = np.random.randint(0, h - eh + 1), np.random.randint(0, w - ew + 1)
        return F.erase(img, i, j, eh, ew, v, self.inplace)
