"""paddle.vision.transforms.functional: image functions on PIL images, NumPy HWC arrays (Paddle's
cv2 backend) and Tensors (CHW; the last two axes are H and W).

PIL images go through Pillow's own operations, as Paddle's PIL backend does. Arrays and Tensors
share NumPy implementations on an HWC view; a Tensor comes back as a Tensor of its dtype.
Geometric warps (affine, rotate, perspective) sample at pixel centres, nearest or bilinear, and
fill outside the source with `fill`."""
import numbers

import numpy as np

from ... import _C

from ._image import (  # noqa: F401
    Image, ImageEnhance, ImageOps, _PIL_RESAMPLE, _is_pil_image, _is_tensor_image, _is_numpy_image,
    _kind, _to_hwc, _from_hwc, _np_dtype, _size2, _hw, _clip_like, _work_dtype,
)


def to_tensor(pic, data_format="CHW"):
    """PIL image or HW(C) array -> float32 Tensor in CHW (or HWC); uint8 images scale by 1/255."""
    if data_format not in ("CHW", "HWC"):
        raise ValueError(f"to_tensor: data_format must be 'CHW' or 'HWC', got '{data_format}'")
    kind = _kind(pic, "to_tensor")
    if kind == "tensor":
        return pic
    img = np.asarray(pic)
    if img.ndim == 2:
        img = img[:, :, None]
    if data_format == "CHW":
        img = img.transpose(2, 0, 1)
    out = img.astype(np.float32)
    if img.dtype == np.uint8:
        out = out / 255.0
    return _C.to_tensor(np.ascontiguousarray(out), None, None, True)


def _resize_axis(img, out_len, axis, interpolation):
    in_len = img.shape[axis]
    if out_len == in_len:
        return img.astype(np.float64)
    scale = in_len / out_len
    if interpolation == "nearest":
        idx = np.minimum(np.floor(np.arange(out_len) * scale).astype(np.int64), in_len - 1)
        return np.take(img, idx, axis=axis).astype(np.float64)
    src = np.clip((np.arange(out_len) + 0.5) * scale - 0.5, 0, in_len - 1)  # half-pixel centres
    lo = np.floor(src).astype(np.int64)
    hi = np.minimum(lo + 1, in_len - 1)
    shape = [1] * img.ndim
    shape[axis] = out_len
    w = (src - lo).reshape(shape)
    return (np.take(img, lo, axis=axis).astype(np.float64) * (1 - w)
            + np.take(img, hi, axis=axis).astype(np.float64) * w)


def _target_size(h, w, size, op):
    if isinstance(size, numbers.Integral) and not isinstance(size, bool):
        if size <= 0:
            raise ValueError(f"{op}: size must be positive, got {size}")
        if (w <= h and w == size) or (h <= w and h == size):
            return h, w
        return (int(size * h / w), int(size)) if w < h else (int(size), int(size * w / h))
    oh, ow = _size2(size, op)
    if oh <= 0 or ow <= 0:
        raise ValueError(f"{op}: size must be positive, got {size!r}")
    return oh, ow


def resize(img, size, interpolation="bilinear"):
    """Resizes to size (h, w), or the shorter side to size keeping the aspect ratio."""
    kind = _kind(img, "resize")
    if interpolation not in _PIL_RESAMPLE:
        raise ValueError(f"resize: interpolation must be one of {sorted(_PIL_RESAMPLE)}, got "
                         f"{interpolation!r}")
    h, w = _hw(img, kind)
    if h == 0 or w == 0:
        raise ValueError(f"resize: the image is empty (height {h}, width {w})")
    oh, ow = _target_size(h, w, size, "resize")
    if kind == "pil":
        return img.resize((ow, oh), _PIL_RESAMPLE[interpolation])
    if interpolation not in ("nearest", "bilinear"):
        interpolation = "bilinear"
    arr = _to_hwc(img, kind)
    if interpolation == "bilinear" and arr.size:
        out = _bilinear(arr, oh, ow)
    else:
        out = _resize_axis(_resize_axis(arr, oh, 0, interpolation), ow, 1, interpolation)
    return _from_hwc(_clip_like(out, arr.dtype), kind, img)


