"""paddle.vision.ops RoI ops (roi_align, roi_pool, psroi_pool, layers) and deform_conv2d
against float64 NumPy loops written from Paddle's documented semantics; gradients against
central finite differences; bad inputs name the op and the argument."""
import math

import numpy as np
import pytest

import oar
from oar.vision import ops


def t64(a, grad=False):
    t = oar.to_tensor(np.asarray(a, np.float64))
    t.stop_gradient = not grad
    return t


def rand_boxes(rng, r, h, w, big=False):
    x1 = rng.uniform(-2, w - 1, r)
    y1 = rng.uniform(-2, h - 1, r)
    span = 3 * max(h, w) if big else max(h, w) / 2
    return np.stack([x1, y1, x1 + rng.uniform(0, span, r), y1 + rng.uniform(0, span, r)], 1)


def fd_grad(f, a, eps=1e-6):
    g = np.zeros_like(a)
    it = np.nditer(a, flags=["multi_index"])
    for _ in it:
        i = it.multi_index
        p, m = a.copy(), a.copy()
        p[i] += eps
        m[i] -= eps
        g[i] = (f(p) - f(m)) / (2 * eps)
    return g


def check_grad(fn, arrays, which, seed=0, rtol=1e-5, atol=1e-6):
    """fn(*tensors) -> Tensor; compares d(sum(out * cot))/d arrays[k] for k in which."""
    cot = None
    ts = [t64(a, grad=(k in which)) for k, a in enumerate(arrays)]
    out = fn(*ts)
    cot = np.random.default_rng(seed).normal(size=out.shape)
    (out * t64(cot)).sum().backward()
    for k in which:
        def f(v, k=k):
            args = [t64(v if j == k else a) for j, a in enumerate(arrays)]
            return float((fn(*args).numpy() * cot).sum())

        np.testing.assert_allclose(ts[k].grad.numpy(), fd_grad(f, arrays[k]), rtol=rtol,
                                   atol=atol, err_msg=f"argument {k}")


# ---------------------------------------------------------------- references (loops)
def ref_bilinear(img, y, x):
    h, w = img.shape[-2:]
    if y < -1.0 or y > h or x < -1.0 or x > w:
        return np.zeros(img.shape[:-2])
    y, x = max(y, 0.0), max(x, 0.0)
    yl, xl = int(y), int(x)
    if yl >= h - 1:
        yh = yl = h - 1
        y = float(yl)
    else:
        yh = yl + 1
    if xl >= w - 1:
        xh = xl = w - 1
        x = float(xl)
    else:
        xh = xl + 1
    ly, lx = y - yl, x - xl
    return ((1 - ly) * (1 - lx) * img[..., yl, xl] + (1 - ly) * lx * img[..., yl, xh] +
            ly * (1 - lx) * img[..., yh, xl] + ly * lx * img[..., yh, xh])


def ref_roi_align(x, boxes, bidx, ph, pw, scale, ratio, aligned):
    out = np.zeros((len(boxes), x.shape[1], ph, pw))
    off = 0.5 if aligned else 0.0
    for r, b in enumerate(boxes):
        x1, y1, x2, y2 = b * scale - off
        rw, rh = x2 - x1, y2 - y1
        if not aligned:
            rw, rh = max(rw, 1.0), max(rh, 1.0)
        bh, bw = rh / ph, rw / pw
        gh = ratio if ratio > 0 else math.ceil(bh)
        gw = ratio if ratio > 0 else math.ceil(bw)
        cnt = max(gh * gw, 1)
        for i in range(ph):
            for j in range(pw):
                acc = np.zeros(x.shape[1])
                for iy in range(max(gh, 0)):
                    yy = y1 + i * bh + (iy + 0.5) * bh / gh
                    for ix in range(max(gw, 0)):
                        xx = x1 + j * bw + (ix + 0.5) * bw / gw
                        acc += ref_bilinear(x[bidx[r]], yy, xx)
                out[r, :, i, j] = acc / cnt
    return out


