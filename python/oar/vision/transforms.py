"""Image transforms on NumPy HWC arrays (Paddle's paddle.vision.transforms with the cv2
backend); ToTensor makes the CHW float Tensor. Random transforms draw from NumPy's global
generator, which oar.seed seeds."""

import numbers

import numpy as np

from .. import _C


def _check_img(img, op):
    if isinstance(img, _C.Tensor):
        img = img.numpy()
    if not isinstance(img, np.ndarray):
        raise TypeError(f"{op}: expected a NumPy HWC image, got {type(img).__name__}")
    if img.ndim not in (2, 3):
        raise ValueError(f"{op}: expected an HW or HWC image, got shape {list(img.shape)}")
    return img


def _size2(size, op):
    if isinstance(size, numbers.Integral):
        return int(size), int(size)
    if isinstance(size, (list, tuple)) and len(size) == 2:
        return int(size[0]), int(size[1])
    raise ValueError(f"{op}: size must be an int or (h, w), got {size!r}")


class BaseTransform:
    """A transform: __call__(img) -> _apply_image(img)."""

    def __init__(self, keys=None):
        self.keys = keys

    def __call__(self, inputs):
        if isinstance(inputs, tuple):  # (image, label, ...): transform the image only
            return (self._apply_image(inputs[0]),) + tuple(inputs[1:])
        return self._apply_image(inputs)

    def _apply_image(self, img):
        raise NotImplementedError(f"{type(self).__name__}._apply_image")


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


def to_tensor(pic, data_format="CHW"):
    """HWC (or HW) array -> float32 Tensor in CHW (or HWC); uint8 images are scaled by 1/255."""
    img = _check_img(pic, "to_tensor")
    if data_format not in ("CHW", "HWC"):
        raise ValueError(f"to_tensor: data_format must be 'CHW' or 'HWC', got '{data_format}'")
    if img.ndim == 2:
        img = img[:, :, None]
    if data_format == "CHW":
        img = img.transpose(2, 0, 1)
    out = img.astype(np.float32)
    if img.dtype == np.uint8:
        out = out / 255.0
    return _C.to_tensor(np.ascontiguousarray(out), None, None, True)


class ToTensor(BaseTransform):
    def __init__(self, data_format="CHW", keys=None):
        super().__init__(keys)
        if data_format not in ("CHW", "HWC"):
            raise ValueError(f"ToTensor: data_format must be 'CHW' or 'HWC', got '{data_format}'")
        self.data_format = data_format

    def _apply_image(self, img):
        return to_tensor(img, self.data_format)


def normalize(img, mean, std, data_format="CHW", to_rgb=False):
    """(img - mean) / std per channel, on a Tensor or an array."""
    is_tensor = isinstance(img, _C.Tensor)
    arr = img.numpy() if is_tensor else np.asarray(img)
    arr = arr.astype(np.float32)
    c_axis = 0 if data_format == "CHW" else -1
    if to_rgb:
        arr = np.flip(arr, axis=c_axis)
    channels = arr.shape[c_axis] if arr.ndim == 3 else 1
    mean = (
        np.broadcast_to(np.asarray(mean, np.float32).reshape(-1), [channels])
        if np.size(mean) in (1, channels)
        else None
    )
    std = (
        np.broadcast_to(np.asarray(std, np.float32).reshape(-1), [channels])
        if np.size(std) in (1, channels)
        else None
    )
    if mean is None or std is None:
        raise ValueError(f"normalize: mean/std must have 1 or {channels} values")
    if (std == 0).any():
        raise ValueError("normalize: std must not contain zeros")
    shape = [-1, 1, 1] if data_format == "CHW" else [1, 1, -1]
    if arr.ndim == 2:
        shape = [1, 1]
    out = (arr - mean.reshape(shape)) / std.reshape(shape)
    return _C.to_tensor(np.ascontiguousarray(out), None, None, True) if is_tensor else out