def _bilinear(arr, oh, ow):
    """An HW(C) array resized by bilinear interpolation at half-pixel centres (cv2's
    INTER_LINEAR, Paddle's cv2 backend) on the interpolate kernel, in _work_dtype. NumPy's separable form of the same took
    9.5 ms for 375 x 500 x 3 uint8 -> 256 x 341 against the kernel's 0.8 (Pillow: 1.3)."""
    from ...nn.functional import interpolate

    a = np.ascontiguousarray(arr if arr.ndim == 3 else arr[:, :, None], dtype=_work_dtype(arr.dtype))
    t = _C.to_tensor(a, None, None, True).unsqueeze(0)
    out = interpolate(t, size=[oh, ow], mode="bilinear", align_corners=False, align_mode=0,
                      data_format="NHWC").numpy()[0]
    return out if arr.ndim == 3 else out[:, :, 0]


def _padding4(padding, op):
    if isinstance(padding, numbers.Integral) and not isinstance(padding, bool):
        p = [int(padding)] * 4
    elif isinstance(padding, (list, tuple)) and len(padding) == 2:
        p = [int(padding[0]), int(padding[1])] * 2
    elif isinstance(padding, (list, tuple)) and len(padding) == 4:
        p = [int(v) for v in padding]
    else:
        raise ValueError(f"{op}: padding must be an int or a 2- or 4-element sequence, got "
                         f"{padding!r}")
    if min(p) < 0:
        raise ValueError(f"{op}: padding must be non-negative, got {padding!r}")
    return p  # left, top, right, bottom


_PAD_MODES = ("constant", "edge", "reflect", "symmetric")


def pad(img, padding, fill=0, padding_mode="constant"):
    """padding: int (all sides), (left/right, top/bottom) or (left, top, right, bottom)."""
    kind = _kind(img, "pad")
    left, top, right, bottom = _padding4(padding, "pad")
    if padding_mode not in _PAD_MODES:
        raise ValueError(f"pad: padding_mode must be one of {list(_PAD_MODES)}, got "
                         f"{padding_mode!r}")
    if kind == "pil" and padding_mode == "constant" and img.mode != "P":
        # a number fills every band (Pillow alone would read it as one packed colour)
        fill_ = tuple(fill) if isinstance(fill, (list, tuple)) else (
            fill if len(img.getbands()) == 1 else (fill,) * len(img.getbands()))
        return ImageOps.expand(img, border=(left, top, right, bottom), fill=fill_)
    arr = _to_hwc(img, kind)
    widths = [(top, bottom), (left, right)] + ([(0, 0)] if arr.ndim == 3 else [])
    if padding_mode != "constant":
        return _from_hwc(np.pad(arr, widths, mode=padding_mode), kind, img)
    if arr.ndim == 3 and isinstance(fill, (list, tuple)):
        if len(fill) != arr.shape[2]:
            raise ValueError(f"pad: fill must have one value per channel ({arr.shape[2]}), got "
                             f"{len(fill)}")
        out = np.stack([np.pad(arr[:, :, c], widths[:2], constant_values=fill[c])
                        for c in range(arr.shape[2])], axis=2)
    else:
        out = np.pad(arr, widths, constant_values=fill)
    return _from_hwc(out, kind, img)


def crop(img, top, left, height, width):
    """The height x width region whose top-left corner is (top, left)."""
    kind = _kind(img, "crop")
    if height < 0 or width < 0:
        raise ValueError(f"crop: height and width must be non-negative, got {height}, {width}")
    if kind == "pil":
        return img.crop((left, top, left + width, top + height))
    if kind == "tensor":
        return img[..., top:top + height, left:left + width]
    return img[top:top + height, left:left + width]