def cround(v):
    return math.floor(v + 0.5) if v >= 0 else -math.floor(-v + 0.5)


def ref_roi_pool(x, boxes, bidx, ph, pw, scale):
    n, c, h, w = x.shape
    out = np.zeros((len(boxes), c, ph, pw))
    for r, b in enumerate(boxes):
        x1, y1, x2, y2 = (cround(v * scale) for v in b)
        rh, rw = max(y2 - y1 + 1, 1), max(x2 - x1 + 1, 1)
        for i in range(ph):
            hs = min(max(math.floor(i * rh / ph) + y1, 0), h)
            he = min(max(math.ceil((i + 1) * rh / ph) + y1, 0), h)
            for j in range(pw):
                ws = min(max(math.floor(j * rw / pw) + x1, 0), w)
                we = min(max(math.ceil((j + 1) * rw / pw) + x1, 0), w)
                if he > hs and we > ws:
                    out[r, :, i, j] = x[bidx[r], :, hs:he, ws:we].max(axis=(1, 2))
    return out


def ref_psroi_pool(x, boxes, bidx, ph, pw, scale):
    n, c, h, w = x.shape
    oc = c // (ph * pw)
    out = np.zeros((len(boxes), oc, ph, pw))
    for r, b in enumerate(boxes):
        x1, y1 = cround(b[0]) * scale, cround(b[1]) * scale
        x2, y2 = (cround(b[2]) + 1.0) * scale, (cround(b[3]) + 1.0) * scale
        bh, bw = max(y2 - y1, 0.1) / ph, max(x2 - x1, 0.1) / pw
        for k in range(oc):
            for i in range(ph):
                hs = min(max(math.floor(i * bh + y1), 0), h)
                he = min(max(math.ceil((i + 1) * bh + y1), 0), h)
                for j in range(pw):
                    ws = min(max(math.floor(j * bw + x1), 0), w)
                    we = min(max(math.ceil((j + 1) * bw + x1), 0), w)
                    if he > hs and we > ws:
                        ch = (k * ph + i) * pw + j
                        out[r, k, i, j] = x[bidx[r], ch, hs:he, ws:we].mean()
    return out


def ref_deform(x, offset, weight, bias, stride, pad, dil, dg, groups, mask):
    n, c, h, w = x.shape
    cout, cin_g, kh, kw = weight.shape
    ho = (h + 2 * pad - (dil * (kh - 1) + 1)) // stride + 1
    wo = (w + 2 * pad - (dil * (kw - 1) + 1)) // stride + 1
    cols = np.zeros((n, c, kh, kw, ho, wo))
    cg = c // dg
    for b in range(n):
        for ch in range(c):
            g = ch // cg
            for i in range(kh):
                for j in range(kw):
                    k = i * kw + j
                    for oy in range(ho):
                        for ox in range(wo):
                            py = oy * stride - pad + i * dil + offset[b, g * 2 * kh * kw + 2 * k,
                                                                      oy, ox]
                            px = ox * stride - pad + j * dil + offset[b, g * 2 * kh * kw + 2 * k
                                                                      + 1, oy, ox]
                            v = 0.0
                            if -1 < py < h and -1 < px < w:
                                y0, x0 = math.floor(py), math.floor(px)
                                for yy in (y0, y0 + 1):
                                    for xx in (x0, x0 + 1):
                                        if 0 <= yy < h and 0 <= xx < w:
                                            v += (1 - abs(py - yy)) * (1 - abs(px - xx)) * \
                                                x[b, ch, yy, xx]
                            if mask is not None:
                                v *= mask[b, g * kh * kw + k, oy, ox]
                            cols[b, ch, i, j, oy, ox] = v
    out = np.zeros((n, cout, ho, wo))
    og = cout // groups
    for gi in range(groups):
        wg = weight[gi * og:(gi + 1) * og].reshape(og, -1)
        cg_cols = cols[:, gi * cin_g:(gi + 1) * cin_g].reshape(n, -1, ho * wo)
        out[:, gi * og:(gi + 1) * og] = (wg @ cg_cols).reshape(n, og, ho, wo)
    if bias is not None:
        out += bias[None, :, None, None]
    return out


