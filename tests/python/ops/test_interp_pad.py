"""Padding, resampling and embedding functionals (oar.nn.functional) against float64
NumPy references written independently of the kernels (np.pad, np.interp, loops),
with gradients by central differences and bad inputs; the layers around them."""

import numpy as np
import pytest

import oar
import oar.nn.functional as F
from op_test_utils import (Gen, OpCase, case_id, check_bad_inputs, check_forward, check_grad,
                           normal, tensor)

NP_MODE = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}
I64 = lambda a: oar.to_tensor(np.asarray(a, dtype=np.int64))  # noqa: E731


def np_pad_spatial(x, pad, mode, value=0.0, channel_last=False):
    """Paddle's spatial pad list (last spatial dim first) applied with np.pad."""
    r = x.ndim
    spatial = list(range(1, r - 1)) if channel_last else list(range(2, r))
    width = [(0, 0)] * r
    for k in range(len(pad) // 2):
        width[spatial[-1 - k]] = (pad[2 * k], pad[2 * k + 1])
    if mode == "constant":
        return np.pad(x, width, constant_values=value)
    return np.pad(x, width, mode=NP_MODE[mode])


# ---- interpolation references (one axis at a time)
def _src(o, n_in, n_out, align_corners, align_mode, scale):
    if align_corners:
        return o * ((n_in - 1) / (n_out - 1) if n_out > 1 else 0.0)
    ratio = 1.0 / scale if scale else n_in / n_out
    return ratio * (o + 0.5) - 0.5 if align_mode == 0 else ratio * o


def _interp_axis(x, axis, n_out, mode, align_corners, align_mode, scale):
    n_in = x.shape[axis]
    x = np.moveaxis(x, axis, -1)
    o = np.arange(n_out, dtype=np.float64)
    if mode == "nearest":
        ratio = (n_in / n_out) if not scale else 1.0 / scale
        idx = np.minimum(np.floor(ratio * o).astype(int), n_in - 1)
        out = x[..., idx]
    elif mode == "cubic":
        src = _src(o, n_in, n_out, align_corners, 0, scale)
        f = np.floor(src).astype(int)
        t = src - f
        a = -0.75

        def w(d):
            d = np.abs(d)
            return np.where(d <= 1, ((a + 2) * d - (a + 3)) * d * d + 1,
                            np.where(d < 2, ((d - 5) * d + 8) * d * a - 4 * a, 0.0))
        out = 0
        for k in range(-1, 3):
            idx = np.clip(f + k, 0, n_in - 1)
            out = out + x[..., idx] * w(t - k)
    else:
        src = np.maximum(_src(o, n_in, n_out, align_corners, align_mode, scale), 0)
        out = np.apply_along_axis(lambda v: np.interp(src, np.arange(n_in), v), -1, x)
    return np.moveaxis(out, -1, axis)


def np_interpolate(x, size, mode, align_corners=False, align_mode=0, scales=None):
    kind = {"nearest": "nearest", "bicubic": "cubic"}.get(mode, "linear")
    for k, n in enumerate(size):
        x = _interp_axis(x, 2 + k, n, kind, align_corners, align_mode,
                         scales[k] if scales else None)
    return x


def np_pixel_shuffle(x, r):
    n, c, h, w = x.shape
    return x.reshape(n, c // (r * r), r, r, h, w).transpose(0, 1, 4, 2, 5, 3).reshape(
        n, c // (r * r), h * r, w * r)


def np_unfold(x, k, s, p, d):
    n, c, h, w = x.shape
    xp = np.pad(x, [(0, 0), (0, 0), (p[0], p[2]), (p[1], p[3])])
    oh = (h + p[0] + p[2] - (d[0] * (k[0] - 1) + 1)) // s[0] + 1
    ow = (w + p[1] + p[3] - (d[1] * (k[1] - 1) + 1)) // s[1] + 1
    cols = np.zeros((n, c, k[0], k[1], oh, ow))
    for i in range(k[0]):
        for j in range(k[1]):
            cols[:, :, i, j] = xp[:, :, i * d[0]: i * d[0] + s[0] * oh: s[0],
                                  j * d[1]: j * d[1] + s[1] * ow: s[1]][:, :, :oh, :ow]
    return cols.reshape(n, c * k[0] * k[1], oh * ow)


def np_fold(cols, out_hw, k, s, p, d):
    n, ckk, L = cols.shape
    c = ckk // (k[0] * k[1])
    h, w = out_hw
    oh = (h + p[0] + p[2] - (d[0] * (k[0] - 1) + 1)) // s[0] + 1
    ow = (w + p[1] + p[3] - (d[1] * (k[1] - 1) + 1)) // s[1] + 1
    out = np.zeros((n, c, h + p[0] + p[2], w + p[1] + p[3]))
    cols = cols.reshape(n, c, k[0], k[1], oh, ow)
    for i in range(k[0]):
        for j in range(k[1]):
            for y in range(oh):
                for xx in range(ow):
                    out[:, :, i * d[0] + y * s[0], j * d[1] + xx * s[1]] += cols[:, :, i, j, y, xx]
    return out[:, :, p[0]: p[0] + h, p[1]: p[1] + w]


def np_grid_sample(x, grid, mode="bilinear", padding="zeros", align=True):
    n, c, h, w = x.shape
    _, ho, wo, _ = grid.shape
    out = np.zeros((n, c, ho, wo))

    def unnorm(g, size):
        v = (g + 1) / 2 * (size - 1) if align else ((g + 1) * size - 1) / 2
        if padding == "border":
            v = min(max(v, 0), size - 1)
        elif padding == "reflection":
            lo, hi = (0.0, size - 1.0) if align else (-0.5, size - 0.5)
            span = hi - lo
            t = abs(v - lo) % (2 * span)
            v = lo + (t if t <= span else 2 * span - t)
            v = min(max(v, 0), size - 1)
        return v

    for b in range(n):
        for i in range(ho):
            for j in range(wo):
                ix, iy = unnorm(grid[b, i, j, 0], w), unnorm(grid[b, i, j, 1], h)
                if mode == "nearest":
                    xx, yy = int(np.rint(ix)), int(np.rint(iy))
                    if 0 <= xx < w and 0 <= yy < h:
                        out[b, :, i, j] = x[b, :, yy, xx]
                    continue
                x0, y0 = int(np.floor(ix)), int(np.floor(iy))
                for yy, wy in ((y0, 1 - (iy - y0)), (y0 + 1, iy - y0)):
                    for xx, wx in ((x0, 1 - (ix - x0)), (x0 + 1, ix - x0)):
                        if 0 <= xx < w and 0 <= yy < h:
                            out[b, :, i, j] += wy * wx * x[b, :, yy, xx]
    return out


def np_affine_grid(theta, shape, align):
    n, _, h, w = shape

    def lin(k):
        return np.linspace(-1, 1, k) if align else (2 * np.arange(k) + 1) / k - 1
    ys, xs = np.meshgrid(lin(h), lin(w), indexing="ij")
    base = np.stack([xs, ys, np.ones_like(xs)], -1)  # [h, w, 3]
    return np.einsum("hwk,nck->nhwc", base, theta)


GRID = Gen(lambda r, s: r.uniform(-1.15, 1.15, s))

CASES = []
for _mode in ["constant", "reflect", "replicate", "circular"]:
    CASES.append(OpCase(f"pad[{_mode},2d]", lambda x, m=_mode: F.pad(x, [1, 2, 2, 0], m, 0.5),
                        lambda x, m=_mode: np_pad_spatial(x, [1, 2, 2, 0], m, 0.5),
                        inputs=[(2, 3, 3, 4)], op="pad",
                        shapes=[[(2, 3, 3, 4)]] + ([[(0, 2, 3, 4)]] if _mode == "constant" else []),
                        dtypes=["float32", "float64", "float16", "bfloat16"] +
                        (["int64"] if _mode != "reflect" else []),
                        grad_shapes=[[(1, 2, 3, 4)]]))
    CASES.append(OpCase(f"pad[{_mode},1d]", lambda x, m=_mode: F.pad(x, [2, 1], m),
                        lambda x, m=_mode: np_pad_spatial(x, [2, 1], m), inputs=[(2, 2, 4)],
                        op="pad"))
    CASES.append(OpCase(f"pad[{_mode},3d,NDHWC]",
                        lambda x, m=_mode: F.pad(x, [1, 0, 0, 1, 1, 1], m, data_format="NDHWC"),
                        lambda x, m=_mode: np_pad_spatial(x, [1, 0, 0, 1, 1, 1], m, 0.0, True),
                        inputs=[(1, 2, 2, 3, 2)], op="pad"))
CASES += [
    OpCase("pad[all_dims]", lambda x: F.pad(x, [1, 0, 0, 2]), lambda x: np.pad(x, [(1, 0), (0, 2)]),
           inputs=[(2, 3)], op="pad"),
    OpCase("pad[all_dims,from_right]", lambda x: F.pad(x, [1, 0, 0, 2], pad_from_left_axis=False),
           lambda x: np.pad(x, [(0, 2), (1, 0)]), inputs=[(2, 3)], op="pad"),
    OpCase("pad[bad]", lambda x: F.pad(x, [1, 1], "reflect"), lambda x: np_pad_spatial(x, [1, 1], "reflect"),
           inputs=[(1, 1, 3)], op="pad",
           bad_inputs=[(lambda: (tensor(np.ones((1, 1, 1))),), ValueError, "smaller than"),
                       (lambda: (tensor(np.ones((1, 2, 3, 3))),), ValueError, "must have 4 entries"),
                       (lambda: (tensor(np.ones(3)),), ValueError, "3-D, 4-D or 5-D")]),
    OpCase("pad[negative]", lambda x: F.pad(x, [-1, 1]), lambda x: x, inputs=[(1, 1, 3)],
           op="pad", grad=False, dtypes=[],
           bad_inputs=[(lambda: (tensor(np.ones((1, 1, 3))),), ValueError, ">= 0")]),
]
INTERP = [
    ("nearest", [(1, 2, 3, 4)], [5, 7], False, 0, None),
    ("nearest", [(2, 2, 5)], [3], False, 0, None),
    ("bilinear", [(2, 3, 3, 4)], [5, 6], False, 0, None),
    ("bilinear", [(1, 2, 4, 3)], [2, 7], True, 0, None),
    ("bilinear", [(1, 2, 3, 3)], [6, 5], False, 1, None),
    ("linear", [(2, 2, 5)], [8], False, 0, None),
    ("trilinear", [(1, 2, 2, 3, 3)], [3, 4, 2], False, 0, None),
    ("trilinear", [(1, 1, 2, 2, 3)], [3, 3, 5], True, 0, None),
    ("bicubic", [(1, 2, 4, 4)], [6, 7], False, 0, None),
    ("bicubic", [(1, 1, 3, 4)], [5, 3], True, 0, None),
]
for _mode, _shapes, _size, _ac, _am, _ in INTERP:
    CASES.append(OpCase(
        f"interpolate[{_mode},{_size},ac={_ac},am={_am}]",
        lambda x, m=_mode, s=_size, ac=_ac, am=_am: F.interpolate(x, s, None, m, ac, am),
        lambda x, m=_mode, s=_size, ac=_ac, am=_am: np_interpolate(x, s, m, ac, am),
        inputs=[normal()], shapes=[_shapes], op="interpolate",
        dtypes=["float32", "float64"] + (["float16", "bfloat16"] if _mode == "bilinear" else []),
        tol={"float32": (1e-5, 1e-5), "float16": (3e-2, 1e-2), "bfloat16": (2e-1, 3e-2)}))
CASES += [
    OpCase("interpolate[scale]", lambda x: F.interpolate(x, scale_factor=[1.5, 2.5], mode="bilinear"),
           lambda x: np_interpolate(x, [4, 7], "bilinear", scales=[1.5, 2.5]),
           inputs=[(1, 2, 3, 3)], op="interpolate"),
    OpCase("interpolate[NHWC]",
           lambda x: F.interpolate(x, [4, 5], mode="bilinear", data_format="NHWC"),
           lambda x: np_interpolate(x.transpose(0, 3, 1, 2), [4, 5], "bilinear").transpose(0, 2, 3, 1),
           inputs=[(2, 3, 2, 3)], op="interpolate"),
    OpCase("interpolate[0-size]", lambda x: F.interpolate(x, [4, 5], mode="bilinear"),
           lambda x: np.zeros((0, 2, 4, 5)), inputs=[(0, 2, 3, 3)], op="interpolate", grad=False,
           bad_inputs=[(lambda: (tensor(np.ones((1, 1, 2, 2, 2))),), ValueError, "must have 3 entries"),
                       (lambda: (tensor(np.ones((1, 1, 2, 2)), "int64"),), TypeError, "floating")]),
    OpCase("upsample", lambda x: F.upsample(x, scale_factor=2), lambda x: x.repeat(2, 2).repeat(2, 3),
           inputs=[(1, 2, 2, 3)], op="interpolate"),
    OpCase("pixel_shuffle", lambda x: F.pixel_shuffle(x, 2), lambda x: np_pixel_shuffle(x, 2),
           inputs=[(2, 8, 2, 3)], shapes=[[(2, 8, 2, 3)], [(0, 4, 2, 2)]],
           bad_inputs=[(lambda: (tensor(np.ones((1, 3, 2, 2))),), ValueError, "divisible")]),
    OpCase("pixel_shuffle[NHWC]", lambda x: F.pixel_shuffle(x, 2, "NHWC"),
           lambda x: np_pixel_shuffle(x.transpose(0, 3, 1, 2), 2).transpose(0, 2, 3, 1),
           inputs=[(1, 2, 3, 8)], op="pixel_shuffle"),
    OpCase("pixel_unshuffle", lambda x: F.pixel_unshuffle(x, 2),
           lambda x: x.reshape(2, 3, 2, 2, 3, 2).transpose(0, 1, 3, 5, 2, 4).reshape(2, 12, 2, 3),
           inputs=[(2, 3, 4, 6)], bad_inputs=[(lambda: (tensor(np.ones((1, 1, 3, 2))),), ValueError,
                                               "divisible")]),
    OpCase("pixel_unshuffle[roundtrip]", lambda x: F.pixel_shuffle(F.pixel_unshuffle(x, 3, "NHWC"), 3, "NHWC"),
           lambda x: x, inputs=[(1, 3, 6, 2)], op="pixel_unshuffle"),
]
for _gm in ["bilinear", "nearest"]:
    for _pm in ["zeros", "border", "reflection"]:
        for _ac in [True, False]:
            CASES.append(OpCase(
                f"grid_sample[{_gm},{_pm},ac={_ac}]",
                lambda x, g, gm=_gm, pm=_pm, ac=_ac: F.grid_sample(x, g, gm, pm, ac),
                lambda x, g, gm=_gm, pm=_pm, ac=_ac: np_grid_sample(x, g, gm, pm, ac),
                inputs=[normal(), GRID], shapes=[[(2, 2, 3, 4), (2, 3, 2, 2)]], op="grid_sample",
                grad=_gm == "bilinear"))
CASES[-1].bad_inputs = [(lambda: (tensor(np.ones((1, 1, 2, 2))), tensor(np.ones((2, 2, 2, 2)))),
                         ValueError, "grid must have shape"),
                        (lambda: (tensor(np.ones((1, 1, 2, 2))), tensor(np.ones((1, 2, 2, 2)), "float64")),
                         TypeError, "dtype")]
CASES += [
    OpCase("affine_grid", lambda t: F.affine_grid(t, [2, 3, 4, 5], align_corners=True),
           lambda t: np_affine_grid(t, [2, 3, 4, 5], True), inputs=[(2, 2, 3)],
           bad_inputs=[(lambda: (tensor(np.ones((2, 3, 3))),), ValueError, "theta")]),
    OpCase("affine_grid[ac=False]", lambda t: F.affine_grid(t, [1, 1, 3, 2], align_corners=False),
           lambda t: np_affine_grid(t, [1, 1, 3, 2], False), inputs=[(1, 2, 3)], op="affine_grid"),
    OpCase("unfold", lambda x: F.unfold(x, [2, 3], [1, 2], [1, 0, 0, 1], [2, 1]),
           lambda x: np_unfold(x, [2, 3], [1, 2], [1, 0, 0, 1], [2, 1]), inputs=[(2, 2, 4, 5)],
           shapes=[[(2, 2, 4, 5)], [(0, 2, 4, 5)]],
           bad_inputs=[(lambda: (tensor(np.ones((1, 1, 1, 1))),), ValueError, "does not fit"),
                       (lambda: (tensor(np.ones((1, 4, 4))),), ValueError, "4-D")]),
    OpCase("fold", lambda x: F.fold(x, [4, 5], [2, 3], [1, 2], [1, 0, 0, 1], [2, 1]),
           lambda x: np_fold(x, [4, 5], [2, 3], [1, 2], [1, 0, 0, 1], [2, 1]), inputs=[(2, 12, 6)],
           bad_inputs=[(lambda: (tensor(np.ones((1, 12, 7))),), ValueError, "number of blocks")]),
    OpCase("embedding", lambda w: F.embedding(I64([[0, 3], [2, 0]]), w),
           lambda w: w[np.array([[0, 3], [2, 0]])], inputs=[(4, 3)],
           bad_inputs=[(lambda: (tensor(np.ones((2, 3))),), IndexError, "out of range")]),
    OpCase("embedding[padding_idx]", lambda w: F.embedding(I64([[0, 3], [2, 0]]), w, padding_idx=-4),
           lambda w: w[np.array([[0, 3], [2, 0]])] * (np.array([[0, 3], [2, 0]]) != 0)[..., None],
           inputs=[(4, 3)], op="embedding"),
    OpCase("one_hot", lambda x: F.one_hot(oar.cast(x, "int64"), 5),
           lambda x: np.eye(5)[x.astype(int)], inputs=[Gen(lambda r, s: r.integers(0, 5, s), None,
                                                           float_input=False)],
           shapes=[[(2, 3)], [(0,)]], dtypes=["float32"], grad=False,
           bad_inputs=[(lambda: (tensor([1, 7], "int64"),), IndexError, "out of range")]),
    OpCase("cosine_similarity", lambda a, b: F.cosine_similarity(a, b, axis=1),
           lambda a, b: np.sum(a * b, 1) / np.sqrt(np.maximum(np.sum(a * a, 1) * np.sum(b * b, 1), 1e-16)),
           inputs=[(3, 4), (3, 4)], shapes=[[(3, 4), (3, 4)], [(3, 4), (1, 4)], [(0, 4), (0, 4)]]),
    OpCase("pairwise_distance", lambda a, b: F.pairwise_distance(a, b),
           lambda a, b: np.linalg.norm(a - b + 1e-6, axis=-1), inputs=[(3, 4), (3, 4)],
           shapes=[[(3, 4), (3, 4)], [(4,), (4,)]]),
    OpCase("normalize", lambda x: F.normalize(x, 2, 1), lambda x: x / np.maximum(
        np.linalg.norm(x, axis=1, keepdims=True), 1e-12), inputs=[(3, 4)],
           shapes=[[(3, 4)], [(2, 3, 2)], [(0, 3)]]),
    OpCase("normalize[p=1]", lambda x: F.normalize(x, 1, -1), lambda x: x / np.maximum(
        np.abs(x).sum(-1, keepdims=True), 1e-12), inputs=[(3, 4)], op="normalize"),
]


@pytest.mark.parametrize("case", [c for c in CASES if c.dtypes], ids=case_id)
def test_forward(case):
    check_forward(case)


@pytest.mark.parametrize("case", [c for c in CASES if c.grad], ids=case_id)
def test_grad(case):
    check_grad(case)


@pytest.mark.parametrize("case", [c for c in CASES if c.bad_inputs], ids=case_id)
def test_bad_inputs(case):
    check_bad_inputs(case)


def test_known_values():
    x = oar.to_tensor(np.array([[[[1.0, 2.0], [3.0, 4.0]]]]))
    np.testing.assert_array_equal(F.interpolate(x, scale_factor=2).numpy()[0, 0],
                                  [[1, 1, 2, 2], [1, 1, 2, 2], [3, 3, 4, 4], [3, 3, 4, 4]])
    np.testing.assert_allclose(F.interpolate(x, [3, 3], mode="bilinear", align_corners=True).numpy()[0, 0],
                               [[1, 1.5, 2], [2, 2.5, 3], [3, 3.5, 4]])
    np.testing.assert_array_equal(F.pad(oar.to_tensor(np.array([[[1.0, 2.0, 3.0]]])), [2, 1], "reflect").numpy(),
                                  [[[3, 2, 1, 2, 3, 2]]])
    # identity affine grid samples the image back
    img = oar.to_tensor(np.random.default_rng(0).standard_normal((1, 2, 3, 4)))
    theta = oar.to_tensor(np.array([[[1.0, 0, 0], [0, 1.0, 0]]]))
    back = F.grid_sample(img, F.affine_grid(theta, [1, 2, 3, 4]))
    np.testing.assert_allclose(back.numpy(), img.numpy(), atol=1e-12)


def test_layers():
    nn = oar.nn
    x = oar.to_tensor(np.random.default_rng(1).standard_normal((1, 4, 2, 2)))
    assert nn.Pad2D([1, 1, 0, 2], mode="replicate")(x).shape == [1, 4, 4, 4]
    assert nn.Pad1D(1)(x.reshape([1, 4, 4])).shape == [1, 4, 6]
    assert nn.Pad3D(1)(x.reshape([1, 1, 4, 2, 2])).shape == [1, 1, 6, 4, 4]
    assert nn.ZeroPad2D(2)(x).shape == [1, 4, 6, 6]
    assert nn.Upsample(scale_factor=2, mode="bilinear")(x).shape == [1, 4, 4, 4]
    assert nn.UpsamplingNearest2D(size=[3, 3])(x).shape == [1, 4, 3, 3]
    np.testing.assert_allclose(nn.UpsamplingBilinear2D(size=[3, 3])(x).numpy(),
                               np_interpolate(x.numpy(), [3, 3], "bilinear", True))
    assert nn.PixelShuffle(2)(x).shape == [1, 1, 4, 4]
    assert nn.PixelUnshuffle(2)(nn.PixelShuffle(2)(x)).shape == [1, 4, 2, 2]
    emb = nn.Embedding(5, 3, padding_idx=1)
    out = emb(I64([1, 2]))
    assert out.shape == [2, 3] and np.all(out.numpy()[0] == 0)
    out.sum().backward()
    assert np.all(emb.weight.grad.numpy()[1] == 0) and np.all(emb.weight.grad.numpy()[2] == 1)
    a, b = oar.ones([2, 3]), oar.ones([2, 3]) * 2
    np.testing.assert_allclose(nn.CosineSimilarity()(a, b).numpy(), [1, 1])
    assert nn.PairwiseDistance()(a, b).shape == [2]
    u = nn.Unfold([2, 2])(x)
    assert u.shape == [1, 16, 1]
    np.testing.assert_allclose(nn.Fold([2, 2], [2, 2])(u).numpy(), x.numpy())
    with pytest.raises(ValueError, match="Pad2D: padding"):
        nn.Pad2D([1, 2, 3])
    with pytest.raises(ValueError, match="Embedding: padding_idx 7"):
        nn.Embedding(5, 3, padding_idx=7)


def test_interpolate_argument_errors():
    x = oar.ones([1, 1, 2, 2])
    with pytest.raises(ValueError, match="interpolate: exactly one of size and scale_factor"):
        F.interpolate(x)
    with pytest.raises(ValueError, match="interpolate: mode must be one of"):
        F.interpolate(x, [3, 3], mode="cubic")
    with pytest.raises(ValueError, match="interpolate: size \\[3, 3, 3\\] must have 2 entries"):
        F.interpolate(x, [3, 3, 3])
    with pytest.raises(ValueError, match="interpolate: data_format must be one of"):
        F.interpolate(x, [3, 3], data_format="NCL")
    with pytest.raises(ValueError, match="pad: mode must be"):
        F.pad(x, [1, 1, 1, 1], mode="wrap")


F_NAMES = ["pad", "zeropad2d", "interpolate", "upsample", "pixel_shuffle", "pixel_unshuffle",
           "grid_sample", "affine_grid", "unfold", "fold", "embedding", "one_hot",
           "cosine_similarity", "pairwise_distance", "normalize"]
LAYER_NAMES = ["Pad1D", "Pad2D", "Pad3D", "ZeroPad2D", "Upsample", "UpsamplingNearest2D",
               "UpsamplingBilinear2D", "PixelShuffle", "PixelUnshuffle", "Embedding",
               "CosineSimilarity", "PairwiseDistance", "Unfold", "Fold"]


@pytest.mark.parametrize("name", F_NAMES)
def test_functional_name_exists(name):
    assert callable(getattr(F, name)), f"oar.nn.functional.{name} is missing"


@pytest.mark.parametrize("name", LAYER_NAMES)
def test_layer_name_exists(name):
    assert issubclass(getattr(oar.nn, name), oar.nn.Layer), f"oar.nn.{name} is missing"


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [True, False])
@pytest.mark.parametrize("xshape, gshape", [((2, 3, 7, 9), (2, 5, 13)), ((2, 8, 7, 9), (2, 5, 13)),
                                            ((3, 19, 32, 32), (3, 32, 16))],
                         ids=["planes", "channels_last", "channels_last_tiles"])
def test_grid_sample_planes_against_numpy(mode, padding, align, xshape, gshape):
    """grid_sample by planes (Note [grid_sample by planes]): 65 points a plane (eight-point
    float blocks with masked gathers, and a tail); with 8 or more channels in channels-last
    (Note [grid_sample in channels-last]), also with 1024 values a plane and 512 points, where
    both turns go through whole buffered tiles and ragged edges. Points inside, across the
    borders and far outside, in float32 and float64 against the float64 reference; NaN and
    huge grid values give the same in float32 (vectors) as in float64 (the scalar form)."""
    rng = np.random.default_rng(31)
    x = rng.standard_normal(xshape)
    grid = rng.uniform(-1.3, 1.3, (*gshape, 2))
    grid[0, 0, :4] = [[-1.0, -1.0], [1.0, 1.0], [3.0, 0.2], [-0.2, -7.0]]
    for dtype, tol in (("float32", 2e-5), ("float64", 1e-12)):
        got = F.grid_sample(oar.to_tensor(x.astype(dtype)), oar.to_tensor(grid.astype(dtype)), mode=mode,
                            padding_mode=padding, align_corners=align).numpy()
        ref = np_grid_sample(x.astype(dtype).astype(np.float64), grid.astype(dtype).astype(np.float64),
                             mode, padding, align)
        np.testing.assert_allclose(got, ref, rtol=tol, atol=tol, err_msg=dtype)
    odd = grid.copy()
    odd[1, 2, ::3, 0] = np.nan
    odd[1, 3, ::4, 1] = 1e30
    odd[0, 4, ::5] = -np.inf
    odd = odd.astype(np.float32).astype(np.float64)  # one grid for both dtypes (1e30 rounds in float32)
    res = [F.grid_sample(oar.to_tensor(x.astype(d)), oar.to_tensor(odd.astype(d)), mode=mode,
                         padding_mode=padding, align_corners=align).numpy().astype(np.float64)
           for d in ("float32", "float64")]
    np.testing.assert_allclose(res[0], res[1], rtol=2e-5, atol=2e-5, equal_nan=True)


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [True, False])
@pytest.mark.parametrize("xshape, gshape", [((2, 3, 7, 9), (2, 5, 13)), ((3, 19, 32, 32), (3, 16, 32))],
                         ids=["odd", "tiles"])
