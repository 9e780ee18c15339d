"""The image kinds vision.transforms accepts (PIL image, NumPy HW/HWC array, CHW Tensor) and
conversions between them and NumPy HWC arrays."""
import importlib
import numbers
import sys

import numpy as np

from ... import _C


class _Lazy:
    """A Pillow module imported on first attribute use, so `import oar` does not load Pillow;
    a PIL image can only exist once Pillow is loaded (see _is_pil_image)."""

    def __init__(self, name):
        self._name = name

    def __getattr__(self, attr):
        return getattr(importlib.import_module(self._name), attr)


Image = _Lazy("PIL.Image")
ImageEnhance = _Lazy("PIL.ImageEnhance")
ImageOps = _Lazy("PIL.ImageOps")

_PIL_RESAMPLE = {"nearest": 0, "lanczos": 1, "bilinear": 2, "bicubic": 3, "box": 4, "hamming": 5}


def _is_pil_image(img):
    pil = sys.modules.get("PIL.Image")
    return pil is not None and isinstance(img, pil.Image)


def _is_tensor_image(img):
    return isinstance(img, _C.Tensor)


def _is_numpy_image(img):
    return isinstance(img, np.ndarray) and img.ndim in (2, 3)


def _kind(img, op):
    if _is_pil_image(img):
        return "pil"
    if _is_tensor_image(img):
        if img.ndim not in (2, 3):
            raise ValueError(f"{op}: a Tensor image must be HW or CHW, got shape {list(img.shape)}")
        return "tensor"
    if _is_numpy_image(img):
        return "np"
    raise TypeError(f"{op}: img must be a PIL Image, a NumPy HW/HWC array or a CHW Tensor, got "
                    f"{type(img).__name__}" + (f" of shape {list(img.shape)}"
                                               if isinstance(img, np.ndarray) else ""))


def _to_hwc(img, kind):
    """The image as a NumPy HW or HWC array (a view where possible)."""
    if kind == "pil":
        return np.asarray(img)
    if kind == "tensor":
        a = img.numpy()
        return a.transpose(1, 2, 0) if a.ndim == 3 else a
    return img


def _from_hwc(arr, kind, like):
    if kind == "pil":
        if arr.ndim == 3 and arr.shape[2] == 1:
            arr = arr[:, :, 0]
        mode = like.mode if arr.ndim == (3 if like.mode in ("RGB", "RGBA", "CMYK") else 2) \
            else None
        return Image.fromarray(np.ascontiguousarray(arr), mode)
    if kind == "tensor":
        if arr.ndim == 3:
            arr = arr.transpose(2, 0, 1)
        return _C.to_tensor(np.ascontiguousarray(arr.astype(_np_dtype(like), copy=False)),
                            None, None, True)
    return np.ascontiguousarray(arr)


def _np_dtype(t):
    return np.dtype(str(t.dtype).replace("paddle.", "").replace("bool", "bool_"))


def _size2(size, op, name="size"):
    if isinstance(size, numbers.Integral) and not isinstance(size, bool):
        return int(size), int(size)
    if isinstance(size, (list, tuple)) and len(size) == 2 and all(
            isinstance(s, numbers.Integral) for s in size):
        return int(size[0]), int(size[1])
    raise ValueError(f"{op}: {name} must be an int or (h, w), got {size!r}")


def _hw(img, kind):
    if kind == "pil":
        return img.size[1], img.size[0]
    return tuple(img.shape[-2:]) if kind == "tensor" else img.shape[:2]


def _clip_like(out, dtype):
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return np.clip(np.rint(out), info.min, info.max).astype(dtype)
    return out.astype(dtype)


def _work_dtype(dtype):
    """The float type an image of `dtype` is computed in by the colour functions and the warps:
    float32 for 8- and 16-bit images (its 24 bits hold their values and products to well under
    half a step), float64 for the rest."""
    dtype = np.dtype(dtype)
    return np.float32 if dtype.itemsize <= 2 or dtype == np.float32 else np.float64