# ---------------------------------------------------------------- forward
@pytest.mark.parametrize("ratio,aligned,scale", [(-1, True, 1.0), (2, False, 0.5),
                                                 (-1, False, 0.25), (3, True, 2.0)])
def test_roi_align_matches_reference(ratio, aligned, scale):
    rng = np.random.default_rng(1)
    x = rng.normal(size=(3, 2, 7, 9))
    boxes = rand_boxes(rng, 6, 7 / scale, 9 / scale, big=True)
    num = np.array([2, 0, 4])
    bidx = np.repeat(np.arange(3), num)
    out = ops.roi_align(t64(x), t64(boxes), oar.to_tensor(num.astype(np.int32)), (3, 2),
                        spatial_scale=scale, sampling_ratio=ratio, aligned=aligned)
    assert out.shape == [6, 2, 3, 2] and out.dtype == oar.float64
    ref = ref_roi_align(x, boxes, bidx, 3, 2, scale, ratio, aligned)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-10, atol=1e-12)


def test_roi_pool_and_psroi_pool_match_reference():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(2, 3, 6, 5))
    boxes = rand_boxes(rng, 5, 6, 5, big=True)
    num = np.array([3, 2], np.int64)
    bidx = np.repeat(np.arange(2), num)
    for scale in (1.0, 0.5):
        out = ops.roi_pool(t64(x), t64(boxes), oar.to_tensor(num), 3, scale)
        np.testing.assert_allclose(out.numpy(), ref_roi_pool(x, boxes, bidx, 3, 3, scale))
        pool = ops.RoIPool((2, 3), scale)(t64(x), t64(boxes), oar.to_tensor(num))
        np.testing.assert_allclose(pool.numpy(), ref_roi_pool(x, boxes, bidx, 2, 3, scale))
    xp = rng.normal(size=(2, 12, 6, 5))
    for scale in (1.0, 0.7):
        out = ops.psroi_pool(t64(xp), t64(boxes), oar.to_tensor(num), (2, 3), scale)
        assert out.shape == [5, 2, 2, 3]
        np.testing.assert_allclose(out.numpy(), ref_psroi_pool(xp, boxes, bidx, 2, 3, scale),
                                   rtol=1e-12)
    layer = ops.PSRoIPool(2, 1.0)
    np.testing.assert_allclose(layer(t64(xp), t64(boxes), oar.to_tensor(num)).numpy(),
                               ref_psroi_pool(xp, boxes, bidx, 2, 2, 1.0), rtol=1e-12)


def test_roi_ops_float32_layers_and_no_boxes():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(1, 4, 5, 5)).astype(np.float32)
    boxes = rand_boxes(rng, 3, 5, 5).astype(np.float32)
    num = oar.to_tensor(np.array([3], np.int32))
    out = ops.RoIAlign((2, 2), 1.0)(oar.to_tensor(x), oar.to_tensor(boxes), num)
    assert out.dtype == oar.float32
    ref = ref_roi_align(x.astype(np.float64), boxes.astype(np.float64), [0, 0, 0], 2, 2, 1.0,
                        -1, True)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-5, atol=1e-6)
    # boxes_num may be left out for a single image
    np.testing.assert_allclose(ops.roi_align(oar.to_tensor(x), oar.to_tensor(boxes), None,
                                             2).numpy(), out.numpy())
    empty = oar.to_tensor(np.zeros((0, 4), np.float32))
    zero = oar.to_tensor(np.array([0], np.int32))
    xt = oar.to_tensor(x)
    xt.stop_gradient = False
    for fn, c in ((ops.roi_align, 4), (ops.roi_pool, 4), (ops.psroi_pool, 1)):
        res = fn(xt, empty, zero, 2)
        assert res.shape == [0, c, 2, 2]
        res.sum().backward()
        np.testing.assert_array_equal(xt.grad.numpy(), 0)
        xt.clear_gradient()


