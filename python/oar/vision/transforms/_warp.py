"""Geometric warps (affine, rotate, perspective) for paddle.vision.transforms.functional.

Each warp is an inverse map from output pixel centres (x + 0.5, y + 0.5) to input
coordinates, as Pillow's Image.transform defines it; PIL images use Pillow directly, arrays and
Tensors use the sampler here (nearest: the pixel containing the point; bilinear: the four
nearest centres), with `fill` outside the input."""
import math
import numbers

import numpy as np

from . import _image as _f

_INTERP = ("nearest", "bilinear")


def _interp(op, interpolation, kind):
    allowed = ("nearest", "bilinear", "bicubic") if kind == "pil" else _INTERP
    if interpolation not in allowed:
        raise ValueError(f"{op}: interpolation must be one of {list(allowed)}, got "
                         f"{interpolation!r}")
    return interpolation


def _fill_pixel(fill, channels, op):
    f = np.asarray(fill, dtype=np.float64).reshape(-1)
    if f.size not in (1, channels):
        raise ValueError(f"{op}: fill must be a number or one value per channel ({channels}), "
                         f"got {fill!r}")
    return np.broadcast_to(f, [channels])


def _sample(arr, coeffs, out_hw, interpolation, fill, op):
    """arr (H, W[, C]) sampled at the input points that `coeffs` maps the output pixel centres
    to, on Oar's kernels: NumPy's temporaries of a 224 x 224 image are over glibc's mmap
    threshold, and each came back as fresh pages (a 13-degree rotation of 224 x 224 x 3 uint8,
    bench/transforms_np.py: nearest 3.2 -> 0.42 ms, bilinear 11 -> 3.0; Pillow 0.07 / 1.0).

    Pixels are gathered by flat index from an [H W + 1, C] table whose last row is the fill;
    nearest keeps the image's dtype, bilinear weighs its four taps in _work_dtype, the
    coordinates are float64."""
    from ... import _C, arange, where

    squeeze = arr.ndim == 2
    a = arr[:, :, None] if squeeze else arr
    h, w, c = a.shape
    oh, ow = out_hw
    fillv = _fill_pixel(fill, c, op)
    xs = arange(ow, dtype="float64") + 0.5
    ys = (arange(oh, dtype="float64") + 0.5).unsqueeze(1)
    ca, cb, cc, cd, ce, cf = (float(v) for v in coeffs[:6])
    src_x, src_y = xs * ca + ys * cb + cc, xs * cd + ys * ce + cf
    if len(coeffs) == 8 and (coeffs[6] or coeffs[7]):
        den = xs * float(coeffs[6]) + ys * float(coeffs[7]) + 1.0
        src_x, src_y = src_x / den, src_y / den
    src_x, src_y = src_x.expand([oh, ow]), src_y.expand([oh, ow])

    def taps(table, xx, yy):  # table rows at integer points (float64 tensors), the fill outside
        inside = (xx >= 0) & (xx < w) & (yy >= 0) & (yy < h)
        idx = where(inside, yy * w + xx, float(h * w)).astype("int64").reshape([-1])
        return _C.ops.index_select(table, idx, 0).reshape([oh, ow, c])

    if interpolation == "nearest":
        table = np.concatenate([a.reshape(h * w, c), _f._clip_like(fillv, a.dtype)[None]])
        out = taps(_C.to_tensor(table, None, None, True), src_x.floor(), src_y.floor()).numpy()
    else:
        wd = np.dtype(_f._work_dtype(a.dtype)).name
        table = _C.to_tensor(np.concatenate([a.reshape(h * w, c).astype(wd), fillv[None].astype(wd)]),
                             None, None, True)
        x, y = src_x - 0.5, src_y - 0.5
        x0, y0 = x.floor(), y.floor()
        fx, fy = (x - x0).astype(wd).unsqueeze(2), (y - y0).astype(wd).unsqueeze(2)
        top = taps(table, x0, y0) * (1 - fx) + taps(table, x0 + 1, y0) * fx
        bottom = taps(table, x0, y0 + 1) * (1 - fx) + taps(table, x0 + 1, y0 + 1) * fx
        out = (top * (1 - fy) + bottom * fy).numpy()
        outside = ((x < -0.5) | (x > w - 0.5) | (y < -0.5) | (y > h - 0.5)).numpy()
        out[outside] = fillv
        out = _f._clip_like(out, arr.dtype)
    return out[:, :, 0] if squeeze else out


def _apply(img, kind, op, coeffs, out_hw, interpolation, fill, pil_call):
    if kind == "pil":
        return pil_call()
    arr = _f._to_hwc(img, kind)
    return _f._from_hwc(_sample(arr, coeffs, out_hw, interpolation, fill, op), kind, img)


def _pil_fill(fill, img):
    """Pillow's fillcolor: a number fills every band (alone it reads as one packed colour)."""
    if isinstance(fill, (list, tuple)):
        return tuple(int(v) for v in fill)
    bands = len(img.getbands())
    return fill if bands == 1 else (int(fill),) * bands


