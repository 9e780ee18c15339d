"""vision.transforms on PIL images, NumPy HWC arrays and CHW Tensors: the three kinds agree,
colour adjustments match Pillow's ImageEnhance and a float64 colorsys reference, warps match
exact rotations/shifts, random transforms repeat under oar.seed, bad arguments name the function."""
import colorsys

import numpy as np
import pytest
from PIL import Image, ImageEnhance

import oar
import oar.vision.transforms as T
import oar.vision.transforms.functional as F

RNG = np.random.default_rng(7)


def rgb(h=12, w=15):
    return RNG.integers(0, 256, (h, w, 3)).astype(np.uint8)


def as_np(x):
    if isinstance(x, Image.Image):
        return np.asarray(x)
    if isinstance(x, oar.Tensor):
        a = x.numpy()
        return a.transpose(1, 2, 0) if a.ndim == 3 else a
    return x


def kinds(a):
    return [Image.fromarray(a), a, oar.to_tensor(a.transpose(2, 0, 1))]


@pytest.mark.parametrize("fn", [
    lambda x: F.crop(x, 2, 3, 5, 7), lambda x: F.center_crop(x, (6, 4)), F.hflip, F.vflip,
    lambda x: F.pad(x, (2, 1)), lambda x: F.pad(x, [1, 2, 3, 4], fill=9),
    lambda x: F.pad(x, 2, padding_mode="reflect"), lambda x: F.pad(x, 1, padding_mode="edge"),
    lambda x: F.rotate(x, 90), lambda x: F.rotate(x, 180),
])
def test_three_kinds_agree(fn):
    a = rgb()
    outs = [fn(k) for k in kinds(a)]
    assert isinstance(outs[0], Image.Image) and isinstance(outs[2], oar.Tensor)
    np.testing.assert_array_equal(as_np(outs[1]), as_np(outs[0]))
    np.testing.assert_array_equal(as_np(outs[2]), as_np(outs[0]))


def test_resize_sizes_and_to_tensor():
    a = rgb(20, 30)
    for k in kinds(a):
        assert as_np(F.resize(k, 10)).shape[:2] == (10, 15)
        assert as_np(F.resize(k, (7, 9))).shape[:2] == (7, 9)
    t = F.to_tensor(Image.fromarray(a))
    assert t.dtype == oar.float32 and list(t.shape) == [3, 20, 30]
    np.testing.assert_allclose(t.numpy(), a.transpose(2, 0, 1) / 255.0, rtol=1e-6)
    g = F.to_tensor(Image.fromarray(a[:, :, 0]), data_format="HWC")
    assert list(g.shape) == [20, 30, 1]


@pytest.mark.parametrize("factor", [0.0, 0.4, 1.0, 1.7])
@pytest.mark.parametrize("name,enh", [("adjust_brightness", ImageEnhance.Brightness),
                                      ("adjust_contrast", ImageEnhance.Contrast),
                                      ("adjust_saturation", ImageEnhance.Color)])
def test_colour_matches_pillow(name, enh, factor):
    a = rgb()
    want = np.asarray(enh(Image.fromarray(a)).enhance(factor)).astype(int)
    for k in kinds(a)[1:]:
        got = as_np(getattr(F, name)(k, factor)).astype(int)
        assert np.abs(got - want).max() <= 2, name  # Pillow rounds its grey in integers
    np.testing.assert_array_equal(np.asarray(getattr(F, name)(Image.fromarray(a), factor)), want)


@pytest.mark.parametrize("hue", [-0.5, -0.2, 0.0, 0.3])
def test_hue_matches_colorsys(hue):
    a = RNG.random((5, 6, 3))
    want = np.array([[colorsys.hsv_to_rgb((colorsys.rgb_to_hsv(*p)[0] + hue) % 1.0,
                                          *colorsys.rgb_to_hsv(*p)[1:]) for p in row]
                     for row in a])
    np.testing.assert_allclose(F.adjust_hue(a, hue), want, atol=1e-12)
    t = F.adjust_hue(oar.to_tensor(a.transpose(2, 0, 1).astype(np.float32)), hue)
    np.testing.assert_allclose(as_np(t), want, atol=1e-5)
    assert F.adjust_hue(Image.fromarray(rgb()), hue).size == (15, 12)