def test_deform_conv2d_matches_reference():
    rng = np.random.default_rng(4)
    n, c, h, w, cout, kh, kw = 2, 4, 5, 6, 4, 3, 2
    for stride, pad, dil, dg, groups, use_mask, use_bias in (
            (1, 0, 1, 1, 1, True, True), (2, 1, 1, 2, 2, False, False),
            (1, 1, 2, 2, 1, True, False)):
        ho = (h + 2 * pad - (dil * (kh - 1) + 1)) // stride + 1
        wo = (w + 2 * pad - (dil * (kw - 1) + 1)) // stride + 1
        x = rng.normal(size=(n, c, h, w))
        off = rng.normal(scale=1.5, size=(n, 2 * dg * kh * kw, ho, wo))
        wt = rng.normal(size=(cout, c // groups, kh, kw))
        mask = rng.uniform(size=(n, dg * kh * kw, ho, wo)) if use_mask else None
        bias = rng.normal(size=cout) if use_bias else None
        out = ops.deform_conv2d(t64(x), t64(off), t64(wt), None if bias is None else t64(bias),
                                stride, pad, dil, dg, groups,
                                None if mask is None else t64(mask))
        ref = ref_deform(x, off, wt, bias, stride, pad, dil, dg, groups, mask)
        np.testing.assert_allclose(out.numpy(), ref, rtol=1e-10, atol=1e-12)
    # integer offsets: deform_conv2d equals conv2d
    x = rng.normal(size=(1, 2, 5, 5))
    wt = rng.normal(size=(3, 2, 3, 3))
    zero = np.zeros((1, 18, 3, 3))
    np.testing.assert_allclose(ops.deform_conv2d(t64(x), t64(zero), t64(wt)).numpy(),
                               oar.nn.functional.conv2d(t64(x), t64(wt)).numpy(), rtol=1e-10)


def test_deform_conv2d_layer():
    oar.seed(0)
    layer = ops.DeformConv2D(4, 6, (3, 3), padding=1, groups=2, deformable_groups=2)
    assert layer.weight.shape == [6, 2, 3, 3] and layer.bias.shape == [6]
    x = oar.rand([1, 4, 4, 5])
    off = oar.rand([1, 36, 4, 5])
    out = layer(x, off)
    ref = ref_deform(x.numpy().astype(np.float64), off.numpy().astype(np.float64),
                     layer.weight.numpy().astype(np.float64),
                     layer.bias.numpy().astype(np.float64), 1, 1, 1, 2, 2, None)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-4, atol=1e-5)
    out.sum().backward()
    assert layer.weight.grad is not None and layer.bias.grad is not None
    assert ops.DeformConv2D(2, 2, 3, bias_attr=False).bias is None


# ---------------------------------------------------------------- gradients
def test_roi_ops_gradients():
    rng = np.random.default_rng(5)
    x = rng.normal(size=(2, 4, 5, 6))
    boxes = rand_boxes(rng, 3, 5, 6)
    num = oar.to_tensor(np.array([1, 2], np.int32))
    check_grad(lambda a, b: ops.roi_align(a, b, num, 2, sampling_ratio=2), [x, boxes], [0])
    check_grad(lambda a, b: ops.roi_align(a, b, num, (3, 2), aligned=False), [x, boxes], [0])
    check_grad(lambda a, b: ops.psroi_pool(a, b, num, (1, 2)), [x, boxes], [0])
    # max pooling: distinct values, so the max is locally unique
    xu = rng.permutation(x.size).reshape(x.shape) / x.size
    check_grad(lambda a, b: ops.roi_pool(a, b, num, 2), [xu, boxes], [0], atol=1e-5)


def test_deform_conv2d_gradients():
    rng = np.random.default_rng(6)
    x = rng.normal(size=(1, 2, 4, 4))
    off = rng.uniform(0.1, 0.4, size=(1, 8, 3, 3))  # away from integer positions (kinks)
    wt = rng.normal(size=(2, 2, 2, 2))
    mask = rng.uniform(size=(1, 4, 3, 3))
    bias = rng.normal(size=2)
    check_grad(lambda a, o, wgt, m, b: ops.deform_conv2d(a, o, wgt, b, mask=m),
               [x, off, wt, mask, bias], [0, 1, 2, 3, 4])


# ---------------------------------------------------------------- bad inputs
def test_roi_ops_bad_inputs_name_op_and_argument():
    x = oar.rand([2, 4, 5, 5])
    boxes = oar.to_tensor([[0.0, 0.0, 2.0, 2.0], [1.0, 1.0, 3.0, 4.0]])
    num = oar.to_tensor([1, 1], dtype="int32")
    with pytest.raises(ValueError, match=r"roi_align: boxes must have shape \[num_boxes, 4\]"):
        ops.roi_align(x, oar.rand([2, 3]), num, 2)
    with pytest.raises(ValueError, match=r"roi_pool: boxes_num .* sum to the number of boxes 2"):
        ops.roi_pool(x, boxes, oar.to_tensor([2, 1], dtype="int32"), 2)
    with pytest.raises(ValueError, match=r"psroi_pool: boxes_num .*\[3, -1\]"):
        ops.psroi_pool(x, boxes, oar.to_tensor([3, -1], dtype="int32"), 2)
    with pytest.raises(ValueError, match="roi_align: boxes_num must have one count per image"):
        ops.roi_align(x, boxes, oar.to_tensor([2], dtype="int32"), 2)
    with pytest.raises(ValueError, match="roi_align: boxes_num is required"):
        ops.roi_align(x, boxes, None, 2)
    with pytest.raises(ValueError, match=r"roi_align: output_size must be positive, got \[0, 2\]"):
        ops.roi_align(x, boxes, num, (0, 2))
    with pytest.raises(ValueError, match="roi_align: spatial_scale must be positive"):
        ops.roi_align(x, boxes, num, 2, spatial_scale=-1.0)
    with pytest.raises(TypeError, match="roi_pool: boxes_num must have dtype"):
        ops.roi_pool(x, boxes, oar.to_tensor([1.0, 1.0]), 2)
    with pytest.raises(TypeError, match="roi_align: x must have dtype"):
        ops.roi_align(x.astype("int32"), boxes, num, 2)
    with pytest.raises(TypeError, match="roi_align: boxes dtype float64"):
        ops.roi_align(x, boxes.astype("float64"), num, 2)
    with pytest.raises(ValueError, match=r"psroi_pool: the channels of x \(4\)"):
        ops.psroi_pool(x, boxes, num, 3)
    with pytest.raises(ValueError, match="roi_align: x must be a 4-D Tensor"):
        ops.roi_align(oar.rand([4, 5, 5]), boxes, num, 2)
    with pytest.raises(ValueError, match="roi_align: boxes must be finite"):
        ops.roi_align(x, oar.to_tensor([[0.0, 0.0, float("nan"), 1.0]] * 2), num, 2)


def test_deform_conv2d_bad_inputs():
    x = oar.rand([1, 2, 5, 5])
    w = oar.rand([4, 2, 3, 3])
    off = oar.rand([1, 18, 3, 3])
    with pytest.raises(ValueError, match=r"deform_conv2d: offset must have shape \[1, 18, 3, 3\]"):
        ops.deform_conv2d(x, oar.rand([1, 18, 4, 3]), w)
    with pytest.raises(ValueError, match=r"deform_conv2d: mask must have shape \[1, 9, 3, 3\]"):
        ops.deform_conv2d(x, off, w, mask=oar.rand([1, 8, 3, 3]))
    with pytest.raises(ValueError, match="deform_conv2d: weight shape"):
        ops.deform_conv2d(x, off, oar.rand([4, 3, 3, 3]))
    with pytest.raises(ValueError, match="deform_conv2d: stride must be >= 1"):
        ops.deform_conv2d(x, off, w, stride=0)
    with pytest.raises(ValueError, match="deform_conv2d: padding must be >= 0"):
        ops.deform_conv2d(x, off, w, padding=-1)
    with pytest.raises(ValueError, match="deform_conv2d: the output size"):
        ops.deform_conv2d(oar.rand([1, 2, 2, 2]), off, w)
    with pytest.raises(TypeError, match="deform_conv2d: offset dtype float64"):
        ops.deform_conv2d(x, off.astype("float64"), w)
    with pytest.raises(ValueError, match="deform_conv2d: deformable_groups"):
        ops.deform_conv2d(x, off, w, deformable_groups=0)
    with pytest.raises(ValueError, match="DeformConv2D: in_channels"):
        ops.DeformConv2D(3, 4, 3, groups=2)


def test_roi_align_huge_boxes_and_sampling_ratio():
    x = oar.rand([1, 2, 6, 6])
    boxes = oar.to_tensor([[-1e9, -1e9, 1e9, 1e9], [1.0, 1.0, 3.0, 4.0]])
    out = ops.roi_align(x, boxes, None, 2)  # enumerates only the samples inside the image
    assert out.shape == [2, 2, 2, 2] and np.isfinite(out.numpy()).all()
    ref = ref_roi_align(x.numpy().astype(np.float64), boxes.numpy()[1:].astype(np.float64),
                        [0], 2, 2, 1.0, -1, True)
    np.testing.assert_allclose(out.numpy()[1:], ref, rtol=1e-5, atol=1e-6)
    # many samples per bin against the reference loop (the ragged ranges)
    b = np.array([[-3.0, 0.5, 4.0, 9.0]])
    got = ops.roi_align(x.astype("float64"), t64(b), None, (2, 3), sampling_ratio=7)
    np.testing.assert_allclose(got.numpy(), ref_roi_align(x.numpy().astype(np.float64), b, [0],
                                                          2, 3, 1.0, 7, True), rtol=1e-10)
    with pytest.raises(ValueError, match="roi_align: .* bilinear samples along one axis exceed"):
        ops.roi_align(x, boxes, None, 2, sampling_ratio=10 ** 9)


def test_zero_size_inputs():
    w = oar.rand([4, 2, 3, 3])
    out = ops.deform_conv2d(oar.rand([0, 2, 5, 5]), oar.rand([0, 18, 3, 3]), w, oar.rand([4]))
    assert out.shape == [0, 4, 3, 3]
    assert ops.deform_conv2d(oar.rand([1, 2, 5, 5]), oar.rand([1, 18, 3, 3]),
                             oar.rand([0, 2, 3, 3])).shape == [1, 0, 3, 3]
    boxes = oar.to_tensor([[0.0, 0.0, 2.0, 2.0], [1.0, 1.0, 3.0, 4.0]])
    for fn, c in ((ops.roi_align, 4), (ops.roi_pool, 4), (ops.psroi_pool, 1)):
        res = fn(oar.rand([1, 4, 0, 5]), boxes, None, 2)  # an empty image: all zero
        assert res.shape == [2, c, 2, 2] and not res.numpy().any()
        assert fn(oar.rand([1, 0 if c == 4 else 4, 6, 6]), boxes, None, 2).shape == \
            [2, 0 if c == 4 else 1, 2, 2]
    none = oar.to_tensor(np.zeros(0, np.int32))
    assert ops.roi_align(oar.rand([0, 3, 5, 5]), oar.rand([0, 4]), none, 2).shape == \
        [0, 3, 2, 2]