def center_crop(img, output_size):
    kind = _kind(img, "center_crop")
    th, tw = _size2(output_size, "center_crop", "output_size")
    h, w = _hw(img, kind)
    if th > h or tw > w:
        raise ValueError(f"center_crop: crop size {(th, tw)} exceeds the image size {(h, w)}")
    return crop(img, int(round((h - th) / 2.0)), int(round((w - tw) / 2.0)), th, tw)


def hflip(img):
    kind = _kind(img, "hflip")
    if kind == "pil":
        return img.transpose(Image.FLIP_LEFT_RIGHT)
    if kind == "tensor":
        return img.flip([-1])
    a = np.ascontiguousarray(img)
    if a.ndim == 3 and a.size:  # whole pixels as one item each: NumPy copied 3-byte pixels a byte at a time
        px = a.view(np.dtype((np.void, a.shape[2] * a.itemsize))).reshape(a.shape[:2])
        return np.ascontiguousarray(px[:, ::-1]).view(a.dtype).reshape(a.shape)
    return np.ascontiguousarray(a[:, ::-1])


def vflip(img):
    kind = _kind(img, "vflip")
    if kind == "pil":
        return img.transpose(Image.FLIP_TOP_BOTTOM)
    if kind == "tensor":
        return img.flip([-2])
    return np.ascontiguousarray(img[::-1])


def _max_value(dtype):
    return 255.0 if np.issubdtype(dtype, np.integer) else 1.0


_LUMA = (0.299, 0.587, 0.114)  # ITU-R 601-2


def _gray(arr, dtype=np.float64):
    """ITU-R 601-2 luma of an RGB HWC array (HW, in `dtype`)."""
    return arr.astype(dtype, copy=False) @ np.array(_LUMA, dtype)


def _blend(arr, other, factor):
    """factor * arr + (1 - factor) * other, clipped to the image's range. A uint8 image whose
    `other` is one number goes through a 256-entry table, a value's result depending on the
    value alone (NumPy's float64 form took 2.9 ms for 224 x 224 x 3, the table 0.1)."""
    top = _max_value(arr.dtype)
    if arr.dtype == np.uint8 and np.ndim(other) == 0:
        table = factor * np.arange(256, dtype=np.float64) + (1 - factor) * other
        return np.take(_clip_like(np.clip(table, 0, top), np.uint8), arr)
    out = arr.astype(_work_dtype(arr.dtype))
    out *= factor
    out += (1 - factor) * other
    np.clip(out, 0, top, out=out)
    return _clip_like(out, arr.dtype)


def _check_factor(op, name, value):
    if not isinstance(value, numbers.Real) or value < 0:
        raise ValueError(f"{op}: {name} must be a non-negative number, got {value!r}")


def _rgb(arr, op):
    if arr.ndim != 3 or arr.shape[2] != 3:
        raise ValueError(f"{op}: needs an RGB image (3 channels), got shape {list(arr.shape)}")
    return arr


def adjust_brightness(img, brightness_factor):
    """Scales intensities by brightness_factor (0 gives black, 1 the original)."""
    _check_factor("adjust_brightness", "brightness_factor", brightness_factor)
    kind = _kind(img, "adjust_brightness")
    if kind == "pil":
        return ImageEnhance.Brightness(img).enhance(brightness_factor)
    arr = _to_hwc(img, kind)
    return _from_hwc(_blend(arr, 0.0, brightness_factor), kind, img)