class Normalize(BaseTransform):
    def __init__(self, mean=0.0, std=1.0, data_format="CHW", to_rgb=False, keys=None):
        super().__init__(keys)
        self.mean, self.std, self.data_format, self.to_rgb = mean, std, data_format, to_rgb

    def _apply_image(self, img):
        return normalize(img, self.mean, self.std, self.data_format, self.to_rgb)


def _resize_axis(img, out_len, axis, interpolation):
    in_len = img.shape[axis]
    if out_len == in_len:
        return img
    scale = in_len / out_len
    if interpolation == "nearest":
        idx = np.minimum(np.floor(np.arange(out_len) * scale).astype(np.int64), in_len - 1)
        return np.take(img, idx, axis=axis)
    src = (np.arange(out_len) + 0.5) * scale - 0.5  # half-pixel centres (cv2)
    src = np.clip(src, 0, in_len - 1)
    lo = np.floor(src).astype(np.int64)
    hi = np.minimum(lo + 1, in_len - 1)
    w = (src - lo).astype(np.float64)
    shape = [1] * img.ndim
    shape[axis] = out_len
    w = w.reshape(shape)
    a = np.take(img, lo, axis=axis).astype(np.float64)
    b = np.take(img, hi, axis=axis).astype(np.float64)
    return a * (1 - w) + b * w


def resize(img, size, interpolation="bilinear"):
    """Resizes an HW(C) image to size (h, w), or its shorter side to size keeping the aspect."""
    img = _check_img(img, "resize")
    if interpolation not in ("bilinear", "nearest"):
        raise ValueError(
            f"resize: interpolation must be 'bilinear' or 'nearest', got '{interpolation}'"
        )
    h, w = img.shape[:2]
    if isinstance(size, numbers.Integral):
        if size <= 0:
            raise ValueError(f"resize: size must be positive, got {size}")
        if (w <= h and w == size) or (h <= w and h == size):
            return img
        if w < h:
            oh, ow = int(size * h / w), int(size)
        else:
            oh, ow = int(size), int(size * w / h)
    else:
        oh, ow = _size2(size, "resize")
        if oh <= 0 or ow <= 0:
            raise ValueError(f"resize: size must be positive, got {size}")
    dtype = img.dtype
    out = _resize_axis(_resize_axis(img, oh, 0, interpolation), ow, 1, interpolation)
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        out = np.clip(np.rint(out), info.min, info.max)
    return out.astype(dtype)


class Resize(BaseTransform):
    def __init__(self, size, interpolation="bilinear", keys=None):
        super().__init__(keys)
        self.size, self.interpolation = size, interpolation

    def _apply_image(self, img):
        return resize(img, self.size, self.interpolation)


def crop(img, top, left, height, width):
    img = _check_img(img, "crop")
    return img[top : top + height, left : left + width]


def center_crop(img, output_size):
    img = _check_img(img, "center_crop")
    th, tw = _size2(output_size, "center_crop")
    h, w = img.shape[:2]
    if th > h or tw > w:
        raise ValueError(f"center_crop: crop size {(th, tw)} exceeds the image size {(h, w)}")
    top, left = int(round((h - th) / 2.0)), int(round((w - tw) / 2.0))
    return crop(img, top, left, th, tw)


class CenterCrop(BaseTransform):
    def __init__(self, size, keys=None):
        super().__init__(keys)
        self.size = _size2(size, "CenterCrop")

    def _apply_image(self, img):
        return center_crop(img, self.size)