def _luma64(a):
    a = a.astype(np.float64)
    return a[..., 0] * 0.299 + a[..., 1] * 0.587 + a[..., 2] * 0.114


@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.float32, np.float64])
@pytest.mark.parametrize("factor", [0.0, 0.35, 1.0, 2.3])
def test_colour_against_float64(dtype, factor):
    # Every dtype's fast path (uint8's 256-entry tables, float32 arithmetic for 8- and 16-bit
    # images) against the float64 formulas: integer images round to the reference's nearest
    # value (one off only where it sits at .5 within float32's error), float images agree to
    # their precision.
    top = 1.0 if np.issubdtype(dtype, np.floating) else 255.0
    a = (RNG.random((37, 29, 3)) * top).astype(dtype)
    if dtype == np.int16:
        a[0, 0] = [0, 255, 7]
    x = a.astype(np.float64)
    if np.issubdtype(dtype, np.integer):
        sums = [int(a[..., c].astype(np.int64).sum()) for c in range(3)]
        mean = np.floor((sums[0] * 0.299 + sums[1] * 0.587 + sums[2] * 0.114) / (a.size // 3) + 0.5)
    else:
        mean = _luma64(a).mean()
    refs = {"adjust_brightness": factor * x, "adjust_contrast": factor * x + (1 - factor) * mean,
            "adjust_saturation": factor * x + (1 - factor) * _luma64(a)[..., None]}
    for name, ref in refs.items():
        ref = np.clip(ref, 0, top)
        got = getattr(F, name)(a, factor)
        assert got.dtype == dtype and got.shape == a.shape, name
        if np.issubdtype(dtype, np.integer):
            off = np.abs(got.astype(np.int64) - np.rint(ref))
            assert off.max() <= 1 and np.all(np.abs(ref[off > 0] % 1 - 0.5) < 1e-4), name
            if dtype == np.uint8 and name != "adjust_saturation":  # the tables: exactly the float64 formula
                np.testing.assert_array_equal(got, np.rint(ref).astype(np.uint8))
        else:
            np.testing.assert_allclose(got, ref, rtol=2e-6 if dtype == np.float32 else 1e-12,
                                       atol=2e-6 if dtype == np.float32 else 1e-12)


@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
@pytest.mark.parametrize("hue", [-0.5, -0.13, 0.0, 0.3, 0.5])
def test_hue_uint8_and_float32_against_colorsys(dtype, hue):
    top = 255.0 if dtype == np.uint8 else 1.0
    a = (RNG.random((9, 11, 3)) * top).astype(dtype)
    a[0, :6] = [[0, 0, 0], [top, top, top], [top, 0, 0], [0, top, 0], [0, 0, top], [top, top, 0]]
    want = np.array([[colorsys.hsv_to_rgb((colorsys.rgb_to_hsv(*(p / top))[0] + hue) % 1.0,
                                          *colorsys.rgb_to_hsv(*(p / top))[1:]) for p in row]
                     for row in a.astype(np.float64)]) * top
    got = F.adjust_hue(a, hue)
    assert got.dtype == dtype
    if dtype == np.uint8:
        off = np.abs(got.astype(np.int64) - np.rint(want))
        assert off.max() <= 1 and np.all(np.abs(want[off > 0] % 1 - 0.5) < 1e-3)
    else:
        np.testing.assert_allclose(got, want, atol=3e-6)


def test_grayscale_normalize_erase():
    a = rgb()
    want = np.asarray(Image.fromarray(a).convert("L")).astype(int)
    assert np.abs(F.to_grayscale(a)[..., 0].astype(int) - want).max() <= 1
    assert F.to_grayscale(a, 3).shape == (12, 15, 3)
    assert np.asarray(F.to_grayscale(Image.fromarray(a), 3)).shape == (12, 15, 3)
    assert list(F.to_grayscale(kinds(a)[2]).shape) == [1, 12, 15]
    n = F.normalize(Image.fromarray(a), [127.5] * 3, [127.5] * 3, data_format="HWC")
    np.testing.assert_allclose(n, (a - 127.5) / 127.5, rtol=1e-6)
    t = oar.to_tensor(RNG.standard_normal((3, 4, 5)).astype(np.float32))
    e = F.erase(t, 1, 2, 2, 2, oar.zeros([1, 1, 1]))
    want = t.numpy().copy()
    want[:, 1:3, 2:4] = 0
    np.testing.assert_array_equal(e.numpy(), want)
    e2 = F.erase(a, 0, 0, 3, 3, 7)
    assert (e2[:3, :3] == 7).all() and (e2[3:] == a[3:]).all()


@pytest.mark.parametrize("shape,dtype", [((5, 7, 3), np.uint8), ((5, 7, 1), np.float32), ((4, 6, 4), np.int16),
                                         ((3, 0, 3), np.uint8), ((5, 7), np.float64)])
def test_hflip_arrays(shape, dtype):
    # whole pixels moved as one item: every channel count and itemsize, views, empty images;
    # the result is a fresh, writeable, contiguous array
    a = (RNG.random(shape) * 100).astype(dtype)
    for x in (a, a[::2, 1:]):
        r = F.hflip(x)
        assert r.dtype == x.dtype and r.shape == x.shape and r.flags.c_contiguous and r.flags.writeable
        np.testing.assert_array_equal(r, x[:, ::-1])
        assert not np.shares_memory(r, a)


def test_affine_shift_and_identity_perspective():
    a = rgb(10, 10)
    for k in kinds(a):
        shifted = as_np(F.affine(k, 0, (2, 1), 1.0, 0.0))
        np.testing.assert_array_equal(shifted[1:, 2:], a[:-1, :-2])
        assert (shifted[0] == 0).all() and (shifted[:, :2] == 0).all()
        pts = [[0, 0], [9, 0], [9, 9], [0, 9]]
        np.testing.assert_array_equal(as_np(F.perspective(k, pts, pts)), a)
    rot = F.rotate(a, 90)
    np.testing.assert_array_equal(rot, np.rot90(a))
    expanded = F.rotate(rgb(6, 10), 90, expand=True)
    assert expanded.shape[:2] == (10, 6)
    bil = F.rotate(a.astype(np.float64), 0, interpolation="bilinear")
    np.testing.assert_allclose(bil, a, atol=1e-9)


def _warp_ref(a, m, out_hw, interpolation, fill):
    """Per-pixel inverse map (output centre -> input point) in float64: nearest takes the pixel
    holding the point, bilinear the four nearest centres (fill for taps outside), fill where the
    point lies outside the image."""
    h, w = a.shape[:2]
    x3 = a.reshape(h, w, -1).astype(np.float64)
    fillv = np.broadcast_to(np.asarray(fill, np.float64).reshape(-1), [x3.shape[2]])
    out = np.zeros(tuple(out_hw) + (x3.shape[2],))
    for i in range(out_hw[0]):
        for j in range(out_hw[1]):
            px, py = j + 0.5, i + 0.5
            den = m[6] * px + m[7] * py + 1.0 if len(m) == 8 else 1.0
            sx, sy = (m[0] * px + m[1] * py + m[2]) / den, (m[3] * px + m[4] * py + m[5]) / den
            if interpolation == "nearest":
                ix, iy = int(np.floor(sx)), int(np.floor(sy))
                out[i, j] = x3[iy, ix] if 0 <= ix < w and 0 <= iy < h else fillv
                continue
            if not (-0.5 <= sx - 0.5 <= w - 0.5 and -0.5 <= sy - 0.5 <= h - 0.5):
                out[i, j] = fillv
                continue
            x, y = sx - 0.5, sy - 0.5
            x0, y0 = int(np.floor(x)), int(np.floor(y))
            fx, fy = x - x0, y - y0
            acc = 0.0
            for yy, wy in ((y0, 1 - fy), (y0 + 1, fy)):
                for xx, wx in ((x0, 1 - fx), (x0 + 1, fx)):
                    v = x3[yy, xx] if 0 <= xx < w and 0 <= yy < h else fillv
                    acc = acc + wx * wy * v
            out[i, j] = acc
    return out.reshape(tuple(out_hw) + a.shape[2:])


@pytest.mark.parametrize("interpolation", ["nearest", "bilinear"])
@pytest.mark.parametrize("dtype", [np.uint8, np.float32, np.float64])
def test_rotate_and_affine_against_per_pixel_reference(interpolation, dtype):
    top = 255 if dtype == np.uint8 else 1.0
    a = (RNG.random((13, 17, 3)) * top).astype(dtype)
    fill = [7, 90, 200] if dtype == np.uint8 else [0.25, 0.5, 1.0]
    cases = [(F.rotate(a, 23, interpolation=interpolation, fill=fill), 23, (13, 17), False),
             (F.rotate(a, -71, interpolation=interpolation, expand=True, fill=fill), -71, None, True)]
    for got, angle, hw, expand in cases:
        t = np.radians(angle)
        cos, sin = np.cos(t), np.sin(t)
        oh, ow = got.shape[:2]
        cx, cy, ocx, ocy = 17 * 0.5, 13 * 0.5, ow * 0.5, oh * 0.5
        m = [cos, -sin, cx - cos * ocx + sin * ocy, sin, cos, cy - sin * ocx - cos * ocy]
        want = _warp_ref(a, m, (oh, ow), interpolation, fill)
        assert got.dtype == dtype
        if dtype == np.uint8:
            off = np.abs(got.astype(np.int64) - np.clip(np.rint(want), 0, 255))
            assert off.max() <= 1 and np.all(np.abs(want[off > 0] % 1 - 0.5) < 1e-3)
        else:
            np.testing.assert_allclose(got, want, rtol=1e-5 if dtype == np.float32 else 1e-12,
                                       atol=1e-5 if dtype == np.float32 else 1e-12)
    start, end = [[0, 0], [16, 0], [16, 12], [0, 12]], [[1, 2], [15, 0], [13, 11], [2, 12]]
    got = F.perspective(a, start, end, interpolation=interpolation, fill=fill)
    from oar.vision.transforms._warp import _perspective_coeffs
    want = _warp_ref(a, _perspective_coeffs(start, end), (13, 17), interpolation, fill)
    if dtype == np.uint8:
        off = np.abs(got.astype(np.int64) - np.clip(np.rint(want), 0, 255))
        assert off.max() <= 1 and np.all(np.abs(want[off > 0] % 1 - 0.5) < 1e-3)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    gray = a[:, :, 0]
    got = F.affine(gray, 12, (1.5, -2), 0.9, (5, 3), interpolation=interpolation, fill=3)
    from oar.vision.transforms._warp import _inverse_affine
    m = _inverse_affine((17 * 0.5, 13 * 0.5), 12.0, (1.5, -2), 0.9, [5, 3])
    want = _warp_ref(gray, m, (13, 17), interpolation, 3)
    assert got.shape == gray.shape and got.dtype == dtype
    if dtype == np.uint8:
        off = np.abs(got.astype(np.int64) - np.clip(np.rint(want), 0, 255))
        assert off.max() <= 1 and np.all(np.abs(want[off > 0] % 1 - 0.5) < 1e-3)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_random_transforms_shapes_and_seed():
    img = Image.fromarray(rgb(40, 50))
    t = oar.randn([3, 40, 50])
    cases = [T.RandomResizedCrop(16), T.RandomRotation(30), T.ColorJitter(0.4, 0.4, 0.4, 0.4),
             T.BrightnessTransform(0.4), T.ContrastTransform(0.4), T.SaturationTransform(0.4),
             T.HueTransform(0.4), T.Grayscale(3), T.RandomAffine(20, (0.1, 0.1), (0.8, 1.2), 5),
             T.RandomPerspective(1.0), T.Pad(2), T.CenterCrop(20), T.Resize((20, 30))]
    for tr in cases:
        oar.seed(5)
        a = as_np(tr(img))
        oar.seed(5)
        np.testing.assert_array_equal(as_np(tr(img)), a)
    assert list(T.RandomAffine([-90, 90], [0.2, 0.2], [0.5, 0.5], [-10, 10])(t).shape) == [3, 40, 50]
    assert list(T.RandomPerspective(1.0, 0.9)(t).shape) == [3, 40, 50]
    assert list(T.RandomCrop(20)(t).shape) == [3, 20, 20]
    oar.seed(0)
    er = T.RandomErasing(prob=1.0, value=0)(t)
    assert (er.numpy() == 0).sum() > 0 and list(er.shape) == [3, 40, 50]
    flipped = T.RandomHorizontalFlip(1.0)(t)
    np.testing.assert_array_equal(flipped.numpy(), t.numpy()[..., ::-1])


def test_base_transform_keys():
    class Flip(T.BaseTransform):
        def _get_params(self, inputs):
            return {"w": as_np(inputs[0]).shape[1]}

        def _apply_image(self, image):
            return F.hflip(image)

        def _apply_boxes(self, boxes):
            b = np.array(boxes)
            b[:, [0, 2]] = self.params["w"] - b[:, [2, 0]]
            return b

    a = rgb(8, 10)
    img, boxes, label = Flip(keys=("image", "boxes"))((a, np.array([[1, 2, 3, 4]]), 5))
    np.testing.assert_array_equal(boxes, [[7, 2, 9, 4]])
    assert label == 5 and (img == a[:, ::-1]).all()
    with pytest.raises(NotImplementedError, match="coords"):
        Flip(keys=("image", "coords"))


BAD = [
    (lambda: F.crop([1, 2], 0, 0, 1, 1), TypeError, "crop"),
    (lambda: F.resize(rgb(), 0), ValueError, "resize"),
    (lambda: F.resize(rgb(), 5, "cubic-ish"), ValueError, "interpolation"),
    (lambda: F.pad(rgb(), (1, 2, 3)), ValueError, "padding"),
    (lambda: F.pad(rgb(), 1, padding_mode="wrap"), ValueError, "padding_mode"),
    (lambda: F.adjust_brightness(rgb(), -1), ValueError, "brightness_factor"),
    (lambda: F.adjust_hue(rgb(), 0.7), ValueError, "hue_factor"),
    (lambda: F.adjust_saturation(rgb()[..., 0], 0.5), ValueError, "RGB"),
    (lambda: F.to_grayscale(rgb(), 2), ValueError, "num_output_channels"),
    (lambda: F.affine(rgb(), 0, (1, 1), 0.0, 0), ValueError, "scale"),
    (lambda: F.affine(rgb(), 0, 1, 1.0, 0), TypeError, "translate"),
    (lambda: F.rotate(rgb(), 10, interpolation="area"), ValueError, "interpolation"),
    (lambda: F.perspective(rgb(), [[0, 0]], [[0, 0]]), ValueError, "startpoints"),
    (lambda: F.center_crop(rgb(), 100), ValueError, "center_crop"),
    (lambda: F.normalize(rgb(), [1, 2], [1, 1, 1], "HWC"), ValueError, "mean"),
    (lambda: T.RandomRotation(-5), ValueError, "degrees"),
    (lambda: T.RandomErasing(prob=2), ValueError, "prob"),
    (lambda: T.HueTransform(0.8), ValueError, "HueTransform"),
    (lambda: T.RandomResizedCrop(10, scale=(0.5, 0.1)), ValueError, "scale"),
    (lambda: T.RandomAffine(10, translate=(2, 0)), ValueError, "translate"),
    (lambda: T.BaseTransform(keys="image"), ValueError, "keys"),
    (lambda: oar.vision.set_image_backend("opencv"), ValueError, "backend"),
]


@pytest.mark.parametrize("call,exc,needle", BAD)
def test_bad_arguments(call, exc, needle):
    with pytest.raises(exc, match=needle):
        call()


def test_image_backend_default_is_pil():
    assert oar.vision.get_image_backend() == "pil"
    oar.vision.set_image_backend("cv2")
    assert oar.vision.get_image_backend() == "cv2"
    oar.vision.set_image_backend("pil")