def _inverse_affine(center, angle, translate, scale, shear):
    """Output -> input map of: move to center, rotate by angle, shear, scale, move back and
    translate (the composition Paddle and torchvision document)."""
    rot, sx, sy = math.radians(angle), math.radians(shear[0]), math.radians(shear[1])
    a = math.cos(rot - sy) / math.cos(sy)
    b = -math.cos(rot - sy) * math.tan(sx) / math.cos(sy) - math.sin(rot)
    c = math.sin(rot - sy) / math.cos(sy)
    d = -math.sin(rot - sy) * math.tan(sx) / math.cos(sy) + math.cos(rot)
    m = [v / scale for v in (d, -b, 0.0, -c, a, 0.0)]  # the inverse of [[a, b], [c, d]]
    cx, cy = center
    tx, ty = translate
    m[2] += m[0] * (-cx - tx) + m[1] * (-cy - ty) + cx
    m[5] += m[3] * (-cx - tx) + m[4] * (-cy - ty) + cy
    return m


def affine(img, angle, translate, scale, shear, interpolation="nearest", fill=0, center=None):
    """Rotates by angle (degrees), translates by translate=(tx, ty) pixels, scales and shears
    (degrees: a number, or (x, y)) about center (default the image centre)."""
    op = "affine"
    kind = _f._kind(img, op)
    _interp(op, interpolation, kind)
    if not isinstance(angle, numbers.Real):
        raise TypeError(f"{op}: angle must be a number, got {type(angle).__name__}")
    if not isinstance(translate, (list, tuple)) or len(translate) != 2:
        raise TypeError(f"{op}: translate must be a sequence of 2 numbers, got {translate!r}")
    if not isinstance(scale, numbers.Real) or scale <= 0:
        raise ValueError(f"{op}: scale must be a positive number, got {scale!r}")
    if isinstance(shear, numbers.Real):
        shear = [shear, 0.0]
    if not isinstance(shear, (list, tuple)) or len(shear) not in (1, 2):
        raise ValueError(f"{op}: shear must be a number or a sequence of 1 or 2, got {shear!r}")
    shear = [shear[0], shear[0]] if len(shear) == 1 else list(shear)
    h, w = _f._hw(img, kind)
    if center is None:
        center = (w * 0.5, h * 0.5)
    m = _inverse_affine(center, float(angle), translate, float(scale), shear)

    def pil():
        from PIL import Image
        return img.transform(img.size, Image.AFFINE, m, _f._PIL_RESAMPLE[interpolation],
                             fillcolor=_pil_fill(fill, img))
    return _apply(img, kind, op, m, (h, w), interpolation, fill, pil)


def rotate(img, angle, interpolation="nearest", expand=False, center=None, fill=0):
    """Rotates counter-clockwise by angle degrees about center (default the image centre);
    expand=True grows the output to hold the whole rotated image."""
    op = "rotate"
    kind = _f._kind(img, op)
    _interp(op, interpolation, kind)
    if not isinstance(angle, numbers.Real):
        raise TypeError(f"{op}: angle must be a number, got {type(angle).__name__}")
    if kind == "pil":
        return img.rotate(angle, _f._PIL_RESAMPLE[interpolation], expand,
                          None if center is None else tuple(center), fillcolor=_pil_fill(fill, img))
    h, w = _f._hw(img, kind)
    cx, cy = (w * 0.5, h * 0.5) if center is None else (float(center[0]), float(center[1]))
    t = math.radians(angle)
    cos, sin = round(math.cos(t), 15), round(math.sin(t), 15)  # exact at multiples of 90, as Pillow
    oh, ow, ocx, ocy = h, w, cx, cy
    if expand:
        corners = [(-cx, -cy), (w - cx, -cy), (w - cx, h - cy), (-cx, h - cy)]
        xs = [x * cos + y * sin for x, y in corners]
        ys = [-x * sin + y * cos for x, y in corners]
        ow = int(math.ceil(max(xs) - min(xs) - 1e-9))
        oh = int(math.ceil(max(ys) - min(ys) - 1e-9))
        ocx, ocy = ow * 0.5, oh * 0.5
    # output (x, y) -> input: undo the rotation about the (new) centre
    m = [cos, -sin, cx - cos * ocx + sin * ocy, sin, cos, cy - sin * ocx - cos * ocy]
    return _apply(img, kind, op, m, (oh, ow), interpolation, fill, None)


def _perspective_coeffs(startpoints, endpoints):
    a = np.zeros((8, 8))
    for i, (p1, p2) in enumerate(zip(endpoints, startpoints)):
        a[2 * i] = [p1[0], p1[1], 1, 0, 0, 0, -p2[0] * p1[0], -p2[0] * p1[1]]
        a[2 * i + 1] = [0, 0, 0, p1[0], p1[1], 1, -p2[1] * p1[0], -p2[1] * p1[1]]
    return list(np.linalg.lstsq(a, np.asarray(startpoints, np.float64).reshape(8), rcond=None)[0])


def perspective(img, startpoints, endpoints, interpolation="nearest", fill=0):
    """Maps the four startpoints [top-left, top-right, bottom-right, bottom-left] (x, y) of the
    input onto endpoints in the output."""
    op = "perspective"
    kind = _f._kind(img, op)
    _interp(op, interpolation, kind)
    for name, pts in (("startpoints", startpoints), ("endpoints", endpoints)):
        if np.shape(pts) != (4, 2):
            raise ValueError(f"{op}: {name} must be 4 (x, y) points, got {pts!r}")
    coeffs = _perspective_coeffs(startpoints, endpoints)
    h, w = _f._hw(img, kind)

    def pil():
        from PIL import Image
        return img.transform(img.size, Image.PERSPECTIVE, coeffs,
                             _f._PIL_RESAMPLE[interpolation], fillcolor=_pil_fill(fill, img))
    return _apply(img, kind, op, coeffs, (h, w), interpolation, fill, pil)