def pad(img, padding, fill=0, padding_mode="constant"):
    """padding: int (all sides), (left/right, top/bottom) or (left, top, right, bottom)."""
    img = _check_img(img, "pad")
    if isinstance(padding, numbers.Integral):
        left = top = right = bottom = int(padding)
    elif len(padding) == 2:
        left = right = int(padding[0])
        top = bottom = int(padding[1])
    elif len(padding) == 4:
        left, top, right, bottom = (int(p) for p in padding)
    else:
        raise ValueError(
            f"pad: padding must be an int or a 2- or 4-element sequence, got {padding!r}"
        )
    if min(left, top, right, bottom) < 0:
        raise ValueError(f"pad: padding must be non-negative, got {padding!r}")
    modes = {"constant": "constant", "edge": "edge", "reflect": "reflect", "symmetric": "symmetric"}
    if padding_mode not in modes:
        raise ValueError(f"pad: padding_mode must be one of {sorted(modes)}, got '{padding_mode}'")
    widths = [(top, bottom), (left, right)] + ([(0, 0)] if img.ndim == 3 else [])
    if padding_mode == "constant":
        if img.ndim == 3 and isinstance(fill, (list, tuple)):
            chans = [
                np.pad(img[:, :, c], widths[:2], mode="constant", constant_values=fill[c])
                for c in range(img.shape[2])
            ]
            return np.stack(chans, axis=2)
        return np.pad(img, widths, mode="constant", constant_values=fill)
    return np.pad(img, widths, mode=modes[padding_mode])


class Pad(BaseTransform):
    def __init__(self, padding, fill=0, padding_mode="constant", keys=None):
        super().__init__(keys)
        self.padding, self.fill, self.padding_mode = padding, fill, padding_mode

    def _apply_image(self, img):
        return pad(img, self.padding, self.fill, self.padding_mode)


class RandomCrop(BaseTransform):
    """A random size crop, after optional padding (pad_if_needed pads small images)."""

    def __init__(
        self, size, padding=None, pad_if_needed=False, fill=0, padding_mode="constant", keys=None
    ):
        super().__init__(keys)
        self.size = _size2(size, "RandomCrop")
        self.padding, self.pad_if_needed = padding, pad_if_needed
        self.fill, self.padding_mode = fill, padding_mode

    def _apply_image(self, img):
        img = _check_img(img, "RandomCrop")
        if self.padding is not None:
            img = pad(img, self.padding, self.fill, self.padding_mode)
        th, tw = self.size
        h, w = img.shape[:2]
        if self.pad_if_needed and w < tw:
            img = pad(img, (tw - w, 0), self.fill, self.padding_mode)
        if self.pad_if_needed and h < th:
            img = pad(img, (0, th - h), self.fill, self.padding_mode)
        h, w = img.shape[:2]
        if th > h or tw > w:
            raise ValueError(f"RandomCrop: crop size {(th, tw)} exceeds the image size {(h, w)}")
        top = np.random.randint(0, h - th + 1)
        left = np.random.randint(0, w - tw + 1)
        return crop(img, top, left, th, tw)


def hflip(img):
    return np.ascontiguousarray(_check_img(img, "hflip")[:, ::-1])


def vflip(img):
    return np.ascontiguousarray(_check_img(img, "vflip")[::-1])


class RandomHorizontalFlip(BaseTransform):
    def __init__(self, prob=0.5, keys=None):
        super().__init__(keys)
        if not 0.0 <= prob <= 1.0:
            raise ValueError(f"RandomHorizontalFlip: prob must be in [0, 1], got {prob}")
        self.prob = prob

    def _apply_image(self, img):
        return (
            hflip(img)
            if np.random.random() < self.prob
            else _check_img(img, "RandomHorizontalFlip")
        )


class RandomVerticalFlip(BaseTransform):
    def __init__(self, prob=0.5, keys=None):
        super().__init__(keys)
        if not 0.0 <= prob <= 1.0:
            raise ValueError(f"RandomVerticalFlip: prob must be in [0, 1], got {prob}")
        self.prob = prob

    def _apply_image(self, img):
        return (
            vflip(img) if np.random.random() < self.prob else _check_img(img, "RandomVerticalFlip")
        )


class Transpose(BaseTransform):
    """Permutes the axes of an HWC array (default to CHW); an HW image gets a channel first."""

    def __init__(self, order=(2, 0, 1), keys=None):
        super().__init__(keys)
        self.order = tuple(order)

    def _apply_image(self, img):
        img = _check_img(img, "Transpose")
        if img.ndim == 2:
            img = img[:, :, None]
        if sorted(self.order) != list(range(img.ndim)):
            raise ValueError(
                f"Transpose: order {self.order} is not a permutation of {img.ndim} axes"
            )
        return np.ascontiguousarray(img.transpose(self.order))