def adjust_contrast(img, contrast_factor):
    """Blends with the image's mean grey (0 gives flat grey, 1 the original)."""
    _check_factor("adjust_contrast", "contrast_factor", contrast_factor)
    kind = _kind(img, "adjust_contrast")
    if kind == "pil":
        return ImageEnhance.Contrast(img).enhance(contrast_factor)
    arr = _rgb(_to_hwc(img, kind), "adjust_contrast")
    if np.issubdtype(arr.dtype, np.integer):  # exact channel sums, then the luma weights
        sums = np.array([arr[..., c].sum(dtype=np.int64) for c in range(3)])  # sum(0) of [n, 3]: 10x slower
        mean = float(np.floor(sums @ np.array(_LUMA) / max(arr.size // 3, 1) + 0.5))
    else:
        mean = _gray(arr).mean()
    return _from_hwc(_blend(arr, mean, contrast_factor), kind, img)


def adjust_saturation(img, saturation_factor):
    """Blends with the greyscale image (0 gives grey, 1 the original)."""
    _check_factor("adjust_saturation", "saturation_factor", saturation_factor)
    kind = _kind(img, "adjust_saturation")
    if kind == "pil":
        return ImageEnhance.Color(img).enhance(saturation_factor)
    arr = _rgb(_to_hwc(img, kind), "adjust_saturation")
    return _from_hwc(_blend(arr, _gray(arr, _work_dtype(arr.dtype))[..., None], saturation_factor), kind, img)


# The HSV conversions avoid NumPy's slow spots on images: a reduction over a 3-long last axis
# (max(-1): 1.8 ms for 224 x 224 x 3) and float `%` (0.4 ms for 224 x 224); x - floor(x) is
# x % 1 for finite x. adjust_hue on a 224 x 224 x 3 uint8 image: 11 -> 2.8 ms (Pillow 1.9).
def _frac(x):
    return x - np.floor(x)


def _rgb_to_hsv(rgb):
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    maxc, minc = np.maximum(np.maximum(r, g), b), np.minimum(np.minimum(r, g), b)
    delta = maxc - minc
    s = delta / np.where(maxc > 0, maxc, 1)
    d = np.where(delta > 0, delta, 1)
    h = np.where(maxc == r, (g - b) / d, np.where(maxc == g, 2.0 + (b - r) / d, 4.0 + (r - g) / d))
    h = np.where(delta > 0, _frac(h / 6.0), 0.0)
    return h, s, maxc


def _hsv_to_rgb(h, s, v):
    """Channel n in (r, g, b) = v - v s clip(min(k, 4 - k), 0, 1), k = (n' + 6h) mod 6 with
    n' = 5, 3, 1: the six hue sectors' cases in one expression."""
    k = np.array([5, 3, 1], h.dtype) + (h * 6)[..., None]
    k -= 6 * np.floor(k / 6)
    return v[..., None] - (v * s)[..., None] * np.clip(np.minimum(k, 4 - k), 0, 1)


def adjust_hue(img, hue_factor):
    """Rotates the hue by hue_factor of a full turn (in [-0.5, 0.5])."""
    if not isinstance(hue_factor, numbers.Real) or not -0.5 <= hue_factor <= 0.5:
        raise ValueError(f"adjust_hue: hue_factor must be in [-0.5, 0.5], got {hue_factor!r}")
    kind = _kind(img, "adjust_hue")
    if kind == "pil":
        if img.mode in ("L", "1", "I", "F"):
            return img
        h, s, v = img.convert("HSV").split()
        np_h = np.array(h, dtype=np.uint8)
        with np.errstate(over="ignore"):
            np_h += np.uint8(int(hue_factor * 255) % 256)
        return Image.merge("HSV", (Image.fromarray(np_h, "L"), s, v)).convert(img.mode)
    arr = _rgb(_to_hwc(img, kind), "adjust_hue")
    top = _max_value(arr.dtype)
    h, s, v = _rgb_to_hsv(arr.astype(_work_dtype(arr.dtype)) / top)
    out = _hsv_to_rgb(_frac(h + hue_factor), s, v) * top
    return _from_hwc(_clip_like(out, arr.dtype), kind, img)


def to_grayscale(img, num_output_channels=1):
    """ITU-R 601-2 luma, with 1 or 3 output channels."""
    if num_output_channels not in (1, 3):
        raise ValueError(f"to_grayscale: num_output_channels must be 1 or 3, got "
                         f"{num_output_channels!r}")
    kind = _kind(img, "to_grayscale")
    if kind == "pil":
        gray = img.convert("L")
        if num_output_channels == 3:
            g = np.asarray(gray)
            gray = Image.fromarray(np.stack([g, g, g], axis=2), "RGB")
        return gray
    arr = _rgb(_to_hwc(img, kind), "to_grayscale")
    gray = _clip_like(_gray(arr), arr.dtype)[..., None]
    out = np.repeat(gray, num_output_channels, axis=2)
    return _from_hwc(out, kind, img) if kind == "tensor" else out


def normalize(img, mean, std, data_format="CHW", to_rgb=False):
    """(img - mean) / std per channel; a PIL image becomes a float32 HWC array first."""
    if data_format not in ("CHW", "HWC"):
        raise ValueError(f"normalize: data_format must be 'CHW' or 'HWC', got '{data_format}'")
    is_tensor = _is_tensor_image(img)
    if is_tensor:
        shape = list(img.shape)
    else:
        img = np.asarray(img)  # a PIL image: HWC
        shape = list(img.shape)
    c_axis = 0 if data_format == "CHW" else -1
    channels = shape[c_axis] if len(shape) == 3 else 1
    vals = []
    for name, v in (("mean", mean), ("std", std)):
        v = np.asarray(v, np.float32).reshape(-1)
        if v.size not in (1, channels):
            raise ValueError(f"normalize: {name} must have 1 or {channels} values, got {v.size}")
        vals.append(np.broadcast_to(v, [channels]))
    if (vals[1] == 0).any():
        raise ValueError("normalize: std must not contain zeros")
    bshape = [1, 1] if len(shape) == 2 else ([-1, 1, 1] if data_format == "CHW" else [1, 1, -1])
    if is_tensor and not to_rgb:  # on the kernels, no NumPy temporaries: 0.10 -> 0.03 ms for 3 x 224 x 224
        x = img if img.dtype.name == "float32" else img.astype("float32")
        return (x - _C.to_tensor(vals[0].reshape(bshape), None, x.place, True)) / \
            _C.to_tensor(vals[1].reshape(bshape), None, x.place, True)
    arr = (img.numpy() if is_tensor else img).astype(np.float32)  # this call's own copy
    if to_rgb:
        arr = np.ascontiguousarray(np.flip(arr, axis=c_axis))
    if data_format == "HWC" and arr.ndim == 3:  # rows of W * C values: NumPy's loop over a 3-long axis is slow
        rows = arr.reshape(arr.shape[0], -1)
        rows -= np.tile(vals[0], arr.shape[1])
        rows /= np.tile(vals[1], arr.shape[1])
    else:
        arr -= vals[0].reshape(bshape)  # in place: a [224, 224, 3] temporary comes back as fresh pages
        arr /= vals[1].reshape(bshape)
    return _C.to_tensor(arr, None, None, True) if is_tensor else arr


def erase(img, i, j, h, w, v, inplace=False):
    """Replaces the h x w region at (i, j) with v (a value or an array broadcast to it)."""
    kind = _kind(img, "erase")
    if min(i, j) < 0 or min(h, w) < 0:
        raise ValueError(f"erase: i, j, h, w must be non-negative, got {(i, j, h, w)}")
    if kind == "tensor":
        vv = v.numpy() if _is_tensor_image(v) else np.asarray(v)
        arr = img.numpy().copy()
        arr[..., i:i + h, j:j + w] = vv
        out = _C.to_tensor(arr, None, None, True)
        if inplace:
            img.copy_(out)
            return img
        return out
    arr = np.array(_to_hwc(img, kind), copy=not inplace or kind == "pil")
    arr[i:i + h, j:j + w, ...] = v.numpy() if _is_tensor_image(v) else v
    return _from_hwc(arr, kind, img) if kind == "pil" else arr


from ._warp import affine, perspective, rotate  # noqa: E402,F401  (after the helpers)

__all__ = ["to_tensor", "resize", "pad", "crop", "center_crop", "hflip", "vflip",
           "adjust_brightness", "adjust_contrast", "adjust_saturation", "adjust_hue", "affine",
           "rotate", "perspective", "to_grayscale", "normalize", "erase"]