def test_grid_sample_backward_identities(mode, padding, align, xshape, gshape):
    """grid_sample's backward in channels-last (Note [grid_sample in channels-last]) on shapes
    the finite-difference harness cannot afford: grad_x is A^T g for the linear map x -> out,
    so <out(x'), g> = <x', grad_x> for any x' (exact up to rounding); grad_grid against a
    central difference along a random direction, in float64."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal(xshape)
    grid = rng.uniform(-1.2, 1.2, (*gshape, 2))
    g = rng.standard_normal((xshape[0], xshape[1], *gshape[1:]))

    def out(xv, gv):
        return F.grid_sample(oar.to_tensor(xv), oar.to_tensor(gv), mode=mode, padding_mode=padding,
                             align_corners=align).numpy()
    xt, gt = oar.to_tensor(x, stop_gradient=False), oar.to_tensor(grid, stop_gradient=False)
    y = F.grid_sample(xt, gt, mode=mode, padding_mode=padding, align_corners=align)
    (y * oar.to_tensor(g)).sum().backward()
    gx, gg = xt.grad.numpy(), gt.grad.numpy()
    for _ in range(2):
        xp = rng.standard_normal(xshape)
        np.testing.assert_allclose((out(xp, grid) * g).sum(), (xp * gx).sum(), rtol=1e-10, atol=1e-9)
    d = rng.standard_normal(grid.shape)
    h = 1e-7
    fd = ((out(x, grid + h * d) * g).sum() - (out(x, grid - h * d) * g).sum()) / (2 * h)
    np.testing.assert_allclose((gg * d).sum(), fd if mode == "bilinear" else 0.0, rtol=1e-5, atol=1e-5)
    # float32 follows the float64 result
    x32, g32 = oar.to_tensor(x.astype("float32"), stop_gradient=False), oar.to_tensor(grid.astype("float32"), stop_gradient=False)
    (F.grid_sample(x32, g32, mode=mode, padding_mode=padding, align_corners=align)
     * oar.to_tensor(g.astype("float32"))).sum().backward()
    np.testing.assert_allclose(x32.grad.numpy(), gx, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(g32.grad.numpy(), gg, rtol=2e-3, atol=2e-3)


_PAD_ADJOINT = [(shape, pads, fmt, mode) for shape, pads, fmt in
                [((4, 6, 9, 11), [2, 3, 1, 2], "NCHW"), ((3, 5, 4, 6, 7), [1, 2, 0, 3, 2, 1], "NDHWC")]
                for mode in ["constant", "reflect", "replicate", "circular"]]
_PAD_ADJOINT.append(((6, 20), [1, 0, 2, 3], None, "constant"))  # every dim: only constant pads N, C


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("shape, pads, fmt, mode", _PAD_ADJOINT,
                         ids=[f"{m}-{f or 'all_dims'}" for _, _, f, m in _PAD_ADJOINT])
def test_pad_backward_is_the_adjoint(shape, pads, fmt, mode, threads):
    """pad's backward in blocks over the leading unpadded dims (batch, channels; none when
    the first dim is padded), split over the pool: <pad(x'), g> = <x', grad_x> for the
    linear map x -> pad(x), exact up to rounding in float64, for every mode."""
    rng = np.random.default_rng(11)
    prev = oar.get_num_threads()
    oar.set_num_threads(threads)
    try:
        def pad(t):
            return F.pad(t, pads, mode=mode) if fmt is None else F.pad(t, pads, mode=mode, data_format=fmt)
        x = oar.to_tensor(rng.standard_normal(shape), stop_gradient=False)
        y = pad(x)
        g = rng.standard_normal(y.shape)
        (y * oar.to_tensor(g)).sum().backward()
        for _ in range(2):
            xp = rng.standard_normal(shape)
            np.testing.assert_allclose((pad(oar.to_tensor(xp)).numpy() * g).sum(), (xp * x.grad.numpy()).sum(),
                                       rtol=1e-11, atol=1e-10)
    finally:
        oar.set_num_threads(prev)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("mode, np_mode", [("constant", "constant"), ("reflect", "reflect"), ("replicate", "edge"),
                                           ("circular", "wrap")])
def test_pad_every_rank_against_numpy(mode, np_mode, threads):
    """pad_nd walks its rows by an odometer that looks the outer dims' source row up again
    only when the innermost row dim wraps: rank 1 (one row) to 5, padding on every dim or
    only some, chunks of rows at two threads, against np.pad."""
    rng = np.random.default_rng(3)
    prev = oar.get_num_threads()
    oar.set_num_threads(threads)
    try:
        for shape, pads in [((7,), [(2, 3)]), ((3, 5), [(1, 2), (0, 4)]), ((4, 3, 6), [(0, 0), (2, 1), (3, 3)]),
                            ((3, 4, 5, 6), [(1, 0), (0, 0), (2, 2), (1, 3)]),
                            ((2, 3, 4, 5, 6), [(1, 1), (2, 0), (0, 3), (1, 2), (4, 1)]),
                            ((64, 8, 9, 10), [(0, 0), (1, 1), (2, 2), (2, 2)])]:
            a = rng.standard_normal(shape)
            got = oar._C.ops._pad_nd(oar.to_tensor(a), [v for p in pads for v in p], mode, 1.5).numpy()
            want = np.pad(a, pads, mode=np_mode, **({"constant_values": 1.5} if mode == "constant" else {}))
            np.testing.assert_array_equal(got, want, err_msg=f"{shape} {pads}")
    finally:
        oar.set_num_threads(prev)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
@pytest.mark.parametrize("form", ["expanded", "transposed", "sliced", "dense"])
def test_constant_pad_backward_reads_strided_gradients(form, dtype):
    """constant pad's backward copies grad_out's interior as it lies in memory: a sum's
    broadcast gradient (stride 0), a transposed and a sliced one give the crop of the same
    values as a dense one."""
    rng = np.random.default_rng(5)
    x = oar.to_tensor(rng.standard_normal((2, 3, 5, 7)).astype("float64" if dtype == "int64" else dtype),
                      stop_gradient=False)
    y = F.pad(x, [1, 2, 3, 0])  # W by (1, 2), H by (3, 0): [2, 3, 8, 10]
    shape = (2, 3, 8, 10)
    if form == "expanded":
        g = (rng.standard_normal(10) * 8).astype(dtype)
        gt = oar.to_tensor(g).reshape([1, 1, 1, 10]).expand(shape)
        dense = np.broadcast_to(g, shape)
    elif form == "transposed":
        dense = (rng.standard_normal((2, 3, 10, 8)) * 8).astype(dtype).transpose(0, 1, 3, 2)
        gt = oar.to_tensor(np.ascontiguousarray(dense.transpose(0, 1, 3, 2))).transpose([0, 1, 3, 2])
    elif form == "sliced":
        big = (rng.standard_normal((2, 4, 16, 12)) * 8).astype(dtype)
        dense = big[:, 1:, ::2, 2:]
        gt = oar.to_tensor(big)[:, 1:, ::2, 2:]
    else:
        dense = (rng.standard_normal(shape) * 8).astype(dtype)
        gt = oar.to_tensor(dense)
    assert tuple(gt.shape) == shape
    if dtype == "int64":  # the kernel on its own: autograd takes float gradients
        got = oar._C.ops._pad_nd_grad(x.astype("int64"), gt, [0, 0, 0, 0, 3, 0, 1, 2], "constant")
    else:
        got = oar.grad(y, x, grad_outputs=gt)[0]
    np.testing.assert_array_equal(got.numpy(), np.asarray(dense)[:, :, 3:8, 1:8].astype(got.numpy().dtype))


def np_area(x, out):
    """Paddle's 'area' interpolation: adaptive average pooling, bin i of n -> m over
    [floor(i n / m), ceil((i + 1) n / m)) on each spatial dim."""
    y = x
    for d, m in enumerate(out):
        ax = 2 + d
        n = y.shape[ax]
        parts = [np.take(y, range(i * n // m, -(-(i + 1) * n // m)), axis=ax).mean(axis=ax, keepdims=True)
                 for i in range(m)]
        y = np.concatenate(parts, axis=ax)
    return y


@pytest.mark.parametrize("shape, size", [((2, 3, 7), [3]), ((2, 3, 7, 9), [4, 5]), ((1, 2, 5, 6, 7), [2, 4, 3]),
                                         ((2, 3, 8, 6), [8, 6])])
def test_interpolate_area_is_adaptive_average(shape, size):
    """interpolate(mode='area') (Paddle's adaptive average pooling to the output size): uneven
    bins in 1-3 spatial dims against NumPy, by size and by scale_factor, channel-last, its
    gradient (each input gets 1 / bin size from every bin it lies in) and align_corners."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal(shape)
    got = F.interpolate(oar.to_tensor(x), size=size, mode="area")
    np.testing.assert_allclose(got.numpy(), np_area(x, size), rtol=1e-12, atol=1e-12)
    cl = np.moveaxis(x, 1, -1)
    fmt = {3: "NWC", 4: "NHWC", 5: "NDHWC"}[x.ndim]
    got_cl = F.interpolate(oar.to_tensor(cl), size=size, mode="AREA", data_format=fmt).numpy()
    np.testing.assert_allclose(np.moveaxis(got_cl, -1, 1), np_area(x, size), rtol=1e-12, atol=1e-12)
    half = F.interpolate(oar.to_tensor(x), scale_factor=0.5, mode="area").numpy()
    np.testing.assert_allclose(half, np_area(x, [n // 2 for n in shape[2:]]), rtol=1e-12, atol=1e-12)
    xt = oar.to_tensor(x, stop_gradient=False)
    g = rng.standard_normal(got.shape)
    (F.interpolate(xt, size=size, mode="area") * oar.to_tensor(g)).sum().backward()
    xp = rng.standard_normal(shape)
    np.testing.assert_allclose((np_area(xp, size) * g).sum(), (xp * xt.grad.numpy()).sum(), rtol=1e-10)
    with pytest.raises(ValueError, match="interpolate: align_corners=True is not supported with mode 'area'"):
        F.interpolate(oar.to_tensor(x), size=size, mode="area", align_corners=True)
